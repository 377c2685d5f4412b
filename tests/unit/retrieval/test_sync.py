"""What a sync writes: a first index, incremental edits, moves and removals, a signature change
that re-embeds its callers, skipped files, the lexical-first pass of a large cold index and its
order, files edited under a sync, a crash or shutdown mid-sync and the run that resumes it, and the
progress an index reports. The engine runs over the fake services of sync_harness.py."""

from __future__ import annotations

import time

import lancedb
import pytest
from tests.unit.retrieval.sync_harness import Harness, _func, _seed, _wait_ready, chunk_id, parse_functions

from codecompass.contracts.retrieval.model import IndexingStatus, IndexPhase, ResultCompleteness
from codecompass.retrieval import catalog as catalog_module
from codecompass.retrieval.catalog import read_summary
from codecompass.retrieval.index.chunk_writer import ChunkWriter
from codecompass.retrieval.index.sync import SyncInterrupted, SyncTuning
from codecompass.retrieval.search.searcher import IndexReader


class SimulatedKill(BaseException):
    """Like a kill, nothing in the service catches it as an ordinary error."""


def test_first_index_writes_and_embeds_every_chunk(harness: Harness) -> None:
    _seed(harness)
    expected = sum(len(parse_functions(p.read_text())) for p in harness.root.rglob("*.ts"))
    progress = harness.index()
    assert progress[0].phase == IndexPhase.SCANNING
    assert progress[-1].phase == IndexPhase.DONE
    stats = progress[-1].stats
    assert (stats.files_added, stats.chunks_upserted, stats.chunks_deleted) == (3, expected, 0)
    assert stats.chunks_embedded == expected
    status = harness.engine.status(str(harness.root))
    assert (status.indexing_status, status.files, status.chunks, status.embedded_chunks) == (
        IndexingStatus.READY,
        3,
        expected,
        expected,
    )
    assert status.embedding_model_id == "hash-bow"
    assert sorted(harness.all_rows()) == sorted({c for c in harness.all_rows()})


def test_unchanged_workspace_sync_does_no_work(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    calls, embedded = len(harness.analysis.chunk_calls), len(harness.embedding.documents)
    sync, outcome = harness.synced_search("validate token")
    assert (sync.files_added, sync.files_changed, sync.files_removed, sync.chunks_upserted) == (0, 0, 0, 0)
    assert len(harness.analysis.chunk_calls) == calls
    assert len(harness.embedding.documents) == embedded
    assert outcome.results[0].chunk.name == "validateToken"
    assert outcome.metadata.indexing_status == IndexingStatus.READY
    assert outcome.metadata.result_completeness == ResultCompleteness.COMPLETE


def test_edit_rechunks_only_that_file_and_embeds_only_the_changed_chunk(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    harness.write(
        "src/util/strings.ts",
        _func("slugify", body="return input.toLowerCase().replace(' ', '-');") + _func("capitalize"),
    )
    before = len(harness.embedding.documents)
    sync, outcome = harness.synced_search("lower case dash replace")
    assert harness.analysis.chunk_calls[-1] == ["src/util/strings.ts"]
    # The unchanged chunk keeps its vector; the changed one is written with its static vector, and
    # the primary model embeds it in the background, not inside the sync the search waits for.
    assert (sync.files_changed, sync.chunks_upserted, sync.chunks_embedded, sync.embeddings_reused) == (1, 2, 0, 1)
    assert outcome.results[0].chunk.name == "slugify"
    assert "toLowerCase" in outcome.results[0].chunk.full_source
    _wait_ready(harness)
    assert len(harness.embedding.documents) == before + 1
    assert "toLowerCase" in harness.embedding.documents[-1]
    assert harness.store().counts() == (5, 5)
    assert harness.search("lower case dash replace").results[0].chunk.name == "slugify"


def test_a_search_s_time_counts_moving_to_the_version_an_edit_wrote(harness: Harness,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """After an edit the searcher reads the catalog's summary again and reopens the chunk table
    before it searches: the caller waits for that, so search_ms says so."""
    _seed(harness)
    harness.index()
    harness.search("title case")  # the first search opens the index: its time is not the point here
    current = IndexReader.current

    def slow(self: IndexReader):
        time.sleep(0.2)
        return current(self)

    monkeypatch.setattr(IndexReader, "current", slow)
    harness.write("src/util/strings.ts", _func("slugify") + _func("titleCase"))
    harness.sync()
    outcome = harness.search("title case")
    assert outcome.results[0].chunk.name == "titleCase"
    assert outcome.metadata.search_ms >= 200


def test_removed_function_and_removed_file_leave_the_index(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    harness.write("src/util/strings.ts", _func("slugify"))
    sync = harness.sync().stats
    assert (sync.files_changed, sync.chunks_deleted) == (1, 1)
    assert chunk_id("src/util/strings.ts", "capitalize") not in harness.all_rows()

    (harness.root / "src/auth/token.ts").unlink()
    sync, outcome = harness.synced_search("validate token signature")
    assert (sync.files_removed, sync.chunks_deleted) == (1, 2)
    assert all(r.chunk.relative_path != "src/auth/token.ts" for r in outcome.results)
    assert harness.engine.status(str(harness.root)).files == 2


def test_moving_a_file_reuses_every_vector(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    before = len(harness.embedding.documents)
    (harness.root / "src/util/strings.ts").rename(harness.root / "src/strings.ts")
    sync = harness.sync().stats
    assert (sync.files_added, sync.files_removed, sync.chunks_upserted, sync.chunks_deleted) == (1, 1, 2, 2)
    assert (sync.chunks_embedded, sync.embeddings_reused) == (0, 2)
    assert len(harness.embedding.documents) == before
    status = harness.engine.status(str(harness.root))
    assert (status.chunks, status.embedded_chunks, status.indexing_status) == (5, 5, IndexingStatus.READY)


def test_code_moved_between_indexed_files_in_one_sync_keeps_its_vector(harness: Harness) -> None:
    # An edit's unchanged chunks keep their vectors from the rows they replace (no lookup by
    # snippet across the table); a function moved from one indexed file to another in the same
    # sync finds its old row among the rows that sync deletes.
    _seed(harness)
    harness.index()
    before = len(harness.embedding.documents)
    harness.write("src/util/strings.ts", _func("slugify"))
    harness.write("src/http/router.ts", _func("routeRequest", "path: string", "string",
                                              "return validateToken(path) ? path : '';") + _func("capitalize"))
    sync = harness.sync().stats
    assert (sync.files_changed, sync.chunks_upserted, sync.chunks_deleted) == (2, 3, 1)
    assert (sync.chunks_embedded, sync.embeddings_reused) == (0, 3)
    _wait_ready(harness)
    assert len(harness.embedding.documents) == before
    assert harness.store().counts() == (5, 5)


def test_signature_change_re_embeds_the_chunks_that_quote_it(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    router_id = chunk_id("src/http/router.ts", "routeRequest")
    harness.write(
        "src/auth/token.ts",
        _func("validateToken", "token: string, audience: string", "boolean", "return checkSignature(token);")
        + _func("checkSignature", "token: string", "boolean", "return token.length > 0;"),
    )
    before = len(harness.embedding.documents)
    sync = harness.sync().stats
    assert sync.cascade_reembedded == 1
    assert ["src/http/router.ts"] in harness.analysis.chunk_calls
    (router,) = harness.store().get_chunks([router_id])
    assert "audience: string" in router.embedding_text
    _wait_ready(harness)  # the background embedder writes the primary vectors of an edit
    new_docs = harness.embedding.documents[before:]
    assert any("audience" in d and "routeRequest" in d for d in new_docs)
    # An implementation-only change of a referenced function does not cascade.
    harness.write(
        "src/auth/token.ts",
        _func(
            "validateToken",
            "token: string, audience: string",
            "boolean",
            "return checkSignature(token) && audience !== '';",
        )
        + _func("checkSignature", "token: string", "boolean", "return token.length > 0;"),
    )
    assert harness.sync().stats.cascade_reembedded == 0


def test_skipped_files_are_counted_and_lose_their_chunks(harness: Harness) -> None:
    _seed(harness)
    harness.write("src/bundle.min.ts", "var a=1;" * 100)
    stats = harness.index()[-1].stats
    assert stats.files_skipped == 1
    assert not any(r.startswith("src/bundle")
                   for r in harness.engine.writer.workspace(str(harness.root)).catalog.entries())
    harness.write("src/util/strings.ts", "var b=2;" * 100)
    sync = harness.sync().stats
    assert (sync.files_skipped, sync.chunks_deleted) == (2, 2)
    assert all(r.chunk.relative_path != "src/util/strings.ts" for r in harness.search("slugify").results)


def test_crash_between_table_write_and_catalog_commit_neither_loses_nor_duplicates(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    _seed(harness)
    harness.index()
    clean = sorted(harness.all_rows())
    harness.write("src/util/strings.ts", _func("slugify") + _func("capitalize") + _func("truncate"))
    harness.write("src/new.ts", _func("fresh"))

    def crash(*args, **kwargs):
        raise SimulatedKill("killed between the table write and the catalog commit")

    monkeypatch.setattr(catalog_module.Catalog, "commit", crash)
    with pytest.raises(SimulatedKill):
        harness.sync()
    monkeypatch.undo()
    # While "down", the user deletes a function the crashed sync already wrote.
    harness.write("src/util/strings.ts", _func("slugify") + _func("capitalize"))
    harness.engine.close()
    harness.engine = harness.new_engine()
    stats = harness.index()[-1].stats
    assert stats.chunks_deleted == 1  # truncate, known only to the table
    rows = harness.all_rows()
    assert len(rows) == len(set(rows))
    assert sorted(rows) == sorted([*clean, chunk_id("src/new.ts", "fresh")])
    assert harness.engine.writer.workspace(str(harness.root)).catalog.pending() == frozenset()


def test_no_row_is_written_before_its_file_s_pending_mark_is_committed(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Crash safety's first rule (catalog.py): a write waits for its files' marks however slowly
    # they commit, or a crash in between would leave rows no catalog knows of.
    _seed(harness)
    harness.index()
    harness.write("src/util/strings.ts", _func("slugify") + _func("truncate"))
    mark_pending = catalog_module.Catalog.mark_pending

    def slow(self, paths) -> None:
        time.sleep(0.3)
        mark_pending(self, paths)

    seen: list[frozenset[str]] = []
    apply_changes = ChunkWriter.apply_changes

    def observed(self, **kwargs):
        seen.append(read_summary(lancedb.connect(self.uri).open_table("catalog")).pending)
        return apply_changes(self, **kwargs)

    monkeypatch.setattr(catalog_module.Catalog, "mark_pending", slow)
    monkeypatch.setattr(ChunkWriter, "apply_changes", observed)
    assert harness.sync().stats.chunks_upserted == 2
    assert seen == [frozenset({"src/util/strings.ts"})]
    assert harness.engine.writer.workspace(str(harness.root)).catalog.pending() == frozenset()


@pytest.mark.parametrize("harness", [SyncTuning(files_per_call=2, first_flush_chunks=2)], indirect=True)
def test_shutdown_stops_a_long_sync_at_a_batch_boundary_and_the_next_run_resumes(harness: Harness) -> None:
    for i in range(20):
        harness.write(f"src/m{i}.ts", _func(f"job{i}"))
    harness.analysis.chunk_delay_s = 0.05
    ws = harness.engine.writer.workspace(str(harness.root))
    job = ws.request_sync()
    while not harness.analysis.chunk_calls:
        time.sleep(0.01)
    harness.engine.close()
    with pytest.raises(SyncInterrupted):
        job.future.result(timeout=10)
    chunked_before_restart = sum(len(c) for c in harness.analysis.chunk_calls)
    assert chunked_before_restart < 20

    harness.analysis.chunk_delay_s = 0.0
    harness.engine = harness.new_engine()
    stats = harness.index()[-1].stats
    assert stats.files_added + chunked_before_restart >= 20
    rows = harness.all_rows()
    assert sorted(rows) == sorted(chunk_id(f"src/m{i}.ts", f"job{i}") for i in range(20))


@pytest.mark.parametrize("harness", [SyncTuning(lexical_first_min_files=2)], indirect=True)
def test_large_cold_sync_writes_syntactic_chunks_first_then_embeds_only_full_text(harness: Harness) -> None:
    _seed(harness)
    expected = sum(len(parse_functions(p.read_text())) for p in harness.root.rglob("*.ts"))
    stats = harness.index()[-1].stats
    assert harness.analysis.lexical_flags == [True, False]
    assert harness.analysis.reference_flags[-1] is True
    assert stats.chunks_upserted == expected
    assert sorted(harness.all_rows()) == sorted(set(harness.all_rows()))
    assert len(harness.all_rows()) == expected
    # Every chunk is embedded once, from the text that carries its referenced signatures.
    assert len(harness.embedding.documents) == expected
    router_text = next(d for d in harness.embedding.documents if "> routeRequest" in d)
    assert "validateToken(token: string): boolean" in router_text
    assert harness.search("route request").results[0].chunk.name == "routeRequest"


@pytest.mark.parametrize("harness", [SyncTuning(lexical_first_min_files=2, first_flush_chunks=1)], indirect=True)
def test_a_cold_index_writes_the_implementation_first_then_examples_and_declarations_then_tests(
        harness: Harness) -> None:
    """The lexical pass's first flush is what a cold workspace's first answer searches: in path
    order a project's examples, benchmarks and build scripts came before its library."""
    for rel in ("benchmarks/b.ts", "build/tool.ts", "examples/demo.ts", "index.d.ts", "lib/core.ts",
                "src/app.ts", "test/app.test.ts", "zeta.ts"):
        harness.write(rel, _func("f_" + rel.replace("/", "_").replace(".", "_")))
    harness.index()
    lexical = [call for call, flag in zip(harness.analysis.chunk_calls, harness.analysis.lexical_flags,
                                           strict=True) if flag]
    assert [path for call in lexical for path in call] == [
        "lib/core.ts", "src/app.ts", "zeta.ts",
        "benchmarks/b.ts", "build/tool.ts", "examples/demo.ts", "index.d.ts",
        "test/app.test.ts"]


@pytest.mark.parametrize("report_vanished", [True, False])
@pytest.mark.parametrize("harness", [SyncTuning(files_per_call=2)], indirect=True)
def test_files_edited_under_a_sync_are_counted_and_the_next_sync_converges(harness: Harness,
                                                                            report_vanished: bool) -> None:
    """A checkout while the index runs: one file deleted, one rewritten, one added after the
    scan. The run drops the first, indexes the second as it read it, and says so; the next sync
    ends with exactly the index a clean run of the final files makes."""
    _seed(harness)
    harness.write("src/extra/gone.ts", _func("goneSoon"))
    harness.analysis.report_vanished = report_vanished
    edited: list[str] = []

    def checkout(rel: str) -> None:
        if edited:
            return
        edited.append(rel)
        (harness.root / "src/extra/gone.ts").unlink()
        harness.write("src/util/strings.ts", _func("slugify", body="return input.trim();") + _func("titleCase"))
        harness.write("src/extra/late.ts", _func("arrivedLate"))

    harness.analysis.before_read = checkout
    stats = harness.index()[-1].stats
    assert (stats.files_vanished, stats.files_changed_during_sync) == (1, 1)
    names = {r.chunk.name for r in harness.search("titleCase slugify goneSoon arrivedLate", limit=20).results}
    assert "goneSoon" not in names and "titleCase" in names and "arrivedLate" not in names

    harness.analysis.before_read = lambda _rel: None
    again = harness.sync().stats
    assert (again.files_added, again.files_vanished, again.files_changed_during_sync) == (1, 0, 0)
    expected = {chunk_id(p.relative_to(harness.root).as_posix(), f.name)
                for p in harness.root.rglob("*.ts") for f in parse_functions(p.read_text())}
    assert sorted(harness.all_rows()) == sorted(expected)
    assert harness.sync().stats.chunks_upserted == 0


@pytest.mark.parametrize("harness", [SyncTuning(lexical_first_min_files=2, files_per_call=1,
                                                first_flush_chunks=2)], indirect=True)
def test_index_progress_reports_each_step_once_in_order_with_what_it_has_found(harness: Harness) -> None:
    """No `writing` line between chunking reports, no `chunks 0` while chunks come in, a
    first lexical pass that says how much is searchable, and no ETA before evidence."""
    _seed(harness)
    for i in range(6):
        harness.write(f"src/more/m{i}.ts", _func(f"more{i}") + _func(f"other{i}"))
    progress = harness.index(wait=False)
    phases = [p.phase for p in progress]
    order = [phase for i, phase in enumerate(phases) if i == 0 or phases[i - 1] != phase]
    assert order == [IndexPhase.SCANNING, IndexPhase.LEXICAL, IndexPhase.CHUNKING, IndexPhase.WRITING,
                     IndexPhase.DONE]
    expected = sum(len(parse_functions(p.read_text())) for p in harness.root.rglob("*.ts"))
    lexical = [p for p in progress if p.phase == IndexPhase.LEXICAL]
    assert lexical[-1].files_done == lexical[-1].files_total == 9 and lexical[-1].chunks_done == expected
    chunking = [p for p in progress if p.phase == IndexPhase.CHUNKING and p.files_done]
    assert [p.chunks_done for p in chunking] == sorted(p.chunks_done for p in chunking)
    assert all(p.chunks_done > 0 for p in chunking) and chunking[-1].files_done == 9
    # Nine quick files never give the ETA the evidence it waits for.
    assert all(p.eta_seconds < 0 for p in [*lexical[:-1], *chunking])


def test_the_eta_waits_for_evidence_then_extrapolates_from_the_first_answer(monkeypatch) -> None:
    from codecompass.retrieval.index import sync as sync_module

    clock = iter([100.0, 101.0, 130.0, 140.0])
    monkeypatch.setattr(sync_module.time, "perf_counter", lambda: next(clock))
    rate = sync_module._Rate(100)
    assert rate.eta(1) == -1.0  # the first answer (after the type checker's warm-up) starts the clock
    assert rate.eta(3) == -1.0  # 1 s and 3 % in: too early to promise
    assert rate.eta(11) == pytest.approx(89 * 30 / 10)  # 10 files in 30 s
    assert rate.eta(21) == pytest.approx(79 * 40 / 20)
