"""The CLI's proto edge: requests from arguments, printable values from responses."""

from __future__ import annotations

from codecompass_cli.convert import chunk_files_request, file_chunks_from_proto

from codecompass.common.chunk_convert import chunk_to_proto
from codecompass.common.chunks import Chunk, Language, NodeKind
from codecompass.v1 import analysis_pb2

CHUNK = Chunk(
    id="c1", snippet_hash="s", relative_path="a.ts", language=Language.TSX,
    node_kind=NodeKind.COMPONENT, name="LoginForm", qualified_name="LoginForm", parent_id="", child_ids=("c2",),
    depth=0, signature="function LoginForm(props)", full_source="x", collapsed_source="x", start_line=3,
    end_line=9, jsdoc="", jsdoc_start_line=0, relevant_imports=(), is_test=False, embedding_text="e",
)


def test_chunk_files_response_becomes_file_chunks() -> None:
    msg = analysis_pb2.ChunkFilesResponse(
        relative_path="a.ts", status=analysis_pb2.FILE_STATUS_SYNTAX_ERRORS, diagnostics=["3:1 ';' expected"],
        chunks=[chunk_to_proto(CHUNK)], line_count=12)
    result = file_chunks_from_proto(msg)
    assert (result.status, result.skip_reason, result.line_count) == ("syntax_errors", "", 12)
    assert result.diagnostics == ("3:1 ';' expected",)
    assert result.chunks == (CHUNK,)


def test_skipped_file_keeps_reason_and_detail() -> None:
    msg = analysis_pb2.ChunkFilesResponse(
        relative_path="vendor.min.js", status=analysis_pb2.FILE_STATUS_SKIPPED,
        skip_reason=analysis_pb2.SKIP_REASON_MINIFIED, skip_detail="longest line 48213 chars")
    result = file_chunks_from_proto(msg)
    assert (result.status, result.skip_reason, result.skip_detail) == (
        "skipped", "minified", "longest line 48213 chars")


def test_chunk_files_request_carries_every_argument() -> None:
    request = chunk_files_request("/ws", ["src"], True)
    assert (request.workspace_root, list(request.paths), request.include_references) == ("/ws", ["src"], True)

