"""A low-confidence answer flags, it does not cut (issue 26 §3), as an agent reads it: the gateway
spawned by the MCP SDK's stdio client against the real services on an indexed copy of the sample
workspace. The first line of text says there is no confident match, and why, in both search tools;
semantic_search still carries the closest code within its small budget, in the ranking's order."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.types import CallToolResult
from tests.fixtures.gateway import gateway_stdio_params

from codecompass.common.tokens import count_tokens
from codecompass.policy.selection import LOW_CONFIDENCE_MAX_TOKENS

pytestmark = pytest.mark.slow

# query -> the reason its first line gives (None: no more than "no confident match").
UNSURE = {
    "zzqx blorf quux": "no code matches its words",
    "\U0001F680\U0001F525": "it has no letters or digits to search by",
    "\u200b\u200b": "it has no letters or digits to search by",
    "مرحبا بالعالم": "no code matches its words",
    "how does the flux capacitor calibrate warp drives": "no code matches its words",
    "validateTokenz": "nothing in the index is named validateTokenz (nearest: validateToken",
}
# How each query is quoted: invisible characters written out, so the line never reads `""`.
SHOWN = {"\u200b\u200b": "\\u200b\\u200b"}
# A question with strong evidence (the name it asks about exists, defined once). Confidence is
# P(the first result is right), so a question in words alone is often, and honestly, unsure.
CONFIDENT = "where does TokenService validateToken check expiry"


@pytest.fixture(scope="module")
def answers(indexed_stack: dict[str, str]) -> dict[str, dict[str, CallToolResult]]:
    """One stdio session: both search tools for each query, and the ranked list 60 deep to compare orders."""

    async def run() -> dict[str, dict[str, CallToolResult]]:
        out: dict[str, dict[str, CallToolResult]] = {}
        async with Client(gateway_stdio_params(indexed_stack), read_timeout_seconds=60) as client:
            for query in [*UNSURE, CONFIDENT]:
                out[query] = {
                    "semantic_search": await client.call_tool("semantic_search", {"query": query}),
                    "search_code": await client.call_tool("search_code", {"query": query}),
                    "ranked": await client.call_tool("search_code", {"query": query, "limit": 50}),
                }
        return out

    return anyio.run(run)


def first_line(result: CallToolResult) -> str:
    assert not result.is_error, result.content[0].text
    return result.content[0].text.splitlines()[0]


def _structured(result: CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None
    return result.structured_content


@pytest.mark.parametrize("query", list(UNSURE))
def test_the_first_line_of_both_tools_says_no_confident_match_and_why(answers, query: str) -> None:
    prefix = f'No confident match for "{SHOWN.get(query, query)}" — {UNSURE[query]}'
    for tool in ("semantic_search", "search_code"):
        line = first_line(answers[query][tool])
        assert line.startswith(prefix) and line.endswith("the closest code follows."), (tool, line)
        assert _structured(answers[query][tool])["metadata"]["low_confidence"] is True
    # search_code keeps seed 003's fields as they were: the next call is still suggested.
    meta = _structured(answers[query]["search_code"])["metadata"]
    assert meta["suggested_action"] and meta["low_confidence_reason"].startswith(UNSURE[query])


def test_a_confident_answer_opens_with_its_code(answers) -> None:
    semantic, ranked = answers[CONFIDENT]["semantic_search"], answers[CONFIDENT]["search_code"]
    assert first_line(semantic).startswith("// src/auth/") and not _structured(semantic)["metadata"]["low_confidence"]
    assert " results of " in first_line(ranked) and not _structured(ranked)["metadata"]["low_confidence"]


@pytest.mark.parametrize("query", ["zzqx blorf quux", "how does the flux capacitor calibrate warp drives"])
def test_a_low_confidence_answer_holds_the_closest_code_within_its_small_budget(answers, query: str) -> None:
    semantic = _structured(answers[query]["semantic_search"])
    results, selection = semantic["results"], semantic["selection"]
    # More than the two an answer used to be cut to, and no more than the small budget holds.
    assert len(results) > 2 and selection["max_tokens"] == LOW_CONFIDENCE_MAX_TOKENS
    assert sum(r["tokens"] for r in results) == selection["total_tokens"] <= LOW_CONFIDENCE_MAX_TOKENS
    texts = [c.text for c in answers[query]["semantic_search"].content[1:]]  # after the first line
    assert len(texts) == len(results) and sum(count_tokens(t) for t in texts) <= LOW_CONFIDENCE_MAX_TOKENS
    # In the ranking's order: the ranked list (search_code) has them in the same order. The
    # answer fills its budget from the gateway's 60 candidates, search_code shows at most 50: a
    # small result from deeper down comes after every one the list shows.
    ranked = [(r["path"], r["qualified_name"]) for r in _structured(answers[query]["ranked"])["results"]]
    places = [ranked.index(key) if key in ranked else len(ranked)
              for key in ((r["path"], r["qualified_name"]) for r in results)]
    assert places == sorted(places) and places[0] == 0


def test_both_tools_judge_by_the_same_confidence_and_threshold(answers) -> None:
    for query in [*UNSURE, CONFIDENT]:
        semantic = _structured(answers[query]["semantic_search"])["metadata"]
        ranked = _structured(answers[query]["search_code"])["metadata"]
        assert semantic["answer_confidence"] == ranked["confidence"], query
        assert semantic["confidence_threshold"] == ranked["confidence_threshold"] == 0.5
        assert semantic["low_confidence"] == ranked["low_confidence"], query
