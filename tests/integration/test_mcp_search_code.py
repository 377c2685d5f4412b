"""search_code as an agent calls it: `python -m codecompass_gateway` spawned by the SDK's stdio
client, against the real services on an indexed copy of the sample workspace. Every field of
seed 003's contract is there and typed; a name finds its definition first; a query that matches
nothing is low_confidence with a next call to make; the semantic modes and `ref` behave as
documented."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import CallToolResult
from tests.fixtures.gateway import gateway_stdio_params

pytestmark = pytest.mark.slow

RESULT_FIELDS = {"path": str, "line_start": int, "line_end": int, "kind": str, "name": str, "qualified_name": str,
                 "language": str, "score": float, "snippet": str, "provenance": str}
_NONE = type(None)
METADATA_FIELDS = {
    "codecompass_protocol_version": str, "freshness_status": str, "indexing_status": str,
    "result_completeness": str, "ref": str, "semantic_mode": str, "semantic_enabled": bool,
    "semantic_ratio_used": float, "semantic_triggered": bool, "semantic_skipped_reason": (str, _NONE),
    "external_provider_blocked": bool, "embedding_model_version": (str, _NONE), "rerank_provider": str,
    "rerank_fallback": bool, "low_confidence": bool, "suggested_action": (str, _NONE),
    "confidence_threshold": float, "top_score": float, "score_margin": float,
    "channel_agreement": (float, _NONE), "query_intent_confidence": float,
    "intent_escalation_hint": (str, _NONE), "semantic_fallback": bool, "trace_id": str,
}
TOOL_NAMES = {"semantic_search", "search_code", "codebase_trace", "read_symbol", "index_status"}


@pytest.fixture(scope="module")
def stack(indexed_stack: dict[str, str]) -> dict[str, str]:
    return indexed_stack


def calls(stack: dict[str, str], arguments: list[dict[str, Any]]) -> tuple[set[str], list[CallToolResult]]:
    """One stdio session: the tool list, then search_code with each set of arguments in turn."""

    async def run() -> tuple[set[str], list[CallToolResult]]:
        async with Client(gateway_stdio_params(stack), read_timeout_seconds=60) as client:
            names = {t.name for t in (await client.list_tools()).tools}
            return names, [await client.call_tool("search_code", a) for a in arguments]

    return anyio.run(run)


@pytest.fixture(scope="module")
def answers(stack) -> dict[str, Any]:
    queries = {
        "identifier": {"query": "validateToken"},
        "nonsense": {"query": "zzqx blorf quux"},
        "question": {"query": "retry a failed operation with exponential backoff", "limit": 3},
        "off": {"query": "retry a failed operation with exponential backoff", "semantic_mode": "off"},
        "rerank_only": {"query": "retry a failed operation with exponential backoff", "semantic_mode": "rerank_only"},
        "javascript": {"query": "logger", "language": "javascript"},
        "ref": {"query": "validateToken", "ref": "main"},
        "rewrite": {"query": "validateToken", "rewrite": True, "confidence_threshold": 0.99},
    }
    names, results = calls(stack, list(queries.values()))
    return {"tools": names, **dict(zip(queries, results, strict=True))}


def _payload(result: CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    structured = result.structured_content
    # Text for the model, the JSON for programs: the text is a reading of the same answer, not a copy.
    text = result.content[0].text
    assert len(result.content) == 1 and not text.startswith("{")
    lines = text.splitlines()
    # An unsure answer says so before anything else (test_mcp_low_confidence has the sentences).
    if structured["metadata"]["low_confidence"]:
        assert lines.pop(0).startswith('No confident match for "')
    assert lines[0].startswith(f"{len(structured['results'])} results of ")
    for rank, found in enumerate(structured["results"], 1):
        assert f"{rank}. {found['path']}:{found['line_start']}-{found['line_end']}  {found['kind']} " in text
    return structured


def _check_contract(payload: dict[str, Any]) -> None:
    assert set(payload) >= {"results", "query_intent", "total_candidates", "metadata"}
    assert payload["query_intent"] in ("symbol", "path", "error", "natural_language")
    assert isinstance(payload["total_candidates"], int)
    for result in payload["results"]:
        for name, kind in RESULT_FIELDS.items():
            assert isinstance(result[name], kind), (name, result)
    meta = payload["metadata"]
    for name, kind in METADATA_FIELDS.items():
        assert name in meta, name
        assert isinstance(meta[name], kind), (name, meta[name])
    assert meta["codecompass_protocol_version"] == "1.0" and meta["ref"] == "working_tree"
    assert meta["freshness_status"] in ("fresh", "stale", "syncing")
    assert meta["indexing_status"] == "ready" and len(meta["trace_id"]) == 32


def test_the_tool_is_listed_beside_the_others(answers) -> None:
    assert answers["tools"] == TOOL_NAMES


def test_every_contract_field_is_present_and_typed(answers) -> None:
    for name in ("identifier", "nonsense", "question", "off", "rerank_only", "javascript", "rewrite"):
        _check_contract(_payload(answers[name]))


def test_an_identifier_finds_its_definition_first(answers) -> None:
    payload = _payload(answers["identifier"])
    top = payload["results"][0]
    assert (top["qualified_name"], top["path"], top["kind"]) == (
        "TokenService.validateToken", "src/auth/tokenService.ts", "method")
    assert "validateToken" in top["snippet"].splitlines()[0] and top["line_start"] <= top["line_end"]
    meta = payload["metadata"]
    assert payload["query_intent"] == "symbol" and meta["query_intent_confidence"] >= 0.9
    assert meta["intent_escalation_hint"] is None
    assert not meta["low_confidence"] and meta["suggested_action"] is None
    # A name the index defines is answered lexically: the policy skips the vectors.
    assert not meta["semantic_triggered"] and meta["semantic_skipped_reason"] == "lexical_short_circuit"
    assert meta["freshness_status"] == "fresh"


def test_a_nonsense_query_is_low_confidence_with_a_suggested_call(answers) -> None:
    meta = _payload(answers["nonsense"])["metadata"]
    assert meta["low_confidence"] and meta["confidence"] < meta["confidence_threshold"] == 0.5
    call = meta["suggested_call"]
    assert call["tool"] in TOOL_NAMES and meta["suggested_action"].startswith(call["tool"] + "(")
    # Its words occur nowhere (only vector neighbours came back): other words, not a neighbour.
    assert (call["tool"], call["arguments"]) == ("index_status", {})


def test_a_question_uses_both_channels(answers) -> None:
    payload = _payload(answers["question"])
    meta = payload["metadata"]
    assert payload["query_intent"] == "natural_language" and len(payload["results"]) <= 3
    assert payload["results"][0]["qualified_name"] == "retryWithBackoff"
    assert meta["semantic_mode"] == "hybrid" and meta["semantic_enabled"] and meta["semantic_triggered"]
    assert meta["semantic_ratio_used"] > 0 and meta["embedding_model_version"]
    assert meta["channel_agreement"] is not None and 0 <= meta["channel_agreement"] <= 1
    assert payload["total_candidates"] >= len(payload["results"])


@pytest.mark.parametrize(("name", "reason"),
                         [("off", "semantic_disabled"), ("rerank_only", "semantic_mode_rerank_only")])
def test_off_and_rerank_only_build_no_vectors(answers, name: str, reason: str) -> None:
    payload = _payload(answers[name])
    meta = payload["metadata"]
    assert meta["semantic_mode"] == name and not meta["semantic_enabled"] and not meta["semantic_triggered"]
    assert meta["semantic_ratio_used"] == 0.0 and meta["semantic_skipped_reason"] == reason
    assert meta["embedding_model_version"] is None
    assert all(r["provenance"] == "lexical" for r in payload["results"])
    assert payload["results"][0]["qualified_name"] == "retryWithBackoff"


def test_the_language_filter(answers) -> None:
    results = _payload(answers["javascript"])["results"]
    assert results and {r["language"] for r in results} <= {"javascript", "jsx"}


def test_a_ref_other_than_the_working_tree_is_an_error_with_its_code(answers) -> None:
    result = answers["ref"]
    assert result.is_error and len(result.content) == 1
    assert result.content[0].text.endswith("[unsupported_ref]") and "only the working tree" in result.content[0].text
    assert result.structured_content["error"]["code"] == "unsupported_ref"


def test_rewrite_without_an_llm_source_is_reported_not_applied_and_the_threshold_is_per_request(answers) -> None:
    meta = _payload(answers["rewrite"])["metadata"]
    rewrite = meta["rewrite"]
    assert rewrite["requested"] is True and rewrite["applied"] is False and rewrite["trigger"] == "forced"
    assert "no LLM source" in rewrite["reason"] and rewrite["terms"] == []
    assert meta["confidence_threshold"] == 0.99 and meta["low_confidence"]
    assert meta["suggested_call"]["tool"] == "codebase_trace"
    assert meta["suggested_call"]["arguments"]["symbol"] == "TokenService.validateToken"
