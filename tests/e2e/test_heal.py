"""Live MCP sessions survive `codecompass up` healing the services under them (issue 15 §1).

One private state dir: `codecompass up`, a real HTTP MCP server (`codecompass mcp --transport
streamable-http`) and a real stdio session (the SDK's client running `codecompass mcp`), both
open for the whole test. A service is killed with -9, a call is made while it is down (its
channel then waits in reconnect backoff), `codecompass up` runs, and both sessions must answer
their very next call; `up` must restart only the dead service, on the address it had. Last,
another program takes the dead service's port: `up` moves it, restarts the services started with
its old address, and the sessions follow runtime.json to the new one.
"""

from __future__ import annotations

import functools
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest
from codecompass_cli.services import SERVICES
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult
from tests.badinput.harness import CliRun, Stack, copy_workspace, up_lines
from tests.fixtures.gateway import wait_until_listening

pytestmark = pytest.mark.slow

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "sample_workspace"
SEARCH = ("semantic_search", {"query": "how are tokens validated"})
TRACE = ("codebase_trace", {"symbol": "TokenService.validateToken", "direction": "callers"})
CALL_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    stack = Stack(tmp_path_factory.mktemp("heal"))
    stack.up()
    try:
        yield stack
    finally:
        stack.cli("down")


@pytest.fixture
def http_server(stack: Stack, tmp_path: Path, free_port: int) -> Iterator[tuple[str, Path]]:
    """`codecompass mcp --transport streamable-http` over an indexed copy of the sample workspace."""
    root = copy_workspace(SAMPLE, tmp_path / "ws")
    assert stack.cli("index", str(root)).code == 0
    log = tmp_path / "http-mcp.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(stack.command("mcp", "--workspace", str(root), "--transport", "streamable-http",
                                                 "--port", str(free_port)),
                                   env=stack.env, stdout=out, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{free_port}/mcp"
    try:
        wait_until_listening(process, free_port, 60, log.read_text)
        yield url, root
    finally:
        process.terminate()
        process.wait(timeout=30)


def _ok(result: CallToolResult) -> CallToolResult:
    assert not result.is_error, result.content[0].text
    return result


def _take_port(host: str, port: int) -> socket.socket:
    """Listen on ``port`` as another program would. A killed Node process's listening socket can
    outlive it for a moment (libuv's io_uring lets go of it after the exit), so the port may need
    a few tries."""
    deadline = time.monotonic() + 10
    while True:
        try:
            return socket.create_server((host, port))
        except OSError:
            assert time.monotonic() < deadline, f"port {port} still in use 10 s after its service died"
            time.sleep(0.1)


def _pids(stack: Stack) -> dict[str, int]:
    return {name: svc["pid"] for name, svc in stack.runtime().items()}


def _addresses(stack: Stack) -> dict[str, str]:
    return {name: svc["address"] for name, svc in stack.runtime().items()}


def _assert_healed_alone(stack: Stack, healed: CliRun, service: str, pids: dict[str, int],
                         addresses: dict[str, str]) -> None:
    """`up` restarted ``service`` alone, on the address it had; the others kept their pids."""
    assert healed.code == 0, healed.err
    kept = [svc.name for svc in SERVICES if svc.name != service and svc.name in pids]
    assert up_lines(healed)[:3] == [
        f"{service:<10} dead (pid {pids[service]}); restarting it",
        f"{service:<10} SERVING at {addresses[service]}",
        f"kept running (same pids): {', '.join(kept)}",
    ]
    assert _addresses(stack) == addresses
    assert {name: _pids(stack)[name] for name in kept} == {name: pids[name] for name in kept}


def _assert_traced_and_fresh(results: list[CallToolResult]) -> None:
    """Each session's trace found the callers, and its search checked the files: retrieval reached
    the analysis service as it is now."""
    for trace, search in zip(results[::2], results[1::2], strict=True):
        assert "requireAuth" in trace.content[0].text
        assert search.structured_content["metadata"]["freshness_status"] == "fresh"


@pytest.mark.badinput(case="kill -9 of retrieval, then of analysis, under a live HTTP and a live stdio MCP session, "
                           "then `up`",
                      behaviour="both sessions answer their next call; `up` restarts only the dead service, on its "
                                "address; a port taken meanwhile: a new one, the services that reach it restart, "
                                "the sessions follow runtime.json")
@pytest.mark.timeout(300)
def test_live_http_and_stdio_sessions_answer_the_next_call_after_up_heals(stack: Stack, http_server) -> None:
    url, root = http_server
    stdio = StdioServerParameters(command=sys.executable,
                                  args=["-m", "codecompass_cli", "mcp", "--workspace", str(root)], env=stack.env)
    up = functools.partial(stack.cli, "up")
    measured: dict[str, float] = {}

    async def first_answers(sessions: dict[str, Client], step: str, *calls: tuple[str, dict]) -> list[
            CallToolResult]:
        """Both sessions' next calls, in order, and how long each took (`pytest -s` shows them)."""
        results = []
        for name, session in sessions.items():
            for tool, arguments in calls:
                started = time.monotonic()
                results.append(_ok(await session.call_tool(tool, arguments)))
                measured[f"{step}: {name} {tool}"] = time.monotonic() - started
        return results

    async def scenario() -> None:
        async with Client(stdio, read_timeout_seconds=CALL_TIMEOUT_S) as local, \
                Client(url, read_timeout_seconds=CALL_TIMEOUT_S) as remote:
            sessions = {"stdio": local, "http": remote}
            for session in sessions.values():
                _ok(await session.call_tool(*SEARCH))
                _ok(await session.call_tool(*TRACE))

            # Retrieval: every search goes through it.
            pids, addresses = _pids(stack), _addresses(stack)
            stack.kill("retrieval")
            for session in sessions.values():
                down = await session.call_tool(*SEARCH)
                assert down.is_error and "retrieval service not running at " in down.content[0].text
            healed = await anyio.to_thread.run_sync(up)
            for result in await first_answers(sessions, "retrieval", SEARCH):
                assert result.structured_content["results"][0]["qualified_name"].startswith("TokenService")
            _assert_healed_alone(stack, healed, "retrieval", pids, addresses)

            # Analysis: the gateway traces through it, and retrieval and selection reach it.
            pids = _pids(stack)
            stack.kill("analysis")
            for session in sessions.values():
                degraded = _ok(await session.call_tool(*SEARCH))
                assert degraded.structured_content["metadata"]["freshness_status"] == "failed"
            healed = await anyio.to_thread.run_sync(up)
            _assert_traced_and_fresh(await first_answers(sessions, "analysis", TRACE, SEARCH))
            _assert_healed_alone(stack, healed, "analysis", pids, addresses)

            # Analysis again, and another program takes its port meanwhile.
            pids = _pids(stack)
            stack.kill("analysis")
            host, _, port = addresses["analysis"].rpartition(":")
            with _take_port(host, int(port)):
                healed = await anyio.to_thread.run_sync(up)
                assert healed.code == 0, healed.err
                moved = _addresses(stack)
                assert moved["analysis"] != addresses["analysis"]
                assert up_lines(healed) == [
                    f"analysis   dead (pid {pids['analysis']}); restarting it",
                    f"analysis   its port ({addresses['analysis']}) is taken by another program; it gets a new one",
                    "retrieval  restarting it too: it was started with the old address of analysis",
                    f"retrieval  stopped (pid {pids['retrieval']})",
                    "selection  restarting it too: it was started with the old address of analysis",
                    f"selection  stopped (pid {pids['selection']})",
                    f"analysis   SERVING at {moved['analysis']}",
                    f"retrieval  SERVING at {addresses['retrieval']}",
                    f"selection  SERVING at {addresses['selection']}",
                    "kept running (same pids): embedding",
                    f"state: {stack.state / 'runtime.json'}; stop with `codecompass down`",
                ]
                assert {k: moved[k] for k in moved if k != "analysis"} == {
                    k: addresses[k] for k in addresses if k != "analysis"}
                after = _pids(stack)
                assert after["embedding"] == pids["embedding"]
                _assert_traced_and_fresh(await first_answers(sessions, "analysis on a new port", TRACE, SEARCH))

    anyio.run(scenario)
    # Seconds each first call after `up` took.
    print({step: round(seconds, 2) for step, seconds in measured.items()})
