"""search_code's contract (seed 003) from a pipeline run against fake clients; the semantic mode as
retrieval and the reranker see it; the error registry; the gateway settings it reads."""

from __future__ import annotations

import dataclasses
import json

import pytest
from codecompass_gateway import errors, present, tools
from codecompass_gateway.answer import (
    QUERY_SHOWN_CHARS,
    answer_to_dict,
    code_search_answer,
    no_confident_match,
    shown_query,
    snippet_of,
)
from codecompass_gateway.pipeline import RERANK, Pipeline, PipelineRequest
from tests.fixtures.answers import code_answer_of

from codecompass.clients.errors import DEADLINE, FAILED, INVALID, KINDS, NOT_FOUND, UNAVAILABLE
from codecompass.common.chunks import Chunk, Language, NodeKind
from codecompass.common.config import ConfigError, GatewaySettings, Settings, settings_from
from codecompass.common.tokens import count_tokens
from codecompass.contracts.rerank.model import RerankOutcome, ScoredCandidate
from codecompass.contracts.retrieval.model import IndexingStatus, ResultCompleteness, SearchMetadata, SearchOutcome
from codecompass.contracts.selection.model import SelectOutcome
from codecompass.policy.ranking import RankedResult
from codecompass.policy.shape import analyze

# Every field of seed 003's output and the type it has (None allowed where the seed says null).
RESULT_FIELDS = {"path": str, "line_start": int, "line_end": int, "kind": str, "name": str, "qualified_name": str,
                 "language": str, "score": float, "snippet": str, "provenance": str}
METADATA_FIELDS = {
    "codecompass_protocol_version": str, "freshness_status": str, "indexing_status": str,
    "result_completeness": str, "ref": str, "semantic_mode": str, "semantic_enabled": bool,
    "semantic_ratio_used": float, "semantic_triggered": bool, "semantic_skipped_reason": (str, type(None)),
    "external_provider_blocked": bool, "embedding_model_version": (str, type(None)), "rerank_provider": str,
    "rerank_fallback": bool, "low_confidence": bool, "suggested_action": (str, type(None)),
    "confidence_threshold": float, "top_score": float, "score_margin": float,
    "channel_agreement": (float, type(None)), "query_intent_confidence": float,
    "intent_escalation_hint": (str, type(None)), "semantic_fallback": bool, "trace_id": str,
}


def check_contract(payload: dict) -> None:
    assert set(payload) >= {"results", "query_intent", "total_candidates", "metadata"}
    assert payload["query_intent"] in ("symbol", "path", "error", "natural_language")
    assert isinstance(payload["total_candidates"], int)
    for result in payload["results"]:
        for name, kind in RESULT_FIELDS.items():
            assert isinstance(result[name], kind), (name, result[name])
        assert result["provenance"] in ("lexical", "semantic", "hybrid", "structure")
    meta = payload["metadata"]
    for name, kind in METADATA_FIELDS.items():
        assert name in meta, name
        assert isinstance(meta[name], kind), (name, meta[name])
    assert meta["freshness_status"] in ("fresh", "stale", "syncing")
    assert meta["semantic_mode"] in ("off", "rerank_only", "hybrid")
    assert meta["rerank_provider"] in ("local", "voyage", "cohere", "llm", "none")
    assert (meta["suggested_action"] is not None) == meta["low_confidence"]


def _chunk(name: str, lines: int = 3) -> Chunk:
    source = "\n".join([f"export function {name}() {{"] + [f"  step{i}();" for i in range(lines - 2)] + ["}"])
    return Chunk(id=name, snippet_hash=name, relative_path=f"src/{name}.ts", language=Language.TSX,
                 node_kind=NodeKind.FUNCTION, name=name, qualified_name=name, parent_id="", child_ids=(), depth=0,
                 signature=f"{name}()", full_source=source, collapsed_source=source, start_line=1, end_line=lines,
                 jsdoc="", jsdoc_start_line=0, relevant_imports=(), is_test=False, embedding_text="")


def _metadata(confidence: float, ratio_used: float = 0.0, reason: str = "") -> SearchMetadata:
    return SearchMetadata(indexing_status=IndexingStatus.READY, result_completeness=ResultCompleteness.COMPLETE,
                          semantic_fallback=False, semantic_skipped_reason=reason, semantic_ratio_used=ratio_used,
                          external_provider_blocked=False, embedding_model_id="m", embedding_model_version="v1",
                          total_candidates=17, confidence=confidence)


class FakeRetrieval:
    def __init__(self, results: tuple[RankedResult, ...], metadata: SearchMetadata) -> None:
        self.results, self.metadata = results, metadata
        self.queries: list = []

    def search(self, query, timeout_s: float) -> SearchOutcome:
        self.queries.append(query)
        return SearchOutcome(results=self.results, metadata=self.metadata)

    def close(self) -> None:
        pass


class FakeRerank:
    """Raw model scores, as the rerank service returns them: `scores` by id, else 0.5."""

    def __init__(self, scores: dict[str, float | None] | None = None) -> None:
        self.calls = 0
        self.scores = scores or {}

    def rerank(self, query, timeout_s: float) -> RerankOutcome:
        self.calls += 1
        return RerankOutcome(scores=tuple(ScoredCandidate(id=c.id, rerank_score=self.scores.get(c.id, 0.5))
                                          for c in query.candidates), provider="voyage")

    def close(self) -> None:
        pass


RESULTS = (
    RankedResult(chunk=_chunk("validateToken", 30), score=1.0, lexical_score=1.0, vector_similarity=0.6,
                 provenance="hybrid", lexical_rank=1, semantic_rank=1),
    RankedResult(chunk=_chunk("refreshToken"), score=0.6, lexical_score=0.6, vector_similarity=0.0,
                 provenance="lexical", lexical_rank=2, semantic_rank=0),
)


def _pipeline(metadata: SearchMetadata, gateway: GatewaySettings | None = None, provider: str = "local"
              ) -> tuple[Pipeline, FakeRetrieval, FakeRerank]:
    settings = Settings(state_dir=None, gateway=gateway or GatewaySettings())  # type: ignore[arg-type]
    settings = dataclasses.replace(settings, rerank=dataclasses.replace(settings.rerank, provider=provider))
    pipeline = Pipeline(settings)
    pipeline.close()
    retrieval, rerank = FakeRetrieval(RESULTS, metadata), FakeRerank()
    pipeline.retrieval = retrieval  # type: ignore[assignment]
    pipeline.rerank = rerank  # type: ignore[assignment]
    return pipeline, retrieval, rerank


def _run(pipeline: Pipeline, query: str, **kwargs) -> object:
    return pipeline.run(PipelineRequest(workspace_root="/ws", query=query, sync=False, select=False, **kwargs))


def test_every_contract_field_is_there_and_typed() -> None:
    pipeline, _, _ = _pipeline(_metadata(0.9, ratio_used=0.2))
    answer = _run(pipeline, "validateToken")
    payload = code_search_answer(answer, threshold=0.5, trace_id="t" * 32, max_lines=8, max_line_chars=160).to_dict()
    check_contract(payload)
    top = payload["results"][0]
    assert (top["path"], top["line_start"], top["line_end"], top["language"]) == ("src/validateToken.ts", 1, 30, "tsx")
    assert top["snippet"].splitlines()[0] == "export function validateToken() {"
    assert top["snippet"].splitlines()[-1] == "… 22 more lines" and len(top["snippet"].splitlines()) == 9
    meta = payload["metadata"]
    assert payload["query_intent"] == "symbol" and payload["total_candidates"] == 17
    assert meta["codecompass_protocol_version"] == "1.0" and meta["ref"] == "working_tree"
    assert meta["freshness_status"] == "stale" and meta["freshness_detail"] == "unknown"  # no sync ran
    assert meta["semantic_triggered"] and meta["semantic_skipped_reason"] is None
    assert meta["embedding_model_version"] == "v1" and meta["rerank_provider"] == "local"
    assert meta["top_score"] == 1.0 and meta["score_margin"] == pytest.approx(0.4)
    assert meta["channel_agreement"] == pytest.approx(0.5 + 0.5 * 1 / 2)
    assert not meta["low_confidence"] and meta["suggested_action"] is None
    assert meta["rewrite"]["applied"] is False and meta["trace_id"] == "t" * 32


def test_the_typed_answer_writes_the_contracts_fields_in_its_order() -> None:
    # The JSON clients parse: seed 003's fields, then ours, in this order; the typed answer's
    # fields are named as these keys, so a field renamed or moved changes the wire and fails here.
    pipeline, _, _ = _pipeline(_metadata(0.2, ratio_used=0.2))
    payload = code_search_answer(_run(pipeline, "how are expired auth tokens rejected"), threshold=0.5, trace_id="t",
                                 max_lines=8, max_line_chars=160).to_dict()
    assert list(payload) == ["results", "query_intent", "total_candidates", "metadata"]
    assert [list(r) for r in payload["results"]] == [[*RESULT_FIELDS, "stale"]] * 2
    assert list(payload["metadata"]) == [
        "codecompass_protocol_version", "freshness_status", "indexing_status", "result_completeness", "ref",
        "semantic_mode", "semantic_enabled", "semantic_ratio_used", "semantic_triggered", "semantic_skipped_reason",
        "external_provider_blocked", "embedding_model_version", "rerank_provider", "rerank_fallback",
        "low_confidence", "suggested_action", "confidence_threshold", "top_score", "score_margin",
        "channel_agreement", "query_intent_confidence", "intent_escalation_hint", "semantic_fallback",
        "primary_unavailable_reason", "trace_id", "missing_names", "nearest_names", "filtered_chunks",
        "low_confidence_reason", "confidence", "retrieval_confidence", "suggested_call", "freshness_detail",
        "rerank_fallback_reason", "rewrite", "stage_ms", "skipped_stages"]
    assert set(METADATA_FIELDS) <= set(payload["metadata"])
    json.dumps(payload)  # plain data throughout: tuples written as lists, mappings as objects


def test_a_low_confidence_answer_suggests_a_next_call() -> None:
    pipeline, _, _ = _pipeline(_metadata(0.2))
    answer = _run(pipeline, "how are expired auth tokens rejected")
    payload = code_search_answer(answer, threshold=0.5, trace_id="", max_lines=8, max_line_chars=160).to_dict()
    check_contract(payload)
    meta = payload["metadata"]
    assert meta["low_confidence"] and meta["confidence"] < 0.5
    assert meta["suggested_call"] == {"tool": "semantic_search", "arguments": {"query": "expired auth tokens rejected"},
                                      "why": "a narrower query: the question's content words"}
    assert meta["suggested_action"].startswith('semantic_search(query="expired auth tokens rejected") — ')
    lenient = code_search_answer(answer, threshold=0.1, trace_id="", max_lines=8, max_line_chars=160).to_dict()
    assert not lenient["metadata"]["low_confidence"] and lenient["metadata"]["confidence_threshold"] == 0.1


@pytest.mark.parametrize(("mode", "ratio_sent", "reason"), [
    ("off", 0.0, "semantic_disabled"),
    ("rerank_only", 0.0, "semantic_mode_rerank_only"),
    ("hybrid", 0.4, None),
])
def test_the_mode_decides_the_ratio_retrieval_gets(mode: str, ratio_sent: float, reason: str | None) -> None:
    pipeline, retrieval, _ = _pipeline(_metadata(0.9, ratio_used=0.0 if mode != "hybrid" else 0.4))
    answer = _run(pipeline, "how are tokens validated", semantic_mode=mode, semantic_ratio=0.4)
    assert retrieval.queries[0].semantic_ratio == ratio_sent
    meta = code_search_answer(answer, threshold=0.5, trace_id="", max_lines=8, max_line_chars=160).to_dict()["metadata"]
    assert meta["semantic_mode"] == mode and meta["semantic_enabled"] == (mode == "hybrid")
    assert meta["semantic_skipped_reason"] == reason and meta["semantic_triggered"] == (mode == "hybrid")
    assert meta["embedding_model_version"] == ("v1" if mode == "hybrid" else None)


def test_a_zero_default_ratio_in_retrieval_reads_as_semantic_disabled() -> None:
    pipeline, retrieval, _ = _pipeline(_metadata(0.9, reason="semantic_ratio_zero"))
    answer = _run(pipeline, "how are tokens validated")
    assert retrieval.queries[0].semantic_ratio is None  # retrieval's own default, which is 0 here
    meta = code_search_answer(answer, threshold=0.5, trace_id="", max_lines=8, max_line_chars=160).to_dict()["metadata"]
    assert not meta["semantic_enabled"] and meta["semantic_skipped_reason"] == "semantic_ratio_zero"


def test_off_skips_a_model_reranker_and_rerank_only_keeps_it() -> None:
    pipeline, _, rerank = _pipeline(_metadata(0.9), provider="voyage")
    off = _run(pipeline, "how are tokens validated", semantic_mode="off")
    assert rerank.calls == 0 and "no model reranker" in off.skipped[RERANK]
    assert code_search_answer(off, threshold=0.5, trace_id="", max_lines=8,
                              max_line_chars=160).to_dict()["metadata"]["rerank_provider"] == "none"
    kept = _run(pipeline, "how are tokens validated", semantic_mode="rerank_only")
    assert rerank.calls == 1 and kept.rerank_provider == "voyage"


def test_the_gateway_blends_the_rerankers_raw_scores_by_the_policy() -> None:
    pipeline, _, rerank = _pipeline(_metadata(0.9), provider="voyage")
    rerank.scores = {"validateToken": 0.0, "refreshToken": 1.0}
    answer = _run(pipeline, "how are tokens validated")
    weight = pipeline._settings.rerank.weight
    # rerank x weight + first stage x (1 - weight): the model's preference overturns the first stage's.
    assert [(c.result.chunk.id, c.rerank_score) for c in answer.candidates] == [
        ("refreshToken", 1.0), ("validateToken", 0.0)]
    assert [c.score for c in answer.candidates] == pytest.approx([weight + 0.6 * (1 - weight), 1.0 * (1 - weight)])
    # A candidate the model did not score keeps its first-stage score.
    rerank.scores = {"validateToken": None, "refreshToken": 0.0}
    unscored = _run(pipeline, "how are tokens validated")
    assert [(c.result.chunk.id, c.score) for c in unscored.candidates] == [
        ("validateToken", 1.0), ("refreshToken", pytest.approx(0.6 * (1 - weight)))]


def test_the_configured_mode_applies_to_every_search_and_the_shape_goes_with_it() -> None:
    pipeline, retrieval, _ = _pipeline(_metadata(0.9), GatewaySettings(semantic_mode="hybrid"))
    answer = _run(pipeline, "how are tokens validated")
    # No per-intent cap in the gateway: retrieval's default, lowered by intent in the ranking policy.
    assert retrieval.queries[0].semantic_ratio is None
    # The query judged once: retrieval ranks by the gateway's shape instead of judging it again.
    assert retrieval.queries[0].shape == answer.understanding.shape == analyze("how are tokens validated")
    meta = answer_to_dict(answer)["metadata"]  # semantic_search and the CLI see the understanding too
    assert (meta["query_intent"], meta["semantic_mode"], meta["semantic_ratio_source"]) == (
        "natural_language", "hybrid", "retrieval_default")
    off = _pipeline(_metadata(0.9), GatewaySettings(semantic_mode="off"))
    _run(off[0], "how are tokens validated", semantic_ratio=0.9)
    assert off[1].queries[0].semantic_ratio == 0.0


def test_snippets_are_clipped_by_lines_and_characters() -> None:
    assert snippet_of("a\nb", 8, 160) == "a\nb"
    assert snippet_of("x" * 200, 8, 10) == "x" * 9 + "…"
    assert snippet_of("\n".join("l" for _ in range(20)), 3, 160) == "l\nl\nl\n… 17 more lines"


def test_an_oversized_answer_drops_its_last_results_and_says_truncated() -> None:
    big = code_answer_of({
        "results": [{"path": f"src/f{i}.ts", "line_start": 1, "line_end": 900, "kind": "function", "name": f"f{i}",
                     "qualified_name": f"f{i}", "language": "typescript", "score": 1.0 - i / 10,
                     "snippet": "word " * 2000, "provenance": "lexical"} for i in range(10)],
        "query_intent": "symbol", "total_candidates": 10, "metadata": {"result_completeness": "complete"}})
    result = present.search_code_result(big, "f", {"workspace": "/ws"})
    kept = result.structured_content
    assert 0 < len(kept["results"]) < 10 and kept["metadata"]["result_completeness"] == "truncated"
    # The results kept are the best ones, as the answer had them; the server's own fields stay last.
    assert kept["results"] == big.to_dict()["results"][:len(kept["results"])]
    assert list(kept["metadata"])[-1] == "workspace"
    text = result.content[0].text
    assert "Results were cut to fit the response limit: ask for fewer (limit)." in text.splitlines()[:3]
    assert count_tokens(text) + count_tokens(json.dumps(kept)) <= tools.RESPONSE_MAX_TOKENS


def test_the_model_reads_the_ranked_list_as_lines_and_programs_read_the_json() -> None:
    answer = code_answer_of({
        "results": [{"path": "src/auth/tokenService.ts", "line_start": 12, "line_end": 40, "kind": "method",
                     "name": "validateToken", "qualified_name": "TokenService.validateToken",
                     "language": "typescript", "score": 0.42, "snippet": "validateToken(token: string) {\n  …",
                     "provenance": "hybrid", "stale": True}],
        "query_intent": "natural_language", "total_candidates": 17,
        "metadata": {"confidence": 0.31, "low_confidence": True, "indexing_status": "ready",
                     "suggested_action": 'read_symbol(symbol="TokenService.validateToken") — read it',
                     "result_completeness": "complete", "freshness_status": "fresh"}})
    result = present.search_code_result(answer, "where is a token checked", {"workspace": "/ws"})
    data = answer.to_dict()
    assert result.structured_content == {**data, "metadata": {**data["metadata"], "workspace": "/ws"}}
    assert result.content[0].text.splitlines() == [
        'No confident match for "where is a token checked" — the closest code follows.',
        "1 results of 17 candidates (query read as natural language, confidence 0.31)",
        'Next: read_symbol(symbol="TokenService.validateToken") — read it',
        "1. src/auth/tokenService.ts:12-40  method TokenService.validateToken  score 0.42 (hybrid)  stale",
        "   validateToken(token: string) {",
        "     …",
    ]


# --- ref and language -------------------------------------------------------------------------


@pytest.mark.parametrize("ref", [None, "", "working_tree", "WORKTREE", "  "])
def test_the_working_tree_is_the_ref_accepted(ref) -> None:
    tools.check_ref(ref)


@pytest.mark.parametrize("ref", ["main", "HEAD", "refs/heads/dev", "a1b2c3d"])
def test_any_other_ref_is_unsupported(ref) -> None:
    with pytest.raises(tools.ToolInputError, match="only the working tree is") as caught:
        tools.check_ref(ref)
    assert caught.value.code == errors.UNSUPPORTED_REF


def test_language_filters() -> None:
    assert tools.language_filters(None).languages == ()
    assert tools.language_filters("TypeScript").languages == (Language.TYPESCRIPT, Language.TSX)
    assert tools.language_filters("jsx").languages == (Language.JSX,)
    with pytest.raises(tools.ToolInputError, match="language must be one of typescript, tsx"):
        tools.language_filters("rust")


# --- the error registry -------------------------------------------------------------------------


def test_the_registry_documents_every_code_once() -> None:
    codes = [errors.INVALID_ARGUMENT, errors.INVALID_WORKSPACE, errors.WORKSPACE_REFUSED, errors.NOT_FOUND_CODE,
             errors.UNSUPPORTED_REF, errors.SERVICE_UNAVAILABLE, errors.DEADLINE_EXCEEDED, errors.SERVICE_ERROR,
             errors.INTERNAL_ERROR]
    assert list(errors.ERROR_CODES) == codes
    for code, meaning in errors.ERROR_CODES.items():
        assert meaning and "\n" not in meaning
        assert f"| `{code}`" in errors.__doc__  # the module's table


def test_an_error_result_has_one_shape() -> None:
    result = errors.error_result("search_code: ref 'main'\n is not indexed", errors.UNSUPPORTED_REF, "search_code")
    assert result.is_error and result.content[0].text == "search_code: ref 'main' is not indexed [unsupported_ref]"
    assert result.structured_content == {"error": {"code": "unsupported_ref", "tool": "search_code",
                                                   "message": result.content[0].text}}
    with pytest.raises(ValueError, match="unregistered error code"):
        errors.error_result("x", "oops")


@pytest.mark.parametrize(("kind", "code"), [
    (UNAVAILABLE, "service_unavailable"), (DEADLINE, "deadline_exceeded"), (INVALID, "invalid_argument"),
    (NOT_FOUND, "not_found"), (FAILED, "service_error"), ("unimplemented", "service_error"),
])
def test_service_failures_map_to_registered_codes(kind: str, code: str) -> None:
    assert errors.code_for_service_error(kind) == code


def test_every_kind_of_service_failure_has_a_registered_tool_code() -> None:
    # The clients' one table of kinds names the gateway's codes; each must be in the registry.
    assert {row.tool_code for row in KINDS.values()} <= set(errors.ERROR_CODES)


# --- settings -----------------------------------------------------------------------------------


def test_gateway_settings_from_env_and_yaml() -> None:
    settings = settings_from({"CODECOMPASS_GATEWAY_SEMANTIC_MODE": "Rerank_Only",
                              "CODECOMPASS_GATEWAY_CONFIDENCE_THRESHOLD": "0.4"},
                             {"gateway.intent_confidence_threshold": 0.8}).gateway
    assert (settings.semantic_mode, settings.confidence_threshold, settings.intent_confidence_threshold) == (
        "rerank_only", 0.4, 0.8)
    defaults = GatewaySettings()
    assert (defaults.semantic_mode, defaults.confidence_threshold) == ("hybrid", 0.5)


@pytest.mark.parametrize(("env", "message"), [
    ({"CODECOMPASS_GATEWAY_SEMANTIC_MODE": "vectors"}, "CODECOMPASS_GATEWAY_SEMANTIC_MODE: must be one of off"),
    ({"CODECOMPASS_GATEWAY_CONFIDENCE_THRESHOLD": "1.5"}, "CODECOMPASS_GATEWAY_CONFIDENCE_THRESHOLD: must be"),
    ({"CODECOMPASS_GATEWAY_INTENT_CONFIDENCE_THRESHOLD": "-0.1"}, "CODECOMPASS_GATEWAY_INTENT_CONFIDENCE_THRESHOLD"),
])
def test_out_of_range_gateway_settings_name_the_variable(env, message) -> None:
    with pytest.raises(ConfigError, match=message):
        settings_from(env)


def test_out_of_range_yaml_names_the_key() -> None:
    with pytest.raises(ConfigError, match="config key gateway.confidence_threshold: must be"):
        settings_from({}, {"gateway.confidence_threshold": 1.2})


def test_the_first_line_says_what_the_answer_is_not() -> None:
    # One sentence for semantic_search, search_code and the CLI (answer.no_confident_match).
    assert no_confident_match("zzqx", "no code matches its words", True) == (
        'No confident match for "zzqx" — no code matches its words; the closest code follows.')
    assert no_confident_match("zzqx", None, True) == 'No confident match for "zzqx" — the closest code follows.'
    assert no_confident_match("zzqx", None, False) == 'No confident match for "zzqx" — nothing in the index matched it.'


def test_the_query_is_quoted_as_typed_with_invisible_characters_made_visible() -> None:
    assert shown_query("  how   does\tit work ") == "how does it work"
    assert shown_query("\u200b\u200b") == "\\u200b\\u200b"
    assert shown_query("🚀🔥") == "🚀🔥" and shown_query("مرحبا بالعالم") == "مرحبا بالعالم"
    long = shown_query("word " * 40)
    assert len(long) == QUERY_SHOWN_CHARS and long.endswith("…")


# --- one confidence, one threshold, one verdict -------------------------------------------------------


class EchoSelection:
    """Selection as far as the verdict goes: it applies the gate it is sent and records the relevances."""

    def __init__(self) -> None:
        self.queries: list = []

    def select(self, query, timeout_s: float) -> SelectOutcome:
        self.queries.append(query)
        return SelectOutcome(results=(), total_tokens=0, max_tokens=1000, min_relevance=query.min_relevance)

    def close(self) -> None:
        pass


def test_search_code_judges_the_whole_ranking_not_the_results_it_shows() -> None:
    # One result shown must not read as a clear winner: the confidence is the whole ranking's.
    pipeline, _, _ = _pipeline(_metadata(0.6))
    shown_one = code_search_answer(_run(pipeline, "validateToken", limit=1), threshold=0.5, trace_id="",
                                   max_lines=8, max_line_chars=160).to_dict()["metadata"]
    shown_all = code_search_answer(_run(pipeline, "validateToken"), threshold=0.5, trace_id="", max_lines=8,
                                   max_line_chars=160).to_dict()["metadata"]
    assert shown_one["confidence"] == shown_all["confidence"] and shown_one["score_margin"] == pytest.approx(0.4)


@pytest.mark.parametrize("calibrated", [0.2, 0.45, 0.6, 0.9])
def test_both_tools_flag_by_the_same_confidence_and_threshold(calibrated: float) -> None:
    pipeline, _, _ = _pipeline(_metadata(calibrated), GatewaySettings(confidence_threshold=0.55))
    selection = EchoSelection()
    pipeline.selection = selection  # type: ignore[assignment]
    query = "how are expired auth tokens rejected"
    selected = pipeline.run(PipelineRequest(workspace_root="/ws", query=query, sync=False))
    ranked = code_search_answer(_run(pipeline, query), threshold=0.55, trace_id="", max_lines=8,
                                max_line_chars=160).to_dict()["metadata"]
    # The gate is sent the gateway's threshold, and the composite confidence search_code reports is
    # what the best candidate's relevance carries.
    assert selection.queries[0].min_relevance == 0.55
    assert max(c.relevance for c in selection.queries[0].candidates) == pytest.approx(ranked["confidence"], abs=1e-4)
    semantic = answer_to_dict(selected)["metadata"]
    assert semantic["low_confidence"] == ranked["low_confidence"] == (ranked["confidence"] < 0.55)
    assert semantic["answer_confidence"] == ranked["confidence"] and semantic["confidence_threshold"] == 0.55


def _semantic_only(*names: str) -> tuple[RankedResult, ...]:
    return tuple(RankedResult(chunk=_chunk(n), score=1.0 - i / 10, lexical_score=0.0, vector_similarity=0.3,
                              provenance="semantic", lexical_rank=0, semantic_rank=i + 1) for i, n in enumerate(names))


@pytest.mark.parametrize(("query", "results", "missing", "reason"), [
    ("\U0001F680\U0001F525", _semantic_only("render"), (), "it has no letters or digits to search by"),
    ("\u200b\u200b", _semantic_only("render"), (), "it has no letters or digits to search by"),
    ("!@#$%", _semantic_only("render"), (), "it has no letters or digits to search by"),
    ("مرحبا بالعالم", _semantic_only("warn"), (), "no code matches its words"),
    ("how does the flux capacitor calibrate warp drives", _semantic_only("loadConfig"), (),
     "no code matches its words"),
    ("validateTokenz", RESULTS, ("validateTokenz",),
     "nothing in the index is named validateTokenz (nearest: validateToken)"),
    ("how are expired auth tokens rejected", RESULTS, (), None),
    ("anything", (), (), None),
])
def test_a_low_confidence_answer_says_why(query: str, results: tuple, missing: tuple, reason: str | None) -> None:
    metadata = dataclasses.replace(_metadata(0.1), missing_names=missing,
                                   nearest_names=("validateToken",) * bool(missing))
    pipeline, retrieval, _ = _pipeline(metadata)
    retrieval.results = results
    answer = _run(pipeline, query)
    payload = code_search_answer(answer, threshold=0.5, trace_id="", max_lines=8, max_line_chars=160).to_dict()
    assert payload["metadata"]["low_confidence"] and payload["metadata"]["low_confidence_reason"] == reason
    assert answer_to_dict(answer)["metadata"]["low_confidence_reason"] == reason
    confident = code_search_answer(_run(_pipeline(_metadata(0.95))[0], "validateToken"), threshold=0.5, trace_id="",
                                   max_lines=8, max_line_chars=160).to_dict()
    assert confident["metadata"]["low_confidence_reason"] is None
