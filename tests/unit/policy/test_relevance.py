"""Relevance and focus (policy.relevance): what the gateway sends selection. Pure; no services."""

from __future__ import annotations

from dataclasses import replace

import pytest

from codecompass.common.chunks import Chunk, Language, NodeKind
from codecompass.policy.relevance import (
    DEFAULT_RELEVANCE,
    QueryFocus,
    focus_factor,
    focused_scores,
    priority,
    relevance,
    resolve_focus,
)
from codecompass.policy.shape import analyze


def chunk(id: str, path: str = "src/router.ts", is_test: bool = False) -> Chunk:
    return Chunk(id=id, snippet_hash="h", relative_path=path, language=Language.TYPESCRIPT,
                 node_kind=NodeKind.FUNCTION, name=id, qualified_name=id, parent_id="", child_ids=(), depth=0,
                 signature="", full_source="", collapsed_source="", start_line=1, end_line=3, jsdoc="",
                 jsdoc_start_line=0, relevant_imports=(), is_test=is_test, embedding_text="")


def test_focus_is_judged_from_the_shape() -> None:
    assert resolve_focus(QueryFocus.AUTO, analyze("where is the router tested? Tests for routes")) is QueryFocus.TESTS
    assert resolve_focus(QueryFocus.AUTO, analyze("router.test.ts")) is QueryFocus.TESTS
    assert resolve_focus(QueryFocus.AUTO, analyze("how does routing work")) is QueryFocus.IMPLEMENTATION
    assert resolve_focus(QueryFocus.NONE, analyze("unit tests")) is QueryFocus.NONE


def test_focus_reads_the_shape_it_is_given_not_the_text() -> None:
    # The one judgement of the query: a shape that says "about tests" decides, whatever the words.
    shape = analyze("how does routing work")
    about_tests = replace(shape, mentions_tests=True)
    assert resolve_focus(QueryFocus.AUTO, about_tests) is QueryFocus.TESTS


def test_relevance_is_confidence_times_a_root_of_the_relative_score() -> None:
    e = DEFAULT_RELEVANCE.relative_exponent
    assert 0.0 < e < 1.0
    values = relevance([0.9, 0.6, 0.3], [chunk("a"), chunk("b"), chunk("c")], 0.8, QueryFocus.NONE)
    assert values == pytest.approx([0.8, 0.8 * (0.6 / 0.9) ** e, 0.8 * (0.3 / 0.9) ** e])
    assert relevance([0.0, 0.0], [chunk("a"), chunk("b")], 0.9, QueryFocus.NONE) == [0.0, 0.0]
    assert relevance([], [], 0.9, QueryFocus.NONE) == []


def test_implementation_focus_lowers_test_code_by_path_or_by_the_chunkers_flag() -> None:
    impl, by_path, flagged = chunk("route"), chunk("t", "tests/router.test.ts"), chunk("h", "src/h.ts", is_test=True)
    values = relevance([1.0, 0.7, 0.7], [impl, by_path, flagged], 0.8, QueryFocus.IMPLEMENTATION)
    # tests: 0.8 x 0.7^e x the focus multiplier 0.7
    e = DEFAULT_RELEVANCE.relative_exponent
    assert values == pytest.approx([0.8, 0.8 * 0.7 ** e * 0.7, 0.8 * 0.7 ** e * 0.7])
    assert focus_factor(QueryFocus.IMPLEMENTATION, impl) == 1.0


def test_tests_focus_lowers_the_implementation_and_auto_or_none_lower_nothing() -> None:
    impl, test = chunk("route"), chunk("t", "tests/router.test.ts")
    assert relevance([1.0, 0.8], [impl, test], 0.8, QueryFocus.TESTS)[0] == pytest.approx(0.56)
    for focus in (QueryFocus.NONE, QueryFocus.AUTO):
        assert focus_factor(focus, impl) == focus_factor(focus, test) == 1.0
    assert DEFAULT_RELEVANCE.focus_multiplier == 0.7


def test_relevance_stays_within_zero_and_one() -> None:
    assert relevance([2.0, -1.0], [chunk("a"), chunk("b")], 1.0, QueryFocus.NONE) == [1.0, 0.0]


def test_a_ranked_list_takes_a_set_focus_on_its_scores() -> None:
    chunks = [chunk("impl"), chunk("spec", path="src/router.test.ts")]
    assert focused_scores([0.9, 0.8], chunks, QueryFocus.IMPLEMENTATION) == pytest.approx([0.9, 0.8 * 0.7])
    assert focused_scores([0.9, 0.8], chunks, QueryFocus.TESTS) == pytest.approx([0.9 * 0.7, 0.8])
    assert focused_scores([0.9, 0.8], chunks, QueryFocus.NONE) == [0.9, 0.8]


def test_a_results_priority_is_its_relevance_else_its_score_against_the_best() -> None:
    assert priority(0.42, 0.9, 0.9) == 0.42  # selection ran: the relevance the gate read
    assert priority(None, 0.45, 0.9) == 0.5  # a ranked list: relative to the best
    assert priority(None, 0.3, 0.0) == 0.0 and priority(1.7, 0.3, 0.3) == 1.0 and priority(-0.1, 0.3, 0.3) == 0.0
    assert priority(None, 1 / 3, 1.0) == 0.3333
