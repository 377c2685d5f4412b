"""kill -9 of the retrieval service in the middle of a cold index, then a restart, leaves
exactly the rows a clean index has: nothing lost, nothing duplicated."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest
from tests.fixtures.chain_workspace import write_chain_workspace

from codecompass.clients.retrieval import RetrievalClient
from codecompass.contracts.retrieval.model import IndexPhase, IndexProgress
from codecompass.retrieval.index.sync import SyncTuning

pytestmark = pytest.mark.slow

# Enough files that the chunking pass outlasts the progress stream's report interval on a quiet machine.
FILES = 800
FIRST_FLUSH = SyncTuning().first_flush_chunks


def _start(start_python_service, analysis: str, embedding: str, state: Path):
    process, address = start_python_service(
        "codecompass.retrieval",
        {"ANALYSIS_ADDR": analysis, "EMBEDDING_ADDR": embedding, "CODECOMPASS_STATE_DIR": str(state)},
    )
    return process, RetrievalClient(address)


def _index(client: RetrievalClient, root: Path) -> IndexProgress:
    return list(client.index(str(root), False, 300))[-1]


def _chunks(client: RetrievalClient, root: Path) -> int:
    return client.status(str(root), 60).chunks


@pytest.mark.badinput(case="kill -9 of retrieval during a cold index (gRPC)",
                      behaviour="after a restart: exactly the rows of a clean index")
def test_kill_9_during_indexing_then_restart_matches_a_clean_index(
    start_python_service, analysis_server: str, tmp_path: Path
) -> None:
    _, embedding = start_python_service("codecompass.embedding", {"CODECOMPASS_EMBEDDING_PROFILE": "minilm"})
    root = tmp_path / "ws"
    write_chain_workspace(root, FILES, classes=True)

    process, client = _start(start_python_service, analysis_server, embedding, tmp_path / "crash-state")
    killed_after = None
    for progress in client.index(str(root), False, 300):
        # Some chunks are committed (the first flush is done once the chunks found reach its
        # size), more files are still being chunked: the middle of a sync.
        if progress.phase == IndexPhase.CHUNKING and progress.chunks_done >= FIRST_FLUSH:
            killed_after = progress.files_done
            process.send_signal(signal.SIGKILL)
            break
    assert killed_after is not None and killed_after < FILES, "index finished before it could be interrupted"
    assert process.wait(timeout=30) == -signal.SIGKILL
    client.close()

    _, client = _start(start_python_service, analysis_server, embedding, tmp_path / "crash-state")
    resumed = _index(client, root)
    after_restart = _chunks(client, root)
    client.close()

    _, clean_client = _start(start_python_service, analysis_server, embedding, tmp_path / "clean-state")
    clean = _index(clean_client, root)
    clean_rows = _chunks(clean_client, root)
    clean_client.close()

    assert clean.stats.files_added == FILES
    assert clean_rows == clean.stats.chunks_upserted
    assert after_restart == clean_rows
    # The restart re-did only what the crash interrupted.
    assert resumed.stats.chunks_upserted < clean.stats.chunks_upserted
