"""The analysis client's conversions survive a round trip through the wire messages."""

from __future__ import annotations

from codecompass.common.chunks import Chunk, Language, NodeKind
from codecompass.contracts.analysis import convert
from codecompass.contracts.analysis.model import (
    ChunkedFile,
    FileStatus,
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
from codecompass.contracts.chunk_convert import chunk_to_proto
from codecompass.v1 import analysis_pb2


def test_trace_queries_round_trip_in_every_direction() -> None:
    for direction in TraceDirection:
        query = TraceQuery("/ws", "A.run", direction, relative_path="src/a.ts", depth=2, limit=7)
        assert convert.trace_query_from_proto(convert.trace_query_to_proto(query)) == query


def test_trace_outcomes_round_trip() -> None:
    nodes = (TraceNode("src/b.ts", "main", "id-b", 12, "a.run()", 1),
             TraceNode("src/c.ts", "", "", 2, "x", 2, TraceResolution.NAME))
    for reason in (None, *TracePartialReason):
        outcome = TraceOutcome(TraceRoot("src/a.ts", "A.run", 3, 9, "id-a"), nodes, reason is not None, reason, 9)
        assert convert.trace_outcome_from_proto(convert.trace_outcome_to_proto(outcome)) == outcome


def test_render_messages_round_trip() -> None:
    spec = RenderRequest("id-a", ("id-b",), "src/a.ts", focus_line=5)
    message = convert.render_request_to_proto("/ws", [spec])
    assert (message.workspace_root, message.specs[0].symbol_id, list(message.specs[0].expand_child_ids),
            message.specs[0].relative_path, message.specs[0].focus_line) == ("/ws", "id-a", ["id-b"], "src/a.ts", 5)
    symbol = RenderedSymbol("id-a", "src/a.ts", "A", "class A { }", 4, 1, 9, ("id-x",),
                            window_start_line=3, window_end_line=6)
    gone = RenderRequest("gone", (), "src/g.ts")
    assert convert.rendered_from_proto([spec, gone], convert.rendered_to_proto([symbol], ["gone"])) == [symbol, None]


def test_render_answers_match_specs_in_order_with_missing_ones_left_out() -> None:
    specs = [RenderRequest("a", (), "a.ts"), RenderRequest("a", ("a1",), "a.ts"), RenderRequest("gone", (), "g.ts"),
             RenderRequest("b", (), "b.ts")]
    bare = RenderedSymbol("a", "a.ts", "A", "bare", 1, 1, 9)
    full = RenderedSymbol("a", "a.ts", "A", "full", 1, 1, 9, ("zz",))
    b = RenderedSymbol("b", "b.ts", "B", "b", 1, 3, 4)
    response = convert.rendered_to_proto([bare, full, b], ["gone"])
    assert convert.rendered_from_proto(specs, response) == [bare, full, None, b]


CHUNK = Chunk(id="c", snippet_hash="h", relative_path="src/a.ts", language=Language.TYPESCRIPT,
              node_kind=NodeKind.CLASS, name="A", qualified_name="A", parent_id="", child_ids=("d",), depth=1,
              signature="class A", full_source="class A {}", collapsed_source="class A {}", start_line=1,
              end_line=1, jsdoc="", jsdoc_start_line=0, relevant_imports=(), is_test=False, embedding_text="A")


def test_a_chunk_files_answer_reads_as_file_chunks() -> None:
    message = analysis_pb2.ChunkFilesResponse(
        relative_path="src/a.ts", status=analysis_pb2.FILE_STATUS_SYNTAX_ERRORS, diagnostics=["3:1 ';' expected"],
        chunks=[chunk_to_proto(CHUNK)], line_count=12)
    assert convert.chunked_file_from_proto(_wire(message)) == ChunkedFile(
        "src/a.ts", FileStatus.SYNTAX_ERRORS, (CHUNK,), line_count=12, diagnostics=("3:1 ';' expected",))


def test_a_skipped_file_keeps_its_reason_and_detail() -> None:
    message = analysis_pb2.ChunkFilesResponse(
        relative_path="vendor.min.js", status=analysis_pb2.FILE_STATUS_SKIPPED,
        skip_reason=analysis_pb2.SKIP_REASON_MINIFIED, skip_detail="longest line 48213 chars")
    assert convert.chunked_file_from_proto(_wire(message)) == ChunkedFile(
        "vendor.min.js", FileStatus.SKIPPED, (), skip_reason="minified", skip_detail="longest line 48213 chars")


def _wire(message: analysis_pb2.ChunkFilesResponse) -> analysis_pb2.ChunkFilesResponse:
    return analysis_pb2.ChunkFilesResponse.FromString(message.SerializeToString())
