"""`codecompass mcp` serves the handshake while the services start behind it: the tool list is
there at once, a tool call waits for the services (a bounded time), and a start that failed is
one line in every tool's answer. Through the SDK's in-memory client, with no services running."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import anyio
import pytest
from codecompass_gateway import readiness
from codecompass_gateway.indexing import BackgroundIndexer
from codecompass_gateway.readiness import Readiness
from codecompass_gateway.server import build_server
from mcp import Client

from codecompass.common.config import Settings

TOOL_CALLS = [
    ("semantic_search", {"query": "tokens"}),
    ("search_code", {"query": "tokens"}),
    ("index_status", {}),
    ("codebase_trace", {"symbol": "requireAuth", "direction": "callers"}),
    ("read_symbol", {"symbol": "requireAuth"}),
]


def test_the_tools_are_listed_while_the_services_start_and_a_call_waits_for_them(
        tmp_path: Path, dead_services: Settings) -> None:
    ready = Readiness()
    server = build_server(dead_services, tmp_path, ready=ready)
    settled_at: list[float] = []

    def services_come_up() -> None:
        time.sleep(0.5)
        settled_at.append(time.monotonic())
        ready.succeeded()

    async def main() -> tuple[list[str], str, float]:
        async with Client(server) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            threading.Thread(target=services_come_up, daemon=True).start()
            result = await client.call_tool("codebase_trace", {"symbol": "requireAuth", "direction": "callers"})
            return names, result.content[0].text, time.monotonic()

    names, line, answered_at = anyio.run(main)
    assert "codebase_trace" in names  # listed before the services were up
    # The call waited for them, then went to the service (here: an address nothing listens on).
    assert settled_at and answered_at >= settled_at[0]
    assert line.startswith("codebase_trace: analysis service not running at 127.0.0.1:"), line


@pytest.mark.parametrize(("name", "arguments"), TOOL_CALLS)
def test_a_failed_start_is_one_line_in_every_tool(tmp_path: Path, dead_services: Settings, name: str,
                                                  arguments: dict) -> None:
    ready = Readiness()
    ready.failed("the embedding service exited with code 1 (see ~/.codecompass/logs/embedding.log)")

    async def main():
        async with Client(build_server(dead_services, tmp_path, ready=ready)) as client:
            return await client.call_tool(name, arguments)

    result = anyio.run(main)
    assert result.is_error and len(result.content) == 1
    assert result.content[0].text == (
        f"{name}: the CodeCompass services did not start: the embedding service exited with code 1 "
        "(see ~/.codecompass/logs/embedding.log) [service_unavailable]")
    assert result.structured_content["error"]["code"] == "service_unavailable"


def test_services_still_starting_after_the_wait_say_so(tmp_path: Path, dead_services: Settings,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(readiness, "CALL_WAIT_S", 0.2)

    async def main():
        async with Client(build_server(dead_services, tmp_path, ready=Readiness())) as client:
            return await client.call_tool("index_status", {})

    line = anyio.run(main).content[0].text
    assert line.startswith("index_status: the CodeCompass services are still starting (")
    assert line.endswith("ask again in a few seconds [service_unavailable]")


class _Retrieval:
    def __init__(self) -> None:
        self.asked: list[float] = []

    def status(self, workspace: str, timeout_s: float):
        from codecompass.contracts.retrieval.model import IndexingStatus

        self.asked.append(time.monotonic())
        return type("Report", (), {"indexing_status": IndexingStatus.READY, "chunks": 1})()


def test_indexing_started_with_the_server_waits_for_the_services(tmp_path: Path) -> None:
    ready, retrieval = Readiness(), _Retrieval()
    indexer = BackgroundIndexer(retrieval, timeout_s=10, ready=ready)  # type: ignore[arg-type]
    indexer.ensure(tmp_path)
    time.sleep(0.3)
    assert retrieval.asked == []  # nothing called while the services start
    up_at = time.monotonic()
    ready.succeeded()
    assert indexer.wait_lexical(tmp_path, 5)
    assert len(retrieval.asked) == 1 and retrieval.asked[0] >= up_at


class _CutStream(_Retrieval):
    """Not indexed; its IndexWorkspace stream is cut a moment after the server closes."""

    def __init__(self, closed: threading.Event) -> None:
        super().__init__()
        self._closed = closed

    def status(self, workspace: str, timeout_s: float):
        from codecompass.contracts.retrieval.model import IndexingStatus

        return type("Report", (), {"indexing_status": IndexingStatus.NOT_INDEXED, "chunks": 0})()

    def index(self, workspace: str, **_: object):
        from codecompass.clients.errors import UNAVAILABLE, ServiceError

        self._closed.wait(10)
        time.sleep(0.3)  # the channel's close reaches the stream later than the server's close
        raise ServiceError("retrieval", "127.0.0.1:1", UNAVAILABLE, "channel closed")
        yield


def test_a_stopping_server_waits_for_the_streams_it_follows_to_say_they_stopped(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    closed = threading.Event()
    indexer = BackgroundIndexer(_CutStream(closed), timeout_s=10)  # type: ignore[arg-type]
    indexer.ensure(tmp_path)
    time.sleep(0.2)
    with caplog.at_level("INFO"):
        indexer.close()
        closed.set()
        indexer.wait_stopped(5)
        # The line is written before the process could exit, and it is no failure.
        assert [r.getMessage() for r in caplog.records] == [
            "stopped following indexing: the server is stopping; the retrieval service goes on"]
