"""The stdio front answers the handshake from the server's recorded answers while the server
loads, then hands every line, in order, to the SDK and drops the SDK's answers to what it
answered; the record is the live server's own answers."""

from __future__ import annotations

import json
import os
import threading
from typing import Any

import pytest
from codecompass_gateway import handshake
from codecompass_gateway.handshake import Front, Inbox, load_manifest

CLIENT = {"name": "test", "version": "1"}
ENVELOPE = {"_meta": {handshake.PROTOCOL_VERSION_META_KEY: "2026-07-28",
                      "io.modelcontextprotocol/clientInfo": CLIENT,
                      "io.modelcontextprotocol/clientCapabilities": {}}}


def test_the_recorded_handshake_is_what_the_server_answers() -> None:
    recorded = json.loads(handshake.MANIFEST.read_text(encoding="utf-8"))
    assert recorded == handshake.recorded_answers(), (
        "the server's handshake changed: run `python -m codecompass_gateway.handshake` and commit handshake.json")
    assert {"2025-06-18", "2025-11-25", "2026-07-28"} <= set(recorded["versions"])


class Wire:
    """A client on the other end of a front's pipes."""

    def __init__(self) -> None:
        client_out, front_in = os.pipe()
        front_out, client_in = os.pipe()
        self._to_front = os.fdopen(front_in, "wb", buffering=0)
        self._from_front = os.fdopen(front_out, "rb")
        self.front = Front(os.fdopen(client_out, "rb", buffering=0), os.fdopen(client_in, "wb"), load_manifest())
        threading.Thread(target=self.front._read, daemon=True).start()  # noqa: SLF001 - as take_stdio starts it

    def send(self, message: dict[str, Any] | bytes) -> None:
        self._to_front.write(message if isinstance(message, bytes) else json.dumps(message).encode() + b"\n")

    def receive(self) -> dict[str, Any]:
        return json.loads(self._from_front.readline())

    def close(self) -> None:
        self._to_front.close()


def request(request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, **({"params": params} if params is not None else {})}


def test_the_front_answers_the_handshake_and_hands_every_line_to_the_server_in_order() -> None:
    wire = Wire()
    recorded = load_manifest()["2025-06-18"]
    wire.send(request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": CLIENT}))
    assert wire.receive() == {"jsonrpc": "2.0", "id": 1, "result": recorded["initialize"]}
    wire.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    wire.send(request(2, "tools/list"))
    assert wire.receive() == {"jsonrpc": "2.0", "id": 2, "result": recorded["tools/list"]}
    wire.send(request(3, "tools/call", {"name": "index_status", "arguments": {}}))

    inbox, outbox = wire.front.hand_over()
    wire.send(request(4, "tools/list"))  # the server is ready: it answers from now on
    wire.close()
    got = [json.loads(line) for line in iter(inbox.readline, b"")]
    assert [(m.get("id"), m["method"]) for m in got] == [
        (1, "initialize"), (None, "notifications/initialized"), (2, "tools/list"), (3, "tools/call"), (4, "tools/list")]

    # The server's answers to 1 and 2 are the client's already; the rest go out as written.
    for request_id in (1, 3, 2, 4):
        outbox.write(json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {}}) + "\n")
    outbox.flush()
    assert [wire.receive()["id"] for _ in range(2)] == [3, 4]


@pytest.mark.parametrize("first", [
    request(1, "initialize", {"protocolVersion": "1999-01-01", "capabilities": {}, "clientInfo": CLIENT}),
    request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}}),
    request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": [], "clientInfo": CLIENT}),
    request(1, "server/discover", {"_meta": {handshake.PROTOCOL_VERSION_META_KEY: "2099-01-01"}}),
    request(1, "tools/list", {"cursor": "2"}),
    request(True, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": CLIENT}),
    {"jsonrpc": "1.0", "id": 1, "method": "initialize"},
], ids=["unknown version", "no client info", "bad capabilities", "unknown envelope", "a cursor", "bool id",
        "not JSON-RPC 2.0"])
def test_what_the_front_is_not_sure_of_waits_for_the_server(first: dict[str, Any]) -> None:
    wire = Wire()
    wire.send(first)
    wire.send(b"{not json\n")
    inbox, outbox = wire.front.hand_over()
    assert json.loads(inbox.readline()) == first and inbox.readline() == b"{not json\n"
    outbox.write(json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"from": "server"}}) + "\n")
    outbox.flush()
    assert wire.receive()["result"] == {"from": "server"}  # answered once, by the server


def test_a_line_no_parser_can_read_goes_on_and_the_front_still_answers() -> None:
    wire = Wire()
    deep = b'{"jsonrpc":"2.0","id":9,"method":"x","params":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    wire.send(deep)
    wire.send(b"\xff\xfe not UTF-8\n")
    wire.send(request(1, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": CLIENT}))
    assert wire.receive()["id"] == 1
    inbox, _ = wire.front.hand_over()
    assert [inbox.readline(1 << 20), inbox.readline()] == [deep, b"\xff\xfe not UTF-8\n"]


def test_the_2026_protocol_is_answered_from_its_envelope() -> None:
    wire = Wire()
    recorded = load_manifest()["2026-07-28"]
    wire.send(request(1, "server/discover", ENVELOPE))
    assert wire.receive()["result"] == recorded["server/discover"]
    wire.send(request(2, "tools/list", ENVELOPE))
    assert wire.receive()["result"] == recorded["tools/list"]


def test_without_a_record_the_server_answers_everything(tmp_path) -> None:
    assert load_manifest(tmp_path / "missing.json") == {}
    (tmp_path / "broken.json").write_text("{")
    assert load_manifest(tmp_path / "broken.json") == {}


def test_the_inbox_reads_lines_within_a_limit_then_the_end() -> None:
    inbox = Inbox()
    inbox.feed(b"abc\nlonger line\ntail")
    inbox.close()
    assert [inbox.readline(5), inbox.readline(5), inbox.readline(5), inbox.readline(), inbox.readline(),
            inbox.readline()] == [b"abc\n", b"longe", b"r lin", b"e\n", b"tail", b""]
