"""The retrieval service's analysis client tells a slow stage from a dead service."""

from __future__ import annotations

import time
from concurrent import futures

import grpc
import pytest

from codecompass.clients.analysis import AnalysisClient
from codecompass.contracts.retrieval.errors import AnalysisTimedOut, AnalysisUnavailable
from codecompass.v1 import analysis_pb2, analysis_pb2_grpc


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
