"""Several gateway processes behind one address (issue 29: "MCP sessions pinned to one gateway
process"), as a Kubernetes Service spreads requests over the gateway's pods: two real gateways over
streamable HTTP, with a bearer token, over one real retrieval service. A handshake-era client
(protocol 2025-11-25 and before) opens its session on one and sends its next requests to the other.
Kept in a process, the session is unknown there (404, the client must start over); with
`gateway.stateless_http` each request is served on its own by whichever gateway gets it. The other
services are down: index_status needs only retrieval, and nothing here searches."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import TextContent
from mcp.types.version import LATEST_HANDSHAKE_VERSION
from tests.fixtures.gateway import jsonrpc, wait_until_listening

TOKEN = "replicas-test-token-8b41d2e0"
START_TIMEOUT_S = 120.0
ACCEPT = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
          "Authorization": f"Bearer {TOKEN}"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _result(response: httpx.Response) -> dict:
    """The JSON-RPC result of an answer given as JSON or as one SSE event."""
    assert response.status_code == 200, (response.status_code, response.text)
    if response.headers["content-type"].startswith("text/event-stream"):
        (data,) = [line.removeprefix("data:").strip() for line in response.text.splitlines()
                   if line.startswith("data:") and line.strip() != "data:"]
        message = json.loads(data)
    else:
        message = response.json()
    assert "result" in message, message
    return message["result"]


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("replicas") / "ws"
    folder.mkdir()
    (folder / "index.ts").write_text("export const answer = 42;\n")
    return folder


@pytest.fixture(scope="module")
def retrieval(start_python_service_session, tmp_path_factory: pytest.TempPathFactory) -> str:
    dead = f"127.0.0.1:{_free_port()}"
    _, address = start_python_service_session("codecompass.retrieval", {
        "ANALYSIS_ADDR": dead, "EMBEDDING_ADDR": dead,
        "CODECOMPASS_STATE_DIR": str(tmp_path_factory.mktemp("replicas-state"))})
    return address


@pytest.fixture(scope="module")
def gateways(retrieval: str, workspace: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[int]]:
    """Two gateways as a Deployment's pods run them (stateless, its ConfigMap says), each on its port."""
    dead = f"127.0.0.1:{_free_port()}"
    logs = tmp_path_factory.mktemp("replicas-logs")
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "CODECOMPASS_STATE_DIR": str(logs / "state"),
           "CODECOMPASS_GATEWAY_AUTH_TOKEN": TOKEN, "CODECOMPASS_GATEWAY_ALLOWED_HOSTS": "127.0.0.1:*",
           "CODECOMPASS_GATEWAY_STATELESS_HTTP": "true", "RETRIEVAL_ADDR": retrieval,
           **{f"{name}_ADDR": dead for name in ("ANALYSIS", "EMBEDDING", "RERANK", "SELECTION")}}
    started: list[tuple[subprocess.Popen, int, Path]] = []
    try:
        for replica in ("a", "b"):
            port, log = _free_port(), logs / f"gateway-{replica}.err"
            with log.open("wb") as err:
                process = subprocess.Popen([sys.executable, "-m", "codecompass_gateway", "--workspace", str(workspace),
                                            "--transport", "streamable-http", "--host", "0.0.0.0", "--port",
                                            str(port)], env=env, stdout=subprocess.DEVNULL, stderr=err)
            started.append((process, port, log))
        for process, port, log in started:
            wait_until_listening(process, port, START_TIMEOUT_S, log.read_text)
        yield [port for _, port, _ in started]
    finally:
        for process, _, _ in started:
            process.terminate()
            process.wait(timeout=30)
    for _, _, log in started:
        text = log.read_text()
        assert "Traceback" not in text and TOKEN not in text
        (serving,) = [r for r in (json.loads(line) for line in text.splitlines() if line.startswith("{"))
                      if r.get("msg") == "serving beyond this machine"]
        assert serving["sessions"].startswith("none (stateless")


def test_a_session_opened_on_one_gateway_goes_on_on_another(gateways: list[int], workspace: Path) -> None:
    a, b = (f"http://127.0.0.1:{port}/mcp" for port in gateways)
    opened = httpx.post(a, headers=ACCEPT, timeout=30, content=jsonrpc("initialize", 1, {
        "protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {"sampling": {}},
        "clientInfo": {"name": "replicas", "version": "0"}}))
    assert _result(opened)["protocolVersion"] == LATEST_HANDSHAKE_VERSION
    # Every later request as a client sends it (with the session id, were there one), carried to
    # the other gateway: a session kept in A's process would be unknown to B (404).
    session = {"mcp-session-id": opened.headers["mcp-session-id"]} if "mcp-session-id" in opened.headers else {}
    later = {**ACCEPT, "mcp-protocol-version": LATEST_HANDSHAKE_VERSION, **session}
    assert httpx.post(b, headers=later, content=jsonrpc("notifications/initialized"), timeout=30).status_code == 202
    listed = _result(httpx.post(b, headers=later, content=jsonrpc("tools/list", 2), timeout=30))
    assert "index_status" in {tool["name"] for tool in listed["tools"]}
    for url in (b, a):
        called = _result(httpx.post(url, headers=later, timeout=60, content=jsonrpc(
            "tools/call", 3, {"name": "index_status", "arguments": {}})))
        # Answered by the tool from the retrieval service's report, whatever indexing has come to
        # with the other services down.
        text = called["content"][0]["text"]
        assert str(workspace) in text and "session" not in text.lower(), text
    # No session to pin: nothing ties a request to the process that answered an earlier one.
    assert session == {}


class _RoundRobin(httpx2.AsyncBaseTransport):
    """A balancer in front of the gateways: each request to the next one in turn, the Host header
    left as the client wrote it (as a Service or an ingress controller leaves it)."""

    def __init__(self, ports: list[int]) -> None:
        self._ports = ports
        self._inner = httpx2.AsyncHTTPTransport()
        self.served: list[int] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        port = self._ports[len(self.served) % len(self._ports)]
        self.served.append(port)
        request.url = request.url.copy_with(port=port)
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


def test_the_sdk_s_handshake_era_client_works_through_a_round_robin_balancer(gateways: list[int],
                                                                              workspace: Path) -> None:
    balancer = _RoundRobin(gateways)

    async def run() -> list[str]:
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}, transport=balancer,
                                  timeout=httpx2.Timeout(30, read=120))
        texts = []
        async with http, Client(streamable_http_client(f"http://127.0.0.1:{gateways[0]}/mcp", http_client=http),
                                mode="legacy", read_timeout_seconds=60) as client:
            assert client.protocol_version == LATEST_HANDSHAKE_VERSION
            for _ in range(3):
                assert "index_status" in {tool.name for tool in (await client.list_tools()).tools}
                result = await client.call_tool("index_status", {})
                (content,) = result.content
                assert not result.is_error and isinstance(content, TextContent), result
                texts.append(content.text)
        return texts

    texts = anyio.run(run)
    assert all(str(workspace) in text for text in texts)
    # The session's requests were spread over both gateways.
    assert set(balancer.served) == set(gateways), balancer.served
