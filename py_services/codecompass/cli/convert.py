"""The CLI's edge with the wire: requests built from arguments, responses turned
into plain dicts and dataclasses that the printers and ``--json`` use.

Enum values leave here as lowercase strings without their prefix
("INDEXING_STATUS_READY" -> "ready"), the form the JSON output promises.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from google.protobuf.internal.enum_type_wrapper import EnumTypeWrapper

from codecompass.common.chunk_convert import chunk_from_proto
from codecompass.common.chunks import Chunk
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
