"""Edge conversion between the analysis service's Trace / RenderSymbols / ChunkFiles messages and
the domain types of `codecompass.clients.analysis`. ScanWorkspace and ChunkFiles as indexing reads
them convert in `codecompass.retrieval.convert`, which this module reuses for ChunkFiles' answer."""

from __future__ import annotations

from collections.abc import Sequence

from codecompass.clients.analysis_model import (
    FileChunks,
    RenderedSymbol,
    RenderRequest,
    TraceDirection,
    TraceNode,
    TraceOutcome,
    TracePartialReason,
    TraceQuery,
    TraceResolution,
    TraceRoot,
)
from codecompass.retrieval.convert import chunked_file_from_proto
from codecompass.v1 import analysis_pb2

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


def file_chunks_from_proto(message: analysis_pb2.ChunkFilesResponse) -> FileChunks:
    """Read through retrieval's decoder of the message, so status, skip reason and chunks are read
    in one place for every caller; the reader's own fields come on top."""
    chunked = chunked_file_from_proto(message)
    return FileChunks(
        relative_path=chunked.relative_path,
        status=chunked.status.value,
        chunks=chunked.chunks,
        line_count=message.line_count,
        skip_reason=chunked.skip_reason,
        skip_detail=chunked.skip_detail,
        diagnostics=tuple(message.diagnostics),
    )
