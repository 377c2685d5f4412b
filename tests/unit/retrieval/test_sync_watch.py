"""A sync of an unchanged workspace is answered by the analysis service's folder watch: the
writer sends the token of the last scan it applied in full, and an "unchanged" answer leaves the
index as it stands. Whenever that scan's result may not be what the index holds (forced,
interrupted, the model changed), no token goes and the workspace is walked. The watch itself
(real inotify watches, edits in the same tick as the request) is tested in the Node service's
own tests and end to end in tests/integration/test_retrieval_e2e.py."""

from __future__ import annotations

import threading

from tests.unit.retrieval.sync_harness import Harness, _func, _seed

from codecompass.contracts.retrieval.model import FreshnessStatus, IndexingStatus


def _watching(harness: Harness) -> None:
    harness.analysis.watch = True
    _seed(harness)
    harness.index()


def test_an_unchanged_workspace_is_answered_by_the_watch_and_stays_searchable(harness: Harness) -> None:
    _watching(harness)
    token = harness.analysis.unchanged_since[-1]
    assert token == "", "a first index has no token to send"
    for _ in range(3):
        stats, outcome = harness.synced_search("validate token")
        assert (stats.files_added, stats.files_changed, stats.chunks_upserted) == (0, 0, 0)
        assert outcome.results[0].chunk.name == "validateToken"
    assert harness.analysis.answered_unchanged == 3
    assert len(set(harness.analysis.unchanged_since[1:])) == 1, "the same token while nothing changes"


def test_an_edit_is_walked_and_indexed_and_the_next_sync_uses_the_new_token(harness: Harness) -> None:
    _watching(harness)
    harness.sync()
    harness.write("src/util/strings.ts", _func("slugify", body="return input.toLowerCase();") + _func("capitalize"))
    stats, outcome = harness.synced_search("lower case slugify")
    assert stats.files_changed == 1 and harness.analysis.answered_unchanged == 1
    assert "toLowerCase" in outcome.results[0].chunk.full_source
    harness.sync()
    assert harness.analysis.answered_unchanged == 2
    assert harness.analysis.unchanged_since[-1] != harness.analysis.unchanged_since[1], "the edit's scan's token"


def test_a_forced_index_or_a_model_change_walks_the_workspace(harness: Harness) -> None:
    _watching(harness)
    harness.sync()
    list(harness.engine.index(str(harness.root), wait_for_embeddings=True, force=True))
    assert harness.analysis.unchanged_since[-1] == "", "a forced index sends no token"
    harness.sync()
    answered = harness.analysis.answered_unchanged
    harness.engine.writer.workspace(str(harness.root)).mark_model_stale()
    assert harness.sync().freshness_status == FreshnessStatus.FRESH
    assert harness.analysis.unchanged_since[-1] == "" and harness.analysis.answered_unchanged == answered


def test_a_sync_that_leaves_files_pending_sends_no_token_next(harness: Harness) -> None:
    _watching(harness)
    writer = harness.engine.writer.workspace(str(harness.root))
    writer.catalog.mark_pending(["src/util/strings.ts"])
    harness.sync()
    assert harness.analysis.unchanged_since[-1] == "", "pending files need the listing to resume"
    assert not writer.catalog.pending()
    harness.sync()
    assert harness.analysis.answered_unchanged == 1


def test_a_sync_that_is_only_checking_leaves_a_complete_index_ready(harness: Harness) -> None:
    """The gateway searches while it syncs: a sync that has not (yet) found anything to write must
    not make the answer say the index is being rebuilt; one writing files it marked does."""
    _watching(harness)
    writer = harness.engine.writer.workspace(str(harness.root))
    release = threading.Event()
    scanning = threading.Event()
    real_scan = writer._analysis.scan

    def slow_scan(*args, **kwargs):
        scanning.set()
        release.wait(10)
        return real_scan(*args, **kwargs)

    writer._analysis.scan = slow_scan  # type: ignore[method-assign]
    try:
        syncing = threading.Thread(target=harness.sync)
        syncing.start()
        assert scanning.wait(10)
        assert harness.search("validate token").metadata.indexing_status == IndexingStatus.READY
        writer.catalog.mark_pending(["src/util/strings.ts"])
        assert harness.search("validate token").metadata.indexing_status == IndexingStatus.INDEXING
    finally:
        release.set()
        syncing.join(10)
        writer._analysis.scan = real_scan  # type: ignore[method-assign]
