"""The chunk table in LanceDB: batched writes, full-text and vector search, maintenance.

One `ChunkStore` wraps one table (one embedding-model identity, see `schema.table_name`).
Writes are serialised by a lock and batched by the caller: one `apply_changes` per sync
produces one LanceDB commit, because every commit is a new table version and per-file
writes would multiply versions (and small files) by the number of changed files.
Searches run concurrently with writes; LanceDB gives each query a consistent version.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Any, cast

import lance
import lancedb
import numpy as np
import pyarrow as pa
from lance.fragment import FragmentMetadata, write_fragments
from lancedb.index import FTS, IvfPq
from lancedb.query import LanceVectorQueryBuilder

from codecompass.common.chunks import Chunk, Language, NodeKind, SymbolReference
from codecompass.common.files import tree_bytes
from codecompass.common.identifiers import split_identifiers
from codecompass.retrieval import filters as sqlf
from codecompass.retrieval import packing
from codecompass.retrieval.filters import Filters
from codecompass.retrieval.location import list_tables
from codecompass.retrieval.readcache import DatasetView, ReadCache, VectorSnapshot, vectors_of
from codecompass.retrieval.schema import (
    CHUNK_COLUMNS,
    FORMAT_METADATA_KEY,
    FTS_COLUMN,
    INDEX_FORMAT_VERSION,
    SOURCES_PREFIX,
    STATIC_FLAG_COLUMN,
    STATIC_VECTOR_COLUMN,
    TABLE_PREFIX,
    VECTOR_COLUMN,
    VECTOR_TYPE,
    EmbeddingModel,
    chunk_schema,
    chunk_table_of_sources,
    sources_schema,
    sources_table_name,
    table_name,
)

# Below this many vectors an exhaustive scan is exact and fast enough (30k x 384 dims: ~40-70 ms
# on 2 busy cores); above it the scan's linear cost starts to dominate query latency. The
# 200k-line target workspace has 10k-30k chunks, so it never leaves the exact path.
ANN_MIN_ROWS = 100_000
# IVF_PQ probing/refinement: PQ distances are coarse, so candidates are re-ranked with exact
# distances (refine) and enough partitions are probed to keep recall high.
ANN_NPROBES = 50
ANN_REFINE_FACTOR = 10
# Unindexed rows are matched by an exhaustive scan that tokenises each row per query
# (measured ~0.05-0.1 ms per row on 2 cores), so past this many rows an index update pays off.
MAX_UNINDEXED_ROWS = 500
FTS_INDEX_NAME = "search_text_idx"
# Keeps `IN (...)` predicates to a size DataFusion plans quickly.
_ID_BATCH = 1_000
# Versions younger than this survive `maintain()`: a search that started on an older version
# may still be reading its files.
DEFAULT_VERSION_RETENTION = timedelta(seconds=30)
# Chunks (and their unit vectors) a reader keeps built between searches of one table version:
# a dozen searches' candidates, ~20 MB on ws-300k (see `readcache`).
READ_CACHE_CHUNKS = 4_000
# Source texts a store keeps (characters): ws-300k's whole source is ~10M.
READ_CACHE_TEXT_CHARS = 16_000_000


class StoreError(Exception):
    """A store operation that cannot proceed; the message says why."""


class DimensionMismatch(StoreError):
    def __init__(self, expected: int, actual: int, what: str = "query vector") -> None:
        super().__init__(
            f"{what} has {actual} dimensions but the index was built for {expected}; "
            "vectors from different embedding models cannot be compared"
        )
        self.expected = expected
        self.actual = actual


@dataclass(frozen=True)
class StoredChunk:
    chunk: Chunk
    has_vector: bool


@dataclass(frozen=True)
class VectorCounts:
    """Rows of the table by the vectors they have."""

    total: int
    primary: int  # with a primary vector
    static: int  # with a static vector (0 without a static channel)
    static_only: int  # with a static vector and no primary one yet


@dataclass(frozen=True)
class ScoredChunk:
    """A search hit with its raw channel score: BM25 (lexical) or cosine similarity in
    [-1, 1] (vector). Ranking policy lives in `ranking.py`, never here."""

    chunk: Chunk
    score: float


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


def _batches(values: Sequence[str], size: int = _ID_BATCH) -> Iterator[Sequence[str]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


class ChunkStore:
    def __init__(
        self,
        db: lancedb.DBConnection,
        table: lancedb.table.Table,
        *,
        model: EmbeddingModel,
        chunker_version: str,
        static: EmbeddingModel | None,
        name: str,
        created: bool,
        rebuilt: bool,
        uri: str,
        sources: lancedb.table.Table,
    ) -> None:
        self._db = db
        self._table = table
        # Texts that chunks' full sources are slices of (see `packing`).
        self._sources = sources
        # Source keys found unreferenced by a maintenance run, and when: deleted by a later run
        # once older than the version retention, so a search reading an older table version
        # still finds the texts its rows point at.
        self._unreferenced_since: dict[str, float] = {}
        self.model = model
        # The static channel's model; None when this index has no static channel.
        self.static = static
        self.chunker_version = chunker_version
        self.table_name = name
        # True when this open started from an empty table (first use or rebuild): whatever
        # catalog the caller keeps about indexed files no longer describes the table.
        self.created = created
        self.rebuilt = rebuilt
        self.uri = uri
        self._write_lock = threading.Lock()
        self._schema = chunk_schema(model, chunker_version, static)
        self._has_vector_index = self._vector_index_exists(VECTOR_COLUMN)
        self._has_static_index = static is not None and self._vector_index_exists(STATIC_VECTOR_COLUMN)
        # (table version, names, qualified names): see `names`.
        self._names: tuple[int, frozenset[str], frozenset[str]] | None = None
        self._in_degrees: tuple[int, dict[str, int]] | None = None
        self._vector_counts: tuple[int, VectorCounts] | None = None
        self._chunk_rows = DatasetView(table)
        self._source_rows = DatasetView(sources)
        self._chunk_cache: ReadCache[Chunk] = ReadCache(READ_CACHE_CHUNKS)
        # Source texts never go stale: a key is the hash of its text.
        self._text_cache: ReadCache[str] = ReadCache(READ_CACHE_TEXT_CHARS, weigh=len)
        self._vectors_lock = threading.Lock()
        self._vectors: tuple[int, VectorSnapshot] | None = None

    @classmethod
    def open(
        cls,
        uri: str,
        *,
        model: EmbeddingModel,
        chunker_version: str,
        static: EmbeddingModel | None = None,
        storage_options: dict | None = None,
    ) -> ChunkStore:
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
            if _format_of(db.open_table(existing)) == INDEX_FORMAT_VERSION:
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
    def attach(
        cls,
        db: lancedb.DBConnection,
        uri: str,
        *,
        model: EmbeddingModel,
        chunker_version: str,
        static: EmbeddingModel | None = None,
    ) -> ChunkStore | None:
        """The existing table of this identity, for reading only: never creates or drops a
        table (that is the writer's `open`); None when the table or its sources are missing or
        of another index format."""
        name = table_name(model, chunker_version, static)
        try:
            table = db.open_table(name)
            sources = db.open_table(sources_table_name(name))
        except (ValueError, FileNotFoundError):
            return None
        if _format_of(table) != INDEX_FORMAT_VERSION:
            return None
        return cls(db, table, model=model, chunker_version=chunker_version, static=static, name=name,
                   created=False, rebuilt=False, uri=uri, sources=sources)

    def checkout_latest(self) -> None:
        """Read the newest committed version from now on (a searcher's handle: the writer's
        sees its own commits). Chunks first: the writer commits texts before the chunks that
        name them, so texts read after the chunks hold every text those chunks need."""
        self._table.checkout_latest()
        self._sources.checkout_latest()

    # ---- writes -------------------------------------------------------------------------

    def apply_changes(
        self,
        *,
        upserts: list[Chunk],
        delete_ids: list[str],
        vectors: dict[str, np.ndarray],
        static_vectors: dict[str, np.ndarray] | None = None,
    ) -> None:
        """Upsert `upserts` and delete `delete_ids` in a single commit.

        A chunk whose id is in `vectors` is stored with that vector; the others are stored
        without one (`has_vector=False`) and become searchable by vector once `set_vectors`
        provides it. `static_vectors` fill the static column the same way (ignored when the
        index has no static channel); the caller computes them for every upsert, so a
        rewritten chunk never keeps the static vector of its old text. Ids present in both lists
        are upserted, not deleted: the caller computed deletions from the old file state, and a
        stable id that reappears is an update.

        New source texts are added to the sources table first (its own commit, made only when
        a text is new): a kill -9 in between leaves unreferenced texts, which maintenance
        removes, never a chunk whose text is missing.
        """
        upsert_ids = {c.id for c in upserts}
        to_delete = sorted({i for i in delete_ids if i not in upsert_ids})
        if not upserts and not to_delete:
            return
        static_vectors = self._checked_vectors(upsert_ids, vectors, static_vectors)
        with self._write_lock:
            if upserts:
                data, texts = self._to_arrow(upserts, vectors, static_vectors)
                self._add_sources(texts)
                merge = self._table.merge_insert("id").when_matched_update_all().when_not_matched_insert_all()
                if to_delete:
                    # Folding the deletion into the merge keeps a sync at one table version.
                    merge = merge.when_not_matched_by_source_delete(sqlf.sql_in("id", to_delete))
                merge.execute(data, on_bad_vectors="null")
            else:
                self._table.delete(sqlf.sql_in("id", to_delete))

    def set_vectors(self, vectors: dict[str, np.ndarray]) -> None:
        """Attach vectors to existing chunks in one commit; ids no longer present are ignored
        (the chunk was deleted by a sync while its embedding was being computed)."""
        if not vectors:
            return
        ids = list(vectors)
        matrix = np.stack([self._check_dims(vectors[i], f"vector for chunk {i!r}") for i in ids])
        data = pa.table(
            {
                "id": pa.array(ids, pa.string()),
                "has_vector": pa.array([True] * len(ids), pa.bool_()),
                VECTOR_COLUMN: _vector_array(matrix, self.model.dimensions),
                "embedding_model_id": pa.array([self.model.model_id] * len(ids), pa.string()),
                "embedding_model_version": pa.array([self.model.model_version] * len(ids), pa.string()),
                "embedding_dimensions": pa.array([self.model.dimensions] * len(ids), pa.int32()),
            }
        )
        with self._write_lock:
            self._table.merge_insert("id").when_matched_update_all().execute(data)

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
        static_vectors = self._checked_vectors(upsert_ids, vectors, static_vectors)
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
            chunk_fragments=_write_uncommitted(data, self._table.to_lance()),
            source_fragments=_write_uncommitted(sources, self._sources.to_lance()) if keys else (),
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
            chunks = self._table.to_lance()
            operation = _replacing_rows(chunks, paths, chunk_fragments)
            if operation is not None:
                lance.LanceDataset.commit(chunks, operation, read_version=chunks.version)
                self._table.checkout_latest()

    # ---- lookups ------------------------------------------------------------------------

    def vectors_for_snippets(self, snippet_hashes: list[str]) -> dict[str, np.ndarray]:
        """Existing vectors by snippet hash: identical code is never embedded twice."""
        found: dict[str, np.ndarray] = {}
        for batch in _batches(sorted(set(snippet_hashes))):
            rows = self._scan(
                sqlf.combine(sqlf.sql_in("snippet_hash", batch), "has_vector = true"),
                ["snippet_hash", VECTOR_COLUMN],
            )
            hashes = rows.column("snippet_hash").to_pylist()
            matrix = vectors_of(rows.column(VECTOR_COLUMN), self.model.dimensions)
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

    def references_into(self, chunk_ids: list[str]) -> dict[str, list[str]]:
        """{referencing chunk id: the ids among `chunk_ids` it references}: incoming edges."""
        wanted = set(chunk_ids)
        found: dict[str, list[str]] = {}
        for batch in _batches(sorted(wanted)):
            rows = self._scan(f"array_has_any(reference_ids, {sqlf.sql_list(batch)})", ["id", "reference_ids"])
            for chunk_id, refs in zip(rows.column("id").to_pylist(), rows.column("reference_ids").to_pylist(),
                                      strict=True):
                found[chunk_id] = [r for r in dict.fromkeys(refs or ()) if r in wanted]
        return found

    def references_of(self, chunk_ids: list[str]) -> dict[str, list[str]]:
        """{chunk id: ids of the chunks it references}: outgoing edges, resolved at index time."""
        found: dict[str, list[str]] = {}
        for batch in _batches(sorted(set(chunk_ids))):
            rows = self._scan(sqlf.sql_in("id", batch), ["id", "reference_ids"])
            for chunk_id, refs in zip(rows.column("id").to_pylist(), rows.column("reference_ids").to_pylist(),
                                      strict=True):
                found[chunk_id] = [r for r in dict.fromkeys(refs or ()) if r]
        return found

    def cosines(self, chunk_ids: Sequence[str], primary: np.ndarray | None,
                static: np.ndarray | None) -> dict[str, tuple[float | None, float | None]]:
        """{chunk id: (cosine of its primary vector to `primary`, of its static vector to
        `static`)}, None where the chunk has no such vector or no query vector was given: every
        candidate's similarity, whichever channel found it (raw features of the ranking)."""
        if not chunk_ids or (primary is None and static is None):
            return {}
        if primary is not None:
            primary = _unit(self._check_dims(primary, "query vector"))
        if static is not None and self.static is not None:
            static = _unit(_checked(static, self.static.dimensions, "static query vector"))
        else:
            static = None
        snapshot = self.vector_snapshot()
        ids = [i for i in dict.fromkeys(chunk_ids) if i in snapshot.position]
        positions = [snapshot.position[i] for i in ids]
        none: list[float | None] = [None] * len(ids)
        p_sims = snapshot.cosines(positions, primary, static=False) if primary is not None else none
        s_sims = snapshot.cosines(positions, static, static=True) if static is not None else none
        return {i: (p, s) for i, p, s in zip(ids, p_sims, s_sims, strict=True)}

    def vector_snapshot(self) -> VectorSnapshot:
        """Every row's unit vectors at the version this handle reads, read once per version
        (~35 ms on ws-300k)."""
        version = self._table.version
        with self._vectors_lock:
            if self._vectors is None or self._vectors[0] != version:
                dataset = self._chunk_rows.dataset()
                self._vectors = (version, VectorSnapshot.read(
                    dataset, self.model.dimensions, self.static.dimensions if self.static is not None else None,
                    CHUNK_COLUMNS))
            return self._vectors[1]

    def outline(self) -> list[dict]:
        """Every chunk's identity and place (no code): id, name, qualified_name, node_kind,
        relative_path, start_line, end_line, depth, is_test."""
        columns = ["id", "name", "qualified_name", "node_kind", "relative_path", "start_line", "end_line", "depth",
                   "is_test"]
        return self._scan(None, columns).to_pylist()

    def in_degrees(self, chunk_ids: Sequence[str]) -> dict[str, int]:
        """{chunk id: how many chunks of the index reference it} (the reference graph's in-degree).

        The whole graph's in-degrees are counted once per table version (one scan of the edge
        column) and looked up after: a search asks for a hundred candidates, and a filtered scan
        per search costs more than counting every edge once."""
        version = self._table.version
        cached = self._in_degrees
        if cached is None or cached[0] != version:
            counts: dict[str, int] = {}
            for refs in self._scan(None, ["reference_ids"]).column("reference_ids").to_pylist():
                for target in dict.fromkeys(refs or ()):
                    counts[target] = counts.get(target, 0) + 1
            cached = self._in_degrees = (version, counts)
        return {i: cached[1].get(i, 0) for i in chunk_ids}

    def chunk_ids_for_files(self, relative_paths: list[str]) -> list[str]:
        found: list[str] = []
        for batch in _batches(sorted(set(relative_paths))):
            rows = self._scan(sqlf.sql_in("relative_path", batch), ["id"])
            found.extend(rows.column("id").to_pylist())
        return found

    def get_chunks(self, ids: list[str]) -> list[Chunk]:
        """Chunks in the order of `ids`; unknown ids are skipped."""
        found = self._chunk_cache.get_many(ids, self._load_chunks, self._table.version)
        return [found[i] for i in ids if i in found]

    def _hit_chunks(self, ids: Sequence[str]) -> dict[str, Chunk]:
        """{id: chunk} for a search's hits. Without a vector index the rows are taken by their
        place in the version's vector snapshot (the search reads it anyway), ~2x faster than the
        filtered scan used otherwise."""
        loader = partial(self._take_chunks, self.vector_snapshot()) if not self._has_vector_index \
            else self._load_chunks
        return self._chunk_cache.get_many(ids, loader, self._table.version)

    def _take_chunks(self, snapshot: VectorSnapshot, ids: list[str]) -> dict[str, Chunk]:
        """The chunks `ids` taken by their place in `snapshot`'s version; any id it does not
        hold (written since) is found by a scan."""
        placed = [i for i in ids if i in snapshot.position]
        rows = snapshot.rows.take([snapshot.position[i] for i in placed])
        by_id = {chunk.id: chunk for chunk in self._chunks_of(rows)}
        if missing := [i for i in ids if i not in by_id]:
            by_id.update(self._load_chunks(missing))
        return by_id

    def _load_chunks(self, ids: list[str]) -> dict[str, Chunk]:
        by_id: dict[str, Chunk] = {}
        for batch in _batches(sorted(ids)):
            for chunk in self._chunks_of(self._scan(sqlf.sql_in("id", batch), list(CHUNK_COLUMNS))):
                by_id[chunk.id] = chunk
        return by_id

    def get_stored(self, ids: list[str]) -> list[StoredChunk]:
        by_id: dict[str, StoredChunk] = {}
        for batch in _batches(sorted(set(ids))):
            rows = self._scan(sqlf.sql_in("id", batch), list(CHUNK_COLUMNS))
            flags = rows.column("has_vector").to_pylist()
            for chunk, flag in zip(self._chunks_of(rows), flags, strict=True):
                by_id[chunk.id] = StoredChunk(chunk=chunk, has_vector=bool(flag))
        return [by_id[i] for i in ids if i in by_id]

    def counts(self) -> tuple[int, int]:
        """(total chunks, chunks with a vector)."""
        return self._table.count_rows(), self._table.count_rows("has_vector = true")

    def vector_counts(self) -> VectorCounts:
        """Rows by the vectors they have: what each vector channel can search. Counted once per
        table version (four scans, ~6 ms a search on ws-300k otherwise)."""
        version = self._table.version
        cached = self._vector_counts
        if cached is not None and cached[0] == version:
            return cached[1]
        total, primary = self.counts()
        if self.static is None:
            counts = VectorCounts(total=total, primary=primary, static=0, static_only=0)
        else:
            static = self._table.count_rows(f"{STATIC_FLAG_COLUMN} = true")
            static_only = self._table.count_rows(f"{STATIC_FLAG_COLUMN} = true AND has_vector = false")
            counts = VectorCounts(total=total, primary=primary, static=static, static_only=static_only)
        self._vector_counts = (version, counts)
        return counts

    def count_matching(self, filters: Filters) -> int:
        """Chunks the filters admit."""
        where = sqlf.to_sql(filters)
        return self._table.count_rows(where) if where else self._table.count_rows()

    def names(self) -> tuple[frozenset[str], frozenset[str]]:
        """(every chunk name, every qualified name) in the table, read once per table version:
        the vocabulary a mistyped identifier is matched against."""
        version = self._table.version
        cached = self._names
        if cached is not None and cached[0] == version:
            return cached[1], cached[2]
        rows = self._scan(None, ["name", "qualified_name"])
        names = frozenset(n for n in rows.column("name").to_pylist() if n)
        qualified = frozenset(n for n in rows.column("qualified_name").to_pylist() if n)
        self._names = (version, names, qualified)
        return names, qualified

    # ---- search -------------------------------------------------------------------------

    def search_lexical(self, query: str, filters: Filters, limit: int) -> list[ScoredChunk]:
        """Raw BM25 over the split-identifier text, best first.

        Rows written since the FTS index was last built are searched exhaustively by LanceDB,
        so a chunk is findable the moment `apply_changes` returns.
        """
        text = split_identifiers(query)
        if limit <= 0 or not text:
            return []
        search = self._table.search(text, query_type="fts", fts_columns=FTS_COLUMN)
        where = sqlf.to_sql(filters)
        if where:
            search = search.where(where)
        return self._scored(search.select(["id", "_score"]).limit(limit).to_arrow(), "_score", float)

    def find_by_names(self, names: Sequence[str], filters: Filters, limit: int) -> list[Chunk]:
        """Chunks whose name or qualified name equals one of `names`, ignoring case."""
        lowered = sorted({n.lower() for n in names if n})
        if limit <= 0 or not lowered:
            return []
        values = ", ".join(sqlf.sql_string(n) for n in lowered)
        predicate = sqlf.combine(
            f"(lower(name) IN ({values}) OR lower(qualified_name) IN ({values}))", sqlf.to_sql(filters)
        )
        ids = self._scan(predicate, ["id"], limit).column("id").to_pylist()
        found = self._hit_chunks(ids)
        return [found[i] for i in ids if i in found]

    def find_by_path(self, path: str, filters: Filters, limit: int) -> list[Chunk]:
        """Chunks of the files whose relative path is `path` or ends with `/path`, ignoring
        case, outermost first."""
        wanted = path.lower().strip("/")
        if limit <= 0 or not wanted:
            return []
        predicate = sqlf.combine(
            f"(lower(relative_path) = {sqlf.sql_string(wanted)}"
            f" OR ends_with(lower(relative_path), {sqlf.sql_string('/' + wanted)}))",
            sqlf.to_sql(filters),
        )
        ids = self._scan(predicate, ["id"], limit).column("id").to_pylist()
        found = self._hit_chunks(ids)
        chunks = [found[i] for i in ids if i in found]
        chunks.sort(key=lambda c: (c.depth, c.relative_path, c.start_line))
        return chunks

    def search_vector(self, vector: np.ndarray, filters: Filters, limit: int) -> list[ScoredChunk]:
        """Nearest chunks by cosine similarity among rows that have a vector.

        Filters are applied before the nearest-neighbour step (pre-filtering), so a narrow
        filter still returns up to `limit` hits.
        """
        if limit <= 0:
            return []
        query = self._check_dims(vector, "query vector")
        if not self._has_vector_index:
            snapshot = self.vector_snapshot()
            return self._exact(snapshot, query, False, snapshot.has_primary, filters, limit)
        return self._nearest(VECTOR_COLUMN, "has_vector = true", query, filters, limit)

    def search_static_vector(
        self, vector: np.ndarray, filters: Filters, limit: int, *, without_primary: bool
    ) -> list[ScoredChunk]:
        """Nearest chunks by cosine similarity of their static vectors: among the rows that have
        no primary vector yet (`without_primary`), or among every row with a static vector
        (the primary model could not embed the query). Empty without a static channel."""
        if limit <= 0 or self.static is None:
            return []
        query = _checked(vector, self.static.dimensions, "static query vector")
        if not self._has_static_index:
            snapshot = self.vector_snapshot()
            assert snapshot.has_static is not None, "a store with a static channel reads its static vectors"
            rows = snapshot.has_static & ~snapshot.has_primary if without_primary else snapshot.has_static
            return self._exact(snapshot, query, True, rows, filters, limit)
        where = f"{STATIC_FLAG_COLUMN} = true" + (" AND has_vector = false" if without_primary else "")
        return self._nearest(STATIC_VECTOR_COLUMN, where, query, filters, limit)

    def _exact(self, snapshot: VectorSnapshot, query: np.ndarray, static: bool, rows: np.ndarray,
               filters: Filters, limit: int) -> list[ScoredChunk]:
        """Exact nearest neighbours in memory among `rows` (a mask) that the filters admit:
        below ANN_MIN_ROWS there is no vector index, and a scan of the vector column per query
        cost ~45 ms on ws-300k where the snapshot's matrix product costs ~3."""
        where = sqlf.to_sql(filters)
        if where:
            admitted = np.zeros(len(snapshot.ids), dtype=bool)
            admitted[[snapshot.position[i] for i in self._scan(where, ["id"]).column("id").to_pylist()
                      if i in snapshot.position]] = True
            rows = rows & admitted
        hits = snapshot.nearest(_unit(query), static, rows, limit)
        ids = [snapshot.ids[row] for row, _ in hits]
        found = self._hit_chunks(ids)
        return [ScoredChunk(chunk=found[i], score=score) for i, (_, score) in zip(ids, hits, strict=True)
                if i in found]

    def _nearest(
        self, column: str, where: str, query: np.ndarray, filters: Filters, limit: int
    ) -> list[ScoredChunk]:
        # Table.search is annotated with the base builder; a vector query gets the vector builder
        # (LanceTable's own overloads say so).
        vector_query = cast(LanceVectorQueryBuilder,
                            self._table.search(query, vector_column_name=column, query_type="vector"))
        predicate = sqlf.combine(where, sqlf.to_sql(filters))
        assert predicate is not None, "both callers pass a non-empty `where`"
        search = (
            vector_query
            .distance_type("cosine")
            .where(predicate, prefilter=True)
            .select(["id", "_distance"])
            .limit(limit)
            .nprobes(ANN_NPROBES)
            .refine_factor(ANN_REFINE_FACTOR)
        )
        return self._scored(search.to_arrow(), "_distance", lambda d: 1.0 - float(d))

    def _scored(self, rows: pa.Table, column: str, score: Callable[[Any], float]) -> list[ScoredChunk]:
        """Hits (rows of `id` and a score `column`) as chunks, in order; a chunk gone from the
        table since the query read it (a commit in between) is skipped."""
        ids = rows.column("id").to_pylist()
        found = self._hit_chunks(ids)
        return [ScoredChunk(chunk=found[i], score=score(v))
                for i, v in zip(ids, rows.column(column).to_pylist(), strict=True) if i in found]

    # ---- maintenance --------------------------------------------------------------------

    def needs_maintenance(self) -> bool:
        """Whether `maintain()` is due for search speed: rows exist but no FTS index has been
        built, enough rows are unindexed that exhaustive matching over them costs more than
        an index update (see MAX_UNINDEXED_ROWS), or the table has grown past ANN_MIN_ROWS.
        Cheap (index statistics and row counts, a few ms): callers may ask after every sync."""
        has_fts = False
        for name, status in self.index_status().items():
            if name == FTS_INDEX_NAME:
                has_fts = True
                if status["unindexed"] > MAX_UNINDEXED_ROWS:
                    return True
        if not has_fts and self._table.count_rows() > 0:
            return True
        if self.static is not None and not self._has_static_index \
                and self._table.count_rows(f"{STATIC_FLAG_COLUMN} = true") >= ANN_MIN_ROWS:
            return True
        return not self._has_vector_index and self._table.count_rows("has_vector = true") >= ANN_MIN_ROWS

    def maintain(self, *, retention: timedelta = DEFAULT_VERSION_RETENTION) -> None:
        """Build missing indexes, fold unindexed rows into existing ones, compact small
        files, delete source texts no chunk has used for `retention`, and drop versions
        older than `retention` (with the data files only they used).

        Runs on a schedule or when `needs_maintenance()` says so, never inside a write: the
        first FTS build takes seconds on a large table, and an update about one second
        (30k chunks). Searches keep working meanwhile (unindexed rows are matched
        exhaustively); writes wait for it.

        Versions younger than `retention` survive, and with them the files they read (a
        cold index or an embedding run rewrites most rows within that time): `cleanup_due_at`
        says when running this again frees them.
        """
        with self._write_lock:
            self._ensure_fts_index()
            self._ensure_vector_index()
            self._delete_unreferenced_sources(retention)
            self._table.optimize(cleanup_older_than=retention)
            self._sources.optimize(cleanup_older_than=retention)

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

    def version_count(self) -> int:
        return len(self._table.list_versions())

    def size_bytes(self) -> int:
        """Bytes on disk for a local store (all versions and indexes, the chunk table and its
        sources); for object stores the manifests' count of live data and index files."""
        if "://" not in self.uri or self.uri.startswith("file://"):
            root = self.uri.removeprefix("file://")
            return sum(
                tree_bytes(os.path.join(root, f"{name}.lance"))
                for name in (self.table_name, sources_table_name(self.table_name))
            )
        return _total_bytes(self._table) + _total_bytes(self._sources)

    def index_status(self) -> dict[str, dict[str, int]]:
        """Indexed/unindexed row counts per index, for diagnostics and benchmarks."""
        out = {}
        for index in self._table.list_indices():
            stats = self._table.index_stats(index.name)
            if stats is not None:
                out[index.name] = {
                    "indexed": int(stats.num_indexed_rows),
                    "unindexed": int(stats.num_unindexed_rows),
                }
        return out

    # ---- internals ----------------------------------------------------------------------

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
        for batch in _batches(expired):
            self._sources.delete(sqlf.sql_in("key", batch))
        for key in expired:
            del self._unreferenced_since[key]

    def _vector_index_exists(self, column: str) -> bool:
        return any(i.columns == [column] for i in self._table.list_indices())

    def _ensure_vector_index(self) -> None:
        """An ANN index per vector column once it holds ANN_MIN_ROWS vectors. The static
        column fills with the chunks, so it crosses the threshold first (in a cold index, long
        before the primary column)."""
        if not self._has_vector_index and self._table.count_rows("has_vector = true") >= ANN_MIN_ROWS:
            self._table.create_index(VECTOR_COLUMN, config=IvfPq(distance_type="cosine"), replace=True)
            self._has_vector_index = True
        if self.static is not None and not self._has_static_index \
                and self._table.count_rows(f"{STATIC_FLAG_COLUMN} = true") >= ANN_MIN_ROWS:
            self._table.create_index(STATIC_VECTOR_COLUMN, config=IvfPq(distance_type="cosine"), replace=True)
            self._has_static_index = True

    def _check_dims(self, vector: np.ndarray, what: str) -> np.ndarray:
        return _checked(vector, self.model.dimensions, what)

    def _checked_vectors(
        self, upsert_ids: set[str], vectors: dict[str, np.ndarray], static_vectors: dict[str, np.ndarray] | None
    ) -> dict[str, np.ndarray]:
        """Check the dimensions of the upserts' vectors; the static vectors to store (none
        without a static channel)."""
        for chunk_id, vector in vectors.items():
            if chunk_id in upsert_ids:
                self._check_dims(vector, f"vector for chunk {chunk_id!r}")
        if self.static is None:
            return {}
        for chunk_id, vector in (static_vectors or {}).items():
            if chunk_id in upsert_ids:
                _checked(vector, self.static.dimensions, f"static vector for chunk {chunk_id!r}")
        return static_vectors or {}

    def _drop_duplicate_sources(self, writes: Sequence[StagedWrite], had_texts: bool) -> None:
        """Delete every copy but the oldest of the texts just committed more than once (see
        `commit_staged`), in one version; none when there are no copies."""
        counts = Counter(k for w in writes for k in w.source_keys)
        # Before the commit the table was empty, or any staged key may already have been there.
        suspects = sorted(counts) if had_texts else sorted(k for k, n in counts.items() if n > 1)
        if not suspects:
            return
        sources = self._sources.to_lance()
        addresses: dict[str, list[int]] = {}
        for batch in _batches(suspects):
            rows = sources.to_table(columns=["key"], filter=sqlf.sql_in("key", batch), with_row_address=True)
            for key, address in zip(rows.column("key").to_pylist(), rows.column("_rowaddr").to_pylist(),
                                    strict=True):
                addresses.setdefault(key, []).append(address)
        # Row addresses grow with fragment ids, which grow with commits: the smallest is the oldest.
        extra = sorted(a for found in addresses.values() for a in sorted(found)[1:])
        if not extra:
            return
        sources.delete(f"_rowaddr IN ({', '.join(map(str, extra))})")
        self._sources.checkout_latest()

    def _scan(self, where: str | None, columns: list[str], limit: int | None = None) -> pa.Table:
        return self._chunk_rows.scan(where, columns, limit)

    def _to_arrow(
        self, chunks: list[Chunk], vectors: dict[str, np.ndarray], static_vectors: dict[str, np.ndarray]
    ) -> tuple[pa.Table, dict[str, str]]:
        """The rows of `chunks` and the source texts they slice (see `packing`)."""
        dims = self.model.dimensions
        has = [c.id in vectors for c in chunks]
        vector_col = _masked_vectors(chunks, vectors, dims)
        has_static = [c.id in static_vectors for c in chunks]
        static_col = (
            _masked_vectors(chunks, static_vectors, self.static.dimensions) if self.static is not None else None
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
                    {
                        "name": r.name,
                        "signature": r.signature,
                        "relative_path": r.relative_path,
                        "chunk_id": r.chunk_id,
                    }
                    for r in c.references
                ]
                for c in chunks
            ],
            "reference_ids": [[r.chunk_id for r in c.references if r.chunk_id] for c in chunks],
            "embedding_token_count": col("embedding_token_count"),
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
        for batch in _batches(sorted(texts)):
            rows = self._scan_sources(sqlf.sql_in("key", batch), ["key"])
            present.update(rows.column("key").to_pylist())
        for key in texts:
            self._unreferenced_since.pop(key, None)
        new = sorted(k for k in texts if k not in present)
        if not new:
            return
        schema = self._sources.schema
        self._sources.add(
            pa.Table.from_arrays(
                [pa.array(new, pa.string()), pa.array([texts[k] for k in new], pa.string())], schema=schema
            )
        )

    def _source_texts(self, keys: Iterable[str]) -> dict[str, str]:
        return self._text_cache.get_many(list(dict.fromkeys(keys)), self._load_source_texts)

    def _load_source_texts(self, keys: list[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for batch in _batches(sorted(keys)):
            rows = self._scan_sources(sqlf.sql_in("key", batch), ["key", "text"])
            found.update(zip(rows.column("key").to_pylist(), rows.column("text").to_pylist(), strict=True))
        return found

    def _scan_sources(self, where: str, columns: list[str]) -> pa.Table:
        return self._source_rows.scan(where, columns)

    def _chunks_of(self, rows: pa.Table) -> list[Chunk]:
        """Chunks of rows selected with `CHUNK_COLUMNS` (any other columns are ignored), their
        full source and JSDoc sliced from the sources table in one lookup."""
        records = rows.select(list(CHUNK_COLUMNS)).to_pylist()
        texts = self._source_texts(r["source_key"] for r in records if r["source_key"])
        return [_chunk_from_row(r, texts) for r in records]


@dataclass(frozen=True)
class StagedWrite:
    """Rows a worker wrote as uncommitted Lance fragments (`ChunkStore.stage`), for the writer
    to commit (`ChunkStore.commit_staged`). Plain data: `to_json` crosses process boundaries."""

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


def _write_uncommitted(data: pa.Table, dataset: lance.LanceDataset) -> tuple[FragmentMetadata, ...]:
    """Data files for `data` in `dataset`'s folder, in its file format, referenced by no
    version yet. The dataset object carries the connection's storage options (credentials,
    endpoint), so they are never copied here."""
    return tuple(write_fragments(data, dataset, mode="append", data_storage_version=dataset.data_storage_version))


def _total_bytes(table: lancedb.table.Table) -> int:
    # lancedb annotates stats() as its TableStatistics dataclass, but it returns the older API's dict.
    return int(cast(dict[str, Any], table.stats())["total_bytes"])


def _replacing_rows(
    dataset: lance.LanceDataset, paths: Sequence[str], new: list[FragmentMetadata]
) -> lance.LanceOperation.BaseOperation | None:
    """One operation that adds the fragments `new` and deletes every row of `paths` the table
    holds (a plain Append when it holds none); None when there is nothing to do."""
    stale: dict[int, list[int]] = {}
    if paths and dataset.count_rows() > 0:
        for batch in _batches(paths):
            rows = dataset.to_table(columns=["id"], filter=sqlf.sql_in("relative_path", batch),
                                    with_row_address=True)
            for address in rows.column("_rowaddr").to_pylist():
                # A row address is the fragment id in its upper 32 bits.
                stale.setdefault(address >> 32, []).append(address)
    if not stale:
        return lance.LanceOperation.Append(new) if new else None
    updated: list[FragmentMetadata] = []
    removed: list[int] = []
    for fragment_id, addresses in sorted(stale.items()):
        fragment = dataset.get_fragment(fragment_id)
        assert fragment is not None, "the id comes from a row address the dataset just returned"
        kept = fragment.delete(f"_rowaddr IN ({', '.join(map(str, addresses))})")
        if kept is None:
            removed.append(fragment_id)
        else:
            updated.append(kept)
    return lance.LanceOperation.Update(removed_fragment_ids=removed, updated_fragments=updated, new_fragments=new)


def _checked(vector: np.ndarray, dims: int, what: str) -> np.ndarray:
    arr = np.asarray(vector, dtype=np.float32).reshape(-1)
    if arr.shape[0] != dims:
        raise DimensionMismatch(dims, int(arr.shape[0]), what)
    return arr


def _masked_vectors(chunks: list[Chunk], vectors: dict[str, np.ndarray], dims: int) -> pa.Array:
    """A vector column for `chunks`: each chunk's vector from `vectors`, null where it has none."""
    has = [c.id in vectors for c in chunks]
    matrix = np.zeros((len(chunks), dims), dtype=np.float32)
    for row, chunk in enumerate(chunks):
        if has[row]:
            matrix[row] = np.asarray(vectors[chunk.id], dtype=np.float32).reshape(-1)
    return _vector_array(matrix, dims, mask=np.array([not h for h in has]))


def _vector_array(matrix: np.ndarray, dims: int, mask: np.ndarray | None = None) -> pa.Array:
    flat = pa.array(matrix.astype(VECTOR_TYPE.to_pandas_dtype(), copy=False).reshape(-1), type=VECTOR_TYPE)
    if mask is None or not mask.any():
        return pa.FixedSizeListArray.from_arrays(flat, dims)
    return pa.FixedSizeListArray.from_arrays(flat, dims, mask=pa.array(mask, pa.bool_()))


def _chunk_from_row(row: dict, texts: dict[str, str]) -> Chunk:
    key = row["source_key"] or ""
    full_source = packing.slice_text(texts.get(key), row["source_offset"] or 0, row["source_length"] or 0)
    if full_source is None:
        raise StoreError(f"the source text of chunk {row['id']!r} is missing from the index; re-index the workspace")
    jsdoc = row["jsdoc"] or ""
    if row["jsdoc_offset"] is not None and row["jsdoc_offset"] >= 0:
        sliced = packing.slice_text(texts.get(key), row["jsdoc_offset"], row["jsdoc_length"] or 0)
        if sliced is None:
            raise StoreError(f"the JSDoc of chunk {row['id']!r} is missing from the index; re-index the workspace")
        jsdoc = sliced
    references = tuple(
        SymbolReference(
            name=r["name"] or "",
            signature=r["signature"] or "",
            relative_path=r["relative_path"] or "",
            chunk_id=r["chunk_id"] or "",
        )
        for r in row["references"] or ()
    )
    signature = row["signature"] or ""
    collapsed = row["collapsed_source"] or ""
    if row["collapsed_spans"] is not None:
        collapsed = packing.decode_collapsed(full_source, collapsed, row["collapsed_spans"])
    return Chunk(
        id=row["id"],
        snippet_hash=row["snippet_hash"],
        relative_path=row["relative_path"],
        language=Language(row["language"]),
        node_kind=NodeKind(row["node_kind"]),
        name=row["name"] or "",
        qualified_name=row["qualified_name"] or "",
        parent_id=row["parent_id"] or "",
        child_ids=tuple(row["child_ids"] or ()),
        depth=row["depth"] or 0,
        signature=signature,
        full_source=full_source,
        collapsed_source=collapsed,
        start_line=row["start_line"] or 0,
        end_line=row["end_line"] or 0,
        jsdoc=jsdoc,
        jsdoc_start_line=row["jsdoc_start_line"] or 0,
        relevant_imports=tuple(row["relevant_imports"] or ()),
        is_test=bool(row["is_test"]),
        embedding_text=packing.decode_embedding(
            row["embedding_prefix"] or "", row["embedding_layout"] or 0, signature, references, collapsed
        ),
        references=references,
        embedding_token_count=row["embedding_token_count"] or 0,
    )


def _version_time(version: dict) -> float:
    stamp = version["timestamp"]
    return stamp.timestamp() if hasattr(stamp, "timestamp") else float(stamp)


def _format_of(table: lancedb.table.Table) -> str | None:
    metadata = table.schema.metadata or {}
    value = metadata.get(FORMAT_METADATA_KEY.encode())
    return value.decode() if value is not None else None


def _same_identity(old_name: str, new_name: str) -> bool:
    """Whether `old_name` is this index (or this index under another format): names end
    `_f<format>_<digest>`."""
    return old_name.rsplit("_", 2)[0] == new_name.rsplit("_", 2)[0]


def _unit(vector: np.ndarray) -> np.ndarray:
    vector = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector
