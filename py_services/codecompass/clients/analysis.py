"""Client of the analysis service for the gateway's tools: Trace, RenderSymbols and the chunks of
one file (an outline). Retrieval keeps its own scan/chunk client for indexing."""

from __future__ import annotations

from collections.abc import Sequence

from codecompass.clients import analysis_convert as convert
from codecompass.clients.analysis_model import FileChunks, RenderedSymbol, RenderRequest, TraceOutcome, TraceQuery
from codecompass.clients.channel import Address, ServiceChannel
from codecompass.clients.errors import NOT_FOUND, ServiceError
from codecompass.common import names
from codecompass.v1 import analysis_pb2, analysis_pb2_grpc

SERVICE = names.ANALYSIS


class AnalysisClient:
    def __init__(self, address: Address) -> None:
        self._service = ServiceChannel(SERVICE, address, analysis_pb2_grpc.CodeAnalysisServiceStub)

    @property
    def address(self) -> str:
        return self._service.address

    def trace(self, query: TraceQuery, timeout_s: float) -> TraceOutcome:
        """NOT_FOUND (a ServiceError of kind not_found) when the symbol cannot be resolved."""
        reply = self._service.call("Trace", convert.trace_query_to_proto(query), timeout_s)
        return convert.trace_outcome_from_proto(reply)

    def render(self, workspace_root: str, specs: Sequence[RenderRequest], timeout_s: float
               ) -> list[RenderedSymbol | None]:
        """One answer per spec, in request order; None where the symbol no longer exists."""
        reply = self._service.call("RenderSymbols", convert.render_request_to_proto(workspace_root, specs), timeout_s)
        return convert.rendered_from_proto(specs, reply)

    def file_chunks(self, workspace_root: str, relative_path: str, timeout_s: float) -> FileChunks:
        """The chunks of one file, syntax only (no type checker)."""
        request = analysis_pb2.ChunkFilesRequest(workspace_root=workspace_root, paths=[relative_path],
                                                 include_references=False)
        for reply in self._service.stream("ChunkFiles", request, timeout_s):
            return convert.file_chunks_from_proto(reply)
        raise ServiceError(SERVICE, self.address, NOT_FOUND, f"no source file {relative_path!r} in the workspace")

    def close(self) -> None:
        self._service.close()
