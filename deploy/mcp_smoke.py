"""One MCP call through a running gateway, as an agent makes it: streamable HTTP with the bearer
token, `semantic_search` for a query, the answer expected to name a path. CI runs it against
`docker compose up --wait` (.github/workflows/images.yml), inside the Python image it just built
(so it needs nothing installed on the runner), with the token file compose mounts in the gateway.

A healthy gateway may still be indexing its workspaces: until the answer names the path, the call
is made again, every few seconds, within --wait-s. Exits 0 with the answer's first lines, else 1
with the last error or answer.

Run: python deploy/mcp_smoke.py --url http://127.0.0.1:8765/mcp --token-file deploy/gateway-token \
        --query "verify a JWT token" --expect src/auth/tokenService.ts
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

RETRY_EVERY_S = 5.0


async def call_once(url: str, token: str, query: str, timeout_s: float) -> tuple[bool, str]:
    """(is_error, the answer's text) of one semantic_search in a fresh session."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http, Client(streamable_http_client(url, http_client=http), read_timeout_seconds=timeout_s) as client:
        result = await client.call_tool("semantic_search", {"query": query})
    return result.is_error, "\n".join(getattr(block, "text", "") for block in result.content)


def _first_cause(exc: BaseException) -> str:
    """The error under the SDK's task groups (a refused token is an HTTPStatusError in one)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8765/mcp")
    parser.add_argument("--token-file", type=Path, required=True, help="the gateway's bearer token (first line)")
    parser.add_argument("--query", required=True)
    parser.add_argument("--expect", required=True, help="a path the answer must name")
    parser.add_argument("--wait-s", type=float, default=300.0, help="how long to call again while it does not")
    args = parser.parse_args()
    token = args.token_file.read_text().splitlines()[0].strip()
    deadline = time.monotonic() + args.wait_s
    while True:
        try:
            is_error, text = anyio.run(call_once, args.url, token, args.query, args.wait_s)
            last = f"{'error' if is_error else 'answer'}: {text[:2000]}"
            if not is_error and args.expect in text:
                print("\n".join(text.splitlines()[:20]))
                return 0
        except Exception as exc:  # noqa: BLE001 - any failure to call is the smoke test's answer
            last = _first_cause(exc)
        if time.monotonic() + RETRY_EVERY_S > deadline:
            print(f"no answer naming {args.expect} within {args.wait_s:.0f} s; last {last}", file=sys.stderr)
            return 1
        time.sleep(RETRY_EVERY_S)


if __name__ == "__main__":
    sys.exit(main())
