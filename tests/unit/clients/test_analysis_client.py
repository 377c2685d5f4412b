"""The retrieval service's analysis client tells a slow stage from a dead service."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager

import grpc
import pytest

from codecompass.clients.analysis import AnalysisClient
from codecompass.common.chunks import Language
from codecompass.contracts.analysis.model import FileEntry
from codecompass.contracts.retrieval.errors import AnalysisTimedOut, AnalysisUnavailable
from codecompass.v1 import analysis_pb2, analysis_pb2_grpc, chunk_pb2


class SlowAnalysis(analysis_pb2_grpc.CodeAnalysisServiceServicer):
    def ScanWorkspace(self, request, context):
        time.sleep(1.0)
        return analysis_pb2.ScanWorkspaceResponse()


def test_a_scan_past_its_deadline_names_the_stage_not_a_dead_service() -> None:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    analysis_pb2_grpc.add_CodeAnalysisServiceServicer_to_server(SlowAnalysis(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    client = AnalysisClient(f"127.0.0.1:{port}", timeout_s=0.2)
    try:
        with pytest.raises(AnalysisTimedOut) as caught:
            client.scan("/ws", list, version=1)
    finally:
        client.close()
        server.stop(None)
    assert str(caught.value) == (
        f"the analysis service at 127.0.0.1:{port} did not finish scanning the workspace within 0.2 s "
        "(that stage's deadline; CODECOMPASS_RPC_TIMEOUT_S sets it)"
    )


def test_nothing_listening_is_unreachable(free_port: int) -> None:
    client = AnalysisClient(f"127.0.0.1:{free_port}", timeout_s=2)
    try:
        with pytest.raises(AnalysisUnavailable) as caught:
            client.scan("/ws", list, version=1)
    finally:
        client.close()
    assert str(caught.value).startswith(f"analysis service unreachable at 127.0.0.1:{free_port}: ScanWorkspace:")


@contextmanager
def _client_of(service: analysis_pb2_grpc.CodeAnalysisServiceServicer) -> Iterator[AnalysisClient]:
    """A client of `service` served on a free loopback port."""
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    analysis_pb2_grpc.add_CodeAnalysisServiceServicer_to_server(service, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    client = AnalysisClient(f"127.0.0.1:{port}", timeout_s=5)
    try:
        yield client
    finally:
        client.close()
        server.stop(None)


class OlderAnalysis(analysis_pb2_grpc.CodeAnalysisServiceServicer):
    """A service from before `previous_omitted`: it walks whatever catalog it is sent."""

    def __init__(self) -> None:
        self.requests: list[analysis_pb2.ScanWorkspaceRequest] = []

    def ScanWorkspace(self, request, context):
        self.requests.append(request)
        known = {entry.relative_path for entry in request.previous}
        entry = analysis_pb2.FileEntry(relative_path="a.ts", content_hash="h", language=chunk_pb2.LANGUAGE_TYPESCRIPT)
        return analysis_pb2.ScanWorkspaceResponse(
            files=[entry],
            added=[] if "a.ts" in known else ["a.ts"], watch_token="t2")


def test_a_service_that_walked_without_the_catalog_is_asked_again_with_it() -> None:
    # The catalog is left out only while the token holds; a walk without it would count every file
    # as added, so any answer but "unchanged" is asked for again with the catalog.
    service = OlderAnalysis()
    previous = (FileEntry(relative_path="a.ts", size_bytes=1, mtime_ns=1, content_hash="h",
                          language=Language.TYPESCRIPT),)
    with _client_of(service) as client:
        scan = client.scan("/ws", lambda: previous, version=1, unchanged_since="t1")
    assert [(r.previous_omitted, len(r.previous)) for r in service.requests] == [(True, 0), (False, 1)]
    assert scan.added == () and scan.watch_token == "t2"


class WatchingAnalysis(analysis_pb2_grpc.CodeAnalysisServiceServicer):
    """Answers a scan without the catalog from its folder watch: what was written since the token."""

    def __init__(self) -> None:
        self.requests: list[analysis_pb2.ScanWorkspaceRequest] = []

    def ScanWorkspace(self, request, context):
        self.requests.append(request)
        entry = analysis_pb2.FileEntry(relative_path="a.ts", content_hash="h2", language=chunk_pb2.LANGUAGE_TYPESCRIPT)
        return analysis_pb2.ScanWorkspaceResponse(files=[entry], changed=["a.ts"], watch_token="t2", since_token=True)


def test_an_answer_since_the_token_is_applied_without_sending_the_catalog() -> None:
    service = WatchingAnalysis()
    with _client_of(service) as client:
        scan = client.scan("/ws", lambda: pytest.fail("the catalog was built"), version=1, unchanged_since="t1")
    assert [(r.previous_omitted, len(r.previous)) for r in service.requests] == [(True, 0)]
    assert scan.changed == ("a.ts",) and scan.watch_token == "t2" and not scan.unchanged
