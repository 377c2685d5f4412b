"""A workspace the retrieval service refuses to index fails the search with the reason, rather
than answering "not indexed" (issue 10: `search /` said "index failed" with no reason)."""

from __future__ import annotations

import pytest
from tests.unit.gateway.test_pipeline_freshness import _pipeline, _request

from codecompass.clients.errors import INVALID, ServiceError

REFUSAL = ("refusing to index /: it is the filesystem root, not a project; index a project folder, "
           "or run `codecompass index --force /` to index it anyway")


def test_a_refused_sync_fails_the_search_with_the_reason() -> None:
    pipeline, fake = _pipeline(ServiceError("retrieval", "127.0.0.1:1", INVALID, REFUSAL))
    with pytest.raises(ServiceError) as refused:
        pipeline.run(_request())
    assert refused.value.user_message() == f"retrieval: {REFUSAL}"
    # The search that started with the sync (a read: it creates nothing) is not what answers.
    assert "sync" in [c[0] for c in fake.calls]
