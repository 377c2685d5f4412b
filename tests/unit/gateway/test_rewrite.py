"""Query rewriting (seed 002): the heuristic, the prompt, the parser, the chat source against a
local OpenAI-compatible stub, and the pipeline's merge and focus with fake clients."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest
from codecompass_gateway.answer import answer_to_dict, code_search_answer, guidance_for
from codecompass_gateway.pipeline import REWRITE, Pipeline, PipelineRequest
from codecompass_gateway.rewrite import (
    EXTERNAL_BLOCKED,
    MAX_TERMS,
    VOCABULARY_NAMES,
    ChatRewriter,
    RewriteFailed,
    build_messages,
    is_loopback_url,
    parse_rewrite,
    vocabulary_of,
)

from codecompass.common.chunks import Chunk, Language, NodeKind
from codecompass.common.config import GatewaySettings, Settings, redacted, settings_from
from codecompass.common.outbound import INVALID, TIMEOUT
from codecompass.contracts.retrieval.model import IndexingStatus, ResultCompleteness, SearchMetadata, SearchOutcome
from codecompass.contracts.selection.model import SelectOutcome
from codecompass.policy.ranking import RankedResult
from codecompass.policy.relevance import DEFAULT_RELEVANCE, QueryFocus
from codecompass.policy.rewrite import should_rewrite
from codecompass.policy.shape import analyze

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "fixtures" / "stubs"))
from rerank_api import Reply, StubRerankAPI

# --- the heuristic -------------------------------------------------------------------------


@pytest.mark.parametrize("query", [
    "store.insert_call",             # dotted
    "insertCall edges graph nodes",  # camelCase
    "insert_call into the graph",    # snake_case
    "graph edges",                   # fewer than three content words
    "src/graph/store.ts",            # a path
    "how are edges",                 # a question, but two content words
])
def test_code_shaped_and_short_queries_are_not_rewritten(query: str) -> None:
    assert should_rewrite(analyze(query))[0] is False


@pytest.mark.parametrize("query", [
    "how are edges inserted into the graph?",
    "where is the retry delay of failed requests computed",
    "the code that turns a token into the user it belongs to",  # stop-word heavy, no question word
])
def test_questions_and_stop_word_heavy_sentences_are_rewritten(query: str) -> None:
    assert should_rewrite(analyze(query))[0] is True


def test_keywords_without_stop_words_are_searched_as_given() -> None:
    rewrite, why = should_rewrite(analyze("graph edge insertion retry backoff"))
    assert rewrite is False and "keywords" in why


# --- the prompt and the parser -------------------------------------------------------------


def test_the_prompt_carries_the_vocabulary_bounded_and_the_query_as_the_user_message() -> None:
    names = [f"Store.insertCall{i}" for i in range(500)]
    messages = build_messages("how are edges inserted?", ["GraphStore.insertEdge", *names])
    system, user = messages[0]["content"], messages[1]["content"]
    assert "GraphStore.insertEdge" in system and '"terms"' in system and '"focus"' in system
    assert user == "how are edges inserted?"
    assert system.count("Store.insertCall") <= VOCABULARY_NAMES and len(system) < 4000
    assert "Symbols in this codebase" not in build_messages("q", [])[0]["content"]


def test_vocabulary_is_distinct_and_bounded() -> None:
    assert vocabulary_of(["a", "b", "a", "", "c"], limit=2) == ["a", "b"]
    assert sum(len(n) for n in vocabulary_of(["x" * 50] * 10 + [f"n{i}" * 20 for i in range(200)])) <= 2400


def test_fenced_json_is_parsed_and_cleaned() -> None:
    content = 'Sure:\n```json\n{"terms": ["insertEdge", "insertEdge", 3, "  INSERT INTO  calls "], ' \
              '"focus": "Implementation"}\n```'
    parsed = parse_rewrite(content)
    assert parsed.terms == ("insertEdge", "INSERT INTO calls") and parsed.focus == "implementation"


def test_too_many_terms_are_cut_and_an_unknown_focus_is_all() -> None:
    parsed = parse_rewrite(json.dumps({"terms": [f"t{i}" for i in range(20)], "focus": "everything"}))
    assert len(parsed.terms) == MAX_TERMS and parsed.focus == "all"


@pytest.mark.parametrize("content", ["no json here", '{"terms": "insertEdge"}', '{"terms": [1, 2]}',
                                     '{"terms": ["a",}', "[1, 2]"])
def test_bad_answers_are_refused(content: str) -> None:
    with pytest.raises(RewriteFailed) as failed:
        parse_rewrite(content)
    assert failed.value.reason == INVALID


# --- the chat source against the stub ----------------------------------------------------


def _rewriter(stub: StubRerankAPI, timeout_s: float = 2.0) -> ChatRewriter:
    return ChatRewriter(base_url=stub.v1_url, model="qwen2.5:3b", api_key="sk-secret-key", timeout_s=timeout_s)


@pytest.mark.parametrize(("url", "local"), [
    ("http://127.0.0.1:11434/v1", True), ("http://localhost:8000/v1", True), ("http://[::1]:8000/v1", True),
    ("https://api.example.com/v1", False), ("http://10.0.0.5:8000/v1", False), ("http://localhost.evil.com/v1", False),
])
def test_only_loopback_endpoints_count_as_this_machine(url: str, local: bool) -> None:
    assert is_loopback_url(url) is local


def test_a_remote_endpoint_needs_its_own_permission_and_is_never_called_without() -> None:
    blocked = ChatRewriter(base_url="https://llm.example.com/v1", model="m", api_key=None, timeout_s=1.0)
    with pytest.raises(RewriteFailed) as failed:
        blocked.rewrite("how are edges inserted?", ["GraphStore.insertEdge"])
    assert failed.value.reason == EXTERNAL_BLOCKED and "gateway.rewrite_allow_remote" in str(failed.value)


def test_the_chat_endpoint_answers_terms_with_a_low_temperature_and_the_key() -> None:
    with StubRerankAPI() as stub:
        stub.script(Reply(content='```json\n{"terms": ["insertEdge", "GraphStore"], "focus": "tests"}\n```'))
        parsed = _rewriter(stub).rewrite("how are edges inserted?", ["GraphStore.insertEdge"])
        sent = stub.received[0]
    assert parsed.terms == ("insertEdge", "GraphStore") and parsed.focus == "tests"
    assert sent.path == "/v1/chat/completions" and sent.body["model"] == "qwen2.5:3b"
    assert sent.body["temperature"] <= 0.2 and "GraphStore.insertEdge" in sent.body["messages"][0]["content"]
    assert sent.headers.get("Authorization") == "Bearer sk-secret-key"


@pytest.mark.parametrize(("reply", "reason"), [
    (Reply(delay_s=1.0), TIMEOUT),
    (Reply(status=500), "http_500"),
    (Reply(content="I think you should search for edges."), INVALID),
    (Reply(raw_body="not json at all"), INVALID),
])
def test_failures_become_a_reason_and_never_leak_the_key(reply: Reply, reason: str) -> None:
    with StubRerankAPI() as stub:
        stub.script(reply)
        with pytest.raises(RewriteFailed) as failed:
            _rewriter(stub, timeout_s=0.3).rewrite("how are edges inserted?", [])
    assert failed.value.reason == reason and "sk-secret-key" not in str(failed.value)


def test_no_endpoint_configured_means_no_rewriter() -> None:
    assert ChatRewriter.from_settings(GatewaySettings()) is None


def test_settings_from_env_and_the_key_is_redacted() -> None:
    settings = settings_from({"CODECOMPASS_GATEWAY_REWRITE_BASE_URL": "http://127.0.0.1:11434/v1",
                              "CODECOMPASS_GATEWAY_REWRITE_MODEL": "qwen2.5:3b",
                              "CODECOMPASS_GATEWAY_REWRITE_TIMEOUT_S": "1.5",
                              "CODECOMPASS_REWRITE_API_KEY": "sk-secret-key", "HOME": "/tmp"})
    g = settings.gateway
    assert g.rewrite_enabled and g.rewrite_model == "qwen2.5:3b" and g.rewrite_timeout_s == 1.5
    assert redacted(settings)["gateway"]["rewrite_api_key"] == "***" and "sk-secret-key" not in repr(settings)


# --- the pipeline ----------------------------------------------------------------------------


def _chunk(cid: str, path: str, is_test: bool = False) -> Chunk:
    return Chunk(id=cid, snippet_hash=cid, relative_path=path, language=Language.TYPESCRIPT,
                 node_kind=NodeKind.FUNCTION, name=cid, qualified_name=f"Q.{cid}", parent_id="", child_ids=(),
                 depth=0, signature=f"{cid}()", full_source="", collapsed_source=f"function {cid}() {{}}",
                 start_line=1, end_line=3, jsdoc="", jsdoc_start_line=0, relevant_imports=(), is_test=is_test,
                 embedding_text="")


def _result(chunk: Chunk, score: float) -> RankedResult:
    return RankedResult(chunk=chunk, score=score, lexical_score=score, vector_similarity=0.0, provenance="lexical",
                        lexical_rank=1, semantic_rank=0)


METADATA = SearchMetadata(indexing_status=IndexingStatus.READY, result_completeness=ResultCompleteness.COMPLETE,
                          semantic_fallback=False, semantic_skipped_reason="", semantic_ratio_used=0.2,
                          external_provider_blocked=False, embedding_model_id="m", embedding_model_version="1")
ORIGINAL = (_result(_chunk("edgeTest", "tests/edge.test.ts", is_test=True), 0.8),
            _result(_chunk("shared", "src/shared.ts"), 0.4))
REWRITTEN = (_result(_chunk("insertEdge", "src/store.ts"), 0.7), _result(_chunk("shared", "src/shared.ts"), 0.6))


class FakeRetrieval:
    def __init__(self, first: tuple[RankedResult, ...] = ORIGINAL) -> None:
        self.first = first
        self.queries: list[str] = []
        self.shapes: list = []

    def search(self, query, timeout_s: float) -> SearchOutcome:
        self.queries.append(query.query)
        self.shapes.append(query.shape)
        results = self.first if len(self.queries) == 1 else REWRITTEN
        return SearchOutcome(results=results, metadata=dataclasses.replace(METADATA, confidence=0.9))

    def close(self) -> None:
        pass


class FakeSelection:
    def __init__(self) -> None:
        self.queries: list = []

    def select(self, query, timeout_s: float) -> SelectOutcome:
        self.queries.append(query)
        return SelectOutcome(results=(), total_tokens=0, max_tokens=100, min_relevance=0.0)

    def close(self) -> None:
        pass


class FakeRewriter:
    source = "openai_compatible"

    def __init__(self, answer: str | RewriteFailed) -> None:
        self.answer = answer
        self.vocabulary: list[str] = []

    def rewrite(self, query: str, vocabulary):
        self.vocabulary = list(vocabulary)
        if isinstance(self.answer, RewriteFailed):
            raise self.answer
        return parse_rewrite(self.answer)


ANSWER = '{"terms": ["insertEdge", "GraphStore"], "focus": "implementation"}'


def _pipeline(rewriter: FakeRewriter | None, first: tuple[RankedResult, ...] = ORIGINAL
              ) -> tuple[Pipeline, FakeRetrieval, FakeSelection]:
    pipeline = Pipeline(Settings(state_dir=None))  # type: ignore[arg-type]
    pipeline.close()
    retrieval, selection = FakeRetrieval(first), FakeSelection()
    pipeline.retrieval = retrieval  # type: ignore[assignment]
    pipeline.selection = selection  # type: ignore[assignment]
    pipeline.rewriter = rewriter  # type: ignore[assignment]
    return pipeline, retrieval, selection


def _request(query: str = "how are edges inserted into the graph?", **kwargs) -> PipelineRequest:
    return PipelineRequest(workspace_root="/ws", query=query, sync=False, rerank=False, **kwargs)


def test_a_question_is_rewritten_merged_and_focused_on_implementation() -> None:
    rewriter = FakeRewriter(ANSWER)
    pipeline, retrieval, _ = _pipeline(rewriter)
    answer = pipeline.run(_request(select=False))
    assert retrieval.queries == ["how are edges inserted into the graph?", "insertEdge GraphStore"]
    assert rewriter.vocabulary == ["Q.edgeTest", "Q.shared"]  # the first results' names
    scores = {c.result.chunk.id: round(c.score, 3) for c in answer.candidates}
    # The higher score per chunk; the test file scores less under implementation focus.
    assert scores == {"insertEdge": 0.7, "shared": 0.6, "edgeTest": round(0.8 * 0.7, 3)}
    assert [c.result.chunk.id for c in answer.candidates] == ["insertEdge", "shared", "edgeTest"]
    report = answer.understanding.rewrite
    assert report["applied"] and report["terms"] == ["insertEdge", "GraphStore"]
    assert report["focus"] == "implementation" and report["trigger"] == "heuristic" and report["added"] == 1
    assert REWRITE in answer.stage_ms
    assert answer_to_dict(answer)["metadata"]["rewrite"] == report
    assert code_search_answer(answer, threshold=0.5, trace_id="t", max_lines=5,
                              max_line_chars=80).to_dict()["metadata"]["rewrite"] == report


def test_the_rewrites_focus_shapes_the_relevance_sent_to_selection_unless_the_caller_set_one() -> None:
    pipeline, retrieval, selection = _pipeline(FakeRewriter(ANSWER))
    rewritten = pipeline.run(_request())
    other, _, other_selection = _pipeline(FakeRewriter(ANSWER))
    chosen = other.run(_request(focus=QueryFocus.TESTS))
    assert (rewritten.focus, chosen.focus) == (QueryFocus.IMPLEMENTATION, QueryFocus.TESTS)
    assert answer_to_dict(rewritten)["selection"]["focus"] == "implementation"
    # The merged list: edgeTest 0.8 (a test file), insertEdge 0.7, shared 0.6; calibrated 0.9, and
    # the best's relevance is the composite confidence the agent is shown (below 0.9: a small margin).
    shown = guidance_for(rewritten, 0.5).confidence
    assert 0.0 < shown < 0.9
    sent = [{c.chunk.id: c.relevance for c in q.candidates} for q in (*selection.queries, *other_selection.queries)]
    e = DEFAULT_RELEVANCE.relative_exponent
    assert sent[0] == pytest.approx({"edgeTest": shown * 0.7, "insertEdge": shown * (0.7 / 0.8) ** e,
                                     "shared": shown * (0.6 / 0.8) ** e})
    assert sent[1] == pytest.approx({"edgeTest": shown, "insertEdge": shown * (0.7 / 0.8) ** e * 0.7,
                                     "shared": shown * (0.6 / 0.8) ** e * 0.7})
    # Each search goes with its own shape: the question's, then the rewritten terms'.
    assert retrieval.shapes == [analyze("how are edges inserted into the graph?"),
                                    analyze("insertEdge GraphStore")]


def test_a_keyword_query_is_not_rewritten_and_false_never_is() -> None:
    pipeline, retrieval, _ = _pipeline(FakeRewriter(ANSWER))
    answer = pipeline.run(_request("GraphStore.insertEdge", select=False))
    assert retrieval.queries == ["GraphStore.insertEdge"] and not answer.understanding.rewrite["applied"]
    answer = pipeline.run(_request(rewrite=False, select=False))
    assert answer.understanding.rewrite["reason"] == "off for this request"


def test_zero_results_fall_back_to_a_rewrite_and_true_forces_one() -> None:
    pipeline, retrieval, _ = _pipeline(FakeRewriter(ANSWER), first=())
    answer = pipeline.run(_request("GraphStore.insertEdge", select=False))
    assert answer.understanding.rewrite["trigger"] == "zero_results" and len(retrieval.queries) == 2
    assert [c.result.chunk.id for c in answer.candidates] == ["insertEdge", "shared"]
    pipeline, _, _ = _pipeline(FakeRewriter(ANSWER))
    assert pipeline.run(
        _request("graph edges", rewrite=True, select=False)).understanding.rewrite["trigger"] == "forced"


def test_a_failed_rewrite_keeps_the_first_results_and_says_why() -> None:
    pipeline, retrieval, _ = _pipeline(FakeRewriter(RewriteFailed(TIMEOUT, "no answer within 3s")))
    answer = pipeline.run(_request(select=False))
    assert len(retrieval.queries) == 1 and [c.result.chunk.id for c in answer.candidates] == ["edgeTest", "shared"]
    report = answer.understanding.rewrite
    assert not report["applied"] and report["reason"].startswith("timeout")


def test_without_a_source_nothing_is_called_and_the_answer_says_so() -> None:
    pipeline, retrieval, _ = _pipeline(None)
    answer = pipeline.run(_request(rewrite=True, select=False))
    assert len(retrieval.queries) == 1 and "no LLM source" in answer.understanding.rewrite["reason"]
