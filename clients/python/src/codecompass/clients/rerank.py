"""Client of the rerank service."""

from __future__ import annotations

from codecompass.clients.channel import Address, ServiceChannel
from codecompass.common import names
from codecompass.contracts.rerank import convert
from codecompass.contracts.rerank.model import RerankOutcome, RerankQuery
from codecompass.v1 import rerank_pb2_grpc

SERVICE = names.RERANK


class RerankClient:
    def __init__(self, address: Address) -> None:
        self._service = ServiceChannel(SERVICE, address, rerank_pb2_grpc.RerankServiceStub)

    @property
    def address(self) -> str:
        return self._service.address

    def rerank(self, query: RerankQuery, timeout_s: float) -> RerankOutcome:
        return convert.outcome_from_proto(self._service.call("Rerank", convert.query_to_proto(query), timeout_s))

    def close(self) -> None:
        self._service.close()
