"""The MCP handshake over stdio, answered before the server has loaded.

An agent starts `codecompass mcp` and waits for its handshake; loading the MCP SDK and the
gateway takes 1-3 s on two cores (more while the services start beside it), and clients time a
handshake out. `Front` takes the process's stdin and stdout at once and answers what opens a
session (`initialize` in the 2024-2025 protocol, `server/discover` in the 2026 one, and
`tools/list`) from `handshake.json`: the server's own answers, recorded per protocol version by
`python -m codecompass_gateway.handshake` and checked against the live server by a test. Every
line still goes to the SDK, in order, when the server is ready, so its session is what it would
have been; its answers to the requests the front answered are dropped (the client has them).
Only what the front is sure of is answered early: a protocol version it recorded, well-formed
params, no cursor; anything else waits for the SDK, whose answer is the reference.

Imports nothing heavy: it runs before the SDK is imported.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
from pathlib import Path
from typing import Any, BinaryIO

MANIFEST = Path(__file__).with_name("handshake.json")
# Where a 2026-era request says its protocol version (the per-request envelope).
PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
# A handshake message is small: a longer line, or a piece of one, goes to the SDK unread.
INSPECT_BYTES = 1 << 16


def load_manifest(path: Path = MANIFEST) -> dict[str, dict[str, Any]]:
    """Protocol version → method → result (`initialize` or `server/discover`, and `tools/list`);
    empty when the file is missing or unreadable (the SDK answers everything then)."""
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return manifest.get("versions", {}) if isinstance(manifest, dict) else {}


class Inbox:
    """The lines the SDK reads, as a binary stream with `readline(limit)` (what `wire.ScreenedStdin`
    reads its input from)."""

    def __init__(self) -> None:
        self._buffer = bytearray()
        self._eof = False
        self._changed = threading.Condition()

    def feed(self, data: bytes) -> None:
        with self._changed:
            self._buffer += data
            self._changed.notify_all()

    def close(self) -> None:
        with self._changed:
            self._eof = True
            self._changed.notify_all()

    def readline(self, limit: int = -1) -> bytes:
        with self._changed:
            while True:
                end = self._buffer.find(b"\n")
                if end >= 0:
                    end += 1
                if 0 <= limit < len(self._buffer) and (end < 0 or end > limit):
                    end = limit
                if end < 0 and self._eof:
                    end = len(self._buffer)
                if end >= 0:
                    line = bytes(self._buffer[:end])
                    del self._buffer[:end]
                    return line
                self._changed.wait()


class Outbox:
    """The SDK's stdout: whole lines to the wire, less the SDK's answers to what the front
    answered before it."""

    def __init__(self, front: Front) -> None:
        self._front = front
        self._pending = ""

    def write(self, text: str) -> int:
        self._pending += text
        *lines, self._pending = self._pending.split("\n")
        for line in lines:
            if not self._front.answered_by_front(line):
                self._front.send(line)
        return len(text)

    def flush(self) -> None:
        self._front.flush()


class Front:
    """Owns the wire from the first moment: fd 0 and fd 1 are moved aside (to the null device and
    to stderr) so that nothing else in the process, and no child it starts, reads the client's
    messages or writes into the protocol."""

    def __init__(self, wire_in: BinaryIO, wire_out: BinaryIO, manifest: dict[str, dict[str, Any]]) -> None:
        self._in = wire_in
        self._out = wire_out
        self._manifest = manifest
        self._lock = threading.Lock()
        self._answering = bool(manifest)
        # The version `initialize` settled, for the `tools/list` calls after it.
        self._version: str | None = None
        # The ids of the requests the front answered: the SDK's answer to each is dropped, once.
        self._answered: set[Any] = set()
        self.inbox = Inbox()

    @classmethod
    def take_stdio(cls) -> Front:
        """The process's front: taken on the first call (the stdio of a process is taken once),
        the same one after."""
        global _taken
        with _taking:
            if _taken is None:
                _taken = cls._take()
            return _taken

    @classmethod
    def _take(cls) -> Front:
        wire_in = os.fdopen(os.dup(0), "rb", buffering=0)
        wire_out = os.fdopen(os.dup(1), "wb")
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.dup2(2, 1)
        front = cls(wire_in, wire_out, load_manifest())
        threading.Thread(target=front._read, name="mcp front", daemon=True).start()
        return front

    def hand_over(self) -> tuple[Inbox, Outbox]:
        """The server is ready: from now on every line goes to it (`inbox`), and it writes to the
        wire through `Outbox`."""
        with self._lock:
            self._answering = False
        return self.inbox, Outbox(self)

    # --- the wire ---

    def send(self, line: str) -> None:
        with self._lock:
            self._out.write(line.encode("utf-8") + b"\n")

    def flush(self) -> None:
        with self._lock:
            self._out.flush()

    def answered_by_front(self, line: str) -> bool:
        """Whether `line`, from the SDK, answers a request the front answered (each once)."""
        with self._lock:
            if not self._answered:
                return False
        try:
            message = json.loads(line)
        except ValueError:
            return False
        if not isinstance(message, dict) or not ("result" in message or "error" in message):
            return False
        with self._lock:
            if message.get("id") in self._answered:
                self._answered.discard(message.get("id"))
                return True
        return False

    def _read(self) -> None:
        try:
            while line := self._in.readline(INSPECT_BYTES):
                if line.endswith(b"\n"):
                    # Answering early is a shortcut: a line it cannot judge goes on as it is.
                    with contextlib.suppress(Exception):
                        self._answer(line)
                self.inbox.feed(line)
        except OSError:
            pass  # the client went away: the SDK reads the end of input
        finally:
            self.inbox.close()

    def _answer(self, line: bytes) -> None:
        """Answers `line` now when the server is not ready and the front is sure of the answer."""
        with self._lock:
            if not self._answering:
                return
        try:
            message = json.loads(line)
        except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the parser's stack
            return
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return
        method, params, request_id = message.get("method"), message.get("params"), message.get("id")
        if not isinstance(request_id, str | int) or isinstance(request_id, bool) or request_id in self._answered:
            return
        result = self._result(method, params if isinstance(params, dict) else None)
        if result is None:
            return
        text = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": result}, ensure_ascii=False,
                          separators=(",", ":"))
        with self._lock:
            self._answered.add(request_id)
            self._out.write(text.encode("utf-8") + b"\n")
            self._out.flush()

    def _result(self, method: Any, params: dict[str, Any] | None) -> dict[str, Any] | None:
        """The recorded answer to `method` with `params`, when there is one for sure."""
        envelope = _envelope_version(params)
        if method == "initialize" and self._version is None and envelope is None:
            version = _handshake_version(params)
            answer = self._manifest.get(version or "", {}).get("initialize")
            if answer is not None:
                self._version = version
            return answer
        if method == "server/discover" and envelope is not None:
            return self._manifest.get(envelope, {}).get("server/discover")
        if method == "tools/list" and not (params or {}).get("cursor"):
            version = envelope if envelope is not None else self._version
            return self._manifest.get(version or "", {}).get("tools/list")
        return None


_taking = threading.Lock()
_taken: Front | None = None


def _handshake_version(params: dict[str, Any] | None) -> str | None:
    """The version an `initialize` asks for, when its params are what the SDK accepts for sure."""
    if params is None:
        return None
    version, capabilities, client = params.get("protocolVersion"), params.get("capabilities"), params.get("clientInfo")
    if not (isinstance(version, str) and isinstance(capabilities, dict) and _named(client)):
        return None
    return version


def _envelope_version(params: dict[str, Any] | None) -> str | None:
    """The version a 2026-era request's envelope names, when the envelope is whole."""
    meta = (params or {}).get("_meta")
    if not isinstance(meta, dict):
        return None
    version = meta.get(PROTOCOL_VERSION_META_KEY)
    client = meta.get("io.modelcontextprotocol/clientInfo")
    capabilities = meta.get("io.modelcontextprotocol/clientCapabilities")
    return version if isinstance(version, str) and _named(client) and isinstance(capabilities, dict) else None


def _named(client: Any) -> bool:
    return isinstance(client, dict) and isinstance(client.get("name"), str) and isinstance(client.get("version"), str)


# --- recording the server's answers -------------------------------------------------------------


def recorded_answers() -> dict[str, Any]:
    """What the live server answers to `initialize` and `tools/list`, per handshake-era protocol
    version, as its stdio transport writes them (the SDK and the gateway load here)."""
    import anyio
    from mcp.shared.message import SessionMessage
    from mcp.types import JSONRPCNotification, JSONRPCRequest
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

    from codecompass.common.config import load_settings
    from codecompass_gateway.readiness import Readiness
    from codecompass_gateway.server import build_server

    async def answers(version: str) -> dict[str, Any]:
        failed = Readiness()
        failed.failed("recording the handshake")  # no services: nothing is indexed
        server = build_server(load_settings(), Path.cwd(), ready=failed)
        lowlevel = server._lowlevel_server  # noqa: SLF001 - the SDK's own runner, as run_stdio_async uses it
        to_server, server_in = anyio.create_memory_object_stream[SessionMessage | Exception](8)
        server_out, from_server = anyio.create_memory_object_stream[SessionMessage](8)
        client = {"name": "recorder", "version": "1"}
        requests: list[JSONRPCRequest | JSONRPCNotification]
        if version in MODERN_PROTOCOL_VERSIONS:
            envelope = {"_meta": {PROTOCOL_VERSION_META_KEY: version, "io.modelcontextprotocol/clientInfo": client,
                                  "io.modelcontextprotocol/clientCapabilities": {}}}
            requests = [JSONRPCRequest(jsonrpc="2.0", id=1, method="server/discover", params=envelope),
                        JSONRPCRequest(jsonrpc="2.0", id=2, method="tools/list", params=envelope)]
        else:
            requests = [
                JSONRPCRequest(jsonrpc="2.0", id=1, method="initialize",
                               params={"protocolVersion": version, "capabilities": {}, "clientInfo": client}),
                JSONRPCNotification(jsonrpc="2.0", method="notifications/initialized"),
                JSONRPCRequest(jsonrpc="2.0", id=2, method="tools/list"),
            ]
        results: dict[str, Any] = {}
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(lowlevel.run, server_in, server_out, lowlevel.create_initialization_options())
            for request in requests:
                await to_server.send(SessionMessage(request))
                if isinstance(request, JSONRPCRequest):
                    reply = await from_server.receive()
                    # Serialised as the stdio transport writes a message.
                    results[request.method] = json.loads(
                        reply.message.model_dump_json(by_alias=True, exclude_unset=True))["result"]
            await to_server.aclose()
            tasks.cancel_scope.cancel()
        return results

    versions = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)
    return {"versions": {version: anyio.run(answers, version) for version in versions}}


def main() -> int:
    MANIFEST.write_text(json.dumps(recorded_answers(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {MANIFEST}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
