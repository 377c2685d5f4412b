"""Per-workspace file catalog: what the index holds for each source file.

The catalog is the sync's memory between runs: per file its size, mtime and content hash (so
the analysis service's scanner can say what changed) and the ids, snippet hashes and
signature digests of its chunks (so a re-chunked file can be diffed without reading the
chunk table: stale ids to delete, signatures that changed for the cascade).

Crash safety rests on ordering, not on a distributed transaction:
1. `mark_pending(paths)` is committed BEFORE the chunk table is touched for those files;
2. the chunk table is written (merge on stable chunk ids, so a repeat is idempotent);
3. `commit(...)` then records the new state and clears the pending marks in ONE transaction.
A kill -9 between 1 and 3 leaves the files pending with their old entries, so the next sync
re-chunks them and deletes whatever ids the table really holds for them beyond the new ones
(the crashed run may have written ids the catalog never heard of). Nothing is lost, nothing is
duplicated.

SQLite in WAL mode (stdlib, one file, atomic commits); synchronous=NORMAL is enough because
losing the last commit on power failure only means re-doing that work, never inconsistency.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from codecompass.common.chunks import Chunk, Language
from codecompass.retrieval.schema import EmbeddingModel
from codecompass.retrieval.state import FileEntry

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    relative_path TEXT PRIMARY KEY,
    size_bytes INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    language TEXT NOT NULL,
    chunks TEXT NOT NULL,
    skip_reason TEXT NOT NULL DEFAULT '',
    skip_detail TEXT NOT NULL DEFAULT ''
);
CREATE TABLE IF NOT EXISTS pending (relative_path TEXT PRIMARY KEY);
"""


def signature_digest(signature: str) -> str:
    return hashlib.sha256(signature.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class IndexedChunk:
    """What the catalog remembers of one chunk."""

    id: str
    snippet_hash: str
    signature_digest: str

    @classmethod
    def of(cls, chunk: Chunk) -> IndexedChunk:
        return cls(chunk.id, chunk.snippet_hash, signature_digest(chunk.signature))


@dataclass(frozen=True)
class CatalogEntry:
    file: FileEntry
    chunks: tuple[IndexedChunk, ...]
    # Non-empty when the chunker refused the file: it stays cataloged (with no chunks) so an
    # unchanged skipped file is not re-chunked on every sync.
    skip_reason: str = ""
    # What the chunker said about it (`nested too deep to parse: …`), for `--show-skipped`.
    skip_detail: str = ""

    @property
    def chunk_ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.chunks)


@dataclass(frozen=True)
class IndexIdentity:
    """The index a catalog describes: its chunks only make sense in that table."""

    model: EmbeddingModel
    chunker_version: str
    # The static channel's model (its version is its weights' hash); None: no static channel.
    # Part of the identity so that vectors of two static models never share a column.
    static: EmbeddingModel | None = None

    def to_json(self) -> str:
        return json.dumps(
            {
                **_model_json(self.model),
                "chunker_version": self.chunker_version,
                "static": _model_json(self.static) if self.static is not None else None,
            },
            sort_keys=True,
        )

    @classmethod
    def from_json(cls, text: str) -> IndexIdentity:
        data = json.loads(text)
        # Catalogs written before the static channel existed have no "static": none then.
        static = data.get("static")
        return cls(model=_model_of(data), chunker_version=data["chunker_version"],
                   static=_model_of(static) if static else None)


def _model_json(model: EmbeddingModel) -> dict:
    return {
        "provider": model.provider,
        "model_id": model.model_id,
        "model_version": model.model_version,
        "dimensions": model.dimensions,
    }


def _model_of(data: dict) -> EmbeddingModel:
    return EmbeddingModel(
        provider=data["provider"],
        model_id=data["model_id"],
        model_version=data["model_version"],
        dimensions=int(data["dimensions"]),
    )


class Catalog:
    """The catalog of one workspace. Reads are served from memory; writes go through SQLite.

    Thread-safe: the sync thread writes while status requests read.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._lock = threading.Lock()
        self._entries: dict[str, CatalogEntry] = {}
        self._chunk_paths: dict[str, str] = {}
        self._pending: set[str] = set()
        self._meta: dict[str, str] = {}
        # Bumped by every write, so callers can cache what they derive from the entries.
        self.generation = 0
        self._load()

    @classmethod
    def open(cls, path: Path) -> Catalog:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.executescript(_SCHEMA)
        # Catalogs written before skip details were kept gain the column (empty for their skips).
        if "skip_detail" not in {row[1] for row in conn.execute("PRAGMA table_info(files)")}:
            conn.execute("ALTER TABLE files ADD COLUMN skip_detail TEXT NOT NULL DEFAULT ''")
        return cls(conn)

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def _load(self) -> None:
        self._meta = dict(self._conn.execute("SELECT key, value FROM meta").fetchall())
        rows = self._conn.execute(
            "SELECT relative_path, size_bytes, mtime_ns, content_hash, language, chunks, skip_reason, skip_detail"
            " FROM files"
        ).fetchall()
        for path, size, mtime, content_hash, language, chunks_json, skip_reason, skip_detail in rows:
            chunks = tuple(IndexedChunk(*item) for item in json.loads(chunks_json))
            entry = CatalogEntry(FileEntry(path, size, mtime, content_hash, Language(language)), chunks, skip_reason,
                                 skip_detail)
            self._entries[path] = entry
            for chunk in chunks:
                self._chunk_paths[chunk.id] = path
        self._pending = {row[0] for row in self._conn.execute("SELECT relative_path FROM pending")}

    # --- reads (in memory) ---

    @property
    def identity(self) -> IndexIdentity | None:
        text = self._meta.get("identity")
        return IndexIdentity.from_json(text) if text else None

    @property
    def complete(self) -> bool:
        """True once a sync has run to the end under the current identity."""
        return self._meta.get("complete") == "1"

    @property
    def synced_at(self) -> float | None:
        """Epoch seconds of the last commit that completed a sync; None before the first."""
        text = self._meta.get("synced_at")
        return float(text) if text else None

    def entries(self) -> Mapping[str, CatalogEntry]:
        with self._lock:
            return MappingProxyType(dict(self._entries))

    def get(self, relative_path: str) -> CatalogEntry | None:
        return self._entries.get(relative_path)

    def __len__(self) -> int:
        return len(self._entries)

    def previous_files(self) -> list[FileEntry]:
        with self._lock:
            return [entry.file for entry in self._entries.values()]

    def path_of_chunk(self, chunk_id: str) -> str | None:
        return self._chunk_paths.get(chunk_id)

    def pending(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._pending)

    # --- writes ---

    def reset(self, identity: IndexIdentity) -> None:
        """Forget every file: the index moved to a new table that starts empty."""
        with self._lock:
            with self._transaction():
                self._conn.execute("DELETE FROM files")
                self._conn.execute("DELETE FROM pending")
                self._conn.execute("DELETE FROM meta")
                self._conn.execute("INSERT INTO meta(key, value) VALUES ('identity', ?)", (identity.to_json(),))
            self._entries.clear()
            self._chunk_paths.clear()
            self._pending.clear()
            self._meta = {"identity": identity.to_json()}
            self.generation += 1

    def mark_pending(self, paths: Iterable[str]) -> None:
        """Durably note that the chunk table is about to change for these files."""
        new = [p for p in set(paths) if p not in self._pending]
        if not new:
            return
        with self._lock:
            with self._transaction():
                self._conn.executemany("INSERT OR IGNORE INTO pending(relative_path) VALUES (?)", [(p,) for p in new])
            self._pending.update(new)

    def commit(self, entries: Iterable[CatalogEntry], removed: Iterable[str], *, complete: bool) -> None:
        """Record files whose chunks are now in the table, and files that are gone from it.

        Call only after the chunk table write for exactly these files has returned.
        """
        entries = list(entries)
        removed = sorted(set(removed))
        done = [e.file.relative_path for e in entries] + removed
        with self._lock:
            with self._transaction():
                self._conn.executemany(
                    "INSERT OR REPLACE INTO files(relative_path, size_bytes, mtime_ns, content_hash, language, chunks,"
                    " skip_reason, skip_detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            e.file.relative_path,
                            e.file.size_bytes,
                            e.file.mtime_ns,
                            e.file.content_hash,
                            e.file.language.value,
                            json.dumps([[c.id, c.snippet_hash, c.signature_digest] for c in e.chunks]),
                            e.skip_reason,
                            e.skip_detail,
                        )
                        for e in entries
                    ],
                )
                self._conn.executemany("DELETE FROM files WHERE relative_path = ?", [(p,) for p in removed])
                self._conn.executemany("DELETE FROM pending WHERE relative_path = ?", [(p,) for p in done])
                if complete:
                    synced_at = repr(time.time())
                    self._conn.executemany(
                        "INSERT OR REPLACE INTO meta(key, value) VALUES (?, ?)",
                        [("complete", "1"), ("synced_at", synced_at)],
                    )
            for path in removed:
                self._drop(path)
            for entry in entries:
                self._drop(entry.file.relative_path)
                self._entries[entry.file.relative_path] = entry
                for chunk in entry.chunks:
                    self._chunk_paths[chunk.id] = entry.file.relative_path
            self._pending.difference_update(done)
            if complete:
                self._meta.update(complete="1", synced_at=synced_at)
            self.generation += 1

    def touch(self, files: Iterable[FileEntry]) -> None:
        """Refresh size/mtime of files whose content hash did not change (a re-save), so the
        scanner's cheap size+mtime check holds again next time."""
        updates = [f for f in files if f.relative_path in self._entries]
        if not updates:
            return
        with self._lock:
            with self._transaction():
                self._conn.executemany(
                    "UPDATE files SET size_bytes = ?, mtime_ns = ?, content_hash = ? WHERE relative_path = ?",
                    [(f.size_bytes, f.mtime_ns, f.content_hash, f.relative_path) for f in updates],
                )
            for f in updates:
                old = self._entries[f.relative_path]
                self._entries[f.relative_path] = CatalogEntry(f, old.chunks, old.skip_reason, old.skip_detail)
            self.generation += 1

    def _drop(self, path: str) -> None:
        old = self._entries.pop(path, None)
        if old is not None:
            for chunk in old.chunks:
                if self._chunk_paths.get(chunk.id) == path:
                    del self._chunk_paths[chunk.id]

    def _transaction(self) -> _Transaction:
        return _Transaction(self._conn)


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT, rolled back on any exception (autocommit connection)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __enter__(self) -> None:
        self._conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self._conn.execute("COMMIT")
        else:
            self._conn.execute("ROLLBACK")
