"""The file catalog (a LanceDB table in the index): persistence, pending marks across a real
kill -9, identity resets, the import of a catalog kept in SQLite by earlier versions."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from datetime import timedelta
from pathlib import Path

import lancedb
import pytest

from codecompass.common.chunks import Language
from codecompass.contracts.analysis.model import FileEntry
from codecompass.contracts.embedding.model import EmbeddingModel
from codecompass.retrieval.catalog import Catalog, CatalogEntry, IndexedChunk, IndexIdentity, read_summary

MODEL = EmbeddingModel(provider="fake", model_id="m", model_version="1", dimensions=8)


def _entry(path: str, content: str, *ids: str) -> CatalogEntry:
    file = FileEntry(path, len(content), 1_000, f"hash-{content}", Language.TYPESCRIPT)
    return CatalogEntry(file, tuple(IndexedChunk(i, f"snip-{i}", f"sig-{i}") for i in ids))


def test_commit_survives_reopen_and_indexes_chunk_paths(tmp_path: Path) -> None:
    db = lancedb.connect(tmp_path / "index")
    catalog = Catalog.open(db)
    catalog.reset(IndexIdentity(MODEL, "c1"))
    catalog.mark_pending(["a.ts", "b.ts"])
    assert catalog.synced_at is None
    before = time.time()
    catalog.commit([_entry("a.ts", "x", "a1", "a2"), _entry("b.ts", "y", "b1")], [], complete=True)
    synced_at = catalog.synced_at
    assert synced_at is not None and before <= synced_at <= time.time()

    reopened = Catalog.open(db)
    assert reopened.identity == IndexIdentity(MODEL, "c1")
    assert reopened.complete
    assert reopened.synced_at == synced_at
    assert reopened.pending() == frozenset()
    assert reopened.get("a.ts") == _entry("a.ts", "x", "a1", "a2")
    assert reopened.path_of_chunk("b1") == "b.ts"
    assert sorted(f.relative_path for f in reopened.previous_files()) == ["a.ts", "b.ts"]

    reopened.commit([_entry("a.ts", "z", "a1")], ["b.ts"], complete=False)
    assert reopened.path_of_chunk("a2") is None and reopened.path_of_chunk("b1") is None
    assert list(reopened.entries()) == ["a.ts"]


def test_touch_refreshes_metadata_but_keeps_chunks(tmp_path: Path) -> None:
    catalog = Catalog.open(lancedb.connect(tmp_path / "index"))
    catalog.commit([_entry("a.ts", "x", "a1")], [], complete=True)
    resaved = FileEntry("a.ts", 1, 9_999, "hash-x", Language.TYPESCRIPT)
    catalog.touch([resaved, FileEntry("unknown.ts", 1, 1, "h", Language.TYPESCRIPT)])
    reopened = Catalog.open(lancedb.connect(tmp_path / "index"))
    assert reopened.get("a.ts").file.mtime_ns == 9_999
    assert reopened.get("a.ts").chunk_ids == ("a1",)
    assert reopened.get("unknown.ts") is None


def test_reset_for_a_new_identity_forgets_every_file(tmp_path: Path) -> None:
    catalog = Catalog.open(lancedb.connect(tmp_path / "index"))
    catalog.reset(IndexIdentity(MODEL, "c1"))
    catalog.mark_pending(["b.ts"])
    catalog.commit([_entry("a.ts", "x", "a1")], [], complete=True)
    other = IndexIdentity(EmbeddingModel("fake", "m", "2", 8), "c1")
    catalog.reset(other)
    assert (len(catalog), catalog.complete, catalog.pending(), catalog.identity) == (0, False, frozenset(), other)
    assert catalog.path_of_chunk("a1") is None


_CHILD = textwrap.dedent(
    """
    import os, signal, sys
    import lancedb
    from codecompass.common.chunks import Language
    from codecompass.retrieval.catalog import Catalog, CatalogEntry, IndexedChunk
    from codecompass.contracts.analysis.model import FileEntry

    catalog = Catalog.open(lancedb.connect(sys.argv[1]))
    entry = CatalogEntry(FileEntry("done.ts", 1, 1, "h1", Language.TYPESCRIPT), (IndexedChunk("d1", "s", "g"),))
    catalog.mark_pending(["done.ts"])
    catalog.commit([entry], [], complete=False)
    # The sync of the next batch has announced its files and then dies mid-write.
    catalog.mark_pending(["half.ts", "gone.ts"])
    os.kill(os.getpid(), signal.SIGKILL)
    """
)


def test_pending_marks_survive_kill_9_and_committed_work_is_kept(tmp_path: Path) -> None:
    db = tmp_path / "index"
    process = subprocess.run(
        [sys.executable, "-c", _CHILD, str(db)], check=False, env=dict(os.environ), timeout=60, capture_output=True
    )
    assert process.returncode == -signal.SIGKILL, process.stderr.decode()
    catalog = Catalog.open(lancedb.connect(db))
    assert catalog.pending() == frozenset({"half.ts", "gone.ts"})
    assert list(catalog.entries()) == ["done.ts"]
    assert catalog.get("done.ts").chunk_ids == ("d1",)


def test_a_sqlite_catalog_of_an_earlier_version_is_imported_once(tmp_path: Path) -> None:
    import sqlite3

    legacy = tmp_path / "catalog.sqlite3"
    conn = sqlite3.connect(legacy)
    conn.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE files (relative_path TEXT PRIMARY KEY, size_bytes INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,"
        " content_hash TEXT NOT NULL, language TEXT NOT NULL, chunks TEXT NOT NULL,"
        " skip_reason TEXT NOT NULL DEFAULT '', skip_detail TEXT NOT NULL DEFAULT '');"
        "CREATE TABLE pending (relative_path TEXT PRIMARY KEY);"
        "INSERT INTO files VALUES ('a.ts', 1, 1000, 'hash-x', 'typescript', "
        "'[[\"a1\", \"snip-a1\", \"sig-a1\"]]', '', '');"
        "INSERT INTO pending VALUES ('b.ts');"
    )
    conn.execute("INSERT INTO meta VALUES ('identity', ?)", (IndexIdentity(MODEL, "c1").to_json(),))
    conn.execute("INSERT INTO meta VALUES ('complete', '1')")
    conn.commit()
    conn.close()
    (tmp_path / "catalog.sqlite3-wal").write_bytes(b"")
    catalog = Catalog.open(lancedb.connect(tmp_path / "index"), legacy=legacy)
    assert catalog.identity == IndexIdentity(MODEL, "c1") and catalog.complete
    assert catalog.get("a.ts") == _entry("a.ts", "x", "a1") and catalog.pending() == frozenset({"b.ts"})
    # Imported once: the SQLite file is set aside, and a reopen reads the table.
    assert not legacy.exists() and legacy.with_name("catalog.sqlite3.imported").is_file()
    assert not (tmp_path / "catalog.sqlite3-wal").exists()
    assert Catalog.open(lancedb.connect(tmp_path / "index"), legacy=legacy).get("a.ts") == _entry("a.ts", "x", "a1")


def test_writes_wait_for_a_maintenance_running_beside_them(tmp_path: Path) -> None:
    """Maintenance (from the background embedder's thread) compacts the catalog while a sync
    touches files and records its manifest: every write commits, none is preempted."""
    catalog = Catalog.open(lancedb.connect(tmp_path / "index"))
    catalog.commit([_entry(f"f{i}.ts", "x", f"c{i}") for i in range(20)], [], complete=True)
    stop = threading.Event()
    failures: list[BaseException] = []

    def maintain() -> None:
        while not stop.is_set():
            try:
                catalog.maintain(timedelta(seconds=3600))
            except BaseException as exc:  # noqa: BLE001 - what the assertion reports
                failures.append(exc)

    worker = threading.Thread(target=maintain)
    worker.start()
    try:
        for i in range(20):
            catalog.touch([FileEntry(f"f{i % 20}.ts", 1, 2_000 + i, "hash-x", Language.TYPESCRIPT)])
            catalog.set_meta(last_error=f"sync {i}")
    finally:
        stop.set()
        worker.join()
    assert failures == []
    reopened = Catalog.open(lancedb.connect(tmp_path / "index"))
    assert reopened.get("f19.ts").file.mtime_ns == 2_019


@pytest.mark.filterwarnings("ignore:optimize\\(cleanup_older_than=0\\):UserWarning")
def test_the_summary_in_memory_is_the_table_s_at_the_same_version(tmp_path: Path) -> None:
    # A searcher in the writer's process takes it instead of reading the table: it must be what
    # the table says at that version, through every kind of write.
    db = lancedb.connect(tmp_path / "index")
    catalog = Catalog.open(db)
    reader = db.open_table("catalog")

    def same() -> None:
        version, summary = catalog.summary()
        reader.checkout_latest()
        assert version == reader.version
        assert summary == read_summary(reader)

    catalog.reset(IndexIdentity(MODEL, "c1"))
    same()
    catalog.mark_pending(["a.ts", "b.ts", "c.ts"])
    same()
    skipped = CatalogEntry(FileEntry("c.ts", 9, 1, "hash-c", Language.TYPESCRIPT), (), "minified", "one line")
    catalog.commit([_entry("a.ts", "x", "a1"), skipped], [], complete=False)
    same()
    assert catalog.summary()[1].pending == frozenset({"b.ts"}) and catalog.summary()[1].pending_known == frozenset()
    catalog.set_meta(workspace_id="w1", last_error="boom")
    catalog.touch([FileEntry("a.ts", 1, 2, "hash-x", Language.TYPESCRIPT)])
    catalog.commit([_entry("b.ts", "y", "b1")], ["a.ts"], complete=True)
    same()
    catalog.maintain(timedelta(0))
    same()
    summary = catalog.summary()[1]
    assert summary.complete and summary.files == 2 and summary.skipped == (("c.ts", "minified", "one line"),)
    assert Catalog.open(db).summary()[1] == summary
