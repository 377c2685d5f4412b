"""Client of the retrieval service: sync (the only write a query makes happen), search and hubs
(reads), indexing and status."""

from __future__ import annotations

from collections.abc import Iterator

from codecompass.clients.channel import Address, ServiceChannel
from codecompass.clients.errors import FAILED, ServiceError
from codecompass.common import names
from codecompass.contracts.retrieval import convert
from codecompass.contracts.retrieval.model import (
    HubOutcome,
    HubQuery,
    IndexProgress,
    IndexStatusReport,
    IndexSummary,
    SearchOutcome,
    SearchQuery,
    SyncOutcome,
)
from codecompass.v1 import retrieval_pb2, retrieval_pb2_grpc

SERVICE = names.RETRIEVAL


class RetrievalClient:
    def __init__(self, address: Address) -> None:
        self._service = ServiceChannel(SERVICE, address, retrieval_pb2_grpc.RetrievalServiceStub)

    @property
    def address(self) -> str:
        return self._service.address

    def search(self, query: SearchQuery, timeout_s: float) -> SearchOutcome:
        reply = self._service.call("Search", convert.search_query_to_proto(query), timeout_s)
        return convert.search_outcome_from_proto(reply)

    def sync(self, workspace_root: str, budget_ms: int, timeout_s: float) -> SyncOutcome:
        """Sync within `budget_ms` (0: until done, bounded by `timeout_s`); past the budget the
        sync goes on in the background and the outcome lists what is not written yet."""
        reply = self._service.call("Sync", convert.sync_request_to_proto(workspace_root, budget_ms), timeout_s)
        try:
            return convert.sync_outcome_from_proto(reply)
        except ValueError as exc:  # a newer server's freshness status
            raise ServiceError(SERVICE, self.address, FAILED, f"unreadable Sync answer: {exc}") from None

    def find_hubs(self, query: HubQuery, timeout_s: float) -> HubOutcome:
        reply = self._service.call("FindHubs", convert.hub_query_to_proto(query), timeout_s)
        return convert.hub_outcome_from_proto(reply)

    def index(self, workspace_root: str, wait_for_embeddings: bool, timeout_s: float, *,
              force: bool = False, workers: int = 0) -> Iterator[IndexProgress]:
        request = retrieval_pb2.IndexWorkspaceRequest(workspace_root=workspace_root,
                                                      wait_for_embeddings=wait_for_embeddings, force=force,
                                                      workers=workers)
        for reply in self._service.stream("IndexWorkspace", request, timeout_s):
            yield convert.progress_from_proto(reply)

    def status(self, workspace_root: str, timeout_s: float, *, workspace_id: str = "") -> IndexStatusReport:
        request = retrieval_pb2.GetIndexStatusRequest(workspace_root=workspace_root, workspace_id=workspace_id)
        return convert.status_from_proto(self._service.call("GetIndexStatus", request, timeout_s))

    def list_indexes(self, timeout_s: float) -> list[IndexSummary]:
        reply = self._service.call("ListIndexes", retrieval_pb2.ListIndexesRequest(), timeout_s)
        return convert.indexes_from_proto(reply)

    def drop_index(self, timeout_s: float, *, workspace_root: str = "", workspace_id: str = "") -> tuple[str, int]:
        """(workspace id, bytes freed) of the index the writer deleted."""
        request = retrieval_pb2.DropIndexRequest(workspace_root=workspace_root, workspace_id=workspace_id)
        reply = self._service.call("DropIndex", request, timeout_s)
        return reply.workspace_id, reply.bytes_freed

    def close(self) -> None:
        self._service.close()
