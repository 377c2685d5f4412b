"""Client of the analysis service, for every caller: retrieval's indexing (ScanWorkspace, and
ChunkFiles with one-hop references), the gateway's tools (Trace, RenderSymbols, one file's
outline), selection's rendering and `codecompass chunks`.

The gateway's calls raise `ServiceError`; the indexing calls (`scan`, `chunk_files`) raise the
retrieval service's own errors, which its servicer turns into status codes for its callers
(an analysis service that is down is UNAVAILABLE upstream of retrieval, not a retrieval bug)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence

from codecompass.clients.channel import Address, ServiceChannel
from codecompass.clients.errors import DEADLINE, NOT_FOUND, ServiceError
from codecompass.common import names
from codecompass.contracts.analysis import convert
from codecompass.contracts.analysis.model import (
    ChunkedFile,
    FileEntry,
    RenderedSymbol,
    RenderRequest,
    ScanResult,
    TraceOutcome,
    TraceQuery,
)
from codecompass.contracts.chunk_convert import UnknownEnumValue
from codecompass.contracts.retrieval.errors import AnalysisFailed, AnalysisTimedOut, AnalysisUnavailable
from codecompass.v1 import analysis_pb2, analysis_pb2_grpc

SERVICE = names.ANALYSIS

# Chunking with one-hop references runs the type checker; the first call on a workspace also
# builds its Programs. The indexing stream's deadline therefore grows with the files asked for.
_CHUNK_SECONDS_PER_FILE = 0.5

# What each indexing RPC is, in the words of a message about its deadline.
_STAGE = {"ScanWorkspace": "scanning the workspace", "ChunkFiles": "chunking files"}


class AnalysisClient:
    def __init__(self, address: Address, *, timeout_s: float | None = None) -> None:
        """`timeout_s`: the deadline of the indexing calls, which retrieval sets once from its
        settings (CODECOMPASS_RPC_TIMEOUT_S); the other calls name their own."""
        self._service = ServiceChannel(SERVICE, address, analysis_pb2_grpc.CodeAnalysisServiceStub)
        self._timeout_s = timeout_s
        # Building the previous-catalog message costs ~5 ms per 1,000 files; an unchanged
        # catalog (the common case: a search with no edits) reuses the last one.
        self._scan_requests: dict[str, tuple[tuple[object, str], analysis_pb2.ScanWorkspaceRequest]] = {}
        self._cache_lock = threading.Lock()

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

    def chunks(self, workspace_root: str, paths: Sequence[str], timeout_s: float, *,
               include_references: bool = False) -> Iterator[ChunkedFile]:
        """The chunks of `paths` (files or folders) as a reader sees them, one file at a time as
        the service streams them."""
        request = analysis_pb2.ChunkFilesRequest(workspace_root=workspace_root, paths=list(paths),
                                                 include_references=include_references)
        for reply in self._service.stream("ChunkFiles", request, timeout_s):
            yield convert.chunked_file_from_proto(reply)

    def file_chunks(self, workspace_root: str, relative_path: str, timeout_s: float) -> ChunkedFile:
        """The chunks of one file, syntax only (no type checker)."""
        for chunked in self.chunks(workspace_root, [relative_path], timeout_s):
            return chunked
        raise ServiceError(SERVICE, self.address, NOT_FOUND, f"no source file {relative_path!r} in the workspace")

    def scan(self, root: str, previous: Callable[[], Iterable[FileEntry]], *, version: object,
             unchanged_since: str = "") -> ScanResult:
        """Scan `root` against a previous catalog; `previous` is only called when `version` (or
        `unchanged_since`) differs from the last scan's of this root. `unchanged_since`: the watch token
        of a scan whose result the caller has applied in full; when nothing changed since, the
        result says `unchanged` and lists nothing.

        With a token the catalog is left out of the first request (ScanWorkspaceRequest.previous_omitted):
        most scans of a watched workspace find nothing changed, and the catalog (130 KB on ws-300k) was
        serialized and parsed for nothing (an unchanged scan: 2.4 ms, 0.9 without it). After an edit
        the service answers from its folder watch what was written since the token's scan
        (`since_token`), which the caller has applied. Any other answer (the service asks for the
        catalog, or one older than the fields walked without it) is asked again with it."""
        timeout_s = self._indexing_timeout()
        if unchanged_since:
            light = convert.scan_request_to_proto(root, (), unchanged_since, previous_omitted=True)
            response = self._scan_call(light, timeout_s)
            if response.unchanged or response.since_token:
                return convert.scan_result_from_proto(response)
        key = (version, unchanged_since)
        with self._cache_lock:
            cached = self._scan_requests.get(root)
        if cached is not None and cached[0] == key:
            request = cached[1]
        else:
            request = convert.scan_request_to_proto(root, previous(), unchanged_since)
            with self._cache_lock:
                self._scan_requests[root] = (key, request)
        return convert.scan_result_from_proto(self._scan_call(request, timeout_s))

    def _scan_call(self, request: analysis_pb2.ScanWorkspaceRequest, timeout_s: float
                   ) -> analysis_pb2.ScanWorkspaceResponse:
        try:
            return self._service.call("ScanWorkspace", request, timeout_s)
        except ServiceError as exc:
            raise self._indexing_error("ScanWorkspace", exc, timeout_s) from None

    def chunk_files(
        self, root: str, paths: list[str], *, include_references: bool = True, lexical_only: bool = False
    ) -> Iterator[ChunkedFile]:
        """Stream the chunks of `paths` to index, one ChunkedFile per file as the service sends
        them. `lexical_only` chunks carry no embedding text and no references."""
        request = analysis_pb2.ChunkFilesRequest(
            workspace_root=root, paths=paths, include_references=include_references, lexical_only=lexical_only
        )
        timeout_s = self._indexing_timeout() + _CHUNK_SECONDS_PER_FILE * len(paths)
        try:
            for message in self._service.stream("ChunkFiles", request, timeout_s):
                yield convert.chunked_file_from_proto(message)
        except ServiceError as exc:
            raise self._indexing_error("ChunkFiles", exc, timeout_s) from None
        except UnknownEnumValue as exc:
            raise AnalysisFailed(
                f"analysis service at {self.address} sent a chunk this build cannot read: {exc}"
            ) from None

    def _indexing_timeout(self) -> float:
        if self._timeout_s is None:
            raise TypeError("AnalysisClient(timeout_s=...) is needed for scan and chunk_files")
        return self._timeout_s

    def _indexing_error(self, method: str, exc: ServiceError, timeout_s: float) -> Exception:
        """A failed indexing call in retrieval's terms."""
        if exc.kind == DEADLINE:
            # A long scan of a big workspace is not a dead service: say which stage ran out.
            return AnalysisTimedOut(self.address, _STAGE.get(method, method), timeout_s)
        if not exc.meaning.reached:
            return AnalysisUnavailable(self.address, f"{method}: unavailable ({exc})")
        return AnalysisFailed(f"analysis service {method} failed: {exc.status}: {exc}")

    def close(self) -> None:
        self._service.close()
