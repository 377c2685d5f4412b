"""The quality workspaces under evaluation: where a query's workspace is, and indexing one through the
retrieval service."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from codecompass.clients.retrieval import RetrievalClient
from codecompass_dev.corpus.assemble import QUALITY_DIR, WORK_DIR
from codecompass_dev.evaluation.services import ServiceProcess

# Queries without a repository are the legacy single workspace.
LEGACY_WORKSPACE = WORK_DIR / "quality-ws"
INDEX_DEADLINE_S = 3600.0


def workspace_for(repo: str | None) -> Path:
    return LEGACY_WORKSPACE if repo is None else QUALITY_DIR / repo


def index_workspace(retrieval: ServiceProcess, workspace: Path) -> dict[str, Any]:
    """Sync the workspace's index and wait for every embedding.

    Always a sync rather than "skip when READY": a sync of an unchanged workspace only
    rescans (well under a second), and it keeps a reused --state-dir honest when the
    workspace was rebuilt since.
    """
    client = RetrievalClient(retrieval.address)
    try:
        t0 = time.perf_counter()
        last = None
        for event in client.index(str(workspace), True, INDEX_DEADLINE_S):
            last = event
        elapsed = time.perf_counter() - t0
        status = client.status(str(workspace), 30)
    finally:
        client.close()
    stats = last.stats if last is not None else None
    return {
        # The contract's name of the status (INDEXING_STATUS_READY), as results files record it.
        "status": f"INDEXING_STATUS_{status.indexing_status.name}",
        "files": status.files,
        "chunks": status.chunks,
        "embedded": status.embedded_chunks,
        "index_bytes": status.index_bytes,
        "index_format_version": status.index_format_version,
        "embedding_model": f"{status.embedding_model_id} {status.embedding_model_version}".strip(),
        "sync_seconds": round(elapsed, 1),
        "chunks_upserted_this_run": stats.chunks_upserted if stats else 0,
        "chunks_embedded_this_run": stats.chunks_embedded if stats else 0,
    }
