"""The write side of a chunk table in LanceDB: batched writes, staged writes, the FTS index
builds, compaction and version cleanup.

`ChunkWriter` is the index's only writable handle (STYLE 18): it extends `ChunkReader` (its
own reads plan its writes) with every method that changes the table; the searcher never holds
one. Writes are serialised by a lock and batched by the caller: one `apply_changes` per sync
produces one LanceDB commit, because every commit is a new table version and per-file writes
would multiply versions (and small files) by the number of changed files.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Self

import lance
import lancedb
import numpy as np
import pyarrow as pa
from lance.fragment import FragmentMetadata
from lancedb.index import FTS, BTree

from codecompass.common.chunks import Chunk
from codecompass.common.identifiers import split_identifiers
from codecompass.contracts.embedding.model import EmbeddingModel
from codecompass.retrieval import filter_sql as sqlf
from codecompass.retrieval import packing
from codecompass.retrieval.commits import commit, commit_replacing, matching_rows, replacing, write_uncommitted
from codecompass.retrieval.location import list_tables
from codecompass.retrieval.schema import (
    CHUNK_COLUMNS,
    FTS_COLUMN,
    PACKED_INT4_TYPE,
    SOURCES_PREFIX,
    STATIC_FLAG_COLUMN,
    STATIC_VECTOR_COLUMN,
    TABLE_PREFIX,
    VECTOR_COLUMN,
    VECTOR_TYPE,
    chunk_schema,
    chunk_table_of_sources,
    int4_width,
    sources_schema,
    sources_table_name,
    stored_int4,
    stored_vectors,
    table_name,
)
from codecompass.retrieval.search.chunk_reader import (
    ChunkReader,
    StoreError,
    batches,
    checked_vector,
    in_current_format,
)
from codecompass.retrieval.search.readcache import unit_rows, vectors_of

# Unindexed rows are matched by an exhaustive scan that tokenises each row per query
# (measured ~0.05-0.1 ms per row on 2 cores), so past this many rows an index update pays off.
MAX_UNINDEXED_ROWS = 500
FTS_INDEX_NAME = "search_text_idx"
# B-trees on the keys a write looks rows up by: the chunk id (the rows an edit replaces) and the
# source text's key (the texts already stored). Without them each lookup read the whole column:
# 7.1 ms against 0.9 for an edit's two ids on ws-300k's 22k rows. Rows written since the last
# maintenance are matched by a scan of their few fragments, as the full-text index's are.
KEY_INDEXES = (("id", "id_idx"), ("key", "source_key_idx"))
# Compaction merges fragments below this many rows (and rewrites those with many deleted rows),
# and leaves the others alone. Lance's default (about a million) made every fragment of our
# tables small, so each maintenance, every 20 s of an embedding run, rewrote the whole table,
# and the copies kept for the version retention held 5-7x the settled index on disk; a one-file
# edit's maintenance rewrote every source text (10 MB on ws-300k, a second of both cores).
COMPACT_TARGET_ROWS = 1024
# Once an index has settled and the versions of its run are gone, its fragments are merged into
# fragments of up to this many rows, once: ws-300k settles as 21 fragments of 1,024-1,792 rows,
# and one fragment stores the same rows in 18.9 MiB instead of 20.0 (each fragment pays for its
# own pages and compression). Not at the settle itself: the versions still kept then hold about
# as much again as the index, and a rewrite of the whole table on top of them would pass twice
# the settled size (`cleanup` does it when nothing else is kept).
CONSOLIDATED_ROWS = 1_048_576
# A fragment is rewritten without its deleted rows once they are this share of it. An
# embedding run deletes each row once (its vector is written as a new row) in table order,
# so most fragments go from none deleted to all (dropped, nothing rewritten) within a run.
DEAD_ROWS_SHARE = 0.5
# Rows written since the last maintenance are indexed as a new segment of each index (a
# delta); past this many segments, and when an index settles, they are merged into one.
# Merging rewrites the whole index (lance), which every maintenance of an embedding run did.
MAX_INDEX_SEGMENTS = 4
# Versions younger than this survive `maintain()`: a search that started on an older version
# may still be reading its files.
DEFAULT_VERSION_RETENTION = timedelta(seconds=30)


def _search_text(chunk: Chunk) -> str:
    """Text indexed for BM25: the symbol's names weigh more by appearing in several fields."""
    fields = [
        chunk.name,
        chunk.qualified_name,
        chunk.signature,
        chunk.jsdoc,
        chunk.collapsed_source,
    ]
    return split_identifiers("\n".join(fields))



class ChunkWriter(ChunkReader):
    # Its own commits move its tables: every read asks for the version.
    _live = True

    def __init__(
        self, db: lancedb.DBConnection, table: lancedb.table.Table, *, created: bool, rebuilt: bool, **identity: Any
    ) -> None:
        # `identity`: the reader's keywords (sources, model, chunker_version, static, name, uri).
        super().__init__(table, **identity)
        self._db = db
        # Source keys found unreferenced by a maintenance run, and when: deleted by a later run
        # once older than the version retention, so a search reading an older table version
        # still finds the texts its rows point at.
        self._unreferenced_since: dict[str, float] = {}
        # True when this open started from an empty table (first use or rebuild): whatever
        # catalog the caller keeps about indexed files no longer describes the table.
        self.created = created
        self.rebuilt = rebuilt
        self._write_lock = threading.Lock()
        self._schema = chunk_schema(self.model, self.chunker_version, self.static)
        # Set by a settling maintenance, cleared by the `cleanup` that merges the fragments.
        self._consolidation_due = False

    @classmethod
    def open(
        cls,
        uri: str,
        *,
        model: EmbeddingModel,
        chunker_version: str,
        static: EmbeddingModel | None = None,
        storage_options: dict | None = None,
    ) -> ChunkWriter:
        """Open (creating if missing) the table for this model, static model (None: no static
        channel) and chunker version.

        `uri` is a local directory or an object-store URI (`s3://bucket/path`, ...);
        `storage_options` go to LanceDB untouched (credentials, endpoint, region).
        Tables stamped with another index format are dropped: their layout is not ours. So
        is a sources table without its chunk table. Tables of other models or chunker versions
        of this format stay until `drop_retired_tables` (the caller knows when the new one is
        complete).
        """
        db = lancedb.connect(uri, storage_options=storage_options or None)
        name = table_name(model, chunker_version, static)
        sources_name = sources_table_name(name)
        rebuilt = False
        live: set[str] = set()
        existing_tables = list(list_tables(db))
        for existing in existing_tables:
            if not existing.startswith(TABLE_PREFIX):
                continue
            if in_current_format(db.open_table(existing)):
                live.add(existing)
                continue
            db.drop_table(existing)
            rebuilt = rebuilt or _same_identity(existing, name)
        sources_live = False
        for existing in existing_tables:
            if not existing.startswith(SOURCES_PREFIX):
                continue
            if chunk_table_of_sources(existing) in live:
                sources_live = sources_live or existing == sources_name
                continue
            db.drop_table(existing)
        if name in live and not sources_live:
            # Chunks whose texts are gone cannot give back their source: start over.
            db.drop_table(name)
            live.discard(name)
            rebuilt = True
        # The sources table first: a chunk table never exists without it.
        if sources_live:
            sources = db.open_table(sources_name)
        else:
            sources = db.create_table(sources_name, schema=sources_schema(model, chunker_version))
        created = name not in live
        if created:
            table = db.create_table(name, schema=chunk_schema(model, chunker_version, static))
        else:
            table = db.open_table(name)
        return cls(
            db,
            table,
            model=model,
            chunker_version=chunker_version,
            static=static,
            name=name,
            created=created,
            rebuilt=rebuilt,
            uri=uri,
            sources=sources,
        )

    @classmethod
    def _attached(cls, db: lancedb.DBConnection, table: lancedb.table.Table, **identity: Any) -> Self:
        # `attach` on a writer is a shard worker's handle: it stages rows (`stage`) and never
        # creates or drops a table (that is `open`); only the writer that opened the index commits.
        return cls(db, table, created=False, rebuilt=False, **identity)

    # ---- writes -------------------------------------------------------------------------

    def apply_changes(
        self,
        *,
        upserts: list[Chunk],
        delete_ids: list[str],
        vectors: dict[str, np.ndarray],
        static_vectors: dict[str, np.ndarray] | None = None,
        keep_vectors: Collection[str] = (),
    ) -> int:
        """Upsert `upserts` and delete `delete_ids` in a single commit; the number of vectors kept.

        A chunk whose id is in `vectors` is stored with that vector; the others are stored
        without one (`has_vector=False`) and become searchable by vector once `set_vectors`
        provides it. A chunk of `keep_vectors` not in `vectors` keeps the vector of a row this
        write replaces or deletes with the same snippet. `static_vectors` fill the static column
        the same way (ignored when the index has no static channel); the caller computes them
        for every upsert, so a rewritten chunk never keeps the static vector of its old text.
        Ids present in both lists are upserted, not deleted: the caller computed deletions from
        the old file state, and a stable id that reappears is an update.

        New source texts are added to the sources table first (its own commit, made only when
        a text is new): a kill -9 in between leaves unreferenced texts, which maintenance
        removes, never a chunk whose text is missing.
        """
        upsert_ids = {c.id for c in upserts}
        if not upserts and not delete_ids:
            return 0
        vectors, static_vectors = self._checked_vectors(upsert_ids, vectors, static_vectors)
        with self._write_lock:
            # The dataset this handle keeps, moved to the version: a new one each write would
            # load the id index again (2.8 ms against 0.9 for the lookup below).
            chunks = self._chunk_rows.dataset()
            # The rows replaced, read once: their addresses for the commit, and the vectors kept.
            keep = {i for i in keep_vectors if i in upsert_ids and i not in vectors}
            old = matching_rows(chunks, (sqlf.sql_in("id", batch) for batch in
                                         batches(sorted(upsert_ids | set(delete_ids)))),
                                ["id", "snippet_hash", "has_vector", VECTOR_COLUMN] if keep else [])
            kept = self._kept_vectors(old, [c for c in upserts if c.id in keep]) if keep else {}
            fragments: tuple[FragmentMetadata, ...] = ()
            if upserts:
                data, texts = self._to_arrow(upserts, {**vectors, **kept}, static_vectors)
                self._add_sources(texts)
                fragments = write_uncommitted(data, chunks)
            # The new rows and the removal of every row they replace or the caller deletes, in
            # one version: a reader never sees a file's chunks missing or twice.
            if commit(chunks, replacing(chunks, old.column("_rowaddr").to_pylist(), fragments)) is not None:
                self._table.checkout_latest()
        return len(kept)

    def _kept_vectors(self, old: pa.Table, chunks: list[Chunk]) -> dict[str, np.ndarray]:
        """The vectors of the rows in `old` (replaced or deleted) that `chunks` rewrite with the
        same snippet: the row of the same id, else any row of that snippet (code moved between
        the files of one write)."""
        if "id" not in old.column_names:  # an empty table: nothing replaced
            return {}
        stored = old.filter(old.column("has_vector"))
        matrix = unit_rows(vectors_of(stored.column(VECTOR_COLUMN), self.model.dimensions))
        ids, hashes = stored.column("id").to_pylist(), stored.column("snippet_hash").to_pylist()
        by_id = {i: (h, row) for row, (i, h) in enumerate(zip(ids, hashes, strict=True))}
        by_snippet = {h: row for row, h in enumerate(hashes)}
        kept: dict[str, np.ndarray] = {}
        for chunk in chunks:
            same, row = by_id.get(chunk.id, ("", -1))
            if same != chunk.snippet_hash:
                row = by_snippet.get(chunk.snippet_hash, -1)
            if row >= 0:
                kept[chunk.id] = matrix[row]
        return kept

    def set_vectors(self, vectors: dict[str, np.ndarray]) -> None:
        """Attach vectors to existing chunks in one commit; ids no longer present are ignored
        (the chunk was deleted by a sync while its embedding was being computed).

        The rows are rewritten as a write rewrites them: read by id (through the id index),
        given their vectors, and written as a new fragment that replaces them in one commit.
        LanceDB's `merge_insert` joined the whole table instead (300-470 ms a call on ws-300k,
        holding the write lock an edit's sync waits for), and with an index on the key it
        rewrites the vector columns of every fragment the rows are in (0.5 MB for two rows)."""
        if not vectors:
            return
        vectors = {i: self._check_dims(v, f"vector for chunk {i!r}") for i, v in vectors.items()}
        with self._write_lock:
            dataset = self._chunk_rows.dataset()
            old = matching_rows(dataset, (sqlf.sql_in("id", batch) for batch in batches(sorted(vectors))),
                                self._schema.names)
            if not old.num_rows:
                return
            ids = old.column("id").to_pylist()
            rows = old.select(self._schema.names)
            count = len(ids)
            model = self.model
            for name, array in (
                ("has_vector", pa.array([True] * count, pa.bool_())),
                (VECTOR_COLUMN, _vector_array(np.stack([vectors[i] for i in ids]), model.dimensions)),
                ("embedding_model_id", pa.array([model.model_id] * count, pa.string())),
                ("embedding_model_version", pa.array([model.model_version] * count, pa.string())),
                ("embedding_dimensions", pa.array([model.dimensions] * count, pa.int32())),
            ):
                index = self._schema.get_field_index(name)
                rows = rows.set_column(index, self._schema.field(index), array)
            fragments = write_uncommitted(rows, dataset)
            if commit(dataset, replacing(dataset, old.column("_rowaddr").to_pylist(), fragments)) is not None:
                self._table.checkout_latest()

    # ---- staged writes (indexing spread over workers, see `shard`) ------------------------

    def stage(
        self,
        upserts: list[Chunk],
        vectors: dict[str, np.ndarray],
        static_vectors: dict[str, np.ndarray] | None = None,
    ) -> StagedWrite:
        """Write the rows of `upserts` (exactly as `apply_changes` would store them) and the
        texts they slice as Lance fragments of the chunk and sources tables, WITHOUT committing
        them: no reader, and no table version, knows of them until `commit_staged`. A worker
        that dies after this leaves only data files no version references.

        Any process that opened the index may stage (a worker needs read access and the right
        to put files); only the writer commits. The texts are not checked against the sources
        table: the writer's commit drops whatever copies end up duplicated (`commit_staged`).
        """
        upsert_ids = {c.id for c in upserts}
        vectors, static_vectors = self._checked_vectors(upsert_ids, vectors, static_vectors)
        if not upserts:
            return StagedWrite(table=self.table_name, chunk_fragments=(), source_fragments=(), source_keys=(),
                               paths=(), rows=0)
        data, texts = self._to_arrow(upserts, vectors, static_vectors)
        keys = sorted(texts)
        sources = pa.Table.from_arrays(
            [pa.array(keys, pa.string()), pa.array([texts[k] for k in keys], pa.string())],
            schema=self._sources.schema,
        )
        return StagedWrite(
            table=self.table_name,
            chunk_fragments=write_uncommitted(data, self._table.to_lance()),
            source_fragments=write_uncommitted(sources, self._sources.to_lance()) if keys else (),
            source_keys=tuple(keys),
            paths=tuple(sorted({c.relative_path for c in upserts})),
            rows=len(upserts),
        )

    def commit_staged(self, writes: Sequence[StagedWrite], *, replace_paths: Iterable[str] = ()) -> None:
        """Make staged writes visible: every staged text in one version of the sources table,
        then every staged chunk in one version of the chunk table. Sources first, as in
        `apply_changes`: a chunk is never visible without its text; a kill in between leaves
        texts no chunk uses, which maintenance removes.

        The chunk commit also removes the rows the table held for every file a write covers and
        for `replace_paths` (files now skipped, empty or gone), in the same version: a
        re-index over existing rows replaces them rather than duplicating their ids.

        Two workers stage the same text when two of their files share it (texts are keyed by
        content), and a re-index stages texts the table already has. Such copies are identical,
        so a lookup by key reads the same text whichever it meets; they are deleted by row
        address, keeping the oldest, in a second version of the sources table made only when
        there are any, before the chunks that use them are committed: a reader never reaches a
        duplicate through a chunk, and a kill before that delete leaves only identical copies.
        """
        foreign = sorted({w.table for w in writes} - {self.table_name})
        if foreign:
            raise StoreError(f"staged rows for table {foreign[0]} cannot be committed to {self.table_name}: "
                             "the workers indexed under another model, static model or chunker version")
        source_fragments = [f for w in writes for f in w.source_fragments]
        chunk_fragments = [f for w in writes for f in w.chunk_fragments]
        paths = sorted({p for w in writes for p in w.paths} | set(replace_paths))
        with self._write_lock:
            # Texts a maintenance run found unused are about to be used again.
            for write in writes:
                for key in write.source_keys:
                    self._unreferenced_since.pop(key, None)
            if source_fragments:
                sources = self._sources.to_lance()
                had_texts = sources.count_rows() > 0
                lance.LanceDataset.commit(sources, lance.LanceOperation.Append(source_fragments),
                                          read_version=sources.version)
                self._sources.checkout_latest()
                self._drop_duplicate_sources(writes, had_texts)
            replaced = (sqlf.sql_in("relative_path", batch) for batch in batches(paths))
            if commit_replacing(self._table.to_lance(), replaced, chunk_fragments):
                self._table.checkout_latest()

    # ---- reads that plan writes ---------------------------------------------------------

    def vectors_for_snippets(self, snippet_hashes: list[str]) -> dict[str, np.ndarray]:
        """Existing vectors by snippet hash: identical code is never embedded twice."""
        found: dict[str, np.ndarray] = {}
        for batch in batches(sorted(set(snippet_hashes))):
            rows = self._scan(
                sqlf.combine(sqlf.sql_in("snippet_hash", batch), "has_vector = true"),
                ["snippet_hash", VECTOR_COLUMN],
            )
            hashes = rows.column("snippet_hash").to_pylist()
            matrix = unit_rows(vectors_of(rows.column(VECTOR_COLUMN), self.model.dimensions))
            for h, vector in zip(hashes, matrix, strict=True):
                found.setdefault(h, vector)
        return found

    def chunks_missing_vectors(self, limit: int) -> list[Chunk]:
        """Chunks still waiting for a vector, implementation files before tests (they are what
        most queries are after). Rows without embedding text (a cold index's lexical-only first
        pass, which its full pass rewrites) are not ready for one."""
        out: list[Chunk] = []
        for is_test in ("false", "true"):
            remaining = limit - len(out)
            if remaining <= 0:
                break
            rows = self._scan(
                f"has_vector = false AND is_test = {is_test} AND embedding_prefix != ''",
                list(CHUNK_COLUMNS),
                remaining,
            )
            out.extend(self._chunks_of(rows))
        return out

    def ids_referencing(self, chunk_ids: list[str]) -> list[str]:
        """Chunks whose references point at any of `chunk_ids` (signature-change cascade)."""
        return sorted(self.references_into(chunk_ids))

    def chunk_ids_for_files(self, relative_paths: list[str]) -> list[str]:
        found: list[str] = []
        for batch in batches(sorted(set(relative_paths))):
            rows = self._scan(sqlf.sql_in("relative_path", batch), ["id"])
            found.extend(rows.column("id").to_pylist())
        return found

    # ---- maintenance --------------------------------------------------------------------

    def needs_maintenance(self) -> bool:
        """Whether `maintain()` is due for search speed: rows exist but no FTS index has been
        built, enough rows are unindexed that exhaustive matching over them costs more than
        an index update (see MAX_UNINDEXED_ROWS).
        Cheap (index statistics and row counts, a few ms): callers may ask after every sync."""
        stats = self._table.index_stats(FTS_INDEX_NAME)
        if stats is not None:
            return stats.num_unindexed_rows > MAX_UNINDEXED_ROWS
        return self._table.count_rows() > 0

    def maintain(self, *, retention: timedelta = DEFAULT_VERSION_RETENTION, settle: bool = False) -> None:
        """Build missing indexes, index unindexed rows (a new segment of each index, merged
        into one past MAX_INDEX_SEGMENTS or with `settle`: once a run of writes is over),
        compact small fragments, delete source texts no chunk has used for `retention`, and
        drop versions older than `retention` (with the data files only they used).

        Runs on a schedule or when `needs_maintenance()` says so, never inside a write: the
        first FTS build takes seconds on a large table, and an update about one second
        (30k chunks). Searches keep working meanwhile (unindexed rows are matched
        exhaustively); writes wait for it.

        Versions younger than `retention` survive, and with them the files they read (a
        cold index or an embedding run rewrites most rows within that time): `cleanup_due_at`
        says when running this again frees them.
        """
        with self._write_lock:
            self._ensure_indexes()
            self._delete_unreferenced_sources(retention)
            # Old versions go first: what compaction writes then adds to less.
            self._drop_old_versions(retention)
            for table in (self._table, self._sources):
                # Settled, no fragment keeps its deleted rows: the index stays as it is now.
                table.to_lance().optimize.compact_files(
                    target_rows_per_fragment=COMPACT_TARGET_ROWS,
                    materialize_deletions_threshold=0.0 if settle else DEAD_ROWS_SHARE)
                table.checkout_latest()
            self._optimize_indexes(settle)
            self._drop_old_versions(retention)
            self._consolidation_due = self._consolidation_due or settle
            self._consolidate()

    def cleanup(self, retention: timedelta = DEFAULT_VERSION_RETENTION) -> None:
        """What `maintain` drops once it is old enough: source texts no chunk has used for
        `retention`, and versions older than it (with the files only they used); and once after
        a settle, when no older version is left, the merge into large fragments (`_consolidate`).
        For the moment `cleanup_due_at` names; a whole maintenance then, with an embedding run
        committing every few seconds, came every 4-5 s (155 on ws-300k) instead of every 20."""
        with self._write_lock:
            self._delete_unreferenced_sources(retention)
            self._drop_old_versions(retention)
            self._consolidate()

    def _consolidate(self) -> None:
        """After a settle, once the chunk table keeps no older version, merge its fragments into
        few large ones (see CONSOLIDATED_ROWS). The version it replaces is dropped by a later
        cleanup, one retention on, like any other."""
        if not self._consolidation_due or len(self._table.list_versions()) > 1:
            return
        self._table.to_lance().optimize.compact_files(target_rows_per_fragment=CONSOLIDATED_ROWS,
                                                      materialize_deletions_threshold=0.0)
        self._table.checkout_latest()
        self._consolidation_due = False

    def _drop_old_versions(self, retention: timedelta) -> None:
        """Versions of both tables older than `retention`, with the files only they used."""
        for table in (self._table, self._sources):
            table.to_lance().cleanup_old_versions(older_than=retention)
            table.checkout_latest()

    def _optimize_indexes(self, settle: bool) -> None:
        """Index the rows no index covers yet: as a new segment, or merged with the segments
        there are (all of them when settling, else once there are too many)."""
        segments = max((stats.num_indices or 1 for index in self._table.list_indices()
                        if (stats := self._table.index_stats(index.name)) is not None), default=1)
        merge = segments if settle or segments >= MAX_INDEX_SEGMENTS else 0
        self._table.to_lance().optimize.optimize_indices(num_indices_to_merge=merge)
        self._table.checkout_latest()
        self._sources.to_lance().optimize.optimize_indices()
        self._sources.checkout_latest()

    def build_indexes(self) -> None:
        """The full-text and key indexes, when the tables have none (a checkout's index just cloned
        from a base): built now rather than by the next maintenance, so the first searches rank
        with it and the first edit finds its rows through them."""
        with self._write_lock:
            self._ensure_indexes()

    def cleanup_due_at(self, retention: timedelta = DEFAULT_VERSION_RETENTION) -> float | None:
        """Epoch seconds after which `maintain(retention=retention)` would drop a version or
        a source text it cannot drop now; None when there is nothing left to drop."""
        due: list[float] = []
        for table in (self._table, self._sources):
            versions = table.list_versions()
            if len(versions) > 1:
                # Every version but the latest is dropped once old enough.
                oldest = min(_version_time(v) for v in versions)
                due.append(oldest + retention.total_seconds())
        if self._unreferenced_since:
            due.append(min(self._unreferenced_since.values()) + retention.total_seconds())
        return min(due) if due else None

    def drop_retired_tables(self) -> list[str]:
        """Drop the tables of every other model or chunker version (and their sources): call
        once this table is complete, so searches never lose their last complete index."""
        dropped = []
        mine = {self.table_name, sources_table_name(self.table_name)}
        for name in list_tables(self._db):
            if name.startswith((TABLE_PREFIX, SOURCES_PREFIX)) and name not in mine:
                self._db.drop_table(name)
                dropped.append(name)
        return dropped

    # ---- internals ----------------------------------------------------------------------

    def _ensure_indexes(self) -> None:
        """Build each index once (`KEY_INDEXES`, the full-text one); later rows stay matched
        unindexed until `_optimize_indexes` folds them in."""
        for table, (column, name) in zip((self._table, self._sources), KEY_INDEXES, strict=True):
            if table.count_rows() and not any(i.name == name for i in table.list_indices()):
                table.create_index(column, config=BTree(), name=name)
        self._ensure_fts_index()

    def _ensure_fts_index(self) -> None:
        """Build the FTS index once; later rows stay searchable unindexed and are folded in
        by `optimize()`, which updates the inverted index incrementally."""
        if any(i.index_type == "FTS" for i in self._table.list_indices()):
            return
        if self._table.count_rows() == 0:
            return
        self._table.create_index(
            FTS_COLUMN,
            config=FTS(
                with_position=False,
                base_tokenizer="simple",
                lower_case=True,
                # "validation" must meet "validate" (split from validateToken).
                stem=True,
                remove_stop_words=True,
                ascii_folding=True,
                # Long identifiers are common in code; the default (40) would drop them.
                max_token_length=None,
            ),
            replace=True,
            name=FTS_INDEX_NAME,
        )

    def _delete_unreferenced_sources(self, retention: timedelta) -> None:
        """Delete source texts no chunk has pointed at for `retention` (a search reading an
        older table version may still slice them until then)."""
        referenced = set(self._scan(None, ["source_key"]).column("source_key").to_pylist())
        stored = self._sources.search().select(["key"]).limit(max(self._sources.count_rows(), 1)).to_arrow()
        unreferenced = set(stored.column("key").to_pylist()) - referenced
        now = time.time()
        self._unreferenced_since = {k: self._unreferenced_since.get(k, now) for k in unreferenced}
        expired = sorted(k for k, since in self._unreferenced_since.items() if now - since >= retention.total_seconds())
        for batch in batches(expired):
            self._sources.delete(sqlf.sql_in("key", batch))
        for key in expired:
            del self._unreferenced_since[key]

    def _checked_vectors(
        self, upsert_ids: set[str], vectors: dict[str, np.ndarray], static_vectors: dict[str, np.ndarray] | None
    ) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Check the dimensions of the upserts' vectors; (the vectors, the static vectors) to
        store: none of the static ones without a static channel, and none that is not finite
        (a provider's NaN), whose chunk is stored without that vector instead."""
        for chunk_id, vector in vectors.items():
            if chunk_id in upsert_ids:
                self._check_dims(vector, f"vector for chunk {chunk_id!r}")
        vectors = {i: v for i, v in vectors.items() if np.isfinite(v).all()}
        if self.static is None:
            return vectors, {}
        for chunk_id, vector in (static_vectors or {}).items():
            if chunk_id in upsert_ids:
                checked_vector(vector, self.static.dimensions, f"static vector for chunk {chunk_id!r}")
        return vectors, {i: v for i, v in (static_vectors or {}).items() if np.isfinite(v).all()}

    def _drop_duplicate_sources(self, writes: Sequence[StagedWrite], had_texts: bool) -> None:
        """Delete every copy but the oldest of the texts just committed more than once (see
        `commit_staged`), in one version; none when there are no copies."""
        counts = Counter(k for w in writes for k in w.source_keys)
        # Before the commit the table was empty, or any staged key may already have been there.
        suspects = sorted(counts) if had_texts else sorted(k for k, n in counts.items() if n > 1)
        if not suspects:
            return
        sources = self._sources.to_lance()
        rows = matching_rows(sources, (sqlf.sql_in("key", batch) for batch in batches(suspects)), ["key"])
        addresses: dict[str, list[int]] = {}
        for key, address in zip(rows.column("key").to_pylist(), rows.column("_rowaddr").to_pylist(), strict=True):
            addresses.setdefault(key, []).append(address)
        # Row addresses grow with fragment ids, which grow with commits: the smallest is the oldest.
        extra = sorted(a for found in addresses.values() for a in sorted(found)[1:])
        if not extra:
            return
        sources.delete(f"_rowaddr IN ({', '.join(map(str, extra))})")
        self._sources.checkout_latest()

    def _to_arrow(
        self, chunks: list[Chunk], vectors: dict[str, np.ndarray], static_vectors: dict[str, np.ndarray]
    ) -> tuple[pa.Table, dict[str, str]]:
        """The rows of `chunks` and the source texts they slice (see `packing`)."""
        dims = self.model.dimensions
        has = [c.id in vectors for c in chunks]
        vector_col = _masked_vectors(chunks, vectors, dims)
        has_static = [c.id in static_vectors for c in chunks]
        static_col = (
            _masked_vectors(chunks, static_vectors, self.static.dimensions, int4=True)
            if self.static is not None
            else None
        )

        def col(attr: str) -> list:
            return [getattr(c, attr) for c in chunks]

        placements, texts = packing.place_sources(chunks)
        places = [placements[c.id] for c in chunks]
        embeddings = [packing.encode_embedding(c) for c in chunks]
        columns = {
            "id": col("id"),
            "snippet_hash": col("snippet_hash"),
            "relative_path": col("relative_path"),
            "language": [c.language.value for c in chunks],
            "node_kind": [c.node_kind.value for c in chunks],
            "name": col("name"),
            "qualified_name": col("qualified_name"),
            "parent_id": col("parent_id"),
            "child_ids": [list(c.child_ids) for c in chunks],
            "depth": col("depth"),
            "signature": col("signature"),
            "source_key": [p.key for p in places],
            "source_offset": [p.offset for p in places],
            "source_length": [p.length for p in places],
            "collapsed_source": [
                c.collapsed_source if p.collapsed_spans is None else p.collapsed_markers
                for c, p in zip(chunks, places, strict=True)
            ],
            "collapsed_spans": [None if p.collapsed_spans is None else list(p.collapsed_spans) for p in places],
            "start_line": col("start_line"),
            "end_line": col("end_line"),
            "jsdoc": [c.jsdoc if p.jsdoc_offset < 0 else "" for c, p in zip(chunks, places, strict=True)],
            "jsdoc_offset": [p.jsdoc_offset for p in places],
            "jsdoc_length": [len(c.jsdoc) if p.jsdoc_offset >= 0 else 0 for c, p in zip(chunks, places, strict=True)],
            "jsdoc_start_line": col("jsdoc_start_line"),
            "relevant_imports": [list(c.relevant_imports) for c in chunks],
            "is_test": col("is_test"),
            "embedding_prefix": [prefix for prefix, _ in embeddings],
            "embedding_layout": [layout for _, layout in embeddings],
            "references": [
                [
                    {"name": r.name, "signature": r.signature, "relative_path": r.relative_path}
                    for r in c.references
                ]
                for c in chunks
            ],
            "reference_ids": [[r.chunk_id for r in c.references] for c in chunks],
            "embedding_token_count": col("embedding_token_count"),
            "indent": col("indent"),
            FTS_COLUMN: [_search_text(c) for c in chunks],
            "has_vector": has,
            "embedding_model_id": [self.model.model_id if h else None for h in has],
            "embedding_model_version": [self.model.model_version if h else None for h in has],
            "embedding_dimensions": [dims if h else None for h in has],
            STATIC_FLAG_COLUMN: has_static,
        }
        arrays = []
        for field in self._schema:
            if field.name == VECTOR_COLUMN:
                arrays.append(vector_col)
            elif field.name == STATIC_VECTOR_COLUMN:
                arrays.append(static_col)
            else:
                arrays.append(pa.array(columns[field.name], type=field.type))
        return pa.Table.from_arrays(arrays, schema=self._schema), texts

    def _add_sources(self, texts: dict[str, str]) -> None:
        """Store the texts not stored yet (an unchanged file re-chunked adds nothing)."""
        if not texts:
            return
        present: set[str] = set()
        for batch in batches(sorted(texts)):
            rows = self._scan_sources(sqlf.sql_in("key", batch), ["key"])
            present.update(rows.column("key").to_pylist())
        for key in texts:
            self._unreferenced_since.pop(key, None)
        new = sorted(k for k in texts if k not in present)
        if not new:
            return
        # Through the dataset this handle keeps, as the chunk rows are written: LanceDB's `add`
        # asked for the schema and opened the dataset again first.
        dataset = self._source_rows.dataset()
        added = pa.Table.from_arrays([pa.array(new, pa.string()), pa.array([texts[k] for k in new], pa.string())],
                                     schema=dataset.schema)
        commit(dataset, replacing(dataset, (), write_uncommitted(added, dataset)))
        self._sources.checkout_latest()


@dataclass(frozen=True)
class StagedWrite:
    """Rows a worker wrote as uncommitted Lance fragments (`ChunkWriter.stage`), for the writer
    to commit (`ChunkWriter.commit_staged`). Plain data: `to_json` crosses process boundaries."""

    table: str  # the chunk table (index identity) the rows were made for
    chunk_fragments: tuple[FragmentMetadata, ...]
    source_fragments: tuple[FragmentMetadata, ...]
    source_keys: tuple[str, ...]  # the texts in `source_fragments`
    paths: tuple[str, ...]  # the files these chunks are all of (their old rows are replaced)
    rows: int

    def to_json(self) -> dict:
        return {
            "table": self.table,
            "chunk_fragments": [f.to_json() for f in self.chunk_fragments],
            "source_fragments": [f.to_json() for f in self.source_fragments],
            "source_keys": list(self.source_keys),
            "paths": list(self.paths),
            "rows": self.rows,
        }

    @classmethod
    def from_json(cls, data: dict) -> StagedWrite:
        return cls(
            table=data["table"],
            chunk_fragments=tuple(FragmentMetadata.from_json(json.dumps(f)) for f in data["chunk_fragments"]),
            source_fragments=tuple(FragmentMetadata.from_json(json.dumps(f)) for f in data["source_fragments"]),
            source_keys=tuple(data["source_keys"]),
            paths=tuple(data["paths"]),
            rows=int(data["rows"]),
        )



def _masked_vectors(chunks: list[Chunk], vectors: dict[str, np.ndarray], dims: int, *,
                    int4: bool = False) -> pa.Array:
    """A vector column for `chunks`: each chunk's vector from `vectors`, null where it has none;
    int8, or packed int4 (`int4`: the static column)."""
    has = [c.id in vectors for c in chunks]
    matrix = np.zeros((len(chunks), dims), dtype=np.float32)
    for row, chunk in enumerate(chunks):
        if has[row]:
            matrix[row] = np.asarray(vectors[chunk.id], dtype=np.float32).reshape(-1)
    mask = np.array([not h for h in has])
    if int4:
        flat = pa.array(stored_int4(matrix).reshape(-1), type=PACKED_INT4_TYPE)
        return _fixed_size_lists(flat, int4_width(dims), mask)
    return _vector_array(matrix, dims, mask=mask)


def _vector_array(matrix: np.ndarray, dims: int, mask: np.ndarray | None = None) -> pa.Array:
    return _fixed_size_lists(pa.array(stored_vectors(matrix).reshape(-1), type=VECTOR_TYPE), dims, mask)


def _fixed_size_lists(flat: pa.Array, width: int, mask: np.ndarray | None) -> pa.Array:
    if mask is None or not mask.any():
        return pa.FixedSizeListArray.from_arrays(flat, width)
    return pa.FixedSizeListArray.from_arrays(flat, width, mask=pa.array(mask, pa.bool_()))


def _version_time(version: dict) -> float:
    stamp = version["timestamp"]
    return stamp.timestamp() if hasattr(stamp, "timestamp") else float(stamp)


def _same_identity(old_name: str, new_name: str) -> bool:
    """Whether `old_name` is this index (or this index under another format): names end
    `_f<format>_<digest>`."""
    return old_name.rsplit("_", 2)[0] == new_name.rsplit("_", 2)[0]
