"""The MCP server through the SDK's in-memory client: the tool list, argument errors and a
service that is down, with no services running."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio
import pytest
from codecompass_gateway.server import build_server
from mcp import Client
from mcp.types import CallToolResult, ListToolsResult

from codecompass.common.tokens import count_tokens

_T = TypeVar("_T")


@pytest.fixture
def server(tmp_path: Path, dead_services):
    return build_server(dead_services, tmp_path)


def session(server: Any, run: Callable[[Client], Awaitable[_T]], mode: str = "auto") -> _T:
    async def main() -> _T:
        async with Client(server, mode=mode) as client:
            return await run(client)

    return anyio.run(main)


def call(server: Any, name: str, arguments: dict[str, Any]) -> CallToolResult:
    return session(server, lambda c: c.call_tool(name, arguments))


def error_line(result: CallToolResult) -> str:
    assert result.is_error and len(result.content) == 1
    text = result.content[0].text
    assert "\n" not in text
    return text


TOOL_NAMES = ["semantic_search", "search_code", "codebase_trace", "read_symbol", "index_status"]


# What every session pays for the tool list, measured as a client receives it (issue 15: it was
# 2,685 tokens, search_code's description alone 430 with the whole error registry in it). The
# searches' `package` scope (issue 30) added ~40, and their `workspace` taking a list of folders or
# "all" (issue 30 §2: one question over several workspaces) ~40 more: its schema names both types,
# string or array of strings, which a model needs to see to pass a list (1,211 -> 1,251).
TOOLS_LIST_MAX_TOKENS = 1_275


def test_the_tools_describe_themselves_briefly(server) -> None:
    from codecompass_gateway.errors import ERROR_CODES

    async def run(client: Client) -> ListToolsResult:
        return await client.list_tools()

    listed = session(server, run)
    assert [t.name for t in listed.tools] == TOOL_NAMES
    assert count_tokens(listed.model_dump_json(by_alias=True, exclude_none=True)) <= TOOLS_LIST_MAX_TOKENS
    for tool in listed.tools:
        assert 100 < len(tool.description) < 400 and not any(code in tool.description for code in ERROR_CODES)
        schema = tool.input_schema
        assert schema["additionalProperties"] is False and "title" not in json.dumps(schema)
        # Optional: no `anyOf [..., null]`, no null default. A search's may name several workspaces.
        several = tool.name in ("semantic_search", "search_code")
        types = [{"type": "string"}, {"items": {"type": "string"}, "type": "array"}] if several else None
        expected = {"anyOf": types} if types else {"type": "string"}
        assert schema["properties"]["workspace"] == {**expected, "description": schema["properties"]["workspace"][
            "description"]}
    search = listed.tools[0].input_schema
    assert search["required"] == ["query"]
    assert set(search["properties"]) == {"query", "max_tokens", "min_relevance", "path", "kind", "include_tests",
                                         "rewrite", "workspace", "package"}
    assert (search["properties"]["max_tokens"]["minimum"], search["properties"]["max_tokens"]["maximum"]) == (100,
                                                                                                            20_000)
    assert search["properties"]["query"]["maxLength"] == 10_000
    code = listed.tools[1]
    assert code.input_schema["required"] == ["query"]
    assert set(code.input_schema["properties"]) == {"query", "ref", "language", "limit", "semantic_ratio",
                                                    "confidence_threshold", "rewrite", "semantic_mode", "workspace",
                                                    "package"}
    assert code.input_schema["properties"]["limit"] == {"default": 10, "minimum": 1, "maximum": 50, "type": "integer"}
    # Only a search can start indexing a folder (one given as `workspace` that has no index yet).
    hints = {t.name: t.annotations.read_only_hint for t in listed.tools}
    assert hints == {"semantic_search": False, "search_code": False, "codebase_trace": True, "read_symbol": True,
                     "index_status": True}
    assert all(t.annotations.open_world_hint is False for t in listed.tools)


@pytest.mark.badinput(case="MCP: an argument the tool does not take",
                      behaviour="one line naming it, the argument meant and every one the tool takes; nothing run")
@pytest.mark.parametrize(("name", "arguments", "expected"), [
    ("semantic_search", {"query": "x", "limit": 5},
     ("semantic_search: unknown argument 'limit' (did you mean max_tokens?); semantic_search takes query, max_tokens, "
     "min_relevance, path, kind, include_tests, rewrite, workspace, package [invalid_argument]")),
    ("read_symbol", {"symbol": "TokenService", "relative_path": "src/auth/tokenService.ts"},
     ("read_symbol: unknown argument 'relative_path' (did you mean path?); read_symbol takes symbol, expand, path, "
     "workspace [invalid_argument]")),
    ("codebase_trace", {"symbol": "X", "direction": "callers", "dpeth": 2, "color": "red"},
     ("codebase_trace: unknown arguments 'dpeth' (did you mean depth?), 'color'; codebase_trace takes symbol, "
     "direction, depth, limit, path, workspace [invalid_argument]")),
], ids=["limit on semantic_search", "relative_path on read_symbol", "two on codebase_trace"])
def test_an_unknown_argument_names_the_valid_ones(server, name, arguments, expected) -> None:
    assert error_line(call(server, name, arguments)) == expected


def test_suggested_calls_name_real_tools_and_arguments(server) -> None:
    """Every next call a low-confidence answer suggests is one the server would accept."""
    from codecompass_gateway.understanding import BestResult, suggested_action

    from codecompass.policy.shape import analyze

    schemas = {t.name: t.input_schema for t in session(server, lambda c: c.list_tools()).tools}
    best = [None, BestResult("TokenService.validateToken", "validateToken", "src/auth/tokenService.ts", "method"),
            BestResult("TokenService", "TokenService", "src/auth/tokenService.ts", "class", words_matched=False),
            BestResult("", "", "src/index.ts", "module")]
    queries = ["validateToken", "src/auth/tokenService.ts", "how are tokens validated", "TypeError: x is undefined",
               "retry", "zzqx blorf"]
    seen = set()
    for query in queries:
        for candidate in best:
            for status in ("ready", "indexing"):
                for missing, nearest in (((), ()), (("validateTokn",), ("validateToken",))):
                    _, call_ = suggested_action(analyze(query), candidate, status, missing, nearest)
                    schema = schemas[call_["tool"]]
                    assert set(call_["arguments"]) <= set(schema["properties"]), call_
                    assert set(schema.get("required", ())) <= set(call_["arguments"]), call_
                    seen.add(call_["tool"])
    assert seen == set(TOOL_NAMES) - {"codebase_trace"} | {"codebase_trace"}


@pytest.mark.parametrize(("name", "arguments", "expected"), [
    ("codebase_trace", {"symbol": "X", "direction": "sideways"},
     "codebase_trace: invalid arguments: direction: Input should be 'callers'"),
    ("semantic_search", {"query": "x", "max_tokens": 5}, "max_tokens: Input should be greater than or equal to 100"),
    ("semantic_search", {}, "semantic_search: invalid arguments: query: Field required"),
    ("codebase_trace", {"symbol": "X", "direction": "callers", "depth": 9}, "depth: Input should be less than"),
    ("semantic_search", {"query": "x", "workspace": "relative/ws"}, "workspace must be an absolute path"),
    ("index_status", {"workspace": "/no/such/dir"}, "workspace '/no/such/dir' is not a folder this server opens"),
    ("semantic_search", {"query": "  "}, "semantic_search: query is empty"),
    ("codebase_trace", {"symbol": " ", "direction": "callers"}, "codebase_trace: symbol is empty"),
    ("read_symbol", {"symbol": ""}, "read_symbol: symbol is empty"),
    ("search_code", {"query": " "}, "search_code: query is empty"),
    ("search_code", {"query": "x", "limit": 0}, "limit: Input should be greater than or equal to 1"),
    ("search_code", {"query": "x", "semantic_ratio": 1.5}, "semantic_ratio: Input should be less than or equal"),
    ("search_code", {"query": "x", "confidence_threshold": -1}, "confidence_threshold: Input should be greater"),
    ("search_code", {"query": "x", "language": "rust"}, "language: Input should be 'typescript'"),
    ("search_code", {"query": "x", "semantic_mode": "vectors"}, "semantic_mode: Input should be 'off'"),
])
def test_bad_arguments_are_one_line_tool_errors(server, name, arguments, expected) -> None:
    assert expected in error_line(call(server, name, arguments))


@pytest.mark.parametrize(("name", "arguments", "code"), [
    ("codebase_trace", {"symbol": "X", "direction": "sideways"}, "invalid_argument"),
    ("semantic_search", {"query": "  "}, "invalid_argument"),
    ("semantic_search", {"query": "x", "workspace": "relative/ws"}, "invalid_workspace"),
    ("index_status", {"workspace": "/no/such/dir"}, "workspace_refused"),
    ("search_code", {"query": "x", "ref": "main"}, "unsupported_ref"),
    ("search_code", {"query": "tokens"}, "service_unavailable"),
    ("read_symbol", {"symbol": "requireAuth"}, "service_unavailable"),
])
def test_every_tool_error_carries_a_registered_code(server, name, arguments, code) -> None:
    from codecompass_gateway.errors import ERROR_CODES

    result = call(server, name, arguments)
    line = error_line(result)
    assert line.startswith(f"{name}: ") and line.endswith(f" [{code}]")
    assert result.structured_content["error"] == {"code": code, "message": line, "tool": name}
    assert code in ERROR_CODES


def test_a_ref_other_than_the_working_tree_is_refused_before_any_service_is_called(server) -> None:
    line = error_line(call(server, "search_code", {"query": "x", "ref": "feature/login"}))
    assert "ref 'feature/login' is not indexed: only the working tree is" in line and "roadmap" in line


def test_a_file_as_workspace_is_refused(server, tmp_path) -> None:
    file = tmp_path / "a.ts"
    file.write_text("export const a = 1;\n")
    assert "is not a folder" in error_line(call(server, "index_status", {"workspace": str(file)}))
    missing = error_line(call(server, "index_status", {"workspace": str(tmp_path / "gone")}))
    assert missing.endswith(f"workspace '{tmp_path / 'gone'}' does not exist [invalid_workspace]")


def test_a_call_opens_only_the_served_folders_and_those_under_them(tmp_path: Path) -> None:
    from codecompass_gateway.tools import ToolInputError, resolve_workspace

    served, extra, root, outside = (tmp_path / name for name in ("served", "extra", "root", "outside"))
    for folder in (served / "pkg", extra, root / "team" / "app", outside):
        folder.mkdir(parents=True)
    (served / "escape").symlink_to(outside)
    roots = (extra, root)
    assert resolve_workspace(None, served, roots) == served
    for allowed in (served / "pkg", extra, root / "team" / "app", served / "pkg" / ".."):
        assert resolve_workspace(str(allowed), served, roots) == allowed.resolve()
    for refused in (outside, served / "escape", tmp_path, served / ".." / "outside", "/"):
        with pytest.raises(ToolInputError, match="is not a folder this server opens") as caught:
            resolve_workspace(str(refused), served, roots)
        assert caught.value.code == "workspace_refused"
        assert f"it opens {served}, {extra}, {root} and the folders under them" in str(caught.value)


@pytest.mark.parametrize(("name", "arguments", "service"), [
    ("semantic_search", {"query": "tokens"}, "retrieval"),
    ("search_code", {"query": "tokens", "ref": "working_tree"}, "retrieval"),
    ("index_status", {}, "retrieval"),
    ("codebase_trace", {"symbol": "requireAuth", "direction": "callers"}, "analysis"),
    ("read_symbol", {"symbol": "requireAuth"}, "analysis"),
])
def test_a_service_that_is_down_is_a_tool_error(server, name, arguments, service) -> None:
    line = error_line(call(server, name, arguments))
    assert line.startswith(f"{name}: {service} service not running at 127.0.0.1:")


def test_the_previous_protocol_revision_lists_the_same_tools(server) -> None:
    async def run(client: Client) -> tuple[str, list[str]]:
        return client.protocol_version, [t.name for t in (await client.list_tools()).tools]

    version, names = session(server, run, mode="legacy")
    assert version == "2025-11-25" and names == TOOL_NAMES


class _FakeRetrieval:
    def __init__(self, status: str, index_delay_s: float = 0.0, fail: bool = False, chunks: int = 0) -> None:
        self._status, self._delay, self._fail = status, index_delay_s, fail
        self.chunks = chunks
        self.indexed: list[str] = []

    def status(self, workspace: str, timeout_s: float):
        from codecompass.clients.errors import UNAVAILABLE, ServiceError
        from codecompass.contracts.retrieval.model import IndexingStatus

        if self._fail:
            raise ServiceError("retrieval", "127.0.0.1:1", UNAVAILABLE, "down")
        return type("Report", (), {"indexing_status": IndexingStatus(self._status), "chunks": self.chunks})()

    def index(self, workspace: str, wait_for_embeddings: bool, timeout_s: float):
        assert wait_for_embeddings is False
        import time

        from codecompass.contracts.retrieval.model import IndexPhase, IndexProgress

        time.sleep(self._delay)
        self.indexed.append(workspace)
        yield IndexProgress(phase=IndexPhase.WRITING)


def test_a_cold_workspace_is_indexed_once_in_the_background(tmp_path: Path) -> None:
    from codecompass_gateway.indexing import BackgroundIndexer

    fake = _FakeRetrieval("not_indexed", index_delay_s=0.2)
    indexer = BackgroundIndexer(fake, timeout_s=10)  # type: ignore[arg-type]
    indexer.ensure(tmp_path)
    indexer.ensure(tmp_path)
    assert indexer.wait_lexical(tmp_path, 5)
    assert fake.indexed == [str(tmp_path)]
    assert "lexical index written" in indexer.describe(tmp_path)


def test_a_ready_workspace_is_not_indexed_and_a_failure_is_retried(tmp_path: Path) -> None:
    from codecompass_gateway.indexing import BackgroundIndexer

    ready = _FakeRetrieval("ready")
    indexer = BackgroundIndexer(ready, timeout_s=10)  # type: ignore[arg-type]
    indexer.ensure(tmp_path)
    assert indexer.wait_lexical(tmp_path, 5) and ready.indexed == [] and indexer.describe(tmp_path) is None
    down = _FakeRetrieval("ready", fail=True)
    failing = BackgroundIndexer(down, timeout_s=10)  # type: ignore[arg-type]
    failing.ensure(tmp_path)
    assert failing.wait_lexical(tmp_path, 5)  # a search does not wait on a service that is down


def test_a_search_waits_only_until_the_first_rows_land(tmp_path: Path) -> None:
    import time

    from codecompass_gateway.indexing import BackgroundIndexer

    fake = _FakeRetrieval("not_indexed", index_delay_s=5.0)
    indexer = BackgroundIndexer(fake, timeout_s=10)  # type: ignore[arg-type]
    indexer.ensure(tmp_path)
    started = time.monotonic()
    assert indexer.wait_lexical(tmp_path, 0.3) is False  # no rows yet: the wait runs out
    fake.chunks = 120  # the lexical pass wrote its first batch
    assert indexer.wait_lexical(tmp_path, 4.0) is False  # partial, answered at once, not after 5 s
    assert time.monotonic() - started < 2.0


def test_a_search_starts_as_the_stream_reports_the_first_rows_not_at_the_next_poll(tmp_path: Path) -> None:
    import threading
    import time

    from codecompass_gateway import indexing
    from codecompass_gateway.indexing import BackgroundIndexer

    from codecompass.contracts.retrieval.model import IndexPhase, IndexProgress

    report, finish = threading.Event(), threading.Event()

    class _Streaming(_FakeRetrieval):
        def index(self, workspace: str, wait_for_embeddings: bool, timeout_s: float):
            report.wait(5)
            self.chunks = 500  # the first flush: the searcher has rows
            yield IndexProgress(phase=IndexPhase.LEXICAL, files_done=40, files_total=300, chunks_done=500)
            finish.wait(5)

    fake = _Streaming("not_indexed")
    indexer = BackgroundIndexer(fake, timeout_s=10)  # type: ignore[arg-type]
    indexer.ensure(tmp_path)
    waited: list[float] = []
    waiter = threading.Thread(target=lambda: waited.append(indexer.wait_lexical(tmp_path, 5) or time.monotonic()))
    waiter.start()
    time.sleep(0.02)
    reported = time.monotonic()
    report.set()
    waiter.join(5)
    finish.set()
    assert waited and waited[0] - reported < indexing.ROWS_POLL_S / 2, "woken by the stream, not by a poll"


def test_a_stream_cut_by_the_server_stopping_is_no_failure(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    import threading

    from codecompass_gateway.indexing import BackgroundIndexer

    from codecompass.clients.errors import UNAVAILABLE, ServiceError

    streaming, cut = threading.Event(), threading.Event()

    class _CutRetrieval(_FakeRetrieval):
        def index(self, workspace: str, wait_for_embeddings: bool, timeout_s: float):
            streaming.set()
            cut.wait(5)
            raise ServiceError("retrieval", "127.0.0.1:1", UNAVAILABLE, "Channel closed!")
            yield  # a generator, as the client's stream is

    caplog.set_level("INFO", logger="codecompass.gateway.server")
    indexer = BackgroundIndexer(_CutRetrieval("not_indexed"), timeout_s=10)  # type: ignore[arg-type]
    assert indexer.describe(tmp_path) is None
    indexer.ensure(tmp_path)
    assert indexer.describe(tmp_path) in ("checking whether it needs indexing", "indexing (started by this gateway)")
    assert streaming.wait(5)
    indexer.close()  # the session closed: the lifespan stops the indexer before closing its channels
    cut.set()
    assert indexer.wait_lexical(tmp_path, 5)
    assert [r.getMessage() for r in caplog.records if r.levelname == "WARNING"] == []
    assert "stopped following indexing: the server is stopping; the retrieval service goes on" in caplog.messages


def test_with_the_roles_apart_the_status_is_read_from_a_searcher_and_indexing_goes_to_the_writer(
        tmp_path: Path) -> None:
    from codecompass_gateway.indexing import BackgroundIndexer

    from codecompass.clients.errors import FAILED, ServiceError

    class _Writer(_FakeRetrieval):
        def status(self, workspace: str, timeout_s: float):
            raise ServiceError("retrieval", "writer:50053", FAILED,
                               "GetIndexStatus goes to a searcher; this retrieval server is the index writer")

    searcher, writer = _FakeRetrieval("not_indexed"), _Writer("not_indexed")
    indexer = BackgroundIndexer(searcher, timeout_s=10, writer=writer)  # type: ignore[arg-type]
    indexer.ensure(tmp_path)
    assert indexer.wait_lexical(tmp_path, 5)
    assert (writer.indexed, searcher.indexed) == ([str(tmp_path)], [])
    assert "lexical index written" in indexer.describe(tmp_path)


# Issue 29 §5: a NUL byte, a 100 KB path or a 1 MB symbol in any argument of any tool is one line
# naming the argument, quoting a prefix of it, before any service is asked (these are dead).
_HUGE = "S" * 1_000_000
_LONG_PATH = "p" * 100_000


@pytest.mark.parametrize(("name", "arguments", "said"), [
    ("semantic_search", {"query": "handle\x00request"}, "query contains a NUL character (at position 6)"),
    ("semantic_search", {"query": "x", "path": "src\x00"}, "path contains a NUL character"),
    ("semantic_search", {"query": "x", "path": _LONG_PATH}, "path is 100,000 characters long, over the limit of 4,096"),
    ("semantic_search", {"query": "x", "workspace": "/tmp\x00"}, "workspace contains a NUL character"),
    ("semantic_search", {"query": "x", "workspace": _LONG_PATH}, "workspace is 100,000 characters long"),
    ("search_code", {"query": _HUGE}, "query is 1,000,000 characters long, over the limit of 10,000"),
    ("search_code", {"query": "x", "ref": _HUGE}, "ref is 1,000,000 characters long"),
    ("codebase_trace", {"symbol": _HUGE, "direction": "callers"}, "symbol is 1,000,000 characters long"),
    ("codebase_trace", {"symbol": "a\x00b", "direction": "callers"}, "symbol contains a NUL character"),
    ("read_symbol", {"symbol": _HUGE}, "symbol is 1,000,000 characters long"),
    ("read_symbol", {"symbol": "a\x00b"}, "symbol contains a NUL character (at position 1)"),
    ("read_symbol", {"symbol": "x", "expand": ["ok", _HUGE]}, "expand is 1,000,000 characters long"),
    ("index_status", {"workspace": "/tmp\x00"}, "workspace contains a NUL character"),
])
def test_a_nul_or_an_oversized_argument_is_one_line_quoting_a_prefix(server, name, arguments, said) -> None:
    result = call(server, name, arguments)
    line = error_line(result)
    assert result.is_error and said in line and line.endswith("[invalid_argument]"), line
    assert len(line) < 400, f"the refusal echoes the input: {len(line):,} characters"


def test_a_schema_refusal_quotes_a_prefix_of_what_it_refuses(server) -> None:
    line = error_line(call(server, "codebase_trace", {"symbol": "x", "direction": "d" * 4_000}))
    assert "direction: Input should be 'callers'" in line and "(4,000 characters)" in line and len(line) < 500
