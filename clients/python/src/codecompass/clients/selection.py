"""Client of the selection service."""

from __future__ import annotations

from codecompass.clients.channel import Address, ServiceChannel
from codecompass.common import names
from codecompass.contracts.selection import convert
from codecompass.contracts.selection.model import SelectOutcome, SelectQuery
from codecompass.v1 import selection_pb2_grpc

SERVICE = names.SELECTION


class SelectionClient:
    def __init__(self, address: Address) -> None:
        self._service = ServiceChannel(SERVICE, address, selection_pb2_grpc.SelectionServiceStub)

    @property
    def address(self) -> str:
        return self._service.address

    def select(self, query: SelectQuery, timeout_s: float) -> SelectOutcome:
        return convert.outcome_from_proto(self._service.call("Select", convert.query_to_proto(query), timeout_s))

    def close(self) -> None:
        self._service.close()
