"""A closed client refuses calls with one error instead of reaching gRPC (whose C core can crash
on a call through a closed channel)."""

from __future__ import annotations

import pytest

from codecompass.clients.errors import FAILED, ServiceError
from codecompass.clients.retrieval import RetrievalClient
from codecompass.contracts.retrieval.model import SearchQuery


def test_a_call_after_close_is_refused(free_port: int) -> None:
    client = RetrievalClient(f"127.0.0.1:{free_port}")
    client.close()
    with pytest.raises(ServiceError) as refused:
        client.search(SearchQuery(workspace_root="/ws", query="q"), 5)
    assert refused.value.kind == FAILED and "the client was closed" in str(refused.value)
    with pytest.raises(ServiceError):
        list(client.index("/ws", wait_for_embeddings=False, timeout_s=5))
