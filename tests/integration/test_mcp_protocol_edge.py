"""The protocol edge (issue 15, section 4): every JSON-RPC request gets an answer, with its id when
the id can be read, over stdio and over streamable HTTP, as raw bytes from a client the SDK never
sees. The gateway runs as a real process; its services are down (none of this reaches them).

Limits: a message is at most `wire.MAX_MESSAGE_BYTES` (4 MiB, the SDK's own HTTP body limit) and
nests at most `wire.MAX_DEPTH` levels; both are judged on the raw bytes, before any parser
descends into them."""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from codecompass_gateway.wire import MAX_DEPTH, MAX_MESSAGE_BYTES
from mcp.types.version import LATEST_HANDSHAKE_VERSION
from tests.fixtures.gateway import wait_until_listening

REPLY_TIMEOUT_S = 20.0
PARSE_ERROR, INVALID_REQUEST, INVALID_PARAMS = -32700, -32600, -32602
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": LATEST_HANDSHAKE_VERSION, "capabilities": {},
                         "clientInfo": {"name": "raw", "version": "0"}}}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
# The deepest message the trial sent: 100,000 nested arrays in a tool argument.
DEEP = (b'{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"semantic_search",'
        b'"arguments":{"query":"x","path":' + b"[" * 100_000 + b"]" * 100_000 + b"}}}")
SURROGATE = (b'{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"semantic_search",'
             b'"arguments":{"query":"token \\ud800 check"}}}')
BATCH = json.dumps([{"jsonrpc": "2.0", "id": 43, "method": "tools/list"},
                    {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}},
                    {"jsonrpc": "2.0", "id": "b", "method": "ping"}]).encode()


def _oversized() -> bytes:
    query = "x" * (MAX_MESSAGE_BYTES + 10)
    return json.dumps({"jsonrpc": "2.0", "id": 44, "method": "tools/call",
                       "params": {"name": "semantic_search", "arguments": {"query": query}}}).encode()


def _line(message: dict) -> bytes:
    return json.dumps(message).encode() + b"\n"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _env(dead_port: int) -> dict[str, str]:
    """The services' addresses, all on a port nothing listens on: none of this reaches them."""
    dead = f"127.0.0.1:{dead_port}"
    return {**os.environ, "RETRIEVAL_ADDR": dead, "RERANK_ADDR": dead, "SELECTION_ADDR": dead,
            "ANALYSIS_ADDR": dead}


class RawStdio:
    """The gateway over its real stdin/stdout, byte for byte."""

    def __init__(self, workspace: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "codecompass_gateway", "--workspace", str(workspace)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        env=env)
        self._buffer = b""

    def send(self, raw: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(raw)
        self.process.stdin.flush()

    def reply(self, timeout_s: float = REPLY_TIMEOUT_S) -> dict:
        """The next message the gateway writes (every line of stdout must be one)."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self.process.stdout], [], [], max(left, 0))
            assert ready, f"no answer within {timeout_s} s"
            chunk = os.read(self.process.stdout.fileno(), 1 << 20)
            assert chunk, f"the gateway closed stdout: {self.stop()}"
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def call(self, raw: bytes) -> dict:
        self.send(raw if raw.endswith(b"\n") else raw + b"\n")
        return self.reply()

    def stop(self) -> str:
        self.process.kill()
        _, err = self.process.communicate(timeout=30)
        return err.decode(errors="replace")


@pytest.fixture(scope="module")
def stdio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawStdio]:
    """One initialized session for the module's stdio cases."""
    raw = RawStdio(tmp_path_factory.mktemp("edge-ws"), _env(_free_port()))
    assert raw.call(_line(INITIALIZE))["result"]["serverInfo"]["name"] == "codecompass"
    raw.send(_line(INITIALIZED))
    yield raw
    stderr = raw.stop()
    assert "Traceback" not in stderr, stderr


def _error(reply: dict, request_id: object, code: int) -> str:
    assert reply.get("id") == request_id and "result" not in reply, reply
    assert reply["error"]["code"] == code, reply
    return reply["error"]["message"]


def _still_answers(stdio: RawStdio) -> None:
    """The session survives what came before: the next request is answered as usual."""
    assert len(stdio.call(_line({"jsonrpc": "2.0", "id": 99, "method": "tools/list"}))["result"]["tools"]) == 5


@pytest.mark.badinput(case="MCP stdio: a garbage line",
                      behaviour="-32700 parse error with id null; the session goes on")
def test_stdio_garbage_line(stdio: RawStdio) -> None:
    message = _error(stdio.call(b"hello, server"), None, PARSE_ERROR)
    assert message.startswith("Parse error: ")
    _still_answers(stdio)


@pytest.mark.badinput(case="MCP stdio: a lone UTF-16 surrogate in a string",
                      behaviour="-32602 with the request's id naming the argument; the session goes on")
def test_stdio_lone_surrogate(stdio: RawStdio) -> None:
    message = _error(stdio.call(SURROGATE), 42, INVALID_PARAMS)
    assert message == ("Invalid params: params.arguments.query holds a lone UTF-16 surrogate (\\ud800), which "
                       "encodes no character: send the text as valid Unicode")
    _still_answers(stdio)


@pytest.mark.badinput(case="MCP stdio: a batch array",
                      behaviour="-32600 for each request in it, by id (none for its notification)")
def test_stdio_batch(stdio: RawStdio) -> None:
    stdio.send(BATCH + b"\n")
    replies = [stdio.reply(), stdio.reply()]
    assert [r["id"] for r in replies] == [43, "b"]
    for reply in replies:
        assert _error(reply, reply["id"], INVALID_REQUEST) == (
            "Invalid Request: batch arrays are not supported (MCP removed them in 2025-06-18): send each "
            "message on its own")
    _still_answers(stdio)


@pytest.mark.badinput(case="MCP stdio: arguments nested 100,000 deep",
                      behaviour="-32600 with the request's id, judged before parsing; the session goes on")
def test_stdio_deep_nesting(stdio: RawStdio) -> None:
    started = time.monotonic()
    message = _error(stdio.call(DEEP), 41, INVALID_REQUEST)
    assert message == f"Invalid Request: nested more than {MAX_DEPTH} levels deep; at most {MAX_DEPTH} are accepted"
    assert time.monotonic() - started < 5.0
    _still_answers(stdio)


@pytest.mark.badinput(case="MCP stdio: a message over 4 MiB",
                      behaviour="-32600 with the request's id and both sizes; the rest of the line is skipped")
def test_stdio_oversized_message(stdio: RawStdio) -> None:
    raw = _oversized()
    message = _error(stdio.call(raw), 44, INVALID_REQUEST)
    assert message == (f"Invalid Request: the message is {len(raw):,} bytes; at most {MAX_MESSAGE_BYTES:,} "
                       "are accepted")
    _still_answers(stdio)


@pytest.mark.badinput(case="MCP stdio: valid JSON that is no JSON-RPC message",
                      behaviour="-32600 with the id it carries")
def test_stdio_not_json_rpc(stdio: RawStdio) -> None:
    message = _error(stdio.call(b'{"jsonrpc": "2.0", "id": 45, "method": 7}'), 45, INVALID_REQUEST)
    assert message.startswith("Invalid Request: not a JSON-RPC 2.0 message")
    _error(stdio.call(b"[]"), None, INVALID_REQUEST)
    _still_answers(stdio)


@pytest.mark.badinput(case="MCP stdio: a call before initialize",
                      behaviour="-32600 with its id, saying a session starts with initialize")
def test_stdio_call_before_initialize(tmp_path: Path, free_port: int) -> None:
    raw = RawStdio(tmp_path, _env(free_port))
    try:
        message = _error(raw.call(_line({"jsonrpc": "2.0", "id": 7, "method": "tools/list"})), 7, INVALID_REQUEST)
        assert message == ("Invalid Request: tools/list before initialize: a session starts with an `initialize` "
                           "request, then the `notifications/initialized` notification")
        assert raw.call(_line(INITIALIZE))["result"]["serverInfo"]["name"] == "codecompass"
    finally:
        assert "Traceback" not in raw.stop()


# --- streamable HTTP ----------------------------------------------------------------------------


class RawHttp:
    def __init__(self, url: str) -> None:
        self.url = url
        self.client = httpx.Client(timeout=REPLY_TIMEOUT_S)
        self.session_id = ""

    def post(self, body: bytes) -> httpx.Response:
        headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
        if self.session_id:
            headers |= {"mcp-session-id": self.session_id, "mcp-protocol-version": LATEST_HANDSHAKE_VERSION}
        return self.client.post(self.url, content=body, headers=headers)


@pytest.fixture(scope="module")
def http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawHttp]:
    port = _free_port()
    process = subprocess.Popen([sys.executable, "-m", "codecompass_gateway", "--workspace",
                                str(tmp_path_factory.mktemp("edge-http")), "--transport", "streamable-http",
                                "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env=_env(_free_port()))
    wait_until_listening(process, port, 60)
    raw = RawHttp(f"http://127.0.0.1:{port}/mcp")
    initialized = raw.post(json.dumps(INITIALIZE).encode())
    assert initialized.status_code == 200
    raw.session_id = initialized.headers["mcp-session-id"]
    assert raw.post(json.dumps(INITIALIZED).encode()).status_code == 202
    yield raw
    process.kill()
    _, err = process.communicate(timeout=30)
    assert b"Traceback" not in err, err.decode(errors="replace")


def _http_error(response: httpx.Response, status: int, request_id: object, code: int) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    return _error(response.json(), request_id, code)


def test_http_garbage_body(http: RawHttp) -> None:
    assert _http_error(http.post(b"hello, server"), 400, None, PARSE_ERROR).startswith("Parse error: ")


@pytest.mark.badinput(case="MCP HTTP: a lone UTF-16 surrogate in a string",
                      behaviour="400, -32602 with the request's id naming the argument")
def test_http_lone_surrogate(http: RawHttp) -> None:
    assert "params.arguments.query holds a lone UTF-16 surrogate" in _http_error(http.post(SURROGATE), 400, 42,
                                                                                INVALID_PARAMS)


@pytest.mark.badinput(case="MCP HTTP: a batch array", behaviour="400, an array of -32600 errors by request id")
def test_http_batch(http: RawHttp) -> None:
    response = http.post(BATCH)
    assert response.status_code == 400
    assert [(r["id"], r["error"]["code"]) for r in response.json()] == [(43, INVALID_REQUEST), ("b", INVALID_REQUEST)]


@pytest.mark.badinput(case="MCP HTTP: arguments nested 100,000 deep", behaviour="400, -32600 with the request's id")
def test_http_deep_nesting(http: RawHttp) -> None:
    assert "nested more than" in _http_error(http.post(DEEP), 400, 41, INVALID_REQUEST)


@pytest.mark.badinput(case="MCP HTTP: a body over 4 MiB", behaviour="413, -32600 with the request's id and both sizes")
def test_http_oversized_body(http: RawHttp) -> None:
    raw = _oversized()
    assert _http_error(http.post(raw), 413, 44, INVALID_REQUEST) == (
        f"Invalid Request: the message is {len(raw):,} bytes; at most {MAX_MESSAGE_BYTES:,} are accepted")


@pytest.mark.badinput(case="MCP HTTP: a call with no session (before initialize)",
                      behaviour="400, -32600 saying the session starts with initialize")
def test_http_call_before_initialize(http: RawHttp) -> None:
    fresh = RawHttp(http.url)
    message = _http_error(fresh.post(json.dumps({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}).encode()),
                          400, 8, INVALID_REQUEST)
    assert "before initialize" in message


def test_http_a_good_request_still_answers(http: RawHttp) -> None:
    response = http.post(json.dumps({"jsonrpc": "2.0", "id": 50, "method": "tools/list"}).encode())
    assert response.status_code == 200 and '"id":50' in response.text
