"""The retry and deadline policy is a gRPC service config the clients load (issue 31 §4): over real gRPC
servers, a call the server answers UNAVAILABLE is tried again by gRPC itself, a server that pushes
back (its dependency is down) is not asked again, and a call in flight while its server restarts on
the same port is answered within its deadline. The unit side (the options, every RPC covered):
tests/unit/clients/test_service_config.py."""

from __future__ import annotations

import grpc
import pytest

from codecompass.clients.errors import UNAVAILABLE, ServiceError
from codecompass.clients.rerank import RerankClient
from codecompass.common.config import RerankSettings
from codecompass.common.serving import NO_RETRY, RunningServer, ServiceSpec, start_server
from codecompass.contracts.rerank.model import Candidate, RerankQuery
from codecompass.rerank.engine import RerankEngine
from codecompass.rerank.servicer import RerankServicer
from codecompass.v1 import rerank_pb2_grpc

QUERY = RerankQuery("q", (Candidate("a", "text"),))


class Unavailable(rerank_pb2_grpc.RerankServiceServicer):
    """Answers UNAVAILABLE to the first `failures` attempts (with pushback, if asked), then reranks."""

    def __init__(self, failures: int, pushback: bool = False) -> None:
        self.attempts = 0
        self._failures = failures
        self._pushback = pushback
        self._real = RerankServicer(RerankEngine(RerankSettings()))

    def Rerank(self, request, context):
        self.attempts += 1
        if self.attempts <= self._failures:
            if self._pushback:
                context.set_trailing_metadata(NO_RETRY)
            context.abort(grpc.StatusCode.UNAVAILABLE, "warming up")
        return self._real.Rerank(request, context)


def _serve(servicer: rerank_pb2_grpc.RerankServiceServicer, port: int = 0) -> RunningServer:
    def add(server: grpc.Server) -> list[str]:
        rerank_pb2_grpc.add_RerankServiceServicer_to_server(servicer, server)
        return ["codecompass.v1.RerankService"]

    return start_server(ServiceSpec("rerank", add), port=port, warmup_in_background=False)


def test_a_call_answered_unavailable_is_tried_again_by_the_service_config() -> None:
    servicer = Unavailable(failures=2)
    running = _serve(servicer)
    client = RerankClient(running.address)
    try:
        assert client.rerank(QUERY, timeout_s=10).provider == "local"
    finally:
        client.close()
        running.stop(0)
    assert servicer.attempts == 3


def test_a_server_that_pushes_back_is_not_asked_again() -> None:
    servicer = Unavailable(failures=5, pushback=True)
    running = _serve(servicer)
    client = RerankClient(running.address)
    try:
        with pytest.raises(ServiceError) as failed:
            client.rerank(QUERY, timeout_s=10)
    finally:
        client.close()
        running.stop(0)
    assert (failed.value.kind, servicer.attempts) == (UNAVAILABLE, 1)
