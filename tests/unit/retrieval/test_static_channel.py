"""The static vector channel: code-static vectors written in the same pass as the chunks, so a
cold index answers semantically before the primary model has embedded anything, and a search
uses whichever vector a chunk has. Real LanceDB and the real committed code-static model; the
analysis and embedding services are sync_harness's in-process gRPC fakes (the primary model is
its hashed bag of words)."""

from __future__ import annotations

import dataclasses
import logging
import shutil
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file
from tests.unit.retrieval.sync_harness import STATIC_OFF, Harness, _func, _seed, _wait_ready

from codecompass.common.config import RetrievalSettings
from codecompass.contracts.retrieval.model import IndexingStatus, ResultCompleteness
from codecompass.embedding.static import DEFAULT_MODEL_DIR
from codecompass.retrieval import schema
from codecompass.retrieval.engine import RetrievalEngine
from codecompass.retrieval.index.sync import SyncTuning
from codecompass.retrieval.schema import STATIC_VECTOR_COLUMN
from codecompass.retrieval.search import chunk_reader

QUESTION = "is the token signature long enough"
# No word of it is in the seed's code: only vectors can find the answer.
WORDLESS_QUESTION = "verify authenticity of credentials"


def _rows(outcome) -> list[tuple]:
    return [(r.chunk.id, r.score, r.lexical_score, r.vector_similarity, r.semantic_rank, r.provenance)
            for r in outcome.results]


def _found(outcome) -> list[tuple]:
    """What the channels found, without the ranking's scores."""
    return [(r.chunk.id, r.lexical_score, r.vector_similarity, r.semantic_rank, r.provenance) for r in outcome.results]


def _with_settings(h: Harness, **retrieval) -> RetrievalEngine:
    """Another engine over the same workspace and state, with other retrieval settings."""
    h.engine.close()
    h.settings = dataclasses.replace(h.settings, retrieval=dataclasses.replace(h.settings.retrieval, **retrieval))
    h.engine = h.new_engine()
    return h.engine


@pytest.mark.parametrize("harness", [SyncTuning(inline_embed_limit=0)], indirect=True)
def test_a_cold_index_answers_a_question_by_static_vectors_before_any_primary_vector(harness: Harness) -> None:
    _seed(harness)
    # The primary model takes its time: nothing of it is in the index when the search runs.
    harness.embedding.delay_s = 3.0
    harness.index(wait=False)
    outcome = harness.search(WORDLESS_QUESTION, semantic_ratio=1.0)
    meta = outcome.metadata
    assert meta.embedded_chunks == 0 and meta.total_chunks == 5
    assert not meta.semantic_fallback and meta.semantic_skipped_reason == ""
    assert meta.vector_channels == ("primary", "static")
    assert (meta.primary_vector_chunks, meta.static_vector_chunks) == (0, 5)
    assert meta.static_model_id == "code-static" and meta.static_model_version.startswith("m2v-")
    # Every chunk was searchable by a vector, though the index is still embedding.
    assert meta.indexing_status == IndexingStatus.INDEXING
    assert meta.result_completeness == ResultCompleteness.COMPLETE
    assert len(outcome.results) == 5 and {r.vector_channel for r in outcome.results} == {"static"}
    assert outcome.results[0].chunk.name in ("validateToken", "checkSignature")
    status = harness.engine.status(str(harness.root))
    assert (status.chunks, status.embedded_chunks, status.static_vector_chunks) == (5, 0, 5)
    assert status.static_model_id == "code-static"


@pytest.mark.parametrize("harness", [SyncTuning(inline_embed_limit=0)], indirect=True)
def test_a_mixed_index_uses_whichever_vector_each_chunk_has(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    harness.embedding.delay_s = 3.0
    harness.write("src/auth/expiry.ts", _func("tokenExpired", "token: string", "boolean", "return token === '';"))
    assert harness.sync().stats.files_added == 1
    outcome = harness.search("token", semantic_ratio=1.0)
    meta = outcome.metadata
    assert (meta.total_chunks, meta.embedded_chunks) == (6, 5)
    assert meta.vector_channels == ("primary", "static")
    assert (meta.primary_vector_chunks, meta.static_vector_chunks) == (5, 1)
    channels = {r.chunk.name: r.vector_channel for r in outcome.results}
    assert channels.pop("tokenExpired") == "static"
    assert set(channels.values()) == {"primary"} and len(channels) == 5
    # Each channel is min-max scaled within itself: the static channel's only hit is its best.
    static_hit = next(r for r in outcome.results if r.vector_channel == "static")
    assert static_hit.semantic_rank == 1 and static_hit.fusion_score == pytest.approx(1.0)


@pytest.mark.badinput(case="search with the embedding service down (static channel on)",
                      behaviour="semantic search answers by static vectors for every chunk; the metadata says why")
def test_embedding_service_down_the_static_channel_answers_for_every_chunk(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    harness.embedding_server.stop(None)
    outcome = harness.search(WORDLESS_QUESTION, semantic_ratio=1.0)
    meta = outcome.metadata
    assert not meta.semantic_fallback and meta.semantic_skipped_reason == ""
    assert meta.primary_unavailable_reason == "embedding_unavailable"
    assert meta.vector_channels == ("static",)
    assert (meta.primary_vector_chunks, meta.static_vector_chunks, meta.total_chunks) == (0, 5, 5)
    assert len(outcome.results) == 5 and {r.vector_channel for r in outcome.results} == {"static"}
    hybrid = harness.search(QUESTION)
    assert hybrid.results[0].chunk.name == "checkSignature"
    assert hybrid.metadata.semantic_ratio_used > 0 and hybrid.metadata.vector_channels == ("static",)


def test_with_every_primary_vector_present_results_are_those_of_the_primary_channel_alone(
    harness: Harness, tmp_path: Path
) -> None:
    _seed(harness)
    harness.index()
    queries = [QUESTION, WORDLESS_QUESTION, "route a request", "slugify", "capitalize a string"]
    with_static = [harness.search(q) for q in queries]
    assert all(o.metadata.vector_channels in (("primary",), ()) for o in with_static)
    assert harness.engine.status(str(harness.root)).static_vector_chunks == 5
    harness.engine.close()
    harness.settings = dataclasses.replace(harness.settings, state_dir=tmp_path / "state-without-static",
                                           retrieval=RetrievalSettings(compact_every_n_syncs=3, static_channel=False))
    harness.engine = harness.new_engine()
    harness.index()
    without = [harness.search(q) for q in queries]
    # The same candidates from the same channels; the learned ranker also reads each candidate's
    # static cosine, so its scores (and only they) may differ.
    assert [sorted(_found(o)) for o in with_static] == [sorted(_found(o)) for o in without]


@pytest.mark.parametrize("harness", [(SyncTuning(), STATIC_OFF)], indirect=True)
def test_static_channel_off_writes_no_static_vectors_and_searches_the_primary_channel_only(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    assert STATIC_VECTOR_COLUMN not in harness.store()._table.schema.names
    status = harness.engine.status(str(harness.root))
    assert (status.static_vector_chunks, status.static_model_id) == (0, "")
    meta = harness.search(WORDLESS_QUESTION, semantic_ratio=1.0).metadata
    assert meta.vector_channels == ("primary",) and meta.static_vector_chunks == 0 and meta.static_model_id == ""


def test_turning_the_static_channel_on_rebuilds_the_index_with_static_vectors(harness: Harness) -> None:
    _with_settings(harness, static_channel=False)
    _seed(harness)
    harness.index()
    old_table = harness.store().table_name
    _with_settings(harness, static_channel=True)
    stats = harness.sync().stats
    assert (stats.files_added, stats.chunks_upserted) == (3, 5)
    assert harness.store().table_name != old_table
    assert harness.engine.status(str(harness.root)).static_vector_chunks == 5


def test_a_retrained_static_model_is_a_new_index(harness: Harness, tmp_path: Path) -> None:
    first, second = tmp_path / "static-a", tmp_path / "static-b"
    shutil.copytree(DEFAULT_MODEL_DIR, first)
    shutil.copytree(DEFAULT_MODEL_DIR, second)
    weights = load_file(second / "model.safetensors")
    save_file({k: (v * np.float32(0.5)).astype(v.dtype) for k, v in weights.items()}, second / "model.safetensors")
    _with_settings(harness, static_model_dir=first)
    _seed(harness)
    harness.index()
    old = harness.store()
    _with_settings(harness, static_model_dir=second)
    assert harness.sync().stats.files_added == 3
    new = harness.store()
    assert new.table_name != old.table_name
    assert new.static.model_version != old.static.model_version
    assert harness.engine.status(str(harness.root)).static_vector_chunks == 5


def test_an_index_of_the_previous_format_is_rebuilt_and_the_log_says_so(
    harness: Harness, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    with monkeypatch.context() as old_format:
        old_format.setattr(schema, "INDEX_FORMAT_VERSION", "3")
        old_format.setattr(chunk_reader, "INDEX_FORMAT_VERSION", "3")
        _seed(harness)
        harness.index()
    with caplog.at_level(logging.WARNING):
        _with_settings(harness)
        assert harness.sync().stats.files_added == 3
    rebuilt = f"written in another index format; it is rebuilt in format {schema.INDEX_FORMAT_VERSION}"
    assert any(rebuilt in r.getMessage() for r in caplog.records)
    assert harness.engine.status(str(harness.root)).static_vector_chunks == 5


@pytest.mark.badinput(case="the static model cannot be loaded",
                      behaviour="indexes lexically and with the primary model; one log line names the folder")
def test_a_static_model_that_cannot_load_leaves_lexical_and_primary_indexing(
    harness: Harness, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    missing = tmp_path / "no-model-here"
    with caplog.at_level(logging.WARNING):
        _with_settings(harness, static_model_dir=missing)
        _seed(harness)
        harness.index()
    lines = [r.getMessage() for r in caplog.records if "static vector channel off" in r.getMessage()]
    assert len(lines) == 1 and str(missing) in lines[0]
    _wait_ready(harness)
    status = harness.engine.status(str(harness.root))
    assert (status.chunks, status.embedded_chunks, status.static_vector_chunks) == (5, 5, 0)
    assert STATIC_VECTOR_COLUMN not in harness.store()._table.schema.names
    assert harness.search(QUESTION).results[0].chunk.name == "checkSignature"


# A cold index's five chunks go to the background pass; an edit's one chunk would be embedded inline.
@pytest.mark.parametrize("harness", [SyncTuning(inline_embed_limit=1)], indirect=True)
def test_an_edit_during_the_background_pass_is_written_at_once_with_its_static_vector(harness: Harness) -> None:
    _seed(harness)
    # The primary model is slow: the cold index's background pass is still running at the edit.
    harness.embedding.delay_s = 2.0
    harness.index(wait=False)
    assert harness.engine.writer.workspace(str(harness.root)).embedder.running
    harness.write("src/auth/expiry.ts", _func("tokenExpired", "token: string", "boolean", "return token === '';"))
    synced = harness.sync()
    # Not embedded inline behind the background pass's requests: the static vector covers it.
    assert synced.stats.files_added == 1 and synced.stats.chunks_embedded == 0
    assert synced.stats.duration_ms < 1000
    outcome = harness.search("token expired", semantic_ratio=1.0)
    assert {r.chunk.name: r.vector_channel for r in outcome.results}["tokenExpired"] == "static"
    harness.embedding.delay_s = 0.0
    _wait_ready(harness)
    assert harness.store().counts() == (6, 6)
