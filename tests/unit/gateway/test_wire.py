"""The screen every message passes before the SDK parses it: its depth found without descending,
and a request's id read from a message too deep or too long to parse (the behaviour over real
stdio and HTTP is in tests/integration/test_mcp_protocol_edge.py)."""

from __future__ import annotations

import json

import pytest
from codecompass_gateway.wire import MAX_DEPTH, Rejection, oversized, screen


def _nested(depth: int, inner: object = 1) -> object:
    value = inner
    for level in range(depth):
        value = [value] if level % 2 else {"k[": value, "s": "]}{["}
    return value


def _request(arguments: object, request_id: object = 7) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": "semantic_search", "arguments": arguments}}).encode()


@pytest.mark.parametrize("depth", [MAX_DEPTH - 4, MAX_DEPTH - 3])
def test_a_message_at_the_depth_limit_passes(depth: int) -> None:
    # The message, its params and the arguments are three levels of their own.
    message = screen(_request({"path": _nested(depth)}))
    assert isinstance(message, dict) and message["id"] == 7


def test_one_level_more_is_refused_with_the_request_s_id() -> None:
    refused = screen(_request({"path": _nested(MAX_DEPTH - 2)}, "abc"))
    assert isinstance(refused, Rejection) and refused.ids == ("abc",)
    assert refused.error.message == (f"Invalid Request: nested more than {MAX_DEPTH} levels deep; at most "
                                     f"{MAX_DEPTH} are accepted")


def test_brackets_inside_strings_are_no_nesting() -> None:
    assert isinstance(screen(_request({"query": "[{" * 10_000})), dict)


def test_unbalanced_brackets_are_a_parse_error_not_depth() -> None:
    refused = screen(b'{"jsonrpc": "2.0", "id": 1, "method": "x", "params": ' + b"[" * 200 + b"}")
    assert isinstance(refused, Rejection) and refused.error.code == -32700 and refused.ids == (None,)


def test_a_deep_notification_gets_no_answer() -> None:
    deep = b'{"jsonrpc": "2.0", "method": "notifications/progress", "params": ' + b"[" * 500 + b"]" * 500 + b"}"
    refused = screen(deep)
    assert isinstance(refused, Rejection) and refused.ids == () and refused.replies() == []


def test_the_id_of_a_message_cut_short() -> None:
    whole = _request({"query": "x" * 100_000}, 44)
    assert oversized(whole[:70_000], len(whole)).ids == (44,)
    # The id after the params, past what was read: unknown, so null.
    late = b'{"jsonrpc": "2.0", "method": "tools/call", "params": {"q": "' + b"x" * 70_000 + b'"}, "id": 9}'
    assert oversized(late[:65_536], None).ids == (None,)
    assert oversized(late[:65_536], None).error.message.startswith("Invalid Request: the message is over ")
