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
from codecompass.v1 import analysis_pb2


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

