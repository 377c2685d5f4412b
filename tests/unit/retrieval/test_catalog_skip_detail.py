"""A file chunking skipped keeps its reason and its detail across a reopen, so that
`--show-skipped` and `index_status` can say why (`nested too deep to parse: …`); a SQLite catalog
written before details were kept is imported with its skips' details empty."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import lancedb

from codecompass.common.chunks import Language
from codecompass.contracts.analysis.model import FileEntry
from codecompass.retrieval.catalog import Catalog, CatalogEntry

DETAIL = "nested too deep to parse: the parser ran out of stack (Maximum call stack size exceeded)"


def test_a_skip_keeps_its_detail_across_a_reopen(tmp_path: Path) -> None:
    db = lancedb.connect(tmp_path / "index")
    catalog = Catalog.open(db)
    catalog.commit([CatalogEntry(FileEntry("src/deep.ts", 9, 1, "h", Language.TYPESCRIPT), (), "chunk_failed", DETAIL)],
                   [], complete=True)
    entry = Catalog.open(db).get("src/deep.ts")
    assert entry is not None and (entry.skip_reason, entry.skip_detail) == ("chunk_failed", DETAIL)


def test_a_catalog_from_before_skip_details_opens_with_empty_details(tmp_path: Path) -> None:
    db = tmp_path / "catalog.sqlite3"
    conn = sqlite3.connect(db)
    conn.executescript(
        "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
        "CREATE TABLE pending (relative_path TEXT PRIMARY KEY);"
        "CREATE TABLE files (relative_path TEXT PRIMARY KEY, size_bytes INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,"
        " content_hash TEXT NOT NULL, language TEXT NOT NULL, chunks TEXT NOT NULL,"
        " skip_reason TEXT NOT NULL DEFAULT '');"
        "INSERT INTO files VALUES ('src/app.min.js', 5, 1, 'h', 'javascript', '[]', 'minified');"
    )
    conn.commit()
    conn.close()
    entry = Catalog.open(lancedb.connect(tmp_path / "index"), legacy=db).get("src/app.min.js")
    assert entry is not None and (entry.skip_reason, entry.skip_detail) == ("minified", "")
