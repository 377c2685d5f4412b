"""Whether the services a gateway calls are up yet.

`codecompass mcp` answers the client's handshake at once and starts the services behind it (a cold
start takes seconds: the embedding model, the TypeScript parser, the index): a client that
connects must not time out while they start. A tool call waits for them a bounded time, and one
that cannot be served says so in one line. A gateway pointed at services run elsewhere starts
them never and waits for nothing (`Readiness.already`).

Imports nothing heavy: the CLI creates it before the MCP SDK is loaded.
"""

from __future__ import annotations

import threading
import time

# How long a tool call waits for services that are starting: a cold start of them takes 2-10 s on
# two cores (about 2 s to SERVING on this one, longer on a loaded machine or a first start);
# beyond this the call answers that they are still starting, and the agent asks again.
CALL_WAIT_S = 30.0


class ServicesNotReady(Exception):
    """The services are still starting, or failed to start; the message says which, in one line."""


class Readiness:
    """Set once, by whoever starts the services: up, or failed with a reason."""

    def __init__(self) -> None:
        self._settled = threading.Event()
        self._failure: str | None = None
        self._since = time.monotonic()

    @classmethod
    def already(cls) -> Readiness:
        """Services started elsewhere (configured addresses, `codecompass up`): nothing to wait for."""
        ready = cls()
        ready.succeeded()
        return ready

    def succeeded(self) -> None:
        self._settled.set()

    def failed(self, reason: str) -> None:
        self._failure = reason
        self._settled.set()

    def wait(self, timeout_s: float | None = None) -> None:
        """Returns once the services are up; raises ServicesNotReady when they failed to start, or
        are still starting after `timeout_s` (default CALL_WAIT_S)."""
        if not self._settled.wait(CALL_WAIT_S if timeout_s is None else timeout_s):
            waited = time.monotonic() - self._since
            raise ServicesNotReady(f"the CodeCompass services are still starting ({waited:.0f} s so far); "
                                   "ask again in a few seconds")
        if self._failure is not None:
            raise ServicesNotReady(f"the CodeCompass services did not start: {self._failure}")
