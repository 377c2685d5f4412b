"""Selection: the gate on the relevance it is sent, merging, budget, clipping, render fallback (no servers)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pytest

from codecompass.common.chunks import Chunk, Language, NodeKind
from codecompass.common.config import SelectionSettings, settings_from
from codecompass.common.tokens import count_tokens
from codecompass.contracts.analysis.model import RenderedSymbol, RenderRequest
from codecompass.contracts.selection.model import (
    FALLBACK_MISSING,
    FALLBACK_UNAVAILABLE,
    Candidate,
    Reason,
    SelectOutcome,
    SelectQuery,
)
from codecompass.policy.relevance import DEFAULT_RELEVANCE, QueryFocus, relevance, resolve_focus
from codecompass.policy.selection import LOW_CONFIDENCE_MAX_TOKENS
from codecompass.policy.shape import analyze
from codecompass.selection import engine
from codecompass.selection.engine import (
    CLIP_MIN_TOKENS,
    SelectionEngine,
    clip,
    file_line_numbers,
)
from codecompass.selection.render_client import RenderFailed

ROOT = "/ws"


def chunk(id: str, *, name: str | None = None, path: str = "src/auth.ts", parent: str = "",
          kind: NodeKind = NodeKind.FUNCTION, lines: int = 3, start: int = 1, is_test: bool = False,
          qualified_name: str | None = None) -> Chunk:
    name = name or id
    body = "\n".join([f"function {name}() {{", *[f"  step{i}();" for i in range(max(lines - 2, 0))], "}"])
    return Chunk(id=id, snippet_hash="h", relative_path=path, language=Language.TYPESCRIPT, node_kind=kind,
                 name=name, qualified_name=qualified_name or name, parent_id=parent, child_ids=(), depth=0,
                 signature=f"function {name}()", full_source="", collapsed_source=f"/* stored */\n{body}",
                 start_line=start, end_line=start + lines - 1, jsdoc="", jsdoc_start_line=0,
                 relevant_imports=(), is_test=is_test, embedding_text="")


class FakeRenderer:
    """Renders `<id> expands [<ids>]` plus the symbol's stored lines; `sizes` makes a symbol long."""

    def __init__(self, chunks: Sequence[Chunk], *, missing: Sequence[str] = (), sizes: dict[str, int] | None = None,
                 fail: RenderFailed | None = None) -> None:
        self.by_id = {c.id: c for c in chunks}
        self.missing = set(missing)
        self.sizes = sizes or {}
        self.fail = fail
        self.calls: list[list[RenderRequest]] = []

    def render(self, workspace_root: str, specs: Sequence[RenderRequest]) -> list[RenderedSymbol | None]:
        assert workspace_root == ROOT
        self.calls.append(list(specs))
        if self.fail is not None:
            raise self.fail
        out: list[RenderedSymbol | None] = []
        for spec in specs:
            if spec.symbol_id in self.missing:
                out.append(None)
                continue
            c = self.by_id[spec.symbol_id]
            lines = [f"class {c.name} {{ // rendered, expands [{', '.join(spec.expand_child_ids)}]"]
            for child in spec.expand_child_ids:
                lines += [f"  {self.by_id[child].name}() {{", *["    work();"] * self.sizes.get(child, 1), "  }"]
            lines += [f"  line{i} = {i};" for i in range(self.sizes.get(c.id, 1))] + ["}"]
            source = "\n".join(lines)
            # Counted as the analysis service counts a rendering.
            out.append(RenderedSymbol(c.id, c.relative_path, c.qualified_name, source, count_tokens(source),
                                      c.start_line, c.end_line))
        return out


def select(candidates: Sequence[Candidate], renderer: FakeRenderer | None = None, *, confidence: float = 1.0,
           query: str = "how does auth work", focus: QueryFocus = QueryFocus.AUTO,
           settings: SelectionSettings | None = None, **request) -> SelectOutcome:
    """Selection as the gateway calls it: each candidate carries the relevance policy's relevance."""
    renderer = renderer or FakeRenderer([])
    for c in candidates:
        renderer.by_id.setdefault(c.chunk.id, c.chunk)
    values = relevance([c.score for c in candidates], [c.chunk for c in candidates], confidence,
                       resolve_focus(focus, analyze(query)))
    sent = tuple(replace(c, relevance=value) for c, value in zip(candidates, values, strict=True))
    engine = SelectionEngine(settings or SelectionSettings(), renderer)
    return engine.select(SelectQuery(ROOT, sent, **request))


def ids(outcome: SelectOutcome) -> list[str]:
    return [r.chunk_id for r in outcome.results]


def accounted(outcome: SelectOutcome, offered: int) -> bool:
    """Every candidate is a result, merged into one, below the gate, or over the budget."""
    return len(outcome.results) + outcome.merged + outcome.below_relevance + outcome.over_budget == offered


# --- the gate ---------------------------------------------------------------------------------------


def test_gate_keeps_relevant_candidates_and_never_pads() -> None:
    cands = [Candidate(chunk("a"), 0.9), Candidate(chunk("b"), 0.6), Candidate(chunk("c"), 0.0)]
    outcome = select(cands, confidence=0.8)
    # relevance = confidence x (score / best) ** e (e = 0.25): 0.8, 0.723, 0 (nothing matched: never kept)
    assert ids(outcome) == ["a", "b"]
    assert outcome.below_relevance == 1 and outcome.min_relevance == 0.5 and accounted(outcome, 3)
    assert outcome.results[1].relevance == pytest.approx(0.8 * (0.6 / 0.9) ** DEFAULT_RELEVANCE.relative_exponent)


def test_low_confidence_gives_the_closest_within_the_budget_asked_for() -> None:
    renderer = FakeRenderer([chunk("a"), chunk("b"), chunk("c")])
    offered = [Candidate(chunk("a"), 0.9), Candidate(chunk("b"), 0.8), Candidate(chunk("c"), 0.7)]
    outcome = select(offered, renderer, confidence=0.2)
    assert ids(outcome) == ["a", "b", "c"] and outcome.below_relevance == 0
    assert outcome.max_tokens == SelectionSettings().max_tokens
    # The gateway asks for the small budget when the question likely has no answer here.
    assert select(offered, renderer, confidence=0.2, max_tokens=LOW_CONFIDENCE_MAX_TOKENS).max_tokens \
        == LOW_CONFIDENCE_MAX_TOKENS


def test_request_gate_overrides_the_default() -> None:
    cands = [Candidate(chunk("a"), 0.9), Candidate(chunk("b"), 0.3), Candidate(chunk("c"), 0.2)]
    outcome = select(cands, confidence=0.3, min_relevance=0.05)
    assert ids(outcome) == ["a", "b", "c"] and outcome.min_relevance == 0.05
    assert select(cands, confidence=1.0, min_relevance=1.0).results[0].chunk_id == "a"
    unsure = select(cands, confidence=0.9, settings=SelectionSettings(min_relevance=0.95))
    # Unsure but near the gate: the whole ranked list within the request's budget, flagged.
    assert ids(unsure) == ["a", "b", "c"] and unsure.max_tokens > LOW_CONFIDENCE_MAX_TOKENS


# --- relevance as sent --------------------------------------------------------------------------------


def test_the_gate_reads_the_relevance_it_is_sent_not_the_score() -> None:
    # The caller's policy judged the higher-scored candidate not relevant at all: selection gates on
    # that judgement and judges nothing itself.
    cands = [Candidate(chunk("a"), 0.9, relevance=0.0), Candidate(chunk("b"), 0.4, relevance=0.8)]
    engine = SelectionEngine(SelectionSettings(), FakeRenderer([c.chunk for c in cands]))
    outcome = engine.select(SelectQuery(ROOT, tuple(cands)))
    assert ids(outcome) == ["b"] and outcome.below_relevance == 1
    assert outcome.results[0].relevance == 0.8 and outcome.results[0].score == 0.4
    # A score of 0.9 judged 0.3 relevant makes a low-confidence answer: the small budget asked for.
    unsure = engine.select(SelectQuery(ROOT, (Candidate(chunk("a"), 0.9, relevance=0.3),), max_tokens=1000))
    assert ids(unsure) == ["a"] and unsure.max_tokens == 1000


def test_without_relevance_the_score_is_gated_as_given() -> None:
    # A plain gRPC client that sends no relevance: scores stand for it (clamped to [0, 1]), the
    # candidates keep the order they were sent in.
    cands = [Candidate(chunk("a"), 1.7), Candidate(chunk("b"), 0.6), Candidate(chunk("c"), -0.2)]
    outcome = SelectionEngine(SelectionSettings(), FakeRenderer([c.chunk for c in cands])).select(
        SelectQuery(ROOT, tuple(cands)))
    assert ids(outcome) == ["a", "b"] and outcome.below_relevance == 1
    assert [r.relevance for r in outcome.results] == [1.0, 0.6]


# --- merging -------------------------------------------------------------------------------------------


def test_parent_and_child_become_one_result_with_the_child_expanded() -> None:
    # The method is 9 of the class's 10 lines: the merge earns its tokens (MERGE_MIN_COVER).
    cls = chunk("cls", name="TokenService", kind=NodeKind.CLASS, lines=10)
    method = chunk("m", name="validate", parent="cls", kind=NodeKind.METHOD, qualified_name="TokenService.validate",
                   lines=9, start=2)
    other = chunk("other", path="src/other.ts")
    outcome = select([Candidate(method, 0.9, provenance="lexical"), Candidate(other, 0.8),
                      Candidate(cls, 0.7, provenance="semantic")])
    assert ids(outcome) == ["cls", "other"]
    merged = outcome.results[0]
    assert merged.expanded_child_ids == ("m",) and outcome.merged == 1 and accounted(outcome, 3)
    assert merged.score == 0.9 and merged.provenance == "lexical"  # of its best member
    assert merged.reasons == (Reason.MATCH, Reason.MERGED_PARENT)
    assert merged.why == "match (score 0.70); expands 1 matching child (best 0.90)"
    assert "expands [m]" in merged.source and "validate() {" in merged.source
    assert merged.header == "// src/auth.ts > TokenService"


def test_child_alone_stays_alone() -> None:
    method = chunk("m", name="validate", parent="cls", kind=NodeKind.METHOD, qualified_name="TokenService.validate")
    outcome = select([Candidate(method, 0.9)])
    assert ids(outcome) == ["m"] and outcome.results[0].expanded_child_ids == () and outcome.merged == 0
    assert outcome.results[0].header == "// src/auth.ts > TokenService.validate"
    assert outcome.results[0].reasons == (Reason.MATCH,) and outcome.results[0].why == "match (score 0.90)"


def test_grandchild_merges_through_a_kept_parent_chain() -> None:
    outer = chunk("ns", kind=NodeKind.NAMESPACE, lines=22)
    cls = chunk("cls", parent="ns", kind=NodeKind.CLASS, lines=20, start=2)
    method = chunk("m", parent="cls", kind=NodeKind.METHOD, lines=18, start=3)
    orphan = chunk("m2", parent="not-kept", kind=NodeKind.METHOD)
    renderer = FakeRenderer([outer, cls, method, orphan])
    outcome = select([Candidate(method, 0.95), Candidate(outer, 0.8), Candidate(cls, 0.6), Candidate(orphan, 0.7)],
                     renderer)
    assert ids(outcome) == ["ns", "m2"]
    assert outcome.results[0].expanded_child_ids == ("m", "cls") and outcome.merged == 2
    assert outcome.results[0].why == "match (score 0.80); expands 2 matching children (best 0.95)"
    # One call renders everything, bare and expanded, so a split needs no second round trip.
    assert len(renderer.calls) == 1
    assert RenderRequest("ns", ("cls", "m"), "src/auth.ts") in renderer.calls[0]


def test_a_chain_broken_by_a_dropped_parent_does_not_merge() -> None:
    outer = chunk("ns", kind=NodeKind.NAMESPACE, lines=40)
    cls = chunk("cls", parent="ns", kind=NodeKind.CLASS)
    method = chunk("m", parent="cls", kind=NodeKind.METHOD)
    outcome = select([Candidate(outer, 1.0), Candidate(cls, 0.0), Candidate(method, 0.9)])
    assert ids(outcome) == ["ns", "m"] and outcome.merged == 0 and outcome.below_relevance == 1


def test_a_file_card_ranked_first_shows_its_matching_top_level_symbols_expanded() -> None:
    card = chunk("card", kind=NodeKind.MODULE, qualified_name="<module top level>", lines=50)
    fn = chunk("fn", start=10)
    helper = chunk("helper", start=20)
    other_file = chunk("elsewhere", path="src/other.ts")
    renderer = FakeRenderer([card, fn, helper, other_file])
    outcome = select([Candidate(card, 0.95), Candidate(other_file, 0.9), Candidate(fn, 0.8), Candidate(helper, 0.6)],
                     renderer)
    # The file answers first: its card holds its kept symbols; a symbol of another file stays apart.
    assert ids(outcome) == ["card", "elsewhere"] and outcome.merged == 2
    assert outcome.results[0].header == "// src/auth.ts"
    assert outcome.results[0].expanded_child_ids == ("fn", "helper")
    assert RenderRequest("card", ("fn", "helper"), "src/auth.ts") in renderer.calls[0]


def test_a_symbol_ranked_above_its_card_answers_under_its_own_name() -> None:
    card = chunk("card", kind=NodeKind.MODULE, qualified_name="<module top level>", lines=50)
    fn = chunk("fn", start=10)
    helper = chunk("helper", start=20)
    renderer = FakeRenderer([card, fn, helper])
    outcome = select([Candidate(fn, 0.95), Candidate(card, 0.8), Candidate(helper, 0.6)], renderer)
    # fn outranks the card: it stands alone; helper, ranked below the card, is shown inside it.
    assert ids(outcome) == ["fn", "card"] and outcome.merged == 1
    assert outcome.results[0].header == "// src/auth.ts > fn"
    assert outcome.results[1].expanded_child_ids == ("helper",)


def test_an_answer_that_shows_less_than_the_list_gives_the_list() -> None:
    # A card ranked first holds a weak symbol ranked last: merged, the card takes the symbol's
    # tokens ahead of the files ranked between them; the list gives those files instead.
    card = chunk("card", kind=NodeKind.MODULE, qualified_name="<module top level>", lines=50)
    fn = chunk("fn", start=10)
    others = [chunk(f"o{i}", path=f"src/o{i}.ts") for i in range(4)]
    renderer = FakeRenderer([card, fn, *others], sizes={"card": 40, "fn": 60, **{f"o{i}": 15 for i in range(4)}})
    offered = [Candidate(card, 0.95), *(Candidate(o, 0.9 - 0.01 * i) for i, o in enumerate(others)), Candidate(fn, 0.3)]
    roomy = select(offered, renderer, max_tokens=20_000)
    assert ids(roomy)[0] == "card" and roomy.merged == 1  # room for everything: the card holds fn
    sizes = {r.chunk_id: r.token_count for r in roomy.results}
    budget = sizes["card"] + 2 * sizes["o0"] + 10  # the merged card and two more files
    tight = select(offered, renderer, max_tokens=budget)
    assert ids(tight)[:4] == ["card", "o0", "o1", "o2"] and "fn" not in ids(tight) and tight.merged == 0
    assert accounted(tight, len(offered)) and tight.total_tokens <= budget


def test_an_answer_that_shows_less_in_its_first_tokens_gives_the_list() -> None:
    # The best candidate's class, merged with both its methods, costs ~700 tokens where the method
    # ranked first: a reader of the first 500 tokens would get nothing of what the list shows
    # there (the method and two other files), although the whole budget holds the same.
    cls = chunk("cls", kind=NodeKind.CLASS, lines=10)
    m1 = chunk("m1", parent="cls", kind=NodeKind.METHOD, lines=5)
    m2 = chunk("m2", parent="cls", kind=NodeKind.METHOD, lines=5, start=6)
    others = [chunk(f"o{i}", path=f"src/o{i}.ts") for i in range(2)]
    renderer = FakeRenderer([cls, m1, m2, *others], sizes={"cls": 100})
    offered = [Candidate(m1, 0.95), Candidate(others[0], 0.9), Candidate(others[1], 0.85),
               Candidate(cls, 0.5), Candidate(m2, 0.4)]
    deep = select(offered, renderer, max_tokens=8000)
    assert ids(deep) == ["m1", "o0", "o1", "cls", "m2"] and deep.merged == 0
    # An answer of 1,900 tokens is compared whole (a quarter of it is under 500): merged, it shows
    # as much in fewer tokens.
    whole = select(offered, renderer, max_tokens=1900)
    assert ids(whole)[0] == "cls" and whole.merged == 2 and whole.results[0].token_count > 500


def test_a_card_named_as_a_parent_is_no_merge_target() -> None:
    card = chunk("card", kind=NodeKind.MODULE, qualified_name="<module top level>", lines=50)
    nested = chunk("inner", parent="card")
    outcome = select([Candidate(card, 0.9), Candidate(nested, 0.8)])
    assert ids(outcome) == ["card", "inner"] and outcome.merged == 0


def test_a_merge_over_the_per_result_cap_keeps_the_child_separate() -> None:
    cls = chunk("cls", kind=NodeKind.CLASS, lines=10)
    method = chunk("m", parent="cls", kind=NodeKind.METHOD, lines=9, start=2)
    other = chunk("other", path="src/other.ts")
    # Expanded, the method's 700 lines would make the class more than half of a 2,000-token budget.
    renderer = FakeRenderer([cls, method, other], sizes={"m": 700})
    outcome = select([Candidate(cls, 0.9), Candidate(method, 0.85), Candidate(other, 0.5)], renderer,
                     max_tokens=2000)
    assert ids(outcome) == ["cls", "m", "other"] and outcome.merged == 0
    assert outcome.results[0].expanded_child_ids == () and "expands []" in outcome.results[0].source
    # the separate child is its own rendering (clipped to its cap: it is still over half the budget)
    assert outcome.results[1].clipped and outcome.total_tokens <= 2000


def test_hub_keeps_its_reason_and_connections() -> None:
    hub = Candidate(chunk("hub"), 0.8, reason=Reason.HUB, provenance="structure", connected_ids=("a", "b", "c"))
    outcome = select([Candidate(chunk("a"), 0.9), hub])
    result = outcome.results[1]
    assert result.reasons == (Reason.HUB,) and result.connected_ids == ("a", "b", "c")
    assert result.why == "hub: connects 3 results" and result.provenance == "structure"


# --- budget -----------------------------------------------------------------------------------------------


def test_budget_fills_in_score_order_and_smaller_results_still_fit() -> None:
    cands = [Candidate(chunk("a"), 1.0), Candidate(chunk("b", path="src/b.ts"), 0.95),
             Candidate(chunk("big", path="src/big.ts"), 0.9), Candidate(chunk("small", path="src/small.ts"), 0.8)]
    sizes = {"a": 30, "b": 30, "big": 20}
    costs = {r.chunk_id: r.token_count for r in select(cands, FakeRenderer([], sizes=sizes)).results}
    assert costs["a"] > costs["big"] > costs["small"]
    budget = costs["a"] + costs["b"] + costs["small"]
    outcome = select(cands, FakeRenderer([], sizes=sizes), max_tokens=budget)
    # "big" is under its cap (half the budget) but not under what is left: skipped; "small" still fits
    assert costs["big"] <= budget // 2
    assert ids(outcome) == ["a", "b", "small"] and outcome.over_budget == 1 and accounted(outcome, 4)
    assert outcome.total_tokens == budget == outcome.max_tokens
    assert not any(r.clipped for r in outcome.results)


def test_token_count_is_header_plus_source() -> None:
    outcome = select([Candidate(chunk("a"), 1.0)])
    result = outcome.results[0]
    assert result.token_count == count_tokens(result.header + "\n" + result.source)
    assert outcome.total_tokens == result.token_count and outcome.max_tokens == 8000


def test_a_huge_symbol_is_clipped_with_a_marker_line() -> None:
    huge = chunk("huge", lines=40_000, start=101)
    renderer = FakeRenderer([huge], sizes={"huge": 39_998})
    outcome = select([Candidate(huge, 1.0), Candidate(chunk("next", path="src/next.ts"), 0.9)], renderer,
                     max_tokens=4000)
    first = outcome.results[0]
    assert first.clipped and first.token_count <= 2000  # half the budget while another result waits
    last_line = first.source.rsplit("\n", 1)[-1]
    kept = first.source.count("\n")
    assert first.lines_omitted == 40_000 - kept
    assert last_line == (f"// … {first.lines_omitted} more lines (L{100 + kept + 1}–L40100); "
                         "read the symbol to see them")
    assert first.end_line == 40_100
    assert ids(outcome) == ["huge", "next"] and not outcome.results[1].clipped


def test_the_best_result_is_never_clipped_when_it_fits_the_budget_whole() -> None:
    best = chunk("best", lines=300)
    renderer = FakeRenderer([best], sizes={"best": 298})
    alone = select([Candidate(best, 1.0)], renderer, max_tokens=20_000).results[0]
    budget = alone.token_count + 100  # more than half the budget, less than all of it
    outcome = select([Candidate(best, 1.0), Candidate(chunk("next", path="src/next.ts"), 0.9)], renderer,
                     max_tokens=budget)
    assert ids(outcome)[0] == "best" and not outcome.results[0].clipped
    assert outcome.results[0].token_count > budget // 2 and outcome.total_tokens <= budget


def test_a_later_result_that_fits_what_is_left_is_shown_whole() -> None:
    # The ranked list would show it whole after the first; clipping it to half the budget to make
    # room for weaker results would hold less than the list.
    first, big = chunk("first"), chunk("big", lines=300, path="src/big.ts")
    renderer = FakeRenderer([first, big], sizes={"big": 298})
    costs = {r.chunk_id: r.token_count for r in select([Candidate(first, 1.0), Candidate(big, 0.9)], renderer,
                                                         max_tokens=20_000).results}
    budget = costs["first"] + costs["big"] + 10
    assert costs["big"] > budget // 2
    outcome = select([Candidate(first, 1.0), Candidate(big, 0.9), Candidate(chunk("c", path="src/c.ts"), 0.8)],
                     renderer, max_tokens=budget)
    assert ids(outcome)[:2] == ["first", "big"] and not any(r.clipped for r in outcome.results)


def test_alone_a_huge_symbol_may_take_the_whole_budget() -> None:
    huge = chunk("huge", lines=5000)
    outcome = select([Candidate(huge, 1.0)], FakeRenderer([huge], sizes={"huge": 4998}), max_tokens=3000)
    assert outcome.results[0].clipped and 2000 < outcome.results[0].token_count <= 3000


def test_no_clip_with_too_little_budget_left() -> None:
    first, huge = chunk("first"), chunk("huge", lines=5000, path="src/huge.ts")
    renderer = FakeRenderer([first, huge], sizes={"huge": 4998})
    first_cost = select([Candidate(first, 1.0)]).total_tokens
    outcome = select([Candidate(first, 1.0), Candidate(huge, 0.9)], renderer,
                     max_tokens=first_cost + CLIP_MIN_TOKENS - 1)
    assert ids(outcome) == ["first"] and outcome.over_budget == 1


def test_clip_line_numbers_count_collapsed_children() -> None:
    source = "class A {\n  a() { /* 10 lines collapsed */ }\n  b() { /* 5 lines collapsed */ }\n  c = 1;\n}"
    # lines 1..18: `class A {` 1, a() 2-11, b() 12-16, c 17, `}` 18
    assert file_line_numbers(source.split("\n"), 18) == [1, 11, 16, 17, 18]
    clipped = clip("// a.ts > A", source, 18, count_tokens("// a.ts > A\nclass A {\n  a() { /* 10 lines collapsed */ }")
                   + 30)
    assert clipped is not None and clipped.lines_omitted == 7
    assert clipped.source.endswith("// … 7 more lines (L12–L18); read the symbol to see them")


# --- rendering fallback ------------------------------------------------------------------------------------


def test_render_failure_falls_back_to_stored_source_without_merging() -> None:
    cls = chunk("cls", kind=NodeKind.CLASS, lines=30)
    method = chunk("m", parent="cls", kind=NodeKind.METHOD)
    renderer = FakeRenderer([cls, method], fail=RenderFailed(FALLBACK_UNAVAILABLE, "connection refused"))
    outcome = select([Candidate(cls, 0.9), Candidate(method, 0.8)], renderer)
    assert outcome.render_fallback and outcome.render_fallback_reason == FALLBACK_UNAVAILABLE
    assert ids(outcome) == ["cls", "m"] and outcome.merged == 0
    assert outcome.results[0].source == cls.collapsed_source
    assert (outcome.results[0].start_line, outcome.results[0].end_line) == (1, 30)


def test_a_missing_symbol_falls_back_alone() -> None:
    a, b = chunk("a"), chunk("b", path="src/b.ts")
    outcome = select([Candidate(a, 0.9), Candidate(b, 0.8)], FakeRenderer([a, b], missing=["b"]))
    assert outcome.render_fallback and outcome.render_fallback_reason == FALLBACK_MISSING
    assert "rendered" in outcome.results[0].source and outcome.results[1].source == b.collapsed_source


def test_a_missing_parent_lets_its_child_render_alone() -> None:
    cls = chunk("cls", kind=NodeKind.CLASS, lines=30)
    method = chunk("m", parent="cls", kind=NodeKind.METHOD)
    outcome = select([Candidate(cls, 0.9), Candidate(method, 0.8)], FakeRenderer([cls, method], missing=["cls"]))
    assert ids(outcome) == ["cls", "m"] and outcome.merged == 0
    assert outcome.results[0].source == cls.collapsed_source and "rendered" in outcome.results[1].source


def test_a_stored_draft_is_counted_once_for_its_text(monkeypatch: pytest.MonkeyPatch) -> None:
    counted: list[str] = []
    monkeypatch.setattr(engine, "count_tokens", lambda text: counted.append(text) or count_tokens(text))
    a = chunk("a", name="countedOnce", lines=41)  # a text no other test counts
    for _ in range(3):
        select([Candidate(a, 0.9)])
    assert len([t for t in counted if "/* stored */" in t]) == 1
    select([Candidate(replace(a, collapsed_source=a.collapsed_source + "\n// edited"), 0.9)])
    assert len([t for t in counted if "/* stored */" in t]) == 2, "another text, another count"


def test_no_fallback_when_everything_renders() -> None:
    outcome = select([Candidate(chunk("a"), 0.9)])
    assert not outcome.render_fallback and outcome.render_fallback_reason == ""


# --- settings ------------------------------------------------------------------------------------------------


def test_settings_defaults_and_env() -> None:
    settings = settings_from({})
    assert settings.selection == SelectionSettings(max_tokens=8000, min_relevance=0.5, render_timeout_s=2.0)
    assert settings.selection_addr == "127.0.0.1:50055" and settings.selection_port == 50055
    tuned = settings_from({"CODECOMPASS_SELECTION_MAX_TOKENS": "4000", "CODECOMPASS_SELECTION_MIN_RELEVANCE": "0.4",
                           "SELECTION_PORT": "0", "SELECTION_ADDR": "127.0.0.1:6000"})
    assert replace(tuned.selection, render_timeout_s=2.0) == SelectionSettings(4000, 0.4)
    assert tuned.selection_port == 0 and tuned.selection_addr == "127.0.0.1:6000"
    from codecompass.common.config import ConfigError
    with pytest.raises(ConfigError, match="CODECOMPASS_SELECTION_MIN_RELEVANCE"):
        settings_from({"CODECOMPASS_SELECTION_MIN_RELEVANCE": "1.5"})


def test_candidates_the_budget_cannot_reach_are_never_rendered() -> None:
    # Ten symbols of ~120 tokens each as stored; 400 tokens reach the first few only (the stored
    # list within 1.5 times the budget), and what is past that is over the budget, not rendered.
    chunks = [chunk(f"s{i}", path=f"src/f{i}.ts", lines=40, start=1) for i in range(10)]
    renderer = FakeRenderer(chunks)
    outcome = select([Candidate(c, 0.9 - i * 0.01) for i, c in enumerate(chunks)], renderer, max_tokens=400)
    rendered = {spec.symbol_id for call in renderer.calls for spec in call}
    assert rendered and len(rendered) < 10
    assert set(ids(outcome)) <= rendered and "s9" not in rendered
    assert accounted(outcome, 10)


# --- rendering from the index ----------------------------------------------------------------------


def test_a_fresh_index_renders_symbols_without_expansion_from_their_chunks() -> None:
    method = replace(chunk("m", kind=NodeKind.METHOD, lines=4), indent="  ",
                     collapsed_source="run() {\n    step();\n  }")
    other = chunk("other", path="src/other.ts")
    renderer = FakeRenderer([method, other])
    outcome = select([Candidate(method, 0.9), Candidate(other, 0.8)], renderer, index_fresh=True)
    assert renderer.calls == [] and not outcome.render_fallback
    assert [r.source for r in outcome.results] == ["run() {\n  step();\n}", other.collapsed_source]
    assert outcome.results[0].token_count == count_tokens(f"{outcome.results[0].header}\nrun() {{\n  step();\n}}")


def test_a_fresh_index_asks_only_for_merged_parents() -> None:
    outer = chunk("ns", kind=NodeKind.NAMESPACE, lines=22)
    cls = chunk("cls", parent="ns", kind=NodeKind.CLASS, lines=20, start=2)
    method = chunk("m", parent="cls", kind=NodeKind.METHOD, lines=18, start=3)
    orphan = chunk("m2", parent="not-kept", kind=NodeKind.METHOD)
    renderer = FakeRenderer([outer, cls, method, orphan])
    outcome = select([Candidate(method, 0.95), Candidate(outer, 0.8), Candidate(cls, 0.6), Candidate(orphan, 0.7)],
                     renderer, index_fresh=True)
    assert ids(outcome) == ["ns", "m2"] and outcome.results[0].expanded_child_ids == ("m", "cls")
    (sent,) = renderer.calls
    assert sent and all(spec.expand_child_ids for spec in sent)
    assert outcome.results[1].source == orphan.collapsed_source and not outcome.render_fallback


def test_a_fresh_index_keeps_its_answer_when_the_analysis_service_is_down() -> None:
    cls = chunk("cls", kind=NodeKind.CLASS, lines=20)
    method = chunk("m", parent="cls", kind=NodeKind.METHOD, lines=18, start=2)
    renderer = FakeRenderer([cls, method], fail=RenderFailed(FALLBACK_UNAVAILABLE, "connection refused"))
    outcome = select([Candidate(cls, 0.9), Candidate(method, 0.8)], renderer, index_fresh=True)
    # Only the merge needed the service: the symbols shown are current (the index is fresh), so
    # the answer is no fallback, just unmerged.
    assert len(renderer.calls) == 1 and ids(outcome) == ["cls", "m"] and outcome.merged == 0
    assert not outcome.render_fallback and outcome.results[0].source == cls.collapsed_source
