"""The connected client's own model as an LLM source (issue 9 section 4: "sampling through the
connected client where its protocol revision and capabilities allow it").

Allowed only on a connection that negotiated a handshake-era revision (2025 and before) and
whose client declared the `sampling` capability: the 2026-07-28 revision deprecates
server-to-client sampling on new connections, and asking a client that never offered it is a
protocol error. The tools run in worker threads (the SDK runs synchronous tools with
`anyio.to_thread`), so the request goes back to the event loop with `anyio.from_thread`.
"""

from __future__ import annotations

import warnings
from typing import Any

import anyio
import anyio.from_thread
from mcp.server.mcpserver import Context
from mcp.shared.exceptions import MCPError
from mcp.types import SamplingMessage, TextContent
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

from codecompass_gateway.rewrite import MAX_ANSWER_TOKENS, TEMPERATURE, RewriteFailed, SamplingRewriter

# Reason codes in metadata.rewrite when the client's model did not answer usefully.
TIMEOUT, CLIENT_ERROR, NOT_TEXT = "timeout", "client_error", "invalid_response"


def client_rewriter(ctx: Context[Any, Any], timeout_s: float) -> SamplingRewriter | None:
    """A rewriter that asks the client's model, or None when this connection does not allow it."""
    capabilities = ctx.client_capabilities
    if ctx.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS or capabilities is None:
        return None
    if capabilities.sampling is None:
        return None
    session, related = ctx.session, ctx.request_id

    async def create(system: str, user: str) -> str:
        with anyio.fail_after(timeout_s), warnings.catch_warnings():
            # Deprecated for new connections only; this one negotiated a revision that has it.
            warnings.simplefilter("ignore")
            result = await session.create_message(
                [SamplingMessage(role="user", content=TextContent(type="text", text=user))],
                max_tokens=MAX_ANSWER_TOKENS, system_prompt=system, temperature=TEMPERATURE,
                related_request_id=related,
            )
        if not isinstance(result.content, TextContent):
            raise RewriteFailed(NOT_TEXT, f"the client's model answered with {result.content.type}, not text")
        return result.content.text

    def ask(system: str, user: str) -> str:
        try:
            return anyio.from_thread.run(create, system, user)
        except TimeoutError:
            raise RewriteFailed(TIMEOUT, f"the client's model did not answer within {timeout_s:g} s") from None
        except MCPError as exc:
            raise RewriteFailed(CLIENT_ERROR, f"the client declined the sampling request: {exc}") from None
        except RewriteFailed:
            raise
        # Whatever else goes wrong with the client's answer (a malformed result, a closed
        # session), the query is searched as given: a rewrite is never worth a failed search.
        except Exception as exc:  # noqa: BLE001
            raise RewriteFailed(CLIENT_ERROR, f"the sampling request failed: {type(exc).__name__}: {exc}") from None

    return SamplingRewriter(ask)
