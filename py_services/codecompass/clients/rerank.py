"""Client of the rerank service."""

from __future__ import annotations

from codecompass.clients.errors import mapped
from codecompass.common.telemetry import traced_channel
from codecompass.rerank import convert
from codecompass.rerank.model import RerankOutcome, RerankQuery
from codecompass.v1 import rerank_pb2_grpc

SERVICE = "rerank"


class RerankClient:
    def __init__(self, address: str) -> None:
        self.address = address
        self._channel = traced_channel(address)
        self._stub = rerank_pb2_grpc.RerankServiceStub(self._channel)

    def rerank(self, query: RerankQuery, timeout_s: float) -> RerankOutcome:
        with mapped(SERVICE, self.address):
            reply = self._stub.Rerank(convert.query_to_proto(query), timeout=timeout_s)
        return convert.outcome_from_proto(reply)

    def close(self) -> None:
        self._channel.close()
