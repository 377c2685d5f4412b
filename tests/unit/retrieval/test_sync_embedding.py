"""Background embedding: a cold index answers lexically while vectors fill in, an embedding
service down or slow falls back to lexical search, a new model version moves the workspace to a
new index (and drops the old one once the new one is complete, while a searcher apart follows it
there), a restart resumes missing embeddings, and the versions a cold index leaves are cleaned.
The engine runs over the fake services of sync_harness.py."""

from __future__ import annotations

import time
from datetime import timedelta

import lancedb
import pytest
from tests.unit.retrieval.sync_harness import STATIC_OFF, Harness, _func, _seed, _wait_ready

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.embedding import EmbeddingClient
from codecompass.contracts.retrieval.model import IndexingStatus, IndexPhase, ResultCompleteness, SearchQuery
from codecompass.retrieval.engine import RetrievalEngine
from codecompass.retrieval.index.background_embedder import BackgroundEmbedder
from codecompass.retrieval.index.sync import SyncTuning
from codecompass.retrieval.index.workspace_writer import WorkspaceWriter
from codecompass.retrieval.location import index_uri
from codecompass.retrieval.search.searcher import IndexReader


def _tables(h: Harness) -> set[str]:
    """The chunk and source tables of the index (its catalog table aside)."""
    return set(lancedb.connect(h.store().uri).list_tables().tables) - {"catalog"}


def _eventually(check, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached in time")
        time.sleep(0.05)


@pytest.mark.parametrize("harness", [(SyncTuning(inline_embed_limit=0), STATIC_OFF)], indirect=True)
def test_cold_index_serves_lexically_while_embeddings_fill_in(harness: Harness) -> None:
    for i in range(12):
        harness.write(f"src/mod{i}.ts", _func(f"handler{i}", body=f"return input + '{i}';"))
    harness.write("tests/mod.test.ts", _func("testsHandler"))
    harness.embedding.delay_s = 1.5
    harness.index(wait=False)
    outcome = harness.search("handler3")
    assert outcome.results[0].chunk.name == "handler3"
    assert outcome.metadata.indexing_status == IndexingStatus.INDEXING
    assert outcome.metadata.result_completeness == ResultCompleteness.PARTIAL
    assert outcome.metadata.embedded_chunks < outcome.metadata.total_chunks == 13
    harness.embedding.delay_s = 0.0
    _wait_ready(harness)
    done = harness.search("handler3")
    assert done.metadata.result_completeness == ResultCompleteness.COMPLETE
    assert done.metadata.embedded_chunks == done.metadata.total_chunks == 13
    assert harness.embedding.documents[-1].startswith("[TypeScript] tests/mod.test.ts")


@pytest.mark.parametrize("harness", [SyncTuning(inline_embed_limit=0)], indirect=True)
def test_wait_for_embeddings_streams_embedding_progress(harness: Harness) -> None:
    _seed(harness)
    progress = harness.index(wait=True)
    embedding = [p for p in progress if p.phase == IndexPhase.EMBEDDING]
    assert embedding and embedding[-1].embeddings_done == embedding[-1].embeddings_total == 5
    assert harness.engine.status(str(harness.root)).indexing_status == IndexingStatus.READY


@pytest.mark.parametrize("harness", [(SyncTuning(), STATIC_OFF)], indirect=True)
def test_embedding_service_down_answers_lexically(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    harness.embedding_server.stop(None)
    harness.write("src/extra.ts", _func("parseHeaders"))
    sync, outcome = harness.synced_search("is the token signature long enough")
    meta = outcome.metadata
    assert outcome.results[0].chunk.name == "checkSignature"
    assert meta.semantic_fallback and meta.semantic_skipped_reason == "embedding_unavailable"
    assert sync.files_added == 1
    assert meta.result_completeness == ResultCompleteness.PARTIAL


@pytest.mark.parametrize("harness", [(SyncTuning(), STATIC_OFF)], indirect=True)
def test_a_slow_query_embedding_falls_back_to_lexical_within_the_deadline(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    engine = RetrievalEngine(
        harness.settings,
        AnalysisClient(harness.analysis_addr, timeout_s=10),
        EmbeddingClient(harness.embedding_addr, timeout_s=10, batch_size=16),
        query_embed_timeout_s=0.3,
    )
    harness.embedding.query_delay_s = 2.0
    try:
        started = time.perf_counter()
        outcome = engine.search(SearchQuery(workspace_root=str(harness.root), query="is the token signature long"))
        assert time.perf_counter() - started < 1.5
    finally:
        engine.close()
    assert outcome.metadata.semantic_fallback
    assert outcome.metadata.semantic_skipped_reason == "embedding_unavailable"
    assert outcome.results[0].chunk.name == "checkSignature"


@pytest.mark.parametrize("harness", [(SyncTuning(), STATIC_OFF)], indirect=True)
@pytest.mark.parametrize("heard_by", ["a search", "a restart"])
def test_a_new_embedding_model_version_moves_the_workspace_to_a_new_index(harness: Harness, heard_by: str) -> None:
    _seed(harness)
    harness.index()
    old_table = harness.store().table_name
    harness.embedding.model_version = "2"
    if heard_by == "a search":
        switched = harness.search("is the token signature long enough")
        assert switched.metadata.semantic_fallback
        assert switched.metadata.semantic_skipped_reason == "embedding_model_changed"
        assert switched.results[0].chunk.name == "checkSignature"
    else:
        # A writer running apart from its searchers (or one no search has reached since it
        # started) hears of the new model from no one else: its first sync asks the service.
        harness.engine.close()
        harness.engine = harness.new_engine()
    # The next sync moves the index to the new model.
    reindex = harness.sync().stats
    assert reindex.files_added == 3 and reindex.chunks_upserted == 5
    assert harness.store().table_name != old_table
    _wait_ready(harness)
    status = harness.engine.status(str(harness.root))
    assert (status.embedding_model_version, status.chunks, status.embedded_chunks) == ("2", 5, 5)


@pytest.mark.parametrize("harness", [(SyncTuning(), STATIC_OFF)], indirect=True)
def test_a_writer_restarted_on_the_same_model_keeps_its_index(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    old_table = harness.store().table_name
    harness.engine.close()
    harness.engine = harness.new_engine()
    again = harness.sync().stats
    assert again.files_added == 0 and again.chunks_upserted == 0
    assert harness.store().table_name == old_table


@pytest.mark.parametrize("harness", [SyncTuning(inline_embed_limit=0)], indirect=True)
def test_a_restart_resumes_missing_embeddings_without_a_new_sync(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed(harness)
    monkeypatch.setattr(BackgroundEmbedder, "WRITE_BATCH", 1)
    harness.embedding.delay_s = 0.3
    harness.index(wait=False)
    harness.engine.close()  # stops the embedder after its in-flight batch
    harness.embedding.delay_s = 0.0
    harness.engine = harness.new_engine()
    restarted = harness.engine.status(str(harness.root))
    assert restarted.chunks == 5 and restarted.embedded_chunks < 5
    _wait_ready(harness)
    assert harness.engine.status(str(harness.root)).embedded_chunks == 5
    assert len(harness.analysis.chunk_calls) == 1


@pytest.mark.parametrize("harness", [SyncTuning(inline_embed_limit=0)], indirect=True)
def test_the_old_model_s_table_is_dropped_once_the_new_one_is_complete_and_not_before(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    old_tables = _tables(harness)
    assert len(old_tables) == 2  # chunks and their sources
    harness.embedding.model_version = "2"
    harness.embedding.delay_s = 0.3
    harness.search("is the token signature long enough")  # notices the new model
    harness.sync()  # moves the index to the new model's table; its vectors fill in slowly
    status = harness.engine.status(str(harness.root))
    assert (status.embedding_model_version, status.indexing_status) == ("2", IndexingStatus.INDEXING)
    # The new table is still being embedded: the old one stays (a switch back would reuse it).
    assert old_tables < _tables(harness)
    harness.embedding.delay_s = 0.0
    _wait_ready(harness)
    _eventually(lambda: _tables(harness).isdisjoint(old_tables))
    assert len(_tables(harness)) == 2
    assert harness.search("checkSignature").results[0].chunk.name == "checkSignature"


@pytest.mark.parametrize("harness", [SyncTuning(inline_embed_limit=0)], indirect=True)
def test_a_searcher_apart_follows_the_index_to_the_new_model_s_table_after_the_old_one_is_dropped(
        harness: Harness) -> None:
    _seed(harness)
    harness.index()
    key = harness.engine.writer.workspace(str(harness.root)).key
    # A searcher process of its own, reading the old model's table.
    reader = IndexReader(key, index_uri(harness.settings, key), {}, refresh_s=0.0)
    _, before = reader.current()
    assert before is not None and before.model.model_version == "1"
    old_tables = _tables(harness)
    harness.embedding.model_version = "2"
    harness.engine.close()
    harness.engine = harness.new_engine()
    harness.sync()
    _wait_ready(harness)
    _eventually(lambda: _tables(harness).isdisjoint(old_tables))
    summary, after = reader.current()
    assert after is not None and after.model.model_version == "2" and summary.identity.model.model_version == "2"
    assert after.counts()[0] == 5


def test_versions_left_by_a_cold_index_are_cleaned_once_past_the_retention(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(WorkspaceWriter, "VERSION_RETENTION", timedelta(seconds=1))
    for i in range(20):
        harness.write(f"src/m{i}.ts", _func(f"fn{i}") + _func(f"other{i}"))
    harness.index()
    _wait_ready(harness)
    store = harness.store()

    def cleaned() -> bool:
        try:
            return store.version_count() == 1 and store.cleanup_due_at(timedelta(seconds=1)) is None
        except RuntimeError as exc:  # the listing raced the cleanup deleting a manifest: not yet
            assert "Not found" in str(exc), exc
            return False

    _eventually(cleaned)
    assert store.counts() == (40, 40)
    assert harness.search("fn7").results[0].chunk.name == "fn7"
