"""The analysis service's proto edge: its messages (ScanWorkspace, ChunkFiles, Trace,
RenderSymbols) to and from the domain types in `model`, in both directions so each has a round trip.
ChunkFiles' answer has one decoder here for every reader: indexing and the gateway's outline alike."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from codecompass.contracts.analysis.model import (
    ChunkedFile,
    FileEntry,
    FileStatus,
    RenderedSymbol,
    RenderRequest,
    ScanResult,
    SkippedFile,
    TraceDirection,
    TraceNode,
    TraceOutcome,
    TracePartialReason,
    TraceQuery,
    TraceResolution,
    TraceRoot,
)
from codecompass.contracts.chunk_convert import chunk_from_proto, chunk_to_proto, language_from_proto, language_to_proto
from codecompass.v1 import analysis_pb2

# What an analysis service too old to report its chunker version is taken to run; such a
# service's chunker upgrades cannot be detected, so they need a manual re-index.
UNVERSIONED_CHUNKER = "unversioned"

_DIRECTION_TO_PROTO = {d: analysis_pb2.TraceDirection.Value(f"TRACE_DIRECTION_{d.name}") for d in TraceDirection}
_DIRECTION_FROM_PROTO = {v: k for k, v in _DIRECTION_TO_PROTO.items()}
_PARTIAL_TO_PROTO = {r: analysis_pb2.TracePartialReason.Value(f"TRACE_PARTIAL_REASON_{r.name}")
                     for r in TracePartialReason}
_PARTIAL_FROM_PROTO = {v: k for k, v in _PARTIAL_TO_PROTO.items()}
_RESOLUTION_TO_PROTO = {r: analysis_pb2.TraceResolution.Value(f"TRACE_RESOLUTION_{r.name}") for r in TraceResolution}
_RESOLUTION_FROM_PROTO = {v: k for k, v in _RESOLUTION_TO_PROTO.items()}


def trace_query_to_proto(query: TraceQuery) -> analysis_pb2.TraceRequest:
    return analysis_pb2.TraceRequest(
        workspace_root=query.workspace_root, symbol=query.symbol, relative_path=query.relative_path,
        direction=_DIRECTION_TO_PROTO[query.direction], depth=query.depth, limit=query.limit,
    )


def trace_query_from_proto(message: analysis_pb2.TraceRequest) -> TraceQuery:
    return TraceQuery(
        workspace_root=message.workspace_root, symbol=message.symbol, relative_path=message.relative_path,
        direction=_DIRECTION_FROM_PROTO[message.direction], depth=message.depth, limit=message.limit,
    )


def trace_outcome_to_proto(outcome: TraceOutcome) -> analysis_pb2.TraceResponse:
    root = outcome.root
    return analysis_pb2.TraceResponse(
        root=analysis_pb2.TraceSymbol(relative_path=root.relative_path, qualified_name=root.qualified_name,
                                      start_line=root.start_line, end_line=root.end_line, chunk_id=root.chunk_id),
        nodes=[analysis_pb2.TraceNode(relative_path=n.relative_path, qualified_name=n.qualified_name,
                                      chunk_id=n.chunk_id, line=n.line, snippet=n.snippet, depth=n.depth,
                                      resolved_by=_RESOLUTION_TO_PROTO[n.resolved_by])
               for n in outcome.nodes],
        partial=outcome.partial,
        partial_reason=(analysis_pb2.TRACE_PARTIAL_REASON_UNSPECIFIED if outcome.partial_reason is None
                        else _PARTIAL_TO_PROTO[outcome.partial_reason]),
        total_found=outcome.total_found,
        returned=len(outcome.nodes),
    )


def trace_outcome_from_proto(message: analysis_pb2.TraceResponse) -> TraceOutcome:
    root = message.root
    return TraceOutcome(
        root=TraceRoot(relative_path=root.relative_path, qualified_name=root.qualified_name,
                       start_line=root.start_line, end_line=root.end_line, chunk_id=root.chunk_id),
        # An older service sets no resolution: everything it found came from the checker.
        nodes=tuple(TraceNode(relative_path=n.relative_path, qualified_name=n.qualified_name, chunk_id=n.chunk_id,
                              line=n.line, snippet=n.snippet, depth=n.depth,
                              resolved_by=_RESOLUTION_FROM_PROTO.get(n.resolved_by, TraceResolution.CHECKER))
                    for n in message.nodes),
        partial=message.partial,
        # An unknown (newer) reason still means "partial"; it reads as none rather than failing the call.
        partial_reason=_PARTIAL_FROM_PROTO.get(message.partial_reason),
        total_found=max(message.total_found, len(message.nodes)),
    )


def render_request_to_proto(workspace_root: str, specs: Sequence[RenderRequest]) -> analysis_pb2.RenderSymbolsRequest:
    return analysis_pb2.RenderSymbolsRequest(
        workspace_root=workspace_root,
        specs=[analysis_pb2.RenderSpec(symbol_id=s.symbol_id, expand_child_ids=list(s.expand_child_ids),
                                       relative_path=s.relative_path, focus_line=s.focus_line) for s in specs],
    )


def rendered_to_proto(symbols: Sequence[RenderedSymbol],
                      missing: Sequence[str] = ()) -> analysis_pb2.RenderSymbolsResponse:
    return analysis_pb2.RenderSymbolsResponse(
        symbols=[analysis_pb2.RenderedSymbol(
            symbol_id=s.symbol_id, relative_path=s.relative_path, qualified_name=s.qualified_name, source=s.source,
            token_count=s.token_count, start_line=s.start_line, end_line=s.end_line,
            unknown_child_ids=list(s.unknown_child_ids), window_start_line=s.window_start_line,
            window_end_line=s.window_end_line) for s in symbols],
        missing_symbol_ids=list(missing),
    )


def rendered_from_proto(specs: Sequence[RenderRequest],
                        message: analysis_pb2.RenderSymbolsResponse) -> list[RenderedSymbol | None]:
    """One entry per spec, None where the symbol no longer exists. The service answers found
    specs in request order and leaves missing ones out, so answers are matched to specs in order;
    a symbol is found or missing whatever its expanded children, so two specs of one symbol (plain
    and expanded) never get each other's answer."""
    answers = list(message.symbols)
    out: list[RenderedSymbol | None] = []
    at = 0
    for spec in specs:
        if at < len(answers) and answers[at].symbol_id == spec.symbol_id:
            s = answers[at]
            out.append(RenderedSymbol(symbol_id=s.symbol_id, relative_path=s.relative_path,
                                      qualified_name=s.qualified_name, source=s.source, token_count=s.token_count,
                                      start_line=s.start_line, end_line=s.end_line,
                                      unknown_child_ids=tuple(s.unknown_child_ids),
                                      window_start_line=s.window_start_line, window_end_line=s.window_end_line))
            at += 1
        else:
            out.append(None)
    return out


_FILE_STATUS_FROM_PROTO = {
    analysis_pb2.FILE_STATUS_OK: FileStatus.OK,
    analysis_pb2.FILE_STATUS_SYNTAX_ERRORS: FileStatus.SYNTAX_ERRORS,
    analysis_pb2.FILE_STATUS_SKIPPED: FileStatus.SKIPPED,
}
_FILE_STATUS_TO_PROTO = {v: k for k, v in _FILE_STATUS_FROM_PROTO.items()}


def _skip_reason_name(value: analysis_pb2.SkipReason) -> str:
    if value == analysis_pb2.SKIP_REASON_UNSPECIFIED:
        return ""
    return analysis_pb2.SkipReason.Name(value).removeprefix("SKIP_REASON_").lower()


def _skip_reason_value(name: str) -> analysis_pb2.SkipReason:
    if not name:
        return analysis_pb2.SKIP_REASON_UNSPECIFIED
    return analysis_pb2.SkipReason.Value(f"SKIP_REASON_{name.upper()}")


def file_entry_to_proto(entry: FileEntry) -> analysis_pb2.FileEntry:
    return analysis_pb2.FileEntry(
        relative_path=entry.relative_path,
        size_bytes=entry.size_bytes,
        mtime_ns=entry.mtime_ns,
        content_hash=entry.content_hash,
        language=language_to_proto(entry.language),
    )


def file_entry_from_proto(msg: analysis_pb2.FileEntry) -> FileEntry:
    return FileEntry(
        relative_path=msg.relative_path,
        size_bytes=msg.size_bytes,
        mtime_ns=msg.mtime_ns,
        content_hash=msg.content_hash,
        language=language_from_proto(msg.language),
    )


def skipped_file_from_proto(msg: analysis_pb2.SkippedFile) -> SkippedFile:
    return SkippedFile(msg.relative_path, _skip_reason_name(msg.reason), msg.detail, msg.folder)


def skipped_file_to_proto(skipped: SkippedFile) -> analysis_pb2.SkippedFile:
    return analysis_pb2.SkippedFile(relative_path=skipped.relative_path, reason=_skip_reason_value(skipped.reason),
                                    detail=skipped.detail, folder=skipped.folder)


def scan_request_to_proto(root: str, previous: Iterable[FileEntry], unchanged_since: str = "",
                          *, previous_omitted: bool = False) -> analysis_pb2.ScanWorkspaceRequest:
    return analysis_pb2.ScanWorkspaceRequest(workspace_root=root, previous=[file_entry_to_proto(e) for e in previous],
                                             unchanged_since=unchanged_since, previous_omitted=previous_omitted)


def _chunker_version(msg: analysis_pb2.ScanWorkspaceResponse) -> str:
    return msg.chunker_version or UNVERSIONED_CHUNKER


def scan_result_from_proto(msg: analysis_pb2.ScanWorkspaceResponse) -> ScanResult:
    return ScanResult(
        files=tuple(file_entry_from_proto(f) for f in msg.files),
        added=tuple(msg.added),
        changed=tuple(msg.changed),
        removed=tuple(msg.removed),
        skipped=tuple(skipped_file_from_proto(s) for s in msg.skipped),
        duration_ms=msg.duration_ms,
        chunker_version=_chunker_version(msg),
        watch_token=msg.watch_token,
        unchanged=msg.unchanged,
    )


def scan_result_to_proto(result: ScanResult) -> analysis_pb2.ScanWorkspaceResponse:
    return analysis_pb2.ScanWorkspaceResponse(
        files=[file_entry_to_proto(f) for f in result.files],
        added=list(result.added),
        changed=list(result.changed),
        removed=list(result.removed),
        skipped=[skipped_file_to_proto(s) for s in result.skipped],
        duration_ms=result.duration_ms,
        chunker_version=result.chunker_version,
        watch_token=result.watch_token,
        unchanged=result.unchanged,
    )


def chunked_file_from_proto(msg: analysis_pb2.ChunkFilesResponse) -> ChunkedFile:
    return ChunkedFile(
        relative_path=msg.relative_path,
        status=_FILE_STATUS_FROM_PROTO.get(msg.status, FileStatus.OK),
        chunks=tuple(chunk_from_proto(c) for c in msg.chunks),
        content_hash=msg.content_hash,
        mtime_ns=msg.mtime_ns,
        size_bytes=msg.size_bytes,
        skip_reason=_skip_reason_name(msg.skip_reason),
        skip_detail=msg.skip_detail,
        line_count=msg.line_count,
        diagnostics=tuple(msg.diagnostics),
    )


def chunked_file_to_proto(chunked: ChunkedFile) -> analysis_pb2.ChunkFilesResponse:
    return analysis_pb2.ChunkFilesResponse(
        relative_path=chunked.relative_path,
        status=_FILE_STATUS_TO_PROTO[chunked.status],
        skip_reason=_skip_reason_value(chunked.skip_reason),
        chunks=[chunk_to_proto(c) for c in chunked.chunks],
        content_hash=chunked.content_hash,
        mtime_ns=chunked.mtime_ns,
        size_bytes=chunked.size_bytes,
        skip_detail=chunked.skip_detail,
        line_count=chunked.line_count,
        diagnostics=list(chunked.diagnostics),
    )
