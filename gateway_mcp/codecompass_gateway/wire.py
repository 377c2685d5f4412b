"""Every message a client sends, screened as raw bytes before the MCP SDK parses it.

The SDK's transports lose some requests: over stdio a line it cannot parse (garbage, a batch
array, a lone UTF-16 surrogate, nesting deeper than its parser's recursion limit) is dropped
without an answer, so the client waits forever; over HTTP the same lines get an error with id
null (or a page of pydantic text for a batch). Here each message is judged first, on its bytes:

- its size (at most MAX_MESSAGE_BYTES) and its nesting (at most MAX_DEPTH), with a scan that
  never descends: a 100,000-deep argument costs one pass over the line, not a recursion;
- then it is parsed, and must be one JSON-RPC 2.0 message (not a batch: MCP removed them in
  2025-06-18) whose strings are Unicode text.

A message that fails gets one JSON-RPC error per request it holds, with the request's id when the
id can be read (from the top level of the message, however deep or long the rest is), else null.
Notifications and responses get none, as JSON-RPC says. What passes goes to the SDK unchanged.

`ScreenedStdin` applies this to the stdio transport, `ScreenedHttp` to streamable HTTP (behind
`Guarded`, which lets in only who `remote.Exposure` says); `InitializeFirst` turns the SDK's
answer to a call before `initialize` ("Invalid request parameters", which sends a client hunting
for a wrong argument) into one that says what is missing.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, BinaryIO

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.streamable_http import MCP_SESSION_ID_HEADER
from mcp.server.transport_security import (
    DEFAULT_MAX_REQUEST_BODY_SIZE,
    TransportSecurityMiddleware,
    TransportSecuritySettings,
)
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    RequestId,
    jsonrpc_message_adapter,
)
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS
from pydantic import ValidationError
from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from codecompass.common.logging import get_logger
from codecompass_gateway.remote import AcceptedTokens, Exposure

log = get_logger("codecompass.gateway.wire")

# The SDK's own limit on an HTTP body, applied to a stdio line too.
MAX_MESSAGE_BYTES = DEFAULT_MAX_REQUEST_BODY_SIZE
# The deepest of our tools' arguments is 4 levels into a message (params.arguments.expand[i]);
# 64 leaves room for any client's _meta and stays far below the parsers' recursion limits.
MAX_DEPTH = 64
# How much of an oversized message is kept to read its id: the id comes before the params in
# every client we know, and the top level of a message is short.
_ID_PREFIX_BYTES = 64 * 1024
# A JSON string (escapes included) or a bracket: what the depth scan sees of a message.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_UNIFY = bytes.maketrans(b"{}", b"[]")
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_STRING_OR_COMMA = re.compile(rb'"(?:[^"\\]|\\.)*"|,', re.DOTALL)
# A \uD800-\uDFFF escape: only then can a parsed string hold a lone surrogate.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_OPEN, _QUOTE = frozenset(b"[{"), ord('"')
_METHOD_SDK_GATE = "Invalid request parameters"  # what the SDK answers a call before initialize
BATCH_REFUSED = "batch arrays are not supported (MCP removed them in 2025-06-18): send each message on its own"


@dataclass(frozen=True)
class Rejection:
    """A message that does not reach the SDK: the error it gets, for each of the requests it holds
    (`ids`; empty for a notification or a response), and the HTTP status that carries it."""

    error: ErrorData
    ids: tuple[RequestId | None, ...]
    http_status: int = 400
    batch: bool = False

    def replies(self) -> list[JSONRPCError]:
        return [JSONRPCError(jsonrpc="2.0", id=request_id, error=self.error) for request_id in self.ids]


def before_initialize(method: str) -> str:
    return (f"Invalid Request: {method} before initialize: a session starts with an `initialize` request, "
            "then the `notifications/initialized` notification")


def oversized(beginning: bytes, size: int | None) -> Rejection:
    """The answer to a message over MAX_MESSAGE_BYTES, of which only `beginning` was read; `size`
    is its length when known (a stdio line read to its end, an HTTP Content-Length)."""
    length = f"{size:,} bytes" if size is not None else f"over {MAX_MESSAGE_BYTES:,} bytes"
    top = _top_level(beginning[:_ID_PREFIX_BYTES])
    if top is not None and "id" not in top:
        # An id may come after the part read: a null answer beats a request never answered.
        top = None
    return _refuse(INVALID_REQUEST, f"Invalid Request: the message is {length}; at most {MAX_MESSAGE_BYTES:,} are "
                                    "accepted", top, http_status=413)


def screen(raw: bytes) -> dict[str, Any] | Rejection:
    """The message in `raw` (one stdio line or one HTTP body, at most MAX_MESSAGE_BYTES), parsed,
    or why it is refused."""
    if len(raw) > MAX_MESSAGE_BYTES:
        return oversized(raw, len(raw))
    if _too_deep(raw):
        return _refuse(INVALID_REQUEST, f"Invalid Request: nested more than {MAX_DEPTH} levels deep; at most "
                                        f"{MAX_DEPTH} are accepted", _top_level(raw))
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _refuse(PARSE_ERROR, f"Parse error: the message is not UTF-8 (byte 0x{raw[exc.start]:02x} at "
                                    f"offset {exc.start})", None)
    try:
        message = json.loads(text)
    except json.JSONDecodeError as exc:
        return _refuse(PARSE_ERROR, f"Parse error: {exc.msg} at line {exc.lineno} column {exc.colno}", None)
    if isinstance(message, list):
        ids = tuple(_request_id(m) for m in message if not _is_notification(m)) if message else (None,)
        error = ErrorData(code=INVALID_REQUEST, message=f"Invalid Request: {BATCH_REFUSED}")
        return Rejection(error=error, ids=ids, batch=True)
    top = message if isinstance(message, dict) else None
    if _SURROGATE_ESCAPE.search(text):
        lone = _lone_surrogate(message, "")
        if lone is not None:
            where, char = lone
            return _refuse(INVALID_PARAMS,
                           f"Invalid params: {where} holds a lone UTF-16 surrogate (\\u{ord(char):04x}), "
                           "which encodes no character: send the text as valid Unicode", top)
    try:
        # The envelope only: what the params or a result hold is the SDK's to judge (and a copy
        # of a large one would cost more than the rest of the screen).
        jsonrpc_message_adapter.validate_python(_envelope(message), by_name=False)
    except ValidationError:
        return _refuse(INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message (a request is an object with "
                                        '"jsonrpc": "2.0", an "id" and a string "method")', top)
    assert top is not None  # the adapter accepts objects only
    return top


def _refuse(code: int, message: str, top: Mapping[str, Any] | None, http_status: int = 400) -> Rejection:
    """Answer the request `top` is (by its id), nothing to a notification or a response, and id
    null when the message's top level could not be read."""
    if top is None:
        ids: tuple[RequestId | None, ...] = (None,)
    elif "method" in top and "id" in top:
        ids = (_request_id(top),)
    elif "method" in top or "result" in top or "error" in top:
        ids = ()
    else:
        ids = (_request_id(top),)
    return Rejection(error=ErrorData(code=code, message=message), ids=ids, http_status=http_status)


def _envelope(message: object) -> object:
    if not isinstance(message, dict):
        return message
    return {key: ({} if key in ("params", "result") and isinstance(value, dict) else value)
            for key, value in message.items()}


def _is_notification(message: object) -> bool:
    return isinstance(message, dict) and "method" in message and "id" not in message


def _request_id(message: object) -> RequestId | None:
    """The message's id when it is one JSON-RPC allows (and that can be written back as UTF-8)."""
    if not isinstance(message, dict):
        return None
    value = message.get("id")
    if isinstance(value, bool) or not isinstance(value, int | str):
        return None
    if isinstance(value, str) and _lone_surrogate(value, "id") is not None:
        return None
    return value


def _too_deep(raw: bytes) -> bool:
    # Brackets inside strings count here, so this bounds the depth from above: most messages
    # have too few brackets in all to need the scan.
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return False
    # Without its strings, a message's depth is its brackets' (of either kind). Each pass of
    # `replace` removes exactly the innermost pairs (pairs it makes adjacent wait for the next
    # pass): the passes it takes to empty the brackets are their depth. All of it runs in C, so
    # 100,000 nested arrays cost MAX_DEPTH passes, not a recursion or a Python loop per bracket.
    brackets = _STRING.sub(b"", raw).translate(_UNIFY, _NOT_BRACKET)
    for _ in range(MAX_DEPTH):
        shorter = brackets.replace(b"[]", b"")
        if shorter == brackets:  # empty, or unbalanced: the parser will say what is wrong
            return False
        brackets = shorter
    return bool(brackets) and brackets.replace(b"[]", b"") != brackets


def _top_level(raw: bytes) -> dict[str, Any] | None:
    """The top-level members of the object in `raw` with every nested value as null, read without
    descending: enough to tell a request from a notification and to find its id, however deep or
    long the rest is. `raw` may be cut short; then the members before the cut are read."""
    kept: list[bytes] = []
    depth, start = 0, 0
    for token in _TOKEN.finditer(raw):
        first = raw[token.start()]
        if first == _QUOTE:
            continue
        if first in _OPEN:
            depth += 1
            if depth == 2:
                kept += [raw[start:token.start()], b"null"]
        else:
            depth -= 1
            if depth == 1:
                start = token.end()
    if depth <= 1:
        kept.append(raw[start:])
    skeleton = b"".join(kept).strip()
    if depth > 0 or not skeleton.endswith(b"}"):
        # Cut short: keep the members before the last top-level comma, and close the object.
        commas = [m.start() for m in _STRING_OR_COMMA.finditer(skeleton) if skeleton[m.start()] == ord(",")]
        skeleton = skeleton[:commas[-1]] + b"}" if commas else b""
    try:
        top = json.loads(skeleton)
    except ValueError:
        return None
    return top if isinstance(top, dict) else None


def _lone_surrogate(value: object, where: str) -> tuple[str, str] | None:
    """Where in `value` a string holds a lone UTF-16 surrogate, and which (depth already bounded)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return where or "the message", value[exc.start]
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            path = f"{where}.{key}" if where else str(key)
            found = _lone_surrogate(key, f"a key in {where or 'the message'}") or _lone_surrogate(item, path)
            if found is not None:
                return found
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found = _lone_surrogate(item, f"{where}[{index}]")
            if found is not None:
                return found
    return None


# --- stdio ----------------------------------------------------------------------------------------


class ScreenedStdin:
    """The stdin of the SDK's stdio transport (`stdio_server(stdin=...)`): it yields the lines that
    pass `screen` and answers the others itself, on the transport's write stream (`answer_on`).
    A line is read at most MAX_MESSAGE_BYTES at a time: the rest of a longer one is skipped
    unread into memory."""

    def __init__(self, binary: BinaryIO) -> None:
        self._binary = binary
        self._answers: Any = None
        self._ready = anyio.Event()

    def answer_on(self, write_stream: Any) -> None:
        self._answers = write_stream
        self._ready.set()

    def __aiter__(self) -> ScreenedStdin:
        return self

    async def __anext__(self) -> str:
        while True:
            line = await self._readline(MAX_MESSAGE_BYTES + 1)
            if not line:
                raise StopAsyncIteration
            if line.endswith(b"\n") or len(line) <= MAX_MESSAGE_BYTES:
                message = line.rstrip(b"\r\n")
                if not message.strip():
                    continue  # a blank line is no message
                verdict = screen(message)
                if isinstance(verdict, dict):
                    return message.decode("utf-8")
            else:
                verdict = oversized(line, len(line) + await self._skip_rest_of_line())
            log.warning("message refused", extra={"transport": "stdio", "reason": verdict.error.message})
            await self._ready.wait()
            try:
                for reply in verdict.replies():
                    await self._answers.send(SessionMessage(reply))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                raise StopAsyncIteration from None

    async def _readline(self, limit: int) -> bytes:
        # Abandoned on cancel: a thread blocked on stdin must not hold up the server's shutdown.
        return await anyio.to_thread.run_sync(self._binary.readline, limit, abandon_on_cancel=True)

    async def _skip_rest_of_line(self) -> int:
        """Reads to the end of the line, keeping none of it; its length, the newline not counted."""
        skipped = 0
        while True:
            chunk = await self._readline(1 << 20)
            skipped += len(chunk.rstrip(b"\r\n"))
            if not chunk or chunk.endswith(b"\n"):
                return skipped


# --- streamable HTTP ------------------------------------------------------------------------------

# How much of an oversized body is read (and dropped) before answering, so that the client, still
# sending, reads the answer rather than a reset connection; past it the connection is cut.
_DRAIN_BYTES = 16 * MAX_MESSAGE_BYTES


async def respond(send: Send, status: int, body: bytes, content_type: bytes = b"application/json",
                  headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode()), *headers]})
    await send({"type": "http.response.body", "body": body})


class ScreenedHttp:
    """ASGI middleware in front of the SDK's streamable HTTP app: every POST to the MCP path is read
    (at most MAX_MESSAGE_BYTES) and screened; a refused one is answered here as JSON-RPC, and one
    that passes is handed on with its body. Where the app keeps sessions (`sessions`), a request
    with no session that is not `initialize` (on a handshake-era protocol revision) is told to
    initialize first, with its id; a stateless app serves such a request on its own."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], path: str, *,
                 sessions: bool = True) -> None:
        self.app = app
        self.path = path
        self.sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"].rstrip("/") != self.path:
            await self.app(scope, receive, send)
            return
        body, complete, unread = await _read_body(receive)
        if complete:
            verdict = screen(body)
        else:
            verdict = oversized(body, _content_length(scope))
            if unread:
                await _drain(receive)
        if isinstance(verdict, dict) and self.sessions and _needs_session(scope, verdict):
            verdict = _refuse(INVALID_REQUEST, before_initialize(str(verdict.get("method"))), verdict)
        if isinstance(verdict, Rejection):
            log.warning("message refused", extra={"transport": "streamable-http", "reason": verdict.error.message})
            replies = [r.model_dump(mode="json", by_alias=True, exclude_unset=True) for r in verdict.replies()]
            if not replies:  # a notification or a response: HTTP still needs an answer
                replies = [JSONRPCError(jsonrpc="2.0", id=None, error=verdict.error).model_dump(
                    mode="json", by_alias=True, exclude_unset=True)]
            payload = replies if verdict.batch else replies[0]
            await respond(send, verdict.http_status, json.dumps(payload).encode())
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def _needs_session(scope: Scope, message: Mapping[str, Any]) -> bool:
    headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
    version = headers.get("mcp-protocol-version")
    return (MCP_SESSION_ID_HEADER not in headers and (version is None or version in HANDSHAKE_PROTOCOL_VERSIONS)
            and "id" in message and message.get("method") not in (None, "initialize"))


async def _read_body(receive: Receive) -> tuple[bytes, bool, bool]:
    """The body, whether it is all there, and whether some is still unsent: past MAX_MESSAGE_BYTES
    reading stops, and only the body's beginning is kept (to find the request's id)."""
    parts: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(parts), True, False
        chunk = message.get("body", b"")
        size += len(chunk)
        parts.append(chunk)
        more = bool(message.get("more_body", False))
        if size > MAX_MESSAGE_BYTES:
            return b"".join(parts)[:_ID_PREFIX_BYTES], False, more
        if not more:
            return b"".join(parts), True, False


def _content_length(scope: Scope) -> int | None:
    for key, value in scope["headers"]:
        if key.lower() == b"content-length" and value.isdigit():
            return int(value)
    return None


async def _drain(receive: Receive) -> None:
    drained = 0
    while drained < _DRAIN_BYTES:
        message = await receive()
        if message["type"] != "http.request":
            return
        drained += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


def transport_security(exposure: Exposure) -> TransportSecuritySettings:
    """The SDK's Host and Origin checks, with the lists `exposure` allows."""
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=list(exposure.allowed_hosts),
                                     allowed_origins=list(exposure.allowed_origins))


# Liveness and readiness of the HTTP server, for an orchestrator's probes: answered before the Host,
# Origin and token checks, because a kubelet sends `Host: <pod IP>:<port>`, which no allowed_hosts
# list can know in advance, and carries no token. It says "ok" and nothing else (no version, no
# workspace, no service state), so answering it to anyone tells them only that the port is open.
HEALTH_PATH = "/healthz"


class Guarded:
    """ASGI middleware before everything else: GET HEALTH_PATH answered at once; then the Host and
    Origin checks (the SDK's own, so that a request from a rebinding web page is refused before
    anything reads it), then the bearer token when the exposure requires one (401 without it)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], exposure: Exposure) -> None:
        self.app = app
        self._headers = TransportSecurityMiddleware(transport_security(exposure))
        self._tokens = None if exposure.token is None else AcceptedTokens(exposure)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] == HEALTH_PATH and scope["method"] == "GET":
            await respond(send, 200, b"ok\n", b"text/plain; charset=utf-8")
            return
        # Content-Type is the transport's to judge (is_post=False): only Host and Origin here.
        refused = await self._headers.validate_request(Request(scope, receive), is_post=False)
        if refused is not None:
            await refused(scope, receive, send)
            return
        if self._tokens is not None and not self._authorized(scope):
            await respond(send, 401, b"missing or wrong bearer token: send Authorization: Bearer <token>\n",
                          b"text/plain; charset=utf-8", ((b"www-authenticate", b'Bearer realm="codecompass"'),))
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        assert self._tokens is not None
        given = next((value for key, value in scope["headers"] if key.lower() == b"authorization"), b"")
        scheme, _, token = given.strip().partition(b" ")
        # Constant time: how much of a guess matched must not show in how long the answer takes.
        return scheme.lower() == b"bearer" and self._tokens.accepts(token.strip())


# --- the handshake ----------------------------------------------------------------------------------


class InitializeFirst:
    """Server middleware: a request before `initialize` says so (the SDK's own answer reads as a
    wrong argument)."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        try:
            return await call_next(ctx)
        except MCPError as exc:
            if (exc.error.code == INVALID_PARAMS and exc.error.message == _METHOD_SDK_GATE
                    and ctx.request_id is not None and ctx.session.client_params is None):
                raise MCPError(code=INVALID_REQUEST, message=before_initialize(ctx.method)) from None
            raise
