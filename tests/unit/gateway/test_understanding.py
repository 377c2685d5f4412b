"""Query understanding: intent and its escalation hint, the semantic plan it settles, composite
confidence and the suggested next call. Pure functions; no services."""

from __future__ import annotations

import dataclasses

import pytest
from codecompass_gateway.understanding import (
    BestResult,
    call_text,
    escalation_hint,
    guidance_of,
    settled,
    suggested_action,
    understand,
)

from codecompass.common.chunks import Chunk, Language, NodeKind
from codecompass.common.config import GatewaySettings
from codecompass.policy.confidence import answer_confidence, channel_agreement, composite_confidence, score_margin
from codecompass.policy.ranking import RankedResult
from codecompass.policy.semantic import HYBRID, OFF
from codecompass.policy.shape import analyze

SETTINGS = GatewaySettings()


# --- intent and escalation -----------------------------------------------------------------


@pytest.mark.parametrize(("query", "intent"), [
    ("TokenService.validateToken", "symbol"),
    ("src/auth/tokenService.ts", "path"),
    ('throws "token expired" on refresh', "error"),
    ("how are auth tokens validated before a request", "natural_language"),
])
def test_the_intent_is_retrievals_own_reading(query: str, intent: str) -> None:
    understood = understand(query, SETTINGS)
    assert understood.intent == intent == analyze(query).intent
    assert understood.intent_confidence == analyze(query).intent_confidence


def test_a_sure_intent_has_no_hint_and_an_unsure_one_has_one() -> None:
    assert understand("TokenService.validateToken", SETTINGS).escalation_hint is None  # 0.95
    unsure = understand("session", SETTINGS)  # one lowercase word: a name or a topic (0.6)
    assert unsure.intent == "symbol" and unsure.intent_confidence < SETTINGS.intent_confidence_threshold
    assert unsure.escalation_hint == (
        'read as a symbol name at 0.60: for its definition give the name exactly as declared '
        '(search_code(query="session")); for a topic, ask a question in words '
        '(semantic_search(query="how does session work"))')


def test_a_name_the_index_declares_is_not_told_to_be_given_exactly() -> None:
    # Issue 29 §5: the advice to "give the name exactly" was printed when it had been.
    unsure = understand("session", SETTINGS)
    assert settled(unsure, {"other", "Session.open"}) == unsure  # not declared as typed: the advice stands
    exact = settled(unsure, {"session", "Store.session"})
    assert exact.escalation_hint == ('read as the symbol name session at 0.60, which the index declares: for a '
                                     'topic, ask a question in words (semantic_search(query="how does session work"))')
    sentence = understand("token refresh", SETTINGS)
    assert settled(sentence, {"token"}) == sentence  # only a name query's advice is about its name


def test_a_name_in_other_letters_is_a_name_and_its_calls_keep_its_letters() -> None:
    shape = analyze("рассчитатьСкидку")
    assert shape.intent == "symbol" and shape.identifiers == ("рассчитатьСкидку",)
    assert shape.words == ("рассчитать", "скидку")
    assert analyze("найти рассчитатьСкидку").identifiers == ("рассчитатьСкидку",)  # camel humps in Cyrillic
    assert call_text("search_code", {"query": "購物車"}) == 'search_code(query="購物車")'


def test_the_hint_threshold_is_a_setting() -> None:
    strict = dataclasses.replace(SETTINGS, intent_confidence_threshold=1.0)
    assert understand("TokenService.validateToken", strict).escalation_hint is not None
    lenient = dataclasses.replace(SETTINGS, intent_confidence_threshold=0.0)
    assert understand("session", lenient).escalation_hint is None


@pytest.mark.parametrize(("query", "expected"), [
    ("fix src/auth/tokenService.ts refresh", 'read_symbol(symbol="src/auth/tokenService.ts")'),
    ("Token must not be expired", "quote the exact text of the message"),
    ("token refresh", "name the identifier if you know it"),
])
def test_each_intent_has_its_own_hint(query: str, expected: str) -> None:
    shape = analyze(query)
    assert shape.intent_confidence < SETTINGS.intent_confidence_threshold
    assert expected in escalation_hint(shape)


# --- the semantic plan (policy.semantic) as understanding settles it ----------------------------


def test_the_configured_mode_applies_unless_the_request_names_one() -> None:
    off = dataclasses.replace(SETTINGS, semantic_mode=OFF)
    assert understand("how are tokens validated", off).plan.mode == OFF
    assert understand("how are tokens validated", off, HYBRID).plan.mode == HYBRID
    assert understand("validateToken", SETTINGS, None, 0.3).plan.ratio_cap == 0.3
    assert SETTINGS.semantic_mode == HYBRID  # the default


def test_rewrite_is_undecided_until_the_pipeline_has_searched() -> None:
    understood = understand("how are tokens validated", SETTINGS, rewrite=True)
    assert understood.rewrite["requested"] is True and understood.rewrite["applied"] is False
    assert understood.rewrite["reason"] == "not decided yet"


# --- composite confidence --------------------------------------------------------------------


def _chunk(name: str, path: str = "src/a.ts", kind: NodeKind = NodeKind.FUNCTION) -> Chunk:
    return Chunk(id=name, snippet_hash=name, relative_path=path, language=Language.TYPESCRIPT, node_kind=kind,
                 name=name.rsplit(".", 1)[-1], qualified_name=name, parent_id="", child_ids=(), depth=0,
                 signature="", full_source="", collapsed_source="", start_line=1, end_line=2, jsdoc="",
                 jsdoc_start_line=0, relevant_imports=(), is_test=False, embedding_text="")


def _result(name: str, score: float, lexical: int, semantic: int) -> RankedResult:
    provenance = "hybrid" if lexical and semantic else ("semantic" if semantic else "lexical")
    return RankedResult(chunk=_chunk(name), score=score, lexical_score=0.0, vector_similarity=0.0,
                        provenance=provenance, lexical_rank=lexical, semantic_rank=semantic)


def test_margin() -> None:
    assert score_margin([]) == 0.0
    assert score_margin([0.7]) == 0.7
    assert score_margin([0.9, 0.6, 0.1]) == pytest.approx(0.3)


def test_agreement_needs_both_channels() -> None:
    assert channel_agreement([_result("a", 1.0, 1, 0), _result("b", 0.5, 2, 0)]) is None
    assert channel_agreement([]) is None
    both = [_result("a", 1.0, 1, 1), _result("b", 0.9, 2, 3), _result("c", 0.5, 3, 0), _result("d", 0.4, 0, 2)]
    assert channel_agreement(both) == pytest.approx(0.5 + 0.5 * 2 / 4)
    split = [_result("a", 1.0, 1, 0), _result("b", 0.9, 0, 1)]
    assert channel_agreement(split) == 0.0


def test_composite_is_the_calibrated_confidence_scaled_by_support() -> None:
    assert composite_confidence(0.0, 1.0, 1.0, 1.0) == 0.0  # nothing matched stays at 0
    assert composite_confidence(0.9, 1.0, 0.5, 1.0) == pytest.approx(0.9)  # a clear, corroborated winner
    flat = composite_confidence(0.9, 1.0, 0.0, None)  # a tie at the top: support (1 + 0) / 2
    assert flat == pytest.approx(0.9 * (0.6 + 0.4 * 0.5))
    disagree = composite_confidence(0.9, 1.0, 0.0, 0.0)
    assert disagree < flat


def test_guidance_flags_low_confidence_against_the_threshold() -> None:
    shape = analyze("validateToken")
    results = [_result("TokenService.validateToken", 1.0, 1, 0), _result("other", 0.4, 2, 0)]
    best = BestResult("TokenService.validateToken", "validateToken", "src/a.ts")
    sure = guidance_of(shape, answer_confidence(results, [1.0, 0.4], 0.9), best, 0.5, "ready")
    assert not sure.low_confidence and sure.suggested_action is None and sure.suggested_call is None
    assert sure.top_score == 1.0 and sure.score_margin == pytest.approx(0.6) and sure.channel_agreement is None
    strict = guidance_of(shape, answer_confidence(results, [1.0, 0.4], 0.9), best, 0.95, "ready")
    assert strict.low_confidence and strict.suggested_action.startswith("codebase_trace(")
    empty = guidance_of(shape, answer_confidence([], [], 0.0), None, 0.5, "ready")
    assert empty.low_confidence and empty.confidence == 0.0 and empty.top_score == 0.0


# --- suggested actions ------------------------------------------------------------------------

BEST = BestResult(qualified_name="TokenService.validateToken", name="validateToken", path="src/auth/tokenService.ts")


@pytest.mark.parametrize(("query", "best", "status", "tool", "arguments"), [
    ("anything at all", BEST, "indexing", "index_status", {}),
    ("src/auth/tokenService.ts", BEST, "ready", "read_symbol", {"symbol": "src/auth/tokenService.ts"}),
    ("zzqx blorf quux", None, "ready", "index_status", {}),
    ("zzqx blorf quux", BestResult("initials", "initials", "src/s.ts", words_matched=False), "ready",
     "index_status", {}),
    ("zzqxNotAName", BestResult("initials", "initials", "src/s.ts", words_matched=False), "ready",
     "semantic_search", {"query": "zzqx not a name"}),
    ("zzqxNotAName", None, "ready", "semantic_search", {"query": "zzqx not a name"}),
    ("validateToken", BEST, "ready", "codebase_trace",
     {"symbol": "TokenService.validateToken", "direction": "references", "path": "src/auth/tokenService.ts"}),
    ("validateTokens", BEST, "ready", "semantic_search", {"query": "validate tokens"}),
    ("why does refreshSession call validateToken twice", BEST, "ready", "search_code",
     {"query": "refreshSession validateToken"}),
    ("how are expired auth tokens rejected", BEST, "ready", "semantic_search",
     {"query": "expired auth tokens rejected"}),
    ("tokens", BestResult("<module>", "<module>", "src/t.ts", "module"), "ready", "semantic_search",
     {"query": "tokens"}),
    ("auth tokens", BEST, "ready", "read_symbol",
     {"symbol": "TokenService.validateToken", "path": "src/auth/tokenService.ts"}),
    ("auth tokens", BestResult("<module>", "<module>", "src/t.ts", "module"), "ready", "read_symbol",
     {"symbol": "src/t.ts"}),
])
def test_the_suggested_call_names_a_real_tool_with_real_arguments(query, best, status, tool, arguments) -> None:
    text, call = suggested_action(analyze(query), best, status)
    assert (call["tool"], call["arguments"]) == (tool, arguments)
    assert text.startswith(call_text(tool, arguments) + " — ") and call["why"] in text
    assert suggested_action(analyze(query), best, status) == (text, call)  # deterministic


def test_the_suggested_tools_and_arguments_exist_on_the_server(tmp_path) -> None:
    import anyio
    from codecompass_gateway.server import build_server
    from mcp import Client

    from codecompass.common.config import load_settings

    async def listed():
        async with Client(build_server(load_settings(), tmp_path)) as client:
            return (await client.list_tools()).tools

    tools = {t.name: t for t in anyio.run(listed)}
    suggestions = [
        suggested_action(analyze(q), b, s)[1] for q, b, s in [
            ("x", BEST, "indexing"), ("src/a.ts", BEST, "ready"), ("validateToken", BEST, "ready"),
            ("validateTokens", BEST, "ready"), ("why does refreshSession fail", BEST, "ready"),
            ("auth tokens", BEST, "ready")]
    ]
    for call in suggestions:
        assert call["tool"] in tools
        assert set(call["arguments"]) <= set(tools[call["tool"]].input_schema["properties"])
