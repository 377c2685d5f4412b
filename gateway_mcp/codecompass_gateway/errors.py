"""The error codes of every CodeCompass MCP tool: one registry, one meaning each.

A failed tool call is a tool result with `isError: true`, one text line
`<tool>: <what happened and what to change> [<code>]`, and structured content
`{"error": {"code": <code>, "message": <the line>, "tool": <tool>}}` so a client program can branch
on the code without parsing the text. Every tool uses these codes and no others; a new failure
either fits one of them or gets a row here. The tools' descriptions do not list them (every agent
would pay for the list on every session): the line itself says what to change.

| code                  | meaning                                                                        |
|-----------------------|--------------------------------------------------------------------------------|
| `invalid_argument`    | an argument is missing, malformed or out of range; the message says which      |
| `invalid_workspace`   | `workspace` is not an absolute path to an existing folder                      |
| `workspace_refused`   | `workspace` is outside the folders this server opens, or a folder never        |
|                       | indexed (the filesystem root, the home folder, a system folder)                |
| `not_found`           | the symbol, file or location named is not in the workspace                     |
| `unsupported_ref`     | `ref` names a branch or commit: only the working tree is indexed (branch-aware |
|                       | indexes are on the roadmap)                                                    |
| `service_unavailable` | a CodeCompass service is not running or cannot be reached                      |
| `deadline_exceeded`   | a service did not answer within its deadline                                   |
| `service_error`       | a service failed for another reason; the message has its words                 |
| `internal_error`      | a bug in the gateway; its log has the details                                  |

Degraded answers are not errors: a semantic channel, reranker or selection that could not run
is reported in the answer's metadata (`semantic_fallback`, `rerank_fallback`, `skipped_stages`).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from mcp.types import CallToolResult, TextContent

from codecompass.clients.errors import FAILED, KINDS, NOT_FOUND, ServiceError

INVALID_ARGUMENT = "invalid_argument"
INVALID_WORKSPACE = "invalid_workspace"
WORKSPACE_REFUSED = "workspace_refused"
NOT_FOUND_CODE = "not_found"
UNSUPPORTED_REF = "unsupported_ref"
SERVICE_UNAVAILABLE = "service_unavailable"
DEADLINE_EXCEEDED = "deadline_exceeded"
SERVICE_ERROR = "service_error"
INTERNAL_ERROR = "internal_error"

ERROR_CODES: dict[str, str] = {
    INVALID_ARGUMENT: "an argument is missing, malformed or out of range; the message says which",
    INVALID_WORKSPACE: "`workspace` is not an absolute path to an existing folder",
    WORKSPACE_REFUSED: "`workspace` is outside the folders this server opens, or a folder never indexed (the "
                       "filesystem root, the home folder, a system folder)",
    NOT_FOUND_CODE: "the symbol, file or location named is not in the workspace",
    UNSUPPORTED_REF: "`ref` names a branch or commit: only the working tree is indexed "
                     "(branch-aware indexes are on the roadmap)",
    SERVICE_UNAVAILABLE: "a CodeCompass service is not running or cannot be reached",
    DEADLINE_EXCEEDED: "a service did not answer within its deadline",
    SERVICE_ERROR: "a service failed for another reason; the message has its words",
    INTERNAL_ERROR: "a bug in the gateway; its log has the details",
}


class ToolInputError(Exception):
    """An argument the caller can fix; the message says how, in one line. `code` is its entry in
    the error registry (`ERROR_CODES`)."""

    def __init__(self, message: str, code: str = INVALID_ARGUMENT) -> None:
        super().__init__(message)
        self.code = code


@contextmanager
def not_found_as_input(message: str) -> Iterator[None]:
    """A NOT_FOUND from a service is the caller's to fix: say what to change."""
    try:
        yield
    except ServiceError as exc:
        if exc.kind == NOT_FOUND:
            raise ToolInputError(f"{exc}; {message}", NOT_FOUND_CODE) from None
        raise


def code_for_service_error(kind: str) -> str:
    """The registry code for a `ServiceError.kind` (its row of the clients' one table of kinds)."""
    return KINDS.get(kind, KINDS[FAILED]).tool_code


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def code_of(result: CallToolResult) -> str | None:
    """The error code of a failed call's answer (`error_result`); None for a success."""
    if not result.is_error:
        return None
    error = (result.structured_content or {}).get("error")
    code = error.get("code") if isinstance(error, dict) else None
    # A failure in another shape (the SDK's own) has no code of ours.
    return code if code in ERROR_CODES else INTERNAL_ERROR


def error_result(message: str, code: str = INVALID_ARGUMENT, tool: str = "") -> CallToolResult:
    """The one shape of a failed tool call (see the module docstring)."""
    if code not in ERROR_CODES:
        raise ValueError(f"unregistered error code {code!r}")
    line = f"{one_line(message)} [{code}]"
    error: dict[str, Any] = {"code": code, "message": line, "tool": tool}
    return CallToolResult(content=[TextContent(type="text", text=line)], structured_content={"error": error},
                          is_error=True)
