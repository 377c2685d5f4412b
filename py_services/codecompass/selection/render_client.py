"""The selection's one outbound call, RenderSymbols, through the shared analysis client.

Rendering makes an answer cleaner but is not needed for one: every failure becomes
RenderFailed with a short reason, and the engine falls back to the stored collapsed source.
"""

from __future__ import annotations

from collections.abc import Sequence

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.errors import DEADLINE, ServiceError
from codecompass.contracts.analysis.model import RenderedSymbol, RenderRequest
from codecompass.contracts.selection.model import FALLBACK_ERROR, FALLBACK_TIMEOUT, FALLBACK_UNAVAILABLE


class RenderFailed(Exception):
    """The analysis service did not render; `reason` is one of the FALLBACK_* codes."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class RenderClient:
    def __init__(self, addr: str, *, timeout_s: float) -> None:
        self.addr = addr
        self._timeout_s = timeout_s
        self._client = AnalysisClient(addr)

    def close(self) -> None:
        self._client.close()

    def render(self, workspace_root: str, specs: Sequence[RenderRequest]) -> list[RenderedSymbol | None]:
        try:
            return self._client.render(workspace_root, specs, self._timeout_s)
        except ServiceError as exc:
            if exc.kind == DEADLINE:
                reason = FALLBACK_TIMEOUT
            else:
                reason = FALLBACK_ERROR if exc.meaning.reached else FALLBACK_UNAVAILABLE
            raise RenderFailed(reason, f"RenderSymbols at {self.addr}: {exc}") from None
