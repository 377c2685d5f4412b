"""Client of the retrieval service: sync (the only write a query makes happen), search and hubs
(reads), indexing and status."""

from __future__ import annotations

from collections.abc import Iterator

from codecompass.clients.errors import FAILED, ServiceError, mapped
from codecompass.common.telemetry import traced_channel
from codecompass.retrieval import convert
from codecompass.retrieval.state import (
    HubOutcome,
    HubQuery,
    IndexProgress,
    IndexStatusReport,
    SearchOutcome,
    SearchQuery,
    SyncOutcome,
)
from codecompass.v1 import retrieval_pb2, retrieval_pb2_grpc

SERVICE = "retrieval"


class RetrievalClient:
    def __init__(self, address: str) -> None:
        self.address = address
        self._channel = traced_channel(address)
        self._stub = retrieval_pb2_grpc.RetrievalServiceStub(self._channel)

    def search(self, query: SearchQuery, timeout_s: float) -> SearchOutcome:
        with mapped(SERVICE, self.address):
            reply = self._stub.Search(convert.search_query_to_proto(query), timeout=timeout_s)
        return convert.search_outcome_from_proto(reply)

    def sync(self, workspace_root: str, budget_ms: int, timeout_s: float) -> SyncOutcome:
        """Sync within `budget_ms` (0: until done, bounded by `timeout_s`); past the budget the
        sync goes on in the background and the outcome lists what is not written yet."""
        with mapped(SERVICE, self.address):
            reply = self._stub.Sync(convert.sync_request_to_proto(workspace_root, budget_ms), timeout=timeout_s)
        try:
            return convert.sync_outcome_from_proto(reply)
        except ValueError as exc:  # a newer server's freshness status
            raise ServiceError(SERVICE, self.address, FAILED, f"unreadable Sync answer: {exc}") from None

    def find_hubs(self, query: HubQuery, timeout_s: float) -> HubOutcome:
        with mapped(SERVICE, self.address):
            reply = self._stub.FindHubs(convert.hub_query_to_proto(query), timeout=timeout_s)
        return convert.hub_outcome_from_proto(reply)

    def index(self, workspace_root: str, wait_for_embeddings: bool, timeout_s: float, *,
              force: bool = False) -> Iterator[IndexProgress]:
        request = retrieval_pb2.IndexWorkspaceRequest(workspace_root=workspace_root,
                                                      wait_for_embeddings=wait_for_embeddings, force=force)
        with mapped(SERVICE, self.address):
            for reply in self._stub.IndexWorkspace(request, timeout=timeout_s):
                yield convert.progress_from_proto(reply)

    def status(self, workspace_root: str, timeout_s: float) -> IndexStatusReport:
        with mapped(SERVICE, self.address):
            reply = self._stub.GetIndexStatus(retrieval_pb2.GetIndexStatusRequest(workspace_root=workspace_root),
                                              timeout=timeout_s)
        return convert.status_from_proto(reply)

    def close(self) -> None:
        self._channel.close()
