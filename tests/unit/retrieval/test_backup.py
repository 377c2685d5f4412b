"""Backup and restore of indexes (retrieval/backup.py, `codecompass backup|restore`), on real
LanceDB tables written by a real writer (the sync harness's engine), on a local disk and on S3 (the
moto server of tests/fixtures/s3.py): a restored index answers a search as the original did, and a
backup taken while the writer writes is a state the writer could have left (every file the catalog
says is indexed has its chunks), from which the next sync converges."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import lance
import pytest
from tests.unit.retrieval.sync_harness import Harness, _func, _seed

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.embedding import EmbeddingClient
from codecompass.common.config import Settings
from codecompass.contracts.retrieval.model import SearchQuery
from codecompass.retrieval import backup as backups
from codecompass.retrieval.catalog import CATALOG_TABLE
from codecompass.retrieval.engine import RetrievalEngine
from codecompass.retrieval.location import index_uri
from codecompass.retrieval.schema import TABLE_PREFIX

REPO = Path(__file__).resolve().parents[3]


def _engine(h: Harness, settings: Settings) -> RetrievalEngine:
    return RetrievalEngine(settings, AnalysisClient(h.analysis_addr, timeout_s=10),
                           EmbeddingClient(h.embedding_addr, timeout_s=10, batch_size=16))


def _answers(engine: RetrievalEngine, root: Path, query: str) -> list[tuple[str, float]]:
    outcome = engine.search(SearchQuery(workspace_root=str(root), query=query))
    return [(r.chunk.id, round(r.score, 6)) for r in outcome.results]


def _elsewhere(settings: Settings, tmp: Path, **retrieval) -> Settings:
    return dataclasses.replace(settings, state_dir=tmp,
                               retrieval=dataclasses.replace(settings.retrieval, **retrieval))


def _cli(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CODECOMPASS_STATE_DIR": str(settings.state_dir),
           "PYTHONPATH": os.pathsep.join([str(REPO / "clients" / "python" / "src"), str(REPO / "py_services"),
                                          str(REPO / "gateway_mcp"), str(REPO)])}
    return subprocess.run([sys.executable, "-m", "codecompass_cli", *args], env=env, capture_output=True, text=True,
                          timeout=300, check=False)


QUERIES = ("validate the token signature", "route a request", "slugify a string")


def test_a_local_index_backed_up_and_restored_elsewhere_answers_the_same(harness: Harness, tmp_path: Path) -> None:
    _seed(harness)
    harness.index()
    before = {q: _answers(harness.engine, harness.root, q) for q in QUERIES}
    assert all(before.values())
    dest = tmp_path / "backup"

    made = _cli(harness.settings, "backup", str(dest))
    assert made.returncode == 0, made.stderr
    assert made.stdout.splitlines()[-1] == f"1 indexes backed up to {dest}"
    assert (dest / backups.MANIFEST).is_file()
    again = _cli(harness.settings, "backup", str(dest))
    assert (again.returncode, again.stderr) == (1, f"codecompass: {dest} already holds a backup; give an empty "
                                                   "folder or prefix\n")

    restored_settings = _elsewhere(harness.settings, tmp_path / "restored-state")
    restored = _cli(restored_settings, "restore", str(dest))
    assert restored.returncode == 0, restored.stderr
    assert "1 indexes restored from" in restored.stdout
    twice = _cli(restored_settings, "restore", str(dest))
    assert twice.returncode == 1 and twice.stderr.startswith("codecompass: ") and len(twice.stderr.splitlines()) == 1
    assert "already holds the index" in twice.stderr

    engine = _engine(harness, restored_settings)
    try:
        assert {q: _answers(engine, harness.root, q) for q in QUERIES} == before
        # The restored index is whole: a sync of the unchanged workspace writes nothing.
        synced = engine.sync(str(harness.root), None)
        assert synced.stats.chunks_upserted == 0 and synced.stats.chunks_deleted == 0
        assert [ix.workspace_id for ix in engine.list_indexes()] == [ix.workspace_id
                                                                    for ix in harness.engine.list_indexes()]
    finally:
        engine.close()


def test_restore_says_in_one_line_what_is_wrong(harness: Harness, tmp_path: Path) -> None:
    missing = _cli(harness.settings, "restore", str(tmp_path / "nothing"))
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr == (f"codecompass: {tmp_path / 'nothing'} holds no backup (codecompass-backup.json is "
                              "missing: not a backup, or one that did not finish)\n")


def test_a_backup_taken_while_the_writer_writes_is_a_state_it_could_have_left(harness: Harness,
                                                                            tmp_path: Path) -> None:
    _seed(harness)
    harness.index()
    stop = threading.Event()
    errors: list[BaseException] = []

    def edit_and_sync() -> None:
        n = 0
        try:
            while not stop.is_set():
                n += 1
                harness.write(f"src/gen/file{n % 7}.ts", _func(f"generated{n}") + _func(f"helper{n}"))
                if n % 5 == 0:
                    (harness.root / f"src/gen/file{(n + 3) % 7}.ts").unlink(missing_ok=True)
                harness.sync()
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            errors.append(exc)

    writer = threading.Thread(target=edit_and_sync)
    writer.start()
    try:
        dests = []
        for i in range(4):
            dest = tmp_path / f"backup{i}"
            backups.backup(harness.settings, str(dest))
            dests.append(dest)
    finally:
        stop.set()
        writer.join(60)
    assert not errors, errors
    cuts = {json.loads((dest / backups.MANIFEST).read_text())["indexes"][0]["versions"][CATALOG_TABLE]
            for dest in dests}
    assert len(cuts) > 1, "the writer committed nothing while the backups ran"
    for i, dest in enumerate(dests):
        settings = _elsewhere(harness.settings, tmp_path / f"state{i}")
        (key,) = backups.restore(settings, str(dest))
        uri = index_uri(settings, key.key)
        catalog = lance.dataset(f"{uri}/{CATALOG_TABLE}.lance").to_table().to_pylist()
        (chunks_table,) = [name for name in key.versions if name.startswith(TABLE_PREFIX)]
        ids = set(lance.dataset(f"{uri}/{chunks_table}.lance").to_table(columns=["id"]).column("id").to_pylist())
        pending = {row["key"] for row in catalog if row["kind"] == "pending"}
        for row in catalog:
            if row["kind"] == "file" and row["key"] not in pending:
                wanted = {c[0] for c in json.loads(row["chunks"] or "[]")}
                assert wanted <= ids, (dest, row["key"], wanted - ids)
        # From that state the writer converges: after a sync the table holds exactly the catalog's chunks.
        engine = _engine(harness, settings)
        try:
            engine.sync(str(harness.root), None)
            ws = engine.writer.workspace(str(harness.root))
            expected = {c for entry in ws.catalog.entries().values() for c in entry.chunk_ids}
            assert set(ws.store._table.to_arrow().column("id").to_pylist()) == expected
            assert not ws.catalog.pending()
        finally:
            engine.close()


def test_an_index_on_s3_backed_up_and_restored_to_another_prefix_answers_the_same(harness: Harness, s3,
                                                                                tmp_path: Path) -> None:
    harness.engine.close()
    harness.settings = _elsewhere(harness.settings, tmp_path / "writer-state", db_uri=s3.uri("live"),
                                  storage_options=s3.storage_options)
    harness.engine = harness.new_engine()
    _seed(harness)
    harness.index()
    before = {q: _answers(harness.engine, harness.root, q) for q in QUERIES}
    assert all(before.values())

    (copied,) = backups.backup(harness.settings, s3.uri("backups/monday"))
    assert any(k.startswith(f"backups/monday/{copied.key}/{CATALOG_TABLE}.lance/") for k in s3.keys("backups/"))
    restored_settings = _elsewhere(harness.settings, tmp_path / "restored-state", db_uri=s3.uri("restored"))
    # A searcher copy of an earlier index of that key, on this machine: a restore drops it.
    stale = restored_settings.state_dir / "index-cache" / copied.key
    stale.mkdir(parents=True)
    (stale / "leftover").write_text("old")
    backups.restore(restored_settings, s3.uri("backups/monday"))
    assert not stale.exists()
    engine = _engine(harness, restored_settings)
    try:
        assert {q: _answers(engine, harness.root, q) for q in QUERIES} == before
    finally:
        engine.close()


@pytest.mark.parametrize("target", ["ftp://host/backup"])
def test_a_backup_goes_to_a_folder_or_s3(harness: Harness, target: str) -> None:
    _seed(harness)
    harness.index()
    with pytest.raises(backups.BackupError, match="backups go to a local folder or s3://bucket/prefix"):
        backups.backup(harness.settings, target)
