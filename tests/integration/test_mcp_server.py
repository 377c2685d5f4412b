"""The MCP server as agents use it: `python -m codecompass_gateway` spawned by the SDK's stdio
client (and served over streamable HTTP), against the real services on an indexed copy of the
sample workspace."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from mcp import Client, types
from mcp.types import CallToolResult
from mcp.types.version import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION
from tests.fixtures.gateway import gateway_env, gateway_stdio_params, wait_until_listening

from codecompass.common.tokens import count_tokens

pytestmark = pytest.mark.slow

_T = TypeVar("_T")
TOOLS = {"semantic_search", "search_code", "codebase_trace", "read_symbol", "index_status"}


@pytest.fixture(scope="module")
def stack(indexed_stack: dict[str, str]) -> dict[str, str]:
    return indexed_stack


stdio_params = gateway_stdio_params


def with_client(server: Any, session: Callable[[Client], Awaitable[_T]], mode: str = "auto") -> _T:
    async def run() -> _T:
        async with Client(server, mode=mode, read_timeout_seconds=60) as client:
            return await session(client)

    return anyio.run(run)


def texts(result: CallToolResult) -> list[str]:
    return [block.text for block in result.content]


def call(stack: dict[str, str], name: str, arguments: dict[str, Any], mode: str = "auto") -> CallToolResult:
    return with_client(stdio_params(stack), lambda c: c.call_tool(name, arguments), mode)


def test_lists_the_tools_on_the_current_protocol_revision(stack) -> None:
    async def session(client: Client) -> tuple[str, list[Any], str | None]:
        listed = await client.list_tools()
        return client.protocol_version, listed.tools, client.instructions

    version, listed, instructions = with_client(stdio_params(stack), session)
    assert version == LATEST_MODERN_VERSION
    assert {t.name for t in listed} == TOOLS
    by_name = {t.name: t for t in listed}
    assert by_name["codebase_trace"].input_schema["properties"]["direction"]["enum"][0] == "callers"
    assert all("workspace" in t.input_schema["properties"] for t in listed)
    # A search may start indexing a folder that has none; the other tools only read.
    assert {t.name for t in listed if t.annotations.read_only_hint} == {"codebase_trace", "read_symbol", "index_status"}
    assert instructions and "semantic_search" in instructions


def test_semantic_search_returns_the_validating_code_as_multi_content(stack) -> None:
    result = call(stack, "semantic_search", {"query": "how are tokens validated"})
    assert not result.is_error, texts(result)
    first = result.content[0]
    # The method itself: it is a third of its class, too little of it for the class to absorb it.
    assert first.text.startswith("// src/auth/tokenService.ts > TokenService.validateToken\n")
    assert "decodeJwt(token)" in first.text
    assert first.annotations.audience == ["assistant"] and 0 < first.annotations.priority <= 1
    # Results come in the ranking's order, each with its relevance: the first is the most relevant;
    # further down, test code in an answer about implementation has its relevance scaled by focus.
    priorities = [b.annotations.priority for b in result.content]
    assert priorities[0] == max(priorities) and all(0 < p <= 1 for p in priorities)
    structured = result.structured_content
    top = structured["results"][0]
    assert (top["path"], top["qualified_name"]) == ("src/auth/tokenService.ts", "TokenService.validateToken")
    assert top["why"] and "code" not in top and top["start_line"] >= 1
    meta = structured["metadata"]
    assert meta["indexing_status"] == "ready" and len(meta["trace_id"]) == 32
    assert meta["rewrite"]["applied"] is False
    assert meta["response_tokens"] <= 25_000
    assert sum(len(t) for t in texts(result)) < 50_000


def test_semantic_search_never_exceeds_the_response_cap(stack) -> None:
    result = call(stack, "semantic_search", {"query": "token", "max_tokens": 20_000, "min_relevance": 0})
    assert not result.is_error, texts(result)
    assert sum(count_tokens(t) for t in texts(result)) <= 25_000


def test_semantic_search_filters_and_an_answerless_query(stack) -> None:
    result = call(stack, "semantic_search", {"query": "token", "path": "src/http", "min_relevance": 0})
    assert not result.is_error
    assert all(r["path"].startswith("src/http/") for r in result.structured_content["results"])
    empty = call(stack, "semantic_search", {"query": "zzqxNotAName", "kind": "enum"})
    assert not empty.is_error and empty.content, "never an empty success"


def test_codebase_trace_finds_the_callers(stack) -> None:
    result = call(stack, "codebase_trace", {"symbol": "TokenService.validateToken", "direction": "callers"})
    assert not result.is_error, texts(result)
    text = texts(result)[0]
    assert text.startswith("callers of TokenService.validateToken (src/auth/tokenService.ts:")
    caller_lines = [line for line in text.splitlines() if line.startswith("src/auth/middleware.ts:")]
    assert caller_lines and "requireAuth" in caller_lines[0] and " — " in caller_lines[0]
    structured = result.structured_content
    assert structured["returned"] == len(structured["nodes"]) <= structured["total_found"]
    assert any(n["qualified_name"] == "requireAuth" for n in structured["nodes"])


def test_read_symbol_collapses_members_and_expands_the_chosen_ones(stack) -> None:
    collapsed = call(stack, "read_symbol", {"symbol": "TokenService"})
    assert not collapsed.is_error, texts(collapsed)
    text = texts(collapsed)[0]
    assert text.startswith("// src/auth/tokenService.ts > TokenService  (lines ")
    assert "validateToken" in text and "decodeJwt(token)" not in text  # the member is there, collapsed
    expanded = call(stack, "read_symbol", {"symbol": "TokenService", "expand": ["validateToken", "noSuchMember"]})
    assert not expanded.is_error, texts(expanded)
    assert "decodeJwt(token)" in texts(expanded)[0]
    assert expanded.structured_content["expanded"] == ["TokenService.validateToken"]
    assert expanded.structured_content["expand_not_found"] == ["noSuchMember"]


def test_read_symbol_of_a_file_is_its_outline(stack) -> None:
    result = call(stack, "read_symbol", {"symbol": "src/auth/tokenService.ts"})
    assert not result.is_error, texts(result)
    text = texts(result)[0]
    assert "outline" in text.splitlines()[0]
    names = [e["qualified_name"] for e in result.structured_content["outline"]]
    assert "TokenService" in names and "TokenService.validateToken" in names
    located = call(stack, "read_symbol", {"symbol": "src/auth/middleware.ts:" + str(
        next(i for i, line in enumerate(Path(stack["root"], "src/auth/middleware.ts").read_text().splitlines(), 1)
             if "function requireAuth" in line))})
    assert not located.is_error and "> requireAuth" in texts(located)[0].splitlines()[0]


def test_index_status(stack) -> None:
    result = call(stack, "index_status", {})
    assert not result.is_error, texts(result)
    structured = result.structured_content
    assert structured["indexing_status"] == "ready" and structured["files"] >= 10
    assert structured["chunks"] == structured["embedded_chunks"] > 0 and structured["embedded_share"] == 1.0
    assert structured["embedding_model_id"] in texts(result)[0]
    # The stack indexed this workspace moments ago: the last sync is recent and said in words too.
    synced = dt.datetime.fromisoformat(structured["last_sync_time"])
    assert dt.timedelta(0) <= dt.datetime.now(dt.UTC) - synced < dt.timedelta(minutes=30)
    assert "last sync " in texts(result)[0] and " ago" in texts(result)[0]


@pytest.mark.parametrize(("name", "arguments", "expected"), [
    ("semantic_search", {"query": "x", "workspace": "relative/path"}, "workspace must be an absolute path"),
    ("semantic_search", {"query": "x", "workspace": "/no/such/folder"}, "is not a folder this server opens"),
    ("semantic_search", {"query": "   "}, "query is empty"),
    ("semantic_search", {"query": "x", "path": "src/[a"}, "invalid path filter"),
    ("semantic_search", {"query": "x", "max_tokens": 5}, "max_tokens"),
    ("semantic_search", {"query": "x", "max_tokens": 1_000_000}, "max_tokens: Input should be less than or equal"),
    ("codebase_trace", {"symbol": "TokenService", "direction": "sideways"}, "direction"),
    ("codebase_trace", {"symbol": "NoSuchSymbol", "direction": "callers"}, "no symbol named"),
    ("read_symbol", {"symbol": "NoSuchSymbol"}, "no symbol named"),
    ("read_symbol", {"symbol": "src/auth/tokenService.ts:99999"}, "outside"),
])
def test_bad_arguments_are_tool_errors_with_one_clear_line(stack, name, arguments, expected) -> None:
    result = call(stack, name, arguments)
    assert result.is_error
    assert len(result.content) == 1 and expected in result.content[0].text


def test_several_workspaces_and_the_previous_protocol_revision(stack, tmp_path) -> None:
    other = tmp_path / "other"
    (other / "src").mkdir(parents=True)
    (other / "src" / "billing.ts").write_text(
        "export function computeInvoiceTotal(lines: number[]): number {\n"
        "  return lines.reduce((sum, line) => sum + line, 0);\n}\n")

    async def session(client: Client) -> tuple[str, CallToolResult, CallToolResult]:
        # A cold workspace answers at once (lexically) while it is indexed in the background.
        cold = await client.call_tool("semantic_search", {"query": "computeInvoiceTotal", "workspace": str(other),
                                                          "min_relevance": 0})
        status = await client.call_tool("index_status", {"workspace": str(other)})
        return client.protocol_version, cold, status

    # `other` is under a root the server was started to allow (it serves no folder outside those).
    version, cold, status = with_client(stdio_params(stack, None, "--allow-root", str(tmp_path)), session,
                                        mode="legacy")
    assert version == LATEST_HANDSHAKE_VERSION  # 2025-11-25, the handshake era
    assert not cold.is_error, texts(cold)
    assert any("computeInvoiceTotal" in t for t in texts(cold))
    assert cold.structured_content["metadata"]["workspace"] == str(other)
    assert not status.is_error and status.structured_content["workspace"] == str(other)


def test_dead_services_are_tool_errors(stack, free_port) -> None:
    dead = f"127.0.0.1:{free_port}"
    dead_stack = {**stack, "RETRIEVAL_ADDR": dead, "ANALYSIS_ADDR": dead}

    async def session(client: Client) -> tuple[CallToolResult, CallToolResult]:
        return (await client.call_tool("semantic_search", {"query": "tokens"}),
                await client.call_tool("codebase_trace", {"symbol": "requireAuth", "direction": "callees"}))

    search, trace = with_client(stdio_params(dead_stack), session)
    assert search.is_error and "retrieval service not running at" in search.content[0].text
    assert trace.is_error and "analysis service not running at" in trace.content[0].text


def test_streamable_http(stack, free_port) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "codecompass_gateway", "--workspace", stack["root"], "--transport", "streamable-http",
         "--port", str(free_port)],
        env=gateway_env(stack), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{free_port}/mcp"
    try:
        wait_until_listening(process, free_port, 30)

        async def session(client: Client) -> tuple[str, set[str], CallToolResult]:
            listed = await client.list_tools()
            found = await client.call_tool("codebase_trace", {"symbol": "TokenService.validateToken",
                                                              "direction": "callers"})
            return client.protocol_version, {t.name for t in listed.tools}, found

        version, names, found = with_client(url, session)
        assert version == LATEST_MODERN_VERSION and names == TOOLS
        assert not found.is_error and "requireAuth" in found.content[0].text
        legacy = with_client(url, lambda c: c.call_tool("index_status", {}), mode="legacy")
        assert not legacy.is_error and legacy.structured_content["indexing_status"] == "ready"
    finally:
        process.terminate()
        process.wait(timeout=15)


def test_rewrite_asks_the_connected_client_s_model_on_a_2025_connection_only(stack) -> None:
    asked: list[types.CreateMessageRequestParams] = []

    async def sampling(_context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append(params)
        terms = '{"terms": ["validateToken", "decodeJwt", "TokenService"], "focus": "implementation"}'
        return types.CreateMessageResult(role="assistant", model="stub-model", stop_reason="endTurn",
                                         content=types.TextContent(type="text", text=f"```json\n{terms}\n```"))

    def search(mode: str) -> CallToolResult:
        async def run() -> CallToolResult:
            async with Client(stdio_params(stack), mode=mode, read_timeout_seconds=60,
                              sampling_callback=sampling) as client:
                return await client.call_tool("semantic_search", {"query": "how are tokens checked", "rewrite": True})

        return anyio.run(run)

    legacy = search("legacy")
    assert not legacy.is_error, texts(legacy)
    rewrite = legacy.structured_content["metadata"]["rewrite"]
    assert (rewrite["applied"], rewrite["source"], rewrite["focus"]) == (True, "mcp_sampling", "implementation")
    assert rewrite["terms"] == ["validateToken", "decodeJwt", "TokenService"]
    assert len(asked) == 1 and "Symbols in this codebase" in asked[0].system_prompt
    assert asked[0].messages[0].content.text == "how are tokens checked"
    assert any("validateToken" in t for t in texts(legacy))

    # The 2026-07-28 revision deprecates sampling on new connections: that client is never asked.
    modern = search("auto")
    assert not modern.is_error, texts(modern)
    rewrite = modern.structured_content["metadata"]["rewrite"]
    assert rewrite["applied"] is False and "no LLM source" in rewrite["reason"] and len(asked) == 1


def test_a_client_that_refuses_sampling_leaves_the_query_as_given(stack) -> None:
    async def refuse(_context: Any, _params: types.CreateMessageRequestParams) -> types.ErrorData:
        return types.ErrorData(code=-1, message="the user declined")

    async def run() -> CallToolResult:
        async with Client(stdio_params(stack), mode="legacy", read_timeout_seconds=60,
                          sampling_callback=refuse) as client:
            return await client.call_tool("semantic_search", {"query": "how are tokens checked", "rewrite": True})

    result = anyio.run(run)
    assert not result.is_error, texts(result)
    rewrite = result.structured_content["metadata"]["rewrite"]
    assert (rewrite["applied"], rewrite["source"]) == (False, "mcp_sampling")
    assert rewrite["reason"].startswith("client_error:") and "the user declined" in rewrite["reason"]
    assert result.structured_content["results"]
