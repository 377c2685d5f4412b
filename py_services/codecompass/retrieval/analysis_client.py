"""Client of the Node analysis service (CodeAnalysisService): scan a workspace, chunk files."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator

import grpc

from codecompass.common.chunk_convert import UnknownEnumValue
from codecompass.common.telemetry import traced_channel
from codecompass.retrieval import convert
from codecompass.retrieval.state import (
    AnalysisFailed,
    AnalysisTimedOut,
    AnalysisUnavailable,
    ChunkedFile,
    FileEntry,
    ScanResult,
)
from codecompass.v1 import analysis_pb2, analysis_pb2_grpc

# Chunking with one-hop references runs the type checker; the first call on a workspace also
# builds its Programs. The stream deadline therefore grows with the number of files asked for.
_CHUNK_SECONDS_PER_FILE = 0.5

# What each RPC is, in the words of a message about its deadline.
_STAGE = {"ScanWorkspace": "scanning the workspace", "ChunkFiles": "chunking files"}


class AnalysisClient:
    def __init__(self, addr: str, *, timeout_s: float) -> None:
        self.addr = addr
        self._timeout_s = timeout_s
        self._channel = traced_channel(addr)
        self._stub = analysis_pb2_grpc.CodeAnalysisServiceStub(self._channel)
        # Building the previous-catalog message costs ~5 ms per 1,000 files; an unchanged
        # catalog (the common case: a search with no edits) reuses the last one.
        self._scan_requests: dict[str, tuple[object, analysis_pb2.ScanWorkspaceRequest]] = {}
        self._cache_lock = threading.Lock()

    def close(self) -> None:
        self._channel.close()

    def scan(self, root: str, previous: Callable[[], Iterable[FileEntry]], *, version: object) -> ScanResult:
        """Scan `root` against a previous catalog; `previous` is only called when `version`
        differs from the one of the last scan of this root."""
        with self._cache_lock:
            cached = self._scan_requests.get(root)
        if cached is not None and cached[0] == version:
            request = cached[1]
        else:
            request = convert.scan_request_to_proto(root, previous())
            with self._cache_lock:
                self._scan_requests[root] = (version, request)
        try:
            response = self._stub.ScanWorkspace(request, timeout=self._timeout_s)
        except grpc.RpcError as exc:
            raise self._error("ScanWorkspace", exc, self._timeout_s) from None
        return convert.scan_result_from_proto(response)

    def chunk_files(
        self, root: str, paths: list[str], *, include_references: bool = True, lexical_only: bool = False
    ) -> Iterator[ChunkedFile]:
        """Stream the chunks of `paths`, one ChunkedFile per file as the service sends them.
        `lexical_only` chunks carry no embedding text and no references."""
        request = analysis_pb2.ChunkFilesRequest(
            workspace_root=root, paths=paths, include_references=include_references, lexical_only=lexical_only
        )
        timeout = self._timeout_s + _CHUNK_SECONDS_PER_FILE * len(paths)
        try:
            for message in self._stub.ChunkFiles(request, timeout=timeout):
                yield convert.chunked_file_from_proto(message)
        except grpc.RpcError as exc:
            raise self._error("ChunkFiles", exc, timeout) from None
        except UnknownEnumValue as exc:
            raise AnalysisFailed(
                f"analysis service at {self.addr} sent a chunk this build cannot read: {exc}"
            ) from None

    def _error(self, method: str, exc: grpc.RpcError, timeout_s: float) -> Exception:
        code = exc.code() if hasattr(exc, "code") else None
        detail = exc.details() if hasattr(exc, "details") else str(exc)
        if code is grpc.StatusCode.DEADLINE_EXCEEDED:
            # A long scan of a big workspace is not a dead service: say which stage ran out.
            return AnalysisTimedOut(self.addr, _STAGE.get(method, method), timeout_s)
        if code is grpc.StatusCode.UNAVAILABLE:
            return AnalysisUnavailable(self.addr, f"{method}: unavailable ({detail})")
        name = code.name if code is not None else "UNKNOWN"
        return AnalysisFailed(f"analysis service {method} failed: {name}: {detail}")
