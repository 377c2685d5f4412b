"""Client of the analysis service's RenderSymbols, the selection's one outbound call.

Rendering makes an answer cleaner but is not needed for one: every failure becomes
RenderFailed with a short reason, and the engine falls back to the stored collapsed source.
"""

from __future__ import annotations

from collections.abc import Sequence

import grpc

from codecompass.common.telemetry import traced_channel
from codecompass.selection import convert
from codecompass.selection.model import (
    FALLBACK_ERROR,
    FALLBACK_TIMEOUT,
    FALLBACK_UNAVAILABLE,
    Rendered,
    RenderFailed,
    RenderSpec,
)
from codecompass.v1 import analysis_pb2_grpc


class RenderClient:
    def __init__(self, addr: str, *, timeout_s: float) -> None:
        self.addr = addr
        self._timeout_s = timeout_s
        self._channel = traced_channel(addr)
        self._stub = analysis_pb2_grpc.CodeAnalysisServiceStub(self._channel)

    def close(self) -> None:
        self._channel.close()

    def render(self, workspace_root: str, specs: Sequence[RenderSpec]) -> list[Rendered | None]:
        request = convert.render_request_to_proto(workspace_root, specs)
        try:
            response = self._stub.RenderSymbols(request, timeout=self._timeout_s)
        except grpc.RpcError as exc:
            code = exc.code() if hasattr(exc, "code") else None
            detail = exc.details() if hasattr(exc, "details") else str(exc)
            reason = {grpc.StatusCode.UNAVAILABLE: FALLBACK_UNAVAILABLE,
                      grpc.StatusCode.DEADLINE_EXCEEDED: FALLBACK_TIMEOUT}.get(code, FALLBACK_ERROR)
            name = code.name if code is not None else "UNKNOWN"
            raise RenderFailed(reason, f"RenderSymbols at {self.addr}: {name}: {detail}") from None
        return convert.rendered_from_proto(specs, response)
