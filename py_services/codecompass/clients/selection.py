"""Client of the selection service."""

from __future__ import annotations

from codecompass.clients.errors import mapped
from codecompass.common.telemetry import traced_channel
from codecompass.selection import convert
from codecompass.selection.model import SelectOutcome, SelectQuery
from codecompass.v1 import selection_pb2_grpc

SERVICE = "selection"


class SelectionClient:
    def __init__(self, address: str) -> None:
        self.address = address
        self._channel = traced_channel(address)
        self._stub = selection_pb2_grpc.SelectionServiceStub(self._channel)

    def select(self, query: SelectQuery, timeout_s: float) -> SelectOutcome:
        with mapped(SERVICE, self.address):
            reply = self._stub.Select(convert.query_to_proto(query), timeout=timeout_s)
        return convert.outcome_from_proto(reply)

    def close(self) -> None:
        self._channel.close()
