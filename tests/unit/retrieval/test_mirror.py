"""A searcher's local copy of an index on S3 (the local S3 server, moto): exact, current after a
refresh, copies only what is new, and forgets what the writer's cleanup deleted, one refresh late."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import lancedb
import pyarrow as pa

from codecompass.retrieval.catalog import CATALOG_TABLE
from codecompass.retrieval.mirror import IndexMirror, mirrorable
from codecompass.retrieval.schema import TABLE_PREFIX, sources_table_name


def _rows(uri: str, **options) -> list[tuple]:
    table = lancedb.connect(uri, **options).open_table("chunks")
    return sorted(tuple(r.values()) for r in table.to_arrow().to_pylist())


def test_the_copy_follows_the_bucket_version_by_version(s3, tmp_path: Path) -> None:
    remote = s3.uri("idx/k1")
    assert mirrorable(remote) and not mirrorable(str(tmp_path))
    db = lancedb.connect(remote, storage_options=s3.storage_options)
    table = db.create_table("chunks", pa.table({"id": ["a", "b"], "n": [1, 2]}))
    mirror = IndexMirror(remote, s3.storage_options, tmp_path / "copy")
    first = mirror.refresh()
    assert first > 0
    local = str(tmp_path / "copy")
    assert _rows(local) == [("a", 1), ("b", 2)]
    assert mirror.refresh() == 0, "nothing new, nothing copied"

    table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all().execute(
        pa.table({"id": ["b", "c"], "n": [20, 3]}))
    copied = mirror.refresh()
    assert 0 < copied < first + 3
    assert _rows(local) == [("a", 1), ("b", 20), ("c", 3)] == _rows(remote, storage_options=s3.storage_options)

    # The writer's maintenance drops old versions upstream; the copy drops them a refresh later.
    table.optimize(cleanup_older_than=timedelta(seconds=0))
    before = {p for p in (tmp_path / "copy").rglob("*") if p.is_file()}
    mirror.refresh()
    assert {p for p in (tmp_path / "copy").rglob("*") if p.is_file()} >= before
    mirror.refresh()
    after = {p for p in (tmp_path / "copy").rglob("*") if p.is_file()}
    remote_files = {k.removeprefix("idx/k1/") for k in s3.keys("idx/k1/")}
    assert {str(p.relative_to(tmp_path / "copy")) for p in after} == remote_files
    assert _rows(local) == [("a", 1), ("b", 20), ("c", 3)]


def test_a_refresh_copies_the_texts_before_the_chunks_that_name_them(s3, tmp_path: Path, monkeypatch) -> None:
    # A searcher moves its chunk table, then its texts: were a chunk table's new manifest copied
    # before its texts', a query in between would find chunks whose text is missing (seen once
    # as a StoreError in the object-store drill). Names by the schema: chunks_* sorts first.
    chunks = TABLE_PREFIX + "m"
    remote = s3.uri("idx/k2")
    db = lancedb.connect(remote, storage_options=s3.storage_options)
    db.create_table(sources_table_name(chunks), pa.table({"key": ["t1"]}))
    db.create_table(chunks, pa.table({"id": ["a"], "text": ["t1"]}))
    db.create_table(CATALOG_TABLE, pa.table({"path": ["a.ts"]}))
    mirror = IndexMirror(remote, s3.storage_options, tmp_path / "copy")
    copied: list[str] = []
    original = mirror._copy
    monkeypatch.setattr(mirror, "_copy", lambda rel: (copied.append(rel), original(rel)))
    mirror.refresh()

    def first(table: str, step: str) -> int:
        return next(i for i, rel in enumerate(copied) if rel.startswith(f"{table}.lance/") and step in rel)

    def last(table: str, step: str) -> int:
        return max(i for i, rel in enumerate(copied) if rel.startswith(f"{table}.lance/") and step in rel)

    texts = sources_table_name(chunks)
    assert last(texts, "/data/") < first(chunks, "/_versions/")  # every file before any manifest
    assert last(texts, "/_versions/") < first(chunks, "/_versions/")  # the texts' version first
    assert last(chunks, "/_versions/") < first(CATALOG_TABLE, "/_versions/")  # the catalog last
