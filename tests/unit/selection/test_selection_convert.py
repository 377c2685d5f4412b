"""Proto <-> domain round trips of the selection messages, and RenderSymbols answers matched to specs."""

from __future__ import annotations

from dataclasses import replace

import pytest

from codecompass.common.chunks import Chunk, Language, NodeKind, SymbolReference
from codecompass.contracts.chunk_convert import UnknownEnumValue
from codecompass.contracts.selection import convert
from codecompass.contracts.selection.model import Candidate, Reason, SelectedResult, SelectOutcome, SelectQuery
from codecompass.v1 import selection_pb2 as pb

CHUNK = Chunk(id="c1", snippet_hash="h", relative_path="src/a.ts", language=Language.TSX, node_kind=NodeKind.METHOD,
              name="run", qualified_name="A.run", parent_id="p", child_ids=("x",), depth=1, signature="run()",
              full_source="", collapsed_source="run() { /* 3 lines collapsed */ }", start_line=4, end_line=6,
              jsdoc="", jsdoc_start_line=0, relevant_imports=("import x from 'x'",), is_test=True,
              embedding_text="e", references=(SymbolReference("B", "class B", "src/b.ts", "b1"),))

RESULT = SelectedResult(chunk_id="c1", relative_path="src/a.ts", start_line=4, end_line=6, qualified_name="A.run",
                        node_kind=NodeKind.CLASS, language=Language.JAVASCRIPT, score=0.75, relevance=0.5,
                        provenance="hybrid", reasons=(Reason.MATCH, Reason.MERGED_PARENT), why="match (score 0.75)",
                        header="// src/a.ts > A.run", source="run() {}", token_count=12, expanded_child_ids=("x",),
                        clipped=True, lines_omitted=3, connected_ids=("h1", "h2"))


@pytest.mark.parametrize(("min_relevance", "index_fresh"), [(None, False), (0.0, True), (0.4, False)])
def test_query_round_trip(min_relevance: float | None, index_fresh: bool) -> None:
    query = SelectQuery(workspace_root="/ws", max_tokens=123, min_relevance=min_relevance, index_fresh=index_fresh,
                        candidates=(
        Candidate(CHUNK, 0.5, Reason.MATCH, "lexical", relevance=0.75),
        Candidate(CHUNK, 0.25, Reason.HUB, "structure", ("a", "b"), relevance=0.0),
        Candidate(CHUNK, 0.0, Reason.MATCH, ""),
    ))
    message = convert.query_to_proto(query)
    assert [c.HasField("relevance") for c in message.candidates] == [True, True, False]
    # The code view travels: what the selection never reads (the embedded text, the references) stays home.
    code_view = replace(CHUNK, embedding_text="", references=())
    assert convert.query_from_proto(message) == replace(
        query, candidates=tuple(replace(c, chunk=code_view) for c in query.candidates))


def test_unset_reason_and_relevance_mean_match_and_none() -> None:
    message = pb.SelectRequest(candidates=[pb.SelectCandidate()])
    message.candidates[0].chunk.language = 1
    message.candidates[0].chunk.node_kind = 1
    query = convert.query_from_proto(message)
    assert query.candidates[0].reason is Reason.MATCH and query.candidates[0].relevance is None
    assert query.min_relevance is None and query.max_tokens == 0 and not query.index_fresh
    message.candidates[0].reason = pb.SELECTION_REASON_MERGED_PARENT
    with pytest.raises(UnknownEnumValue):
        convert.query_from_proto(message)


def test_outcome_round_trip_keeps_every_field() -> None:
    outcome = SelectOutcome(results=(RESULT, SelectedResult(
        chunk_id="c2", relative_path="b.ts", start_line=1, end_line=1, qualified_name="<module top level>",
        node_kind=NodeKind.MODULE, language=Language.TYPESCRIPT, score=0.25, relevance=0.125, provenance="",
        reasons=(Reason.HUB,), why="hub: connects 0 results", header="// b.ts", source="", token_count=3)),
        total_tokens=15, max_tokens=8000, min_relevance=0.5, below_relevance=1, over_budget=2, merged=3,
        render_fallback=True, render_fallback_reason="render_timeout", duration_ms=1.5)
    message = convert.outcome_to_proto(outcome)
    assert message.results[0].reasons == [pb.SELECTION_REASON_MATCH, pb.SELECTION_REASON_MERGED_PARENT]
    assert convert.outcome_from_proto(message) == outcome
    # every proto field is set by the conversion (none left at a silent default by omission)
    assert {f.name for f, _ in message.results[0].ListFields()} == {f.name for f in pb.SelectedResult.DESCRIPTOR.fields}
