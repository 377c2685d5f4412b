"""The CLI's edge with the wire: requests built from arguments, responses turned
into plain dicts and dataclasses that the printers and ``--json`` use.

Enum values leave here as lowercase strings without their prefix
("INDEXING_STATUS_READY" -> "ready"), the form the JSON output promises.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

from codecompass.common.chunk_convert import chunk_from_proto, node_kind_to_proto
from codecompass.common.chunks import Chunk, NodeKind
from codecompass.v1 import analysis_pb2, retrieval_pb2

SYNC_FIELDS = (
    "files_added", "files_changed", "files_removed", "files_skipped", "chunks_upserted",
    "chunks_deleted", "chunks_embedded", "embeddings_reused", "cascade_reembedded", "duration_ms",
)


def enum_str(enum_type: EnumTypeWrapper, value: int, prefix: str) -> str:
    try:
        name = enum_type.Name(value)
    except ValueError:
        return f"unknown({value})"
    return name.removeprefix(prefix).lower()


@dataclass(frozen=True)
class FileChunks:
    """Outcome of chunking one file."""

    relative_path: str
    status: str  # ok | syntax_errors | skipped
    skip_reason: str
    skip_detail: str
    diagnostics: tuple[str, ...]
    line_count: int
    chunks: tuple[Chunk, ...] = field(default_factory=tuple)


def chunk_files_request(workspace_root: str, paths: Sequence[str], include_references: bool
                        ) -> analysis_pb2.ChunkFilesRequest:
    return analysis_pb2.ChunkFilesRequest(
        workspace_root=workspace_root, paths=list(paths), include_references=include_references
    )


def file_chunks_from_proto(msg: analysis_pb2.ChunkFilesResponse) -> FileChunks:
    return FileChunks(
        relative_path=msg.relative_path,
        status=enum_str(analysis_pb2.FileStatus, msg.status, "FILE_STATUS_"),
        skip_reason=(
            enum_str(analysis_pb2.SkipReason, msg.skip_reason, "SKIP_REASON_")
            if msg.skip_reason != analysis_pb2.SKIP_REASON_UNSPECIFIED else ""
        ),
        skip_detail=msg.skip_detail,
        diagnostics=tuple(msg.diagnostics),
        line_count=msg.line_count,
        chunks=tuple(chunk_from_proto(chunk) for chunk in msg.chunks),
    )


@dataclass(frozen=True)
class IndexProgress:
    phase: str  # scanning | chunking | writing | embedding | done
    files_done: int
    files_total: int
    chunks_done: int
    embeddings_done: int
    embeddings_total: int
    embeddings_per_second: float
    eta_seconds: float | None
    stats: dict[str, float] | None


def index_request(workspace_root: str, wait_for_embeddings: bool) -> retrieval_pb2.IndexWorkspaceRequest:
    return retrieval_pb2.IndexWorkspaceRequest(
        workspace_root=workspace_root, wait_for_embeddings=wait_for_embeddings
    )


def sync_stats_to_dict(stats: retrieval_pb2.SyncStats) -> dict[str, float]:
    return {name: getattr(stats, name) for name in SYNC_FIELDS}


def index_progress_from_proto(msg: retrieval_pb2.IndexWorkspaceResponse) -> IndexProgress:
    return IndexProgress(
        phase=enum_str(retrieval_pb2.IndexPhase, msg.phase, "INDEX_PHASE_"),
        files_done=msg.files_done,
        files_total=msg.files_total,
        chunks_done=msg.chunks_done,
        embeddings_done=msg.embeddings_done,
        embeddings_total=msg.embeddings_total,
        embeddings_per_second=msg.embeddings_per_second,
        eta_seconds=msg.eta_seconds if msg.eta_seconds >= 0 else None,
        stats=sync_stats_to_dict(msg.stats) if msg.HasField("stats") else None,
    )


def search_request(
    workspace_root: str,
    query: str,
    *,
    limit: int = 0,
    kinds: Iterable[str] = (),
    path_patterns: Iterable[str] = (),
    exclude_tests: bool = False,
    semantic_ratio: float | None = None,
    skip_sync: bool = False,
) -> retrieval_pb2.SearchRequest:
    # The CLI shows code with children collapsed; complete sources of large symbols would only
    # be cut again here.
    request = retrieval_pb2.SearchRequest(
        workspace_root=workspace_root,
        query=query,
        limit=limit,
        filters=retrieval_pb2.SearchFilters(
            path_patterns=list(path_patterns),
            node_kinds=[node_kind_to_proto(NodeKind(kind)) for kind in kinds],
            exclude_tests=exclude_tests,
        ),
        skip_sync=skip_sync,
        view=retrieval_pb2.RESULT_VIEW_CODE,
    )
    if semantic_ratio is not None:
        request.semantic_ratio = semantic_ratio
    return request


def clip_code(code: str, max_lines: int) -> tuple[str, int]:
    """The first `max_lines` lines of `code` and how many were left out: a symbol with nothing
    to collapse (a 40k-line generated function) is never pasted whole."""
    lines = code.splitlines()
    if max_lines <= 0 or len(lines) <= max_lines:
        return code, 0
    return "\n".join(lines[:max_lines]), len(lines) - max_lines


def search_result_to_dict(result: retrieval_pb2.SearchResult, max_code_lines: int = 0) -> dict[str, Any]:
    chunk = chunk_from_proto(result.chunk)
    code, omitted = clip_code(chunk.collapsed_source, max_code_lines)
    return {
        "path": chunk.relative_path,
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "qualified_name": chunk.qualified_name,
        "kind": chunk.node_kind.value,
        "score": round(result.score, 6),
        "lexical_score": round(result.lexical_score, 6),
        "vector_similarity": round(result.vector_similarity, 6),
        "provenance": enum_str(retrieval_pb2.Provenance, result.provenance, "PROVENANCE_"),
        "id": chunk.id,
        "signature": chunk.signature,
        "fusion_score": round(result.fusion_score, 6),
        "signals": {name: round(value, 4) for name, value in sorted(result.signals.items())},
        "code": code,
        "code_lines_omitted": omitted,
    }


def search_metadata_to_dict(meta: retrieval_pb2.SearchMetadata) -> dict[str, Any]:
    return {
        "indexing_status": enum_str(retrieval_pb2.IndexingStatus, meta.indexing_status, "INDEXING_STATUS_"),
        "result_completeness": enum_str(
            retrieval_pb2.ResultCompleteness, meta.result_completeness, "RESULT_COMPLETENESS_"
        ),
        "semantic_fallback": meta.semantic_fallback,
        "semantic_skipped_reason": meta.semantic_skipped_reason,
        "semantic_ratio_used": round(meta.semantic_ratio_used, 6),
        "external_provider_blocked": meta.external_provider_blocked,
        "embedding_model_id": meta.embedding_model_id,
        "embedding_model_version": meta.embedding_model_version,
        "sync_ms": round(meta.sync_ms, 3),
        "search_ms": round(meta.search_ms, 3),
        "total_chunks": meta.total_chunks,
        "embedded_chunks": meta.embedded_chunks,
        "total_candidates": meta.total_candidates,
        "sync": sync_stats_to_dict(meta.sync),
    }


def search_response_to_dict(response: retrieval_pb2.SearchResponse, max_code_lines: int = 0) -> dict[str, Any]:
    return {
        "results": [search_result_to_dict(result, max_code_lines) for result in response.results],
        "metadata": search_metadata_to_dict(response.metadata),
    }
