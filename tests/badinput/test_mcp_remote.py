"""Remote use is safe by default (issue 15, section 5), over real HTTP: a real `codecompass mcp
--transport streamable-http` on a non-loopback bind (0.0.0.0, reached here through 127.0.0.1, which
its allow-list names) over this folder's services. Without a token it does not start; with one,
only requests that carry it, from an allowed Host and Origin, get in, and a call may open only the
server's folders: any other `workspace` is refused with one line and nothing is indexed."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.types.version import LATEST_HANDSHAKE_VERSION
from tests.badinput.harness import TRACEBACK, Stack, copy_workspace
from tests.fixtures.gateway import wait_until_listening

from codecompass.retrieval.location import index_key, workspace_id_of

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "sample_workspace"
TOKEN = "remote-test-token-3f9a7c"
START_TIMEOUT_S = 120.0
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                         "params": {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {},
                                    "clientInfo": {"name": "raw", "version": "0"}}})


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass
class Remote:
    url: str
    port: int
    process: subprocess.Popen
    log: Path

    def post(self, headers: dict[str, str]) -> httpx.Response:
        base = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        return httpx.post(self.url, content=INITIALIZE, headers={**base, **headers}, timeout=30)


def _mcp(stack: Stack, *args: str) -> list[str]:
    return stack.command("mcp", *args)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return copy_workspace(SAMPLE, tmp_path_factory.mktemp("remote") / "ws")


@pytest.fixture(scope="module")
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder the server was not started for, with a secret in it."""
    folder = tmp_path_factory.mktemp("outside") / "secrets"
    folder.mkdir()
    (folder / "keys.ts").write_text('export const AWS_SECRET = "do-not-read-me";\n')
    return folder


@pytest.fixture(scope="module")
def remote(stack: Stack, workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Remote]:
    port = _free_port()
    log = tmp_path_factory.mktemp("remote-log") / "gateway.err"
    env = {**stack.env, "CODECOMPASS_GATEWAY_AUTH_TOKEN": TOKEN,
           "CODECOMPASS_GATEWAY_ALLOWED_HOSTS": f"127.0.0.1:{port}",
           "CODECOMPASS_GATEWAY_ALLOWED_ORIGINS": "https://ide.example"}
    with log.open("wb") as err:
        process = subprocess.Popen(_mcp(stack, "--workspace", str(workspace), "--transport", "streamable-http",
                                        "--host", "0.0.0.0", "--port", str(port)),
                                   env=env, stdout=subprocess.DEVNULL, stderr=err)
    wait_until_listening(process, port, START_TIMEOUT_S, log.read_text)
    yield Remote(f"http://127.0.0.1:{port}/mcp", port, process, log)
    process.terminate()
    process.wait(timeout=30)
    assert TRACEBACK not in log.read_text()


def _logged(remote: Remote) -> list[dict[str, Any]]:
    return [json.loads(line) for line in remote.log.read_text().splitlines() if line.startswith("{")]


@pytest.mark.badinput(case="MCP HTTP on a non-loopback address with no auth token",
                      behaviour="exit 2 before anything starts: `--host 0.0.0.0 listens beyond this machine: set "
                                "CODECOMPASS_GATEWAY_AUTH_TOKEN …`; nothing listens")
def test_a_remote_bind_without_a_token_does_not_start(stack: Stack, workspace: Path) -> None:
    port = _free_port()
    run = stack.cli("mcp", "--workspace", str(workspace), "--transport", "streamable-http", "--host", "0.0.0.0",
                    "--port", str(port))
    assert run.code == 2
    assert run.err_lines == [
        ("codecompass: --host 0.0.0.0 listens beyond this machine: set CODECOMPASS_GATEWAY_AUTH_TOKEN (or "
        "gateway.auth_token_file) to the bearer token clients must send, or listen on 127.0.0.1")]
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), 1).close()


@pytest.mark.badinput(case="MCP HTTP (remote): a request with no token, or a wrong one",
                      behaviour="401 with `WWW-Authenticate: Bearer`; no session opened")
def test_no_token_or_a_wrong_token_is_401(remote: Remote) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong-token"}, {"Authorization": TOKEN},
                    {"Authorization": f"Basic {TOKEN}"}):
        response = remote.post(headers)
        assert response.status_code == 401, (headers, response.text)
        assert response.headers["www-authenticate"].startswith("Bearer")
        assert "mcp-session-id" not in response.headers
    assert remote.post({"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert remote.post({"Authorization": f"bearer {TOKEN}"}).status_code == 200  # the scheme is case-insensitive


@pytest.mark.badinput(case="MCP HTTP (remote): an Origin or a Host not on the allow-list",
                      behaviour="403 for the Origin, 421 for the Host (the SDK's answers), even with the token")
def test_a_wrong_origin_or_host_is_refused(remote: Remote) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    assert remote.post({**auth, "Origin": "https://evil.example"}).status_code == 403
    assert remote.post({**auth, "Host": f"evil.example:{remote.port}"}).status_code == 421
    assert remote.post({**auth, "Origin": "https://ide.example"}).status_code == 200
    # A rebinding page gets nothing from Host alone either: the check comes before the token's.
    assert remote.post({"Host": f"evil.example:{remote.port}"}).status_code == 421


@pytest.mark.badinput(case="MCP HTTP (remote): a `workspace` outside the server's folders",
                      behaviour="one line `… is not a folder this server opens: it opens <ws> …` "
                                "[workspace_refused]; no index, no state for it")
def test_a_folder_outside_the_allow_list_is_refused_and_not_indexed(stack: Stack, remote: Remote, workspace: Path,
                                                                    outside: Path) -> None:
    async def run() -> list[Any]:
        http = create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"})
        async with http, Client(streamable_http_client(remote.url, http_client=http), read_timeout_seconds=60) as c:
            return [await c.call_tool(tool, {**arguments, "workspace": str(outside)}) for tool, arguments in (
                ("semantic_search", {"query": "AWS_SECRET"}), ("search_code", {"query": "AWS_SECRET"}),
                ("read_symbol", {"symbol": "keys.ts"}), ("index_status", {}))]

    for tool, result in zip(("semantic_search", "search_code", "read_symbol", "index_status"), anyio.run(run),
                            strict=True):
        assert result.is_error and len(result.content) == 1
        assert result.content[0].text == (
            f"{tool}: workspace '{outside}' is not a folder this server opens: it opens {workspace} and the folders "
            "under them (start it with --workspace or --allow-root for more) [workspace_refused]")
        assert "do-not-read-me" not in result.content[0].text
    key = index_key(workspace_id_of(outside.resolve()))
    assert not (stack.state / "index" / key).exists() and not (stack.state / "workspaces" / key).exists()


def test_the_server_says_once_what_it_exposes_and_never_the_token(remote: Remote, workspace: Path) -> None:
    (line,) = [r for r in _logged(remote) if r["msg"] == "serving beyond this machine"]
    assert line["url"] == f"http://0.0.0.0:{remote.port}/mcp" and line["workspaces"] == [str(workspace)]
    assert line["allowed_hosts"] == [f"127.0.0.1:{remote.port}"] and line["allowed_origins"] == ["https://ide.example"]
    assert line["auth"] == "bearer token from CODECOMPASS_GATEWAY_AUTH_TOKEN"
    assert TOKEN not in remote.log.read_text()
