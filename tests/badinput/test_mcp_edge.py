"""An MCP session at its edges (issue 15, section 3), through `codecompass mcp` over stdio and the
SDK's client, against this folder's services: a workspace the service refuses to index, and a
session that closes while the index it started is still being written."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from tests.badinput.harness import TRACEBACK, Stack
from tests.fixtures.chain_workspace import write_chain_workspace

from codecompass.clients.retrieval import RetrievalClient
from codecompass.retrieval.location import index_key, workspace_id_of

INDEXED_WITHIN_S = 180.0
FILES = 150


def _gateway(stack: Stack, *args: str) -> StdioServerParameters:
    return StdioServerParameters(command=sys.executable, args=["-m", "codecompass_cli", "mcp", *args], env=stack.env)


def _session(params: StdioServerParameters, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async def run() -> list[Any]:
        async with Client(params, read_timeout_seconds=120) as client:
            return [await client.call_tool(tool, arguments) for tool, arguments in calls]

    return anyio.run(run)


def _status_until(params: StdioServerParameters, errlog: Any, said: str, within_s: float = 60.0) -> str:
    """index_status, asked until its text says `said`; the session closes as soon as it does."""
    async def run() -> str:
        async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=120) as client:
            deadline = time.monotonic() + within_s
            while said not in (text := (await client.call_tool("index_status", {})).content[0].text):
                assert time.monotonic() < deadline, text
                await anyio.sleep(0.1)
            return text

    return anyio.run(run)


@pytest.mark.badinput(case="MCP index_status of a folder never indexed (`/`, the home folder)",
                      behaviour="one line `index_status: refusing to index /: it is the filesystem root, …` "
                                "[workspace_refused]; no index and no state created for it")
@pytest.mark.parametrize(("folder", "why"), [(Path("/"), "it is the filesystem root"),
                                             (Path.home().resolve(), "it is your home folder")], ids=["root", "home"])
def test_index_status_of_a_refused_folder_says_why_and_creates_nothing(stack: Stack, tmp_path: Path, folder: Path,
                                                                       why: str) -> None:
    workspace = write_chain_workspace(tmp_path / "ws", 2)
    # The server may open any folder (`--allow-root /`): the refusal is the service's own.
    (status,) = _session(_gateway(stack, "--workspace", str(workspace), "--allow-root", "/"),
                         [("index_status", {"workspace": str(folder)})])
    assert status.is_error and len(status.content) == 1
    assert status.content[0].text == (
        f"index_status: refusing to index {folder}: {why}, not a project; index a project folder, or run "
        f"`codecompass index --force {folder}` to index it anyway [workspace_refused]")
    key = index_key(workspace_id_of(folder))
    assert not (stack.state / "workspaces" / key).exists() and not (stack.state / "index" / key).exists()


@pytest.mark.badinput(case="MCP session closed while the index it started is being written",
                      behaviour="no `background indexing failed` in the gateway's log (one info line says it "
                                "stopped following); the retrieval service writes the whole index")
@pytest.mark.timeout(300)
def test_a_closed_session_is_no_indexing_failure(stack: Stack, tmp_path: Path) -> None:
    workspace = write_chain_workspace(tmp_path / "big", FILES)
    errlog = tmp_path / "gateway.err"
    with errlog.open("w") as err:
        # index_status only reports: the gateway started indexing its workspace when it started.
        # The session closes as soon as that index is being written.
        _status_until(_gateway(stack, "--workspace", str(workspace)), err, "this gateway: indexing (started by this "
                                                                           "gateway)")
    logged = errlog.read_text()
    assert TRACEBACK not in logged
    records = [json.loads(line) for line in logged.splitlines() if line.startswith("{")]
    assert [r for r in records if r["level"] in ("WARNING", "ERROR")] == []
    assert "background indexing failed" not in logged
    assert any(r["msg"].startswith("stopped following indexing") for r in records)
    # Nobody asks for it again: the service indexes every file all the same.
    client = RetrievalClient(stack.address("retrieval"))
    try:
        deadline = time.monotonic() + INDEXED_WITHIN_S
        while (report := client.status(str(workspace), 10)).files < FILES:
            assert time.monotonic() < deadline, report
            time.sleep(1)
    finally:
        client.close()
    assert {row[1] for row in stack.rows(workspace)} == {f"src/mod{i}.ts" for i in range(FILES)}
