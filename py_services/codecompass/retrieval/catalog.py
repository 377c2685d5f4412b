"""Per-workspace file catalog: what the index holds for each source file, and the index's manifest.

The catalog is the sync's memory between runs: per file its size, mtime and content hash (so
the analysis service's scanner can say what changed) and the ids, snippet hashes and
signature digests of its chunks (so a re-chunked file can be diffed without reading the
chunk table: stale ids to delete, signatures that changed for the cascade). Its `meta` rows are
the index's manifest: workspace id, identity (models, chunker), whether a sync completed, when.

It is a LanceDB table inside the index (`<index>/catalog.lance`), not a file beside it, so an
index is one self-contained thing at one URI, on a local disk or an object store, and the catalog
gets the same guarantees as the chunks: every write is one atomic, conditional commit of a new
version (two writers are serialised, never interleaved), and a reader sees one version whole.

Crash safety rests on ordering, not on a distributed transaction:
1. `mark_pending(paths)` is committed BEFORE the chunk table is touched for those files;
2. the chunk table is written (the rows of the stable chunk ids it writes are replaced in the
   same commit, so a repeat is idempotent);
3. `commit(...)` then records the new state and clears the pending marks in ONE commit.
A kill -9 between 1 and 3 leaves the files pending with their old entries, so the next sync
re-chunks them and deletes whatever ids the table really holds for them beyond the new ones
(the crashed run may have written ids the catalog never heard of). Nothing is lost, nothing is
duplicated.

Indexes made before the catalog moved into the index kept it in SQLite under the state dir;
`Catalog.open` imports such a catalog once (`legacy=`), so an upgrade re-embeds nothing.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

import lance
import lancedb
import pyarrow as pa

from codecompass.common.chunks import Chunk, Language
from codecompass.common.logging import get_logger
from codecompass.contracts.analysis.model import FileEntry, SkippedFile
from codecompass.contracts.embedding.model import EmbeddingModel
from codecompass.retrieval import filter_sql as sqlf
from codecompass.retrieval.commits import commit, matching_rows, replacing, write_uncommitted

_log = get_logger(__name__)

CATALOG_TABLE = "catalog"
# Row kinds: a file's entry, a pending mark, a manifest value.
_FILE, _PENDING, _META = "file", "pending", "meta"
# Manifest values that describe the workspace, not the table: kept across `reset`.
_WORKSPACE_META = ("workspace_id", "root")
# Keeps `IN (...)` predicates to a size DataFusion plans quickly.
_PATH_BATCH = 1_000

_SCHEMA = pa.schema(
    [
        pa.field("kind", pa.string(), nullable=False),
        pa.field("key", pa.string(), nullable=False),
        pa.field("size_bytes", pa.int64()),
        pa.field("mtime_ns", pa.int64()),
        pa.field("content_hash", pa.string()),
        pa.field("language", pa.string()),
        # [[id, snippet hash, signature digest], ...] as JSON: read whole, never queried.
        pa.field("chunks", pa.string()),
        pa.field("skip_reason", pa.string()),
        pa.field("skip_detail", pa.string()),
        pa.field("value", pa.string()),
    ]
)


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
    """The catalog of one index, as its writer sees it: reads are served from memory, loaded
    once at open; writes go to the table (one commit each) and then to memory.

    Thread-safe: the sync thread writes while status requests read.
    """

    def __init__(self, table: lancedb.table.Table) -> None:
        self._table = table
        self._lock = threading.Lock()
        self._entries: dict[str, CatalogEntry] = {}
        self._chunk_paths: dict[str, str] = {}
        self._pending: set[str] = set()
        self._meta: dict[str, str] = {}
        # Bumped by every write, so callers can cache what they derive from the entries.
        self.generation = 0
        # The table's newest version as a Lance dataset, moved by each of this writer's commits
        # (which return it): writes go through it rather than LanceDB's handle, which opened the
        # dataset again for each (1.6 ms) and moved itself after (0.7 ms); `table.add` for the
        # pending marks cost 6 ms an edit on a loaded machine.
        self._dataset: lance.LanceDataset = table.to_lance()
        self._summary: tuple[int, CatalogSummary] | None = None
        self._load()

    @classmethod
    def open(cls, db: lancedb.DBConnection, *, legacy: Path | None = None) -> Catalog:
        """The catalog table of the index `db` is connected to, created when missing (from the
        SQLite catalog at `legacy` when there is one)."""
        table = open_catalog_table(db)
        created = table is None
        if table is None:
            try:
                table = db.create_table(CATALOG_TABLE, schema=_SCHEMA)
            except ValueError:  # created by another writer meanwhile
                table = db.open_table(CATALOG_TABLE)
        if created and legacy is not None and legacy.is_file():
            rows = _legacy_rows(legacy)
            if rows.num_rows:
                table.add(rows)
            legacy.rename(legacy.with_name(legacy.name + ".imported"))
            # SQLite's write-ahead log and index: read with the file, and of no use beside the copy.
            for suffix in ("-wal", "-shm"):
                legacy.with_name(legacy.name + suffix).unlink(missing_ok=True)
            _log.info("imported the catalog at %s into the index (%d rows)", legacy, rows.num_rows)
        return cls(table)

    def _load(self) -> None:
        rows = self._dataset.to_table().to_pylist()
        for row in rows:
            kind, key = row["kind"], row["key"]
            if kind == _META:
                self._meta[key] = row["value"] or ""
            elif kind == _PENDING:
                self._pending.add(key)
            elif kind == _FILE:
                entry = entry_from_row(row)
                self._entries[key] = entry
                for chunk in entry.chunks:
                    self._chunk_paths[chunk.id] = key

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
    def base(self) -> tuple[str, str]:
        """(key, commit) of the base this index started from (`layers.py`); empty: none."""
        return self._meta.get("base", ""), self._meta.get("base_commit", "")

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

    def summary(self) -> tuple[int, CatalogSummary]:
        """(the table version, what a searcher reads of it) from memory: what `read_summary` of
        that version gives, without reading the table (7-9 ms after each edit on ws-300k), for a
        searcher in this writer's process."""
        with self._lock:
            version = self._dataset.version
            if self._summary is None or self._summary[0] != version:
                self._summary = (version, summarize(
                    self._meta, ((path, e.file.content_hash, e.skip_reason, e.skip_detail)
                                 for path, e in self._entries.items()), self._pending))
            return self._summary

    # --- writes ---

    def reset(self, identity: IndexIdentity) -> None:
        """Forget every file: the index moved to a new table that starts empty. One commit
        (an overwrite), so a crash never leaves a catalog half reset."""
        with self._lock:
            meta = {k: v for k, v in self._meta.items() if k in _WORKSPACE_META}
            meta["identity"] = identity.to_json()
            self._table.checkout_latest()
            self._table.add(_meta_rows(meta), mode="overwrite")
            self._moved()
            self._entries.clear()
            self._chunk_paths.clear()
            self._pending.clear()
            self._meta = meta
            self.generation += 1

    def set_meta(self, **values: str) -> None:
        """Record manifest values (workspace id, root, the last sync's error) in one commit."""
        changed = {k: v for k, v in values.items() if self._meta.get(k) != v}
        if not changed:
            return
        with self._lock:
            self._upsert(_meta_rows(changed))
            self._meta.update(changed)
            self.generation += 1

    def mark_pending(self, paths: Iterable[str]) -> None:
        """Durably note that the chunk table is about to change for these files."""
        new = sorted(p for p in set(paths) if p not in self._pending)
        if not new:
            return
        with self._lock:
            # The marks in memory are the table's (this is its only writer), so the new ones are
            # appended, not merged: 2.5 ms instead of 6.8 before every edit's chunking.
            marks = write_uncommitted(_rows([{"kind": _PENDING, "key": p} for p in new]), self._dataset)
            self._dataset = lance.LanceDataset.commit(self._dataset, lance.LanceOperation.Append(list(marks)),
                                                      read_version=self._dataset.version)
            self._pending.update(new)

    def commit(self, entries: Iterable[CatalogEntry], removed: Iterable[str], *, complete: bool) -> None:
        """Record files whose chunks are now in the table, and files that are gone from it, and
        clear their pending marks, in one commit.

        Call only after the chunk table write for exactly these files has returned.
        """
        entries = list(entries)
        removed = sorted(set(removed))
        done = [e.file.relative_path for e in entries] + removed
        with self._lock:
            meta: dict[str, str] = {}
            if complete:
                meta = {"complete": "1", "synced_at": repr(time.time())}
            source = pa.concat_tables([_rows([entry_row(e) for e in entries]), _meta_rows(meta)])
            # The removed files' rows and the done files' pending marks go in the commit that
            # writes the entries.
            self._replace(source, [*[_keyed(_FILE, batch) for batch in _slices(removed)],
                                   *[_keyed(_PENDING, batch) for batch in
                                     _slices([p for p in done if p in self._pending])]])
            for path in removed:
                self._drop(path)
            for entry in entries:
                self._drop(entry.file.relative_path)
                self._entries[entry.file.relative_path] = entry
                for chunk in entry.chunks:
                    self._chunk_paths[chunk.id] = entry.file.relative_path
            self._pending.difference_update(done)
            self._meta.update(meta)
            self.generation += 1

    def touch(self, files: Iterable[FileEntry]) -> None:
        """Refresh size/mtime of files whose content hash did not change (a re-save), so the
        scanner's cheap size+mtime check holds again next time."""
        updates = [f for f in files if f.relative_path in self._entries]
        if not updates:
            return
        with self._lock:
            touched = []
            for f in updates:
                old = self._entries[f.relative_path]
                touched.append(CatalogEntry(f, old.chunks, old.skip_reason, old.skip_detail))
            self._upsert(_rows([entry_row(e) for e in touched]))
            for entry in touched:
                self._entries[entry.file.relative_path] = entry
            self.generation += 1

    def maintain(self, retention) -> None:
        """Fold the small files of many commits and drop versions older than `retention`.

        Under the lock every other write of the catalog takes: its compaction is a Rewrite, and
        a sync's Update (a touch, the manifest) committed while it ran failed with "Update
        preempted by concurrent Rewrite" instead of waiting a few milliseconds."""
        with self._lock:
            self._table.checkout_latest()
            self._table.optimize(cleanup_older_than=retention)
            self._moved()

    def _upsert(self, rows: pa.Table) -> None:
        self._replace(rows, [])

    def _replace(self, rows: pa.Table, gone: list[str]) -> None:
        """Write `rows` over the rows of the same (kind, key) and delete those `gone` matches,
        in one version (`commits`: a merge on (kind, key) joined the whole table, 6.8 ms for
        one row of ws-300k's catalog against ~3)."""
        keys_by_kind: dict[str, set[str]] = {}
        for kind, key in zip(rows.column("kind").to_pylist(), rows.column("key").to_pylist(), strict=True):
            keys_by_kind.setdefault(kind, set()).add(key)
        replaced = [_keyed(kind, batch) for kind, keys in sorted(keys_by_kind.items())
                    for batch in _slices(sorted(keys))]
        dataset = self._dataset
        new = write_uncommitted(rows, dataset) if rows.num_rows else ()
        # One scan for all of them: the table is small, and each scan costs ~1 ms to set up.
        wheres = [*replaced, *gone]
        stale = matching_rows(dataset, [" OR ".join(f"({where})" for where in wheres)] if wheres else [])
        committed = commit(dataset, replacing(dataset, stale.column("_rowaddr").to_pylist(), new))
        if committed is not None:
            self._dataset = committed

    def _moved(self) -> None:
        """Take up the version LanceDB's handle wrote (an overwrite, a maintenance)."""
        self._dataset = self._dataset.checkout_version(self._table.version)

    def _drop(self, path: str) -> None:
        old = self._entries.pop(path, None)
        if old is not None:
            for chunk in old.chunks:
                if self._chunk_paths.get(chunk.id) == path:
                    del self._chunk_paths[chunk.id]


@dataclass(frozen=True)
class CatalogSummary:
    """What a searcher reads of a catalog: the manifest, the counts, the pending and skipped
    files; never the chunk lists (a search does not diff)."""

    meta: Mapping[str, str]
    files: int
    pending: frozenset[str]
    # (path, reason, detail) of every file chunking skipped.
    skipped: tuple[tuple[str, str, str], ...]
    # Paths the catalog has an entry for, among the pending ones (stale, not new).
    pending_known: frozenset[str]
    # Each file's content hash: where a checkout's index differs from its base.
    hashes: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def base(self) -> tuple[str, str]:
        """(key, commit) of the base the index started from; empty: none."""
        return self.meta.get("base", ""), self.meta.get("base_commit", "")

    @property
    def identity(self) -> IndexIdentity | None:
        text = self.meta.get("identity")
        return IndexIdentity.from_json(text) if text else None

    @property
    def complete(self) -> bool:
        return self.meta.get("complete") == "1"

    @property
    def synced_at(self) -> float | None:
        text = self.meta.get("synced_at")
        return float(text) if text else None


def open_catalog_table(db: lancedb.DBConnection) -> lancedb.table.Table | None:
    try:
        return db.open_table(CATALOG_TABLE)
    except (ValueError, FileNotFoundError):
        return None


def read_summary(table: lancedb.table.Table) -> CatalogSummary:
    # Through the Lance dataset and column by column: a searcher reads this at every catalog
    # version, so after each edit (LanceDB's query builder and a dict per row: 7.5 ms on
    # ws-300k's 979 rows, ahead of the search that waits for it).
    rows = table.to_lance().to_table(columns=["kind", "key", "content_hash", "skip_reason", "skip_detail", "value"])
    kinds, keys = rows.column("kind").to_pylist(), rows.column("key").to_pylist()
    hashes_column, values = rows.column("content_hash").to_pylist(), rows.column("value").to_pylist()
    reasons, details = rows.column("skip_reason").to_pylist(), rows.column("skip_detail").to_pylist()
    meta = {keys[i]: values[i] or "" for i, kind in enumerate(kinds) if kind == _META}
    pending = {keys[i] for i, kind in enumerate(kinds) if kind == _PENDING}
    files = ((keys[i], hashes_column[i], reasons[i], details[i]) for i, kind in enumerate(kinds) if kind == _FILE)
    return summarize(meta, files, pending)


def summarize(meta: Mapping[str, str], files: Iterable[tuple[str, str | None, str | None, str | None]],
              pending: Iterable[str]) -> CatalogSummary:
    """The summary of a catalog with these manifest values, files ((path, content hash, skip
    reason, skip detail) each) and pending marks: from its table or from a writer's memory."""
    hashes: dict[str, str] = {}
    skipped = []
    for path, content_hash, reason, detail in files:
        hashes[path] = content_hash or ""
        if reason:
            skipped.append((path, reason, detail or ""))
    pending = frozenset(pending)
    return CatalogSummary(meta=MappingProxyType(dict(meta)), files=len(hashes), pending=pending,
                          skipped=tuple(sorted(skipped)), pending_known=frozenset(pending & hashes.keys()),
                          hashes=MappingProxyType(hashes))


def entry_from_row(row: dict) -> CatalogEntry:
    chunks = tuple(IndexedChunk(*item) for item in json.loads(row["chunks"] or "[]"))
    file = FileEntry(row["key"], row["size_bytes"], row["mtime_ns"], row["content_hash"], Language(row["language"]))
    return CatalogEntry(file, chunks, row["skip_reason"] or "", row["skip_detail"] or "")


def entry_row(entry: CatalogEntry) -> dict:
    return {
        "kind": _FILE,
        "key": entry.file.relative_path,
        "size_bytes": entry.file.size_bytes,
        "mtime_ns": entry.file.mtime_ns,
        "content_hash": entry.file.content_hash,
        "language": entry.file.language.value,
        "chunks": json.dumps([[c.id, c.snippet_hash, c.signature_digest] for c in entry.chunks]),
        "skip_reason": entry.skip_reason,
        "skip_detail": entry.skip_detail,
    }


def _rows(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=_SCHEMA)


def _meta_rows(meta: Mapping[str, str]) -> pa.Table:
    return _rows([{"kind": _META, "key": k, "value": v} for k, v in sorted(meta.items())])


def _keyed(kind: str, keys: list[str]) -> str:
    return f"kind = {sqlf.sql_string(kind)} AND {sqlf.sql_in('key', keys)}"


def _slices(items: list[str]) -> Iterable[list[str]]:
    for start in range(0, len(items), _PATH_BATCH):
        yield items[start : start + _PATH_BATCH]


def _legacy_rows(path: Path) -> pa.Table:
    """The rows of a catalog kept in SQLite by earlier versions (a column added later may be
    missing: its values are empty)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        columns = {row[1] for row in conn.execute("PRAGMA table_info(files)")}
        detail = "skip_detail" if "skip_detail" in columns else "''"
        rows = [
            {"kind": _FILE, "key": p, "size_bytes": size, "mtime_ns": mtime, "content_hash": h, "language": lang,
             "chunks": chunks, "skip_reason": reason, "skip_detail": det}
            for p, size, mtime, h, lang, chunks, reason, det in conn.execute(
                f"SELECT relative_path, size_bytes, mtime_ns, content_hash, language, chunks, skip_reason, {detail}"
                " FROM files")
        ]
        rows += [{"kind": _PENDING, "key": p} for (p,) in conn.execute("SELECT relative_path FROM pending")]
        rows += [{"kind": _META, "key": k, "value": v} for k, v in conn.execute("SELECT key, value FROM meta")]
    finally:
        conn.close()
    return _rows(rows)


def skips_to_json(skipped: Iterable[SkippedFile]) -> str:
    """A scan's skips as a manifest value (a remote searcher's status lists them)."""
    return json.dumps([[s.relative_path, s.reason, s.detail, s.folder] for s in skipped])


def skips_from_json(text: str) -> tuple[SkippedFile, ...]:
    try:
        return tuple(SkippedFile(path, reason, detail, bool(folder))
                     for path, reason, detail, folder in json.loads(text))
    except (ValueError, TypeError):
        return ()
