"""Client of the analysis service for the gateway's tools: Trace, RenderSymbols and the chunks of
one file (an outline). Retrieval keeps its own scan/chunk client for indexing."""

from __future__ import annotations

from collections.abc import Sequence

from codecompass.clients import analysis_convert as convert
from codecompass.clients.analysis_model import FileChunks, RenderedSymbol, RenderRequest, TraceOutcome, TraceQuery
from codecompass.clients.errors import NOT_FOUND, ServiceError, mapped
from codecompass.common.telemetry import traced_channel
from codecompass.v1 import analysis_pb2, analysis_pb2_grpc

SERVICE = "analysis"


class AnalysisClient:
    def __init__(self, address: str) -> None:
        self.address = address
        self._channel = traced_channel(address)
        self._stub = analysis_pb2_grpc.CodeAnalysisServiceStub(self._channel)

    def trace(self, query: TraceQuery, timeout_s: float) -> TraceOutcome:
        """NOT_FOUND (a ServiceError of kind not_found) when the symbol cannot be resolved."""
        with mapped(SERVICE, self.address):
            reply = self._stub.Trace(convert.trace_query_to_proto(query), timeout=timeout_s)
        return convert.trace_outcome_from_proto(reply)

    def render(self, workspace_root: str, specs: Sequence[RenderRequest], timeout_s: float
               ) -> list[RenderedSymbol | None]:
        """One answer per spec, in request order; None where the symbol no longer exists."""
        with mapped(SERVICE, self.address):
            reply = self._stub.RenderSymbols(convert.render_request_to_proto(workspace_root, specs),
                                             timeout=timeout_s)
        return convert.rendered_from_proto(specs, reply)

    def file_chunks(self, workspace_root: str, relative_path: str, timeout_s: float) -> FileChunks:
        """The chunks of one file, syntax only (no type checker)."""
        request = analysis_pb2.ChunkFilesRequest(workspace_root=workspace_root, paths=[relative_path],
                                                 include_references=False)
        with mapped(SERVICE, self.address):
            for reply in self._stub.ChunkFiles(request, timeout=timeout_s):
                return convert.file_chunks_from_proto(reply)
        raise ServiceError(SERVICE, self.address, NOT_FOUND, f"no source file {relative_path!r} in the workspace")

    def close(self) -> None:
        self._channel.close()
