"""Selection's gate (a small budget for low confidence, a noise floor otherwise), merging only
when the kept children cover their parent, and an answer filled in the ranking's order."""

from __future__ import annotations

from collections.abc import Sequence

from tests.unit.selection.test_engine import ROOT, FakeRenderer, accounted, chunk, ids

from codecompass.common.chunks import Chunk, NodeKind
from codecompass.common.config import SelectionSettings
from codecompass.contracts.selection.model import Candidate, SelectOutcome, SelectQuery
from codecompass.policy.selection import LOW_CONFIDENCE_MAX_TOKENS
from codecompass.selection.engine import SelectionEngine


def sent(*pairs: tuple[Chunk, float], scores: Sequence[float] | None = None) -> list[Candidate]:
    """Candidates in ranking order with the relevance the gateway's policy gave them."""
    scores = scores or [1.0 - i / 100 for i in range(len(pairs))]
    return [Candidate(c, score, relevance=rel) for (c, rel), score in zip(pairs, scores, strict=True)]


def run(candidates: Sequence[Candidate], renderer: FakeRenderer | None = None, **request) -> SelectOutcome:
    renderer = renderer or FakeRenderer([c.chunk for c in candidates])
    return SelectionEngine(SelectionSettings(), renderer).select(SelectQuery(ROOT, tuple(candidates), **request))


# --- the gate --------------------------------------------------------------------------------------


def test_a_low_confidence_answer_is_flagged_not_cut_to_two() -> None:
    # The best candidate is below min_relevance (0.5): every candidate that matched is kept, in the
    # ranking's order, within the request's budget (the ranked list, flagged).
    cands = sent(*((chunk(f"c{i}", path=f"src/c{i}.ts"), 0.45 - i * 0.05) for i in range(5)))
    outcome = run(cands)
    assert ids(outcome) == ["c0", "c1", "c2", "c3", "c4"] and outcome.below_relevance == 0 and accounted(outcome, 5)
    assert outcome.max_tokens == SelectionSettings().max_tokens


def test_a_low_confidence_answer_stops_at_its_small_budget_in_ranking_order() -> None:
    # Asked for the small budget (the gateway's, for a question likely without an answer here).
    cands = sent(*((chunk(f"c{i}", path=f"src/c{i}.ts"), 0.2) for i in range(20)))
    outcome = run(cands, FakeRenderer([c.chunk for c in cands], sizes={f"c{i}": 20 for i in range(20)}),
                  max_tokens=LOW_CONFIDENCE_MAX_TOKENS)
    assert 2 < len(outcome.results) < 20 and outcome.total_tokens <= LOW_CONFIDENCE_MAX_TOKENS
    assert ids(outcome) == [f"c{i}" for i in range(len(outcome.results))] and outcome.over_budget > 0
    assert accounted(outcome, 20)
    # A request asking for less than the small budget gets what it asked for.
    assert run(cands, max_tokens=300).max_tokens == 300


def test_a_query_that_matched_nothing_stays_empty_without_a_render_call() -> None:
    renderer = FakeRenderer([chunk("a"), chunk("b")])
    outcome = run(sent((chunk("a"), 0.0), (chunk("b"), 0.0)), renderer)
    assert outcome.results == () and outcome.below_relevance == 2 and renderer.calls == []
    assert run([]).results == ()


def test_a_confident_answer_keeps_every_candidate_that_matched() -> None:
    cands = sent((chunk("a"), 0.8), (chunk("b", path="src/b.ts"), 0.3), (chunk("c", path="src/c.ts"), 0.01),
                 (chunk("d", path="src/d.ts"), 0.0))
    outcome = run(cands)
    # b and c are below min_relevance, but the answer is confident: they are kept, for the budget to
    # reach; d matched nothing.
    assert ids(outcome) == ["a", "b", "c"] and outcome.below_relevance == 1


def test_the_request_gate_decides_low_confidence() -> None:
    cands = sent((chunk("a"), 0.6), (chunk("b", path="src/b.ts"), 0.35), (chunk("c", path="src/c.ts"), 0.1))
    # min_relevance 0.9: the best (0.6) is below it, a low-confidence answer of all that matched
    assert ids(run(cands, min_relevance=0.9)) == ["a", "b", "c"]
    # min_relevance 0.6: confident, and every candidate that matched is kept
    assert ids(run(cands, min_relevance=0.6)) == ["a", "b", "c"]
    assert ids(run(cands, min_relevance=0.0)) == ["a", "b", "c"]  # 0 keeps every candidate that matched


# --- merging ------------------------------------------------------------------------------------------


def test_children_covering_their_parent_merge_into_it() -> None:
    cls = chunk("cls", kind=NodeKind.CLASS, lines=20, start=1)
    m1 = chunk("m1", parent="cls", kind=NodeKind.METHOD, lines=9, start=2)
    m2 = chunk("m2", parent="cls", kind=NodeKind.METHOD, lines=9, start=11)
    other = chunk("other", path="src/other.ts")
    outcome = run(sent((m1, 0.9), (other, 0.8), (m2, 0.7), (cls, 0.6)))
    # 18 of 20 lines are the kept methods': the class adds its signature, one result shows both
    assert ids(outcome) == ["cls", "other"] and outcome.results[0].expanded_child_ids == ("m1", "m2")
    assert outcome.merged == 2 and accounted(outcome, 4)


def test_a_child_covering_little_of_its_parent_stays_separate_and_no_expansion_is_rendered() -> None:
    cls = chunk("cls", kind=NodeKind.CLASS, lines=30)
    method = chunk("m", parent="cls", kind=NodeKind.METHOD, lines=3, start=5)
    renderer = FakeRenderer([cls, method])
    outcome = run(sent((method, 0.9), (cls, 0.7)), renderer)
    # The merge would show 27 class lines no ranking picked at the method's place: both stand at their own
    assert ids(outcome) == ["m", "cls"] and outcome.merged == 0
    assert all(not spec.expand_child_ids for spec in renderer.calls[0])


# --- the ranking's order --------------------------------------------------------------------------------


def test_the_answer_is_filled_in_the_order_sent_not_by_score() -> None:
    # A hub the gateway placed second with a lower score than the third stays second.
    cands = sent((chunk("a"), 0.9), (chunk("hub", path="src/hub.ts"), 0.8), (chunk("c", path="src/c.ts"), 0.7),
                 scores=[0.9, 0.5, 0.8])
    assert ids(run(cands)) == ["a", "hub", "c"]
