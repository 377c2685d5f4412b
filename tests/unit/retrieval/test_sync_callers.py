"""Sync and search as their callers see them: a search never syncs and answers from the index as
it stands (also while a slow index runs), a Sync answers within its budget and the call's
deadline and says what it has not written yet, concurrent callers share the one running sync,
and bad roots and a missing analysis service map to clear errors, in process and over gRPC. The
engine runs over the fake services of sync_harness.py."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import grpc
import pytest
from tests.unit.retrieval.sync_harness import Harness, _func, _seed

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.embedding import EmbeddingClient
from codecompass.common.serving import ServiceSpec, start_server
from codecompass.contracts.retrieval.errors import InvalidWorkspace, WorkspaceNotFound
from codecompass.contracts.retrieval.model import FreshnessStatus, IndexingStatus, IndexPhase, SearchQuery
from codecompass.retrieval import servicer
from codecompass.retrieval.engine import RetrievalEngine
from codecompass.retrieval.index.sync import SyncTuning
from codecompass.v1 import retrieval_pb2, retrieval_pb2_grpc


def test_searches_run_while_a_slow_index_is_in_progress(harness: Harness) -> None:
    for i in range(30):
        harness.write(f"src/m{i}.ts", _func(f"worker{i}"))
    harness.analysis.chunk_delay_s = 0.05
    indexing = threading.Thread(target=harness.index, kwargs={"wait": False})
    indexing.start()
    errors: list[BaseException] = []

    def search() -> None:
        try:
            harness.search("worker")
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    while indexing.is_alive():
        threads = [threading.Thread(target=search) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        time.sleep(0.05)
    indexing.join()
    assert not errors
    assert harness.search("worker7").results[0].chunk.name == "worker7"


def test_invalid_roots_are_refused(harness: Harness) -> None:
    with pytest.raises(InvalidWorkspace):
        harness.engine.status("relative/path")
    with pytest.raises(InvalidWorkspace):
        harness.engine.status("")
    with pytest.raises(WorkspaceNotFound):
        harness.engine.status(str(harness.root / "missing"))
    (harness.root / "file.ts").write_text("")
    with pytest.raises(WorkspaceNotFound):
        harness.engine.status(str(harness.root / "file.ts"))


def test_analysis_service_down_is_unavailable(harness: Harness, tmp_path: Path) -> None:
    engine = RetrievalEngine(
        harness.settings,
        AnalysisClient("127.0.0.1:1", timeout_s=2),
        EmbeddingClient(harness.embedding_addr, timeout_s=2, batch_size=8),
    )
    try:
        synced = engine.sync(str(harness.root), None)
        assert synced.freshness_status == FreshnessStatus.FAILED and synced.finished
        assert "analysis service unreachable at 127.0.0.1:1" in synced.error
        assert engine.status(str(harness.root)).indexing_status == IndexingStatus.FAILED
        # A failed sync fails no search: it answers from the index as it stands (none here).
        outcome = engine.search(SearchQuery(workspace_root=str(harness.root), query="x"))
        assert outcome.results == () and outcome.metadata.indexing_status == IndexingStatus.FAILED
    finally:
        engine.close()


def test_grpc_service_maps_errors_and_serves_search(harness: Harness) -> None:
    _seed(harness)
    running = start_server(
        ServiceSpec(
            name="retrieval",
            register=lambda s: servicer.register(s, harness.engine),
            warmup=harness.engine.warmup,
        ),
    )
    running.wait_until_serving(10)
    channel = grpc.insecure_channel(running.address)
    stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
    try:
        for root, code in (
            ("rel/dir", grpc.StatusCode.INVALID_ARGUMENT),
            (str(harness.root / "nope"), grpc.StatusCode.NOT_FOUND),
        ):
            with pytest.raises(grpc.RpcError) as err:
                stub.Search(retrieval_pb2.SearchRequest(workspace_root=root, query="x"), timeout=10)
            assert err.value.code() == code
            assert "Traceback" not in err.value.details()
        with pytest.raises(grpc.RpcError) as err:
            stub.Search(
                retrieval_pb2.SearchRequest(
                    workspace_root=str(harness.root),
                    query="x",
                    filters=retrieval_pb2.SearchFilters(path_patterns=["src/[abc"]),
                ),
                timeout=10,
            )
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        responses = list(
            stub.IndexWorkspace(
                retrieval_pb2.IndexWorkspaceRequest(workspace_root=str(harness.root), wait_for_embeddings=True),
                timeout=30,
            )
        )
        assert responses[-1].phase == retrieval_pb2.INDEX_PHASE_DONE
        assert responses[-1].stats.files_added == 3
        response = stub.Search(
            retrieval_pb2.SearchRequest(workspace_root=str(harness.root), query="check token signature"), timeout=10
        )
        assert response.results[0].chunk.name in ("checkSignature", "validateToken")
        assert response.metadata.indexing_status == retrieval_pb2.INDEXING_STATUS_READY
        assert response.metadata.embedding_model_id == "hash-bow"
        status = stub.GetIndexStatus(retrieval_pb2.GetIndexStatusRequest(workspace_root=str(harness.root)), timeout=10)
        assert (status.files, status.chunks, status.embedded_chunks) == (3, 5, 5)
        assert status.index_bytes > 0
        # Sync over the wire: a bad root is refused like everywhere else; an edit is synced.
        with pytest.raises(grpc.RpcError) as err:
            stub.Sync(retrieval_pb2.SyncRequest(workspace_root="rel/dir"), timeout=10)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        harness.write("src/util/strings.ts", _func("slugify") + _func("capitalize") + _func("kebabCase"))
        synced = stub.Sync(retrieval_pb2.SyncRequest(workspace_root=str(harness.root), budget_ms=0), timeout=10)
        assert synced.finished and synced.freshness_status == retrieval_pb2.FRESHNESS_STATUS_FRESH
        assert (synced.stats.files_changed, synced.stats.chunks_upserted) == (1, 3) and not synced.pending_paths
    finally:
        channel.close()
        running.stop(0)


def test_a_search_never_syncs_and_answers_from_the_index_as_it_stands(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    calls = len(harness.analysis.chunk_calls)
    harness.write("src/util/strings.ts", _func("slugify", body="return input.toLowerCase();") + _func("capitalize"))
    before = harness.search("slugify").results[0].chunk
    assert before.name == "slugify" and "toLowerCase" not in before.full_source
    assert len(harness.analysis.chunk_calls) == calls
    assert harness.sync().stats.files_changed == 1
    assert "toLowerCase" in harness.search("slugify").results[0].chunk.full_source


def test_a_search_of_a_never_indexed_workspace_starts_no_indexing(harness: Harness) -> None:
    _seed(harness)
    outcome = harness.search("validate token")
    assert outcome.results == () and outcome.metadata.indexing_status == IndexingStatus.NOT_INDEXED
    time.sleep(0.2)
    assert harness.analysis.chunk_calls == []
    assert harness.engine.status(str(harness.root)).indexing_status == IndexingStatus.NOT_INDEXED


def test_sync_past_its_budget_lists_what_it_has_not_written_and_finishes_in_the_background(
    harness: Harness,
) -> None:
    _seed(harness)
    harness.index()
    harness.analysis.chunk_delay_s = 0.3
    harness.write("src/util/strings.ts", _func("slugify", body="return input.toLowerCase();") + _func("capitalize"))
    harness.write("src/http/router.ts", _func("routeRequest", "path: string", "string", "return path;"))
    (harness.root / "src/auth/token.ts").unlink()
    changed = ("src/auth/token.ts", "src/http/router.ts", "src/util/strings.ts")

    first = harness.sync(0.001)
    assert not first.finished and first.freshness_status == FreshnessStatus.SYNCING and first.stats is None
    # Once the running sync has diffed its scan, every Sync lists what it has not written yet.
    outcome = first
    deadline = time.monotonic() + 10
    while outcome.pending_paths != changed and time.monotonic() < deadline:
        outcome = harness.sync(0.01)
    assert outcome.pending_paths == changed and outcome.pending_count == 3
    assert outcome.freshness_status == FreshnessStatus.SYNCING
    # Meanwhile a search answers from the index as it stands.
    assert "toLowerCase" not in harness.search("slugify").results[0].chunk.full_source

    done = harness.sync()
    assert done.finished and done.freshness_status == FreshnessStatus.FRESH and done.pending_paths == ()
    assert "toLowerCase" in harness.search("slugify").results[0].chunk.full_source
    assert harness.engine.writer.workspace(str(harness.root)).pending() == ([], 0)
    # Every Sync of the burst shared the one sync that saw the edits: each file was chunked once.
    chunked = [p for call in harness.analysis.chunk_calls[1:] for p in call]
    assert sorted(chunked) == ["src/http/router.ts", "src/util/strings.ts"]


def test_sync_of_a_cold_workspace_past_its_budget_is_not_indexed_yet(harness: Harness) -> None:
    _seed(harness)
    harness.analysis.chunk_delay_s = 0.3
    outcome = harness.sync(0.001)
    assert not outcome.finished and outcome.freshness_status == FreshnessStatus.NOT_INDEXED
    assert harness.sync().freshness_status == FreshnessStatus.FRESH
    assert harness.search("validate token").results


@pytest.mark.parametrize("harness", [SyncTuning(lexical_first_min_files=2, files_per_call=1)], indirect=True)
def test_new_files_are_counted_apart_from_the_stale_ones(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    harness.analysis.chunk_delay_s = 0.2
    for i in range(3):
        harness.write(f"src/new{i}.ts", _func(f"fresh{i}"))
    harness.write("src/util/strings.ts", _func("slugify", body="return input.toLowerCase();") + _func("capitalize"))
    harness.sync(0.001)
    deadline = time.monotonic() + 10
    outcome = harness.sync(0.01)
    while outcome.pending_new_files == 0 and time.monotonic() < deadline:
        outcome = harness.sync(0.01)
    # Whatever the index holds of a new file was written from its current content (first by
    # the lexical pass): a search may miss it, but never shows it stale.
    assert outcome.pending_paths == ("src/util/strings.ts",) and outcome.pending_count == 1
    assert outcome.pending_new_files == 3
    done = harness.sync()
    assert (done.pending_paths, done.pending_new_files) == ((), 0)
    assert harness.search("fresh2").results[0].chunk.name == "fresh2"


def test_a_sync_that_would_outlast_the_call_s_deadline_answers_before_it(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    running = start_server(ServiceSpec(name="retrieval", register=lambda s: servicer.register(s, harness.engine)))
    running.wait_until_serving(10)
    channel = grpc.insecure_channel(running.address)
    stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
    try:
        harness.analysis.chunk_delay_s = 1.0
        harness.write("src/util/strings.ts", _func("slugify", body="return input.trim();") + _func("capitalize"))
        started = time.monotonic()
        # budget_ms 0 waits until done, but never past the caller's deadline: it answers first.
        synced = stub.Sync(retrieval_pb2.SyncRequest(workspace_root=str(harness.root), budget_ms=0), timeout=0.5)
        assert time.monotonic() - started < 0.5
        assert not synced.finished and synced.freshness_status == retrieval_pb2.FRESHNESS_STATUS_SYNCING
        with pytest.raises(grpc.RpcError) as err:
            stub.Sync(retrieval_pb2.SyncRequest(workspace_root="relative"), timeout=5)
        assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
        assert harness.sync().freshness_status == FreshnessStatus.FRESH
    finally:
        channel.close()
        running.stop(0)


def test_a_sync_that_cannot_wait_says_how_far_the_running_one_is(harness: Harness) -> None:
    _seed(harness)
    harness.analysis.chunk_delay_s = 0.3
    harness.sync(0.001)
    outcome = harness.sync(0.5)
    assert not outcome.finished
    assert outcome.phase == IndexPhase.CHUNKING and outcome.phase_files_total == 3
    assert outcome.chunks_written == len(harness.all_rows())
    assert harness.sync().phase is None


def test_an_index_that_arrives_during_another_sync_reports_what_that_one_wrote(harness: Harness) -> None:
    """The MCP server's background index (or a search's sync) is writing the workspace when
    `codecompass index` asks: the index follows that sync too and says what was added, not
    "0 added" from the sync queued after it, which finds everything done."""
    _seed(harness)
    harness.analysis.chunk_delay_s = 0.2
    assert not harness.sync(0.05).finished  # another caller's sync, now running
    progress = harness.index(wait=False)
    assert IndexPhase.CHUNKING in {p.phase for p in progress}
    stats = progress[-1].stats
    assert (stats.files_added, stats.chunks_upserted) == (3, 5)
