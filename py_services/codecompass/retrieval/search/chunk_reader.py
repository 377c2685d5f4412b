"""The read side of a chunk table in LanceDB: lexical, vector and name search, lookups and the
read caches behind them.

A `ChunkReader` reads one table (one embedding-model identity, see `schema.table_name`) and its
sources table, and has no method that writes: the searcher holds one (STYLE 18, zoekt's
searcher vs builder). The index's only writable handle is `index.chunk_writer.ChunkWriter`,
which extends this type, so everything here also serves the writer's own reads. Searches run
concurrently with the writer's commits; LanceDB gives each query a consistent version.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Self, cast

import lancedb
import numpy as np
import pyarrow as pa

from codecompass.common.chunks import Chunk, Language, NodeKind, SymbolReference
from codecompass.common.files import tree_bytes
from codecompass.common.identifiers import split_identifiers
from codecompass.common.readcache import ReadCache
from codecompass.contracts.embedding.model import EmbeddingModel
from codecompass.contracts.retrieval.filters import Filters
from codecompass.retrieval import filter_sql as sqlf
from codecompass.retrieval import packing
from codecompass.retrieval.schema import (
    CHUNK_COLUMNS,
    FORMAT_METADATA_KEY,
    FTS_COLUMN,
    INDEX_FORMAT_VERSION,
    sources_table_name,
    table_name,
)
from codecompass.retrieval.search.readcache import DatasetView, VectorSnapshot

# Keeps `IN (...)` predicates to a size DataFusion plans quickly.
_ID_BATCH = 1_000
# Full-text hits read past a search's cut, so that a run of equal scores across the cut is seen
# whole (see `search_lexical`); such a run is read up to this many times the cut, no further.
_TIE_SLACK = 8
_TIE_READ_CAP = 4
# Chunks a reader keeps built between searches, across table versions (by row), and what the
# searcher reads ahead while idle (searcher.ReadAhead). All of ws-300k's 22k chunks took ~200 MiB
# with their source texts (measured 2026-12-01); a larger workspace keeps 32k of them. Building a
# search's never-seen candidates from their rows was ~7 ms a channel, and with 16k of ws-300k's
# rows held, a question not asked before still met thousands of unread ones.
READ_CACHE_CHUNKS = 32_000
# Source texts a reader keeps (characters): ws-300k's whole source is ~10M.
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


def batches(values: Sequence[str], size: int = _ID_BATCH) -> Iterator[Sequence[str]]:
    """`values` in slices small enough for one `IN (...)` predicate."""
    for start in range(0, len(values), size):
        yield values[start : start + size]


def in_current_format(table: lancedb.table.Table) -> bool:
    """Whether `table` is stamped with the index format this code reads and writes."""
    metadata = table.schema.metadata or {}
    value = metadata.get(FORMAT_METADATA_KEY.encode())
    return value is not None and value.decode() == INDEX_FORMAT_VERSION


class ChunkReader:
    # Whether this handle's tables change under it: a writer's do with its own commits; a reader's
    # only when `checkout_latest` moves them (see `_version`).
    _live = False

    def __init__(
        self,
        table: lancedb.table.Table,
        *,
        sources: lancedb.table.Table,
        model: EmbeddingModel,
        chunker_version: str,
        static: EmbeddingModel | None,
        name: str,
        uri: str,
    ) -> None:
        self._table = table
        # Texts that chunks' full sources are slices of (see `packing`).
        self._sources = sources
        self.model = model
        # The static channel's model; None when this index has no static channel.
        self.static = static
        self.chunker_version = chunker_version
        self.table_name = name
        self.uri = uri
        self._vector_counts: tuple[int, VectorCounts] | None = None
        self._pinned = (table.version, sources.version)
        self._chunk_rows = DatasetView(table, self._version)
        self._source_rows = DatasetView(sources, self._sources_version)
        self._chunk_cache: ReadCache[Chunk] = ReadCache("searcher.chunks", READ_CACHE_CHUNKS)
        # Source texts never go stale: a key is the hash of its text.
        self._text_cache: ReadCache[str] = ReadCache("searcher.texts", READ_CACHE_TEXT_CHARS, weigh=len)
        self._vectors_lock = threading.Lock()
        self._vectors: tuple[int, VectorSnapshot] | None = None
        # What `read_ahead` has yet to build, for one version: ids in the version's order.
        self._ahead_lock = threading.Lock()
        self._ahead: tuple[int, list[str]] | None = None

    @classmethod
    def attach(
        cls,
        db: lancedb.DBConnection,
        uri: str,
        *,
        model: EmbeddingModel,
        chunker_version: str,
        static: EmbeddingModel | None = None,
    ) -> Self | None:
        """The existing table of this identity: None when the table or its sources are missing
        or of another index format. Never creates or drops a table (that is the writer's `open`)."""
        name = table_name(model, chunker_version, static)
        try:
            table = db.open_table(name)
            sources = db.open_table(sources_table_name(name))
        except (ValueError, FileNotFoundError):
            return None
        if not in_current_format(table):
            return None
        return cls._attached(db, table, sources=sources, model=model, chunker_version=chunker_version, static=static,
                             name=name, uri=uri)

    @classmethod
    def _attached(cls, db: lancedb.DBConnection, table: lancedb.table.Table, **identity: Any) -> Self:
        # A reader needs no connection: only the writer drops tables through one.
        return cls(table, **identity)

    def checkout_latest(self) -> None:
        """Read the newest committed version from now on (a searcher's handle: the writer's
        sees its own commits). Chunks first: the writer commits texts before the chunks that
        name them, so texts read after the chunks hold every text those chunks need.

        Searches call it every time on a local index, and mostly nothing was committed: each
        table's newest version is listed first (µs), and the tables move only when one differs.
        Moving them is a hop through LanceDB's event loop per call (0.3-1 ms each, four with the
        versions read back), which waits for the GIL behind a busy process: 2.5 ms of every
        search on ws-300k, ~4.6 under the MCP bench's load, for nothing new."""
        if (self._chunk_rows.latest_version(), self._source_rows.latest_version()) == self._pinned:
            return
        self._table.checkout_latest()
        self._sources.checkout_latest()
        self._pinned = (self._table.version, self._sources.version)

    def _version(self) -> int:
        """The version of the chunk table this handle reads. Asking the table is a hop through
        LanceDB's event loop (0.3-1 ms, a dozen times a search), so a reader's is pinned where it
        moves: at open and at `checkout_latest`; a writer's moves with its commits, so it asks."""
        return self._table.version if self._live else self._pinned[0]

    def _sources_version(self) -> int:
        return self._sources.version if self._live else self._pinned[1]

    # ---- lookups ------------------------------------------------------------------------

    def references_into(self, chunk_ids: list[str]) -> dict[str, list[str]]:
        """{referencing chunk id: the ids among `chunk_ids` it references}: incoming edges."""
        wanted = set(chunk_ids)
        found: dict[str, list[str]] = {}
        for batch in batches(sorted(wanted)):
            rows = self._scan(f"array_has_any(reference_ids, {sqlf.sql_list(batch)})", ["id", "reference_ids"])
            for chunk_id, refs in zip(rows.column("id").to_pylist(), rows.column("reference_ids").to_pylist(),
                                      strict=True):
                found[chunk_id] = [r for r in dict.fromkeys(refs or ()) if r in wanted]
        return found

    def references_of(self, chunk_ids: list[str]) -> dict[str, list[str]]:
        """{chunk id: ids of the chunks it references}: outgoing edges, resolved at index time."""
        found: dict[str, list[str]] = {}
        for batch in batches(sorted(set(chunk_ids))):
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
            static = _unit(checked_vector(static, self.static.dimensions, "static query vector"))
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
        version = self._version()
        with self._vectors_lock:
            if self._vectors is None or self._vectors[0] != version:
                dataset = self._chunk_rows.dataset()
                self._vectors = (version, VectorSnapshot.read(
                    dataset, self.model.dimensions, self.static.dimensions if self.static is not None else None,
                    CHUNK_COLUMNS, previous=self._vectors[1] if self._vectors is not None else None))
            return self._vectors[1]

    def outline(self) -> list[dict]:
        """Every chunk's identity and place (no code): id, name, qualified_name, node_kind,
        relative_path, start_line, end_line, depth, is_test."""
        columns = ["id", "name", "qualified_name", "node_kind", "relative_path", "start_line", "end_line", "depth",
                   "is_test"]
        return self._scan(None, columns).to_pylist()

    def in_degrees(self, chunk_ids: Sequence[str]) -> dict[str, int]:
        """{chunk id: how many chunks of the index reference it} (the reference graph's in-degree).

        Counted per fragment with the version's snapshot (a search asks for a hundred candidates,
        and a filtered scan per search costs more than counting every edge once); a new version
        counts only the fragments its commit changed."""
        return self.vector_snapshot().in_degrees(chunk_ids)

    def get_chunks(self, ids: list[str]) -> list[Chunk]:
        """Chunks in the order of `ids`; unknown ids are skipped."""
        found = self._hit_chunks(ids)
        return [found[i] for i in ids if i in found]

    def _hit_chunks(self, ids: Sequence[str]) -> dict[str, Chunk]:
        """{id: chunk} for a search's hits. The rows are taken by their place in the version's
        vector snapshot (the search reads it anyway), ~2x faster than a filtered scan, and kept
        under their row's key (`VectorSnapshot.row_keys`), not the version's: a commit (an edit's
        sync) leaves every row it did not rewrite cached, where it used to empty the cache and
        the searches after it read all their hits again."""
        snapshot = self.vector_snapshot()
        keys = snapshot.row_keys(ids)
        cached = self._chunk_cache.get_many(list(keys.values()), partial(self._take_rows, snapshot, keys))
        found = {i: cached[key] for i, key in keys.items() if key in cached}
        if elsewhere := [i for i in dict.fromkeys(ids) if i not in keys]:
            # Not in the snapshot's version (written since it was read): found by a scan, not kept.
            found.update(self._load_chunks(elsewhere))
        return found

    def read_ahead(self, limit: int) -> list[Chunk]:
        """Up to `limit` chunks of this version that no read has built yet, built now (and cached
        as a search's hits are), in the version's order (a cold index writes the implementation
        before the tests); [] once every row is built or the cache is full. For the searcher's
        idle time: a question's never-read candidates cost ~50 µs each to build. Each call also
        builds the name index of one fragment (`VectorSnapshot.index_names`)."""
        snapshot = self.vector_snapshot()
        snapshot.index_names()
        version = self._version()
        with self._ahead_lock:
            if self._ahead is None or self._ahead[0] != version:
                keys = snapshot.row_keys(snapshot.ids)
                self._ahead = (version, [i for i in snapshot.ids if keys[i] not in self._chunk_cache])
            pending = self._ahead[1]
            if not pending or self._chunk_cache.full:
                return []
            batch = pending[:limit]
            self._ahead = (version, pending[limit:])
        return list(self._hit_chunks(batch).values())

    def _take_rows(self, snapshot: VectorSnapshot, keys: dict[str, str], wanted: list[str]) -> dict[str, Chunk]:
        """{row key: chunk} for the `wanted` row keys (of `keys`, by id), taken from `snapshot`."""
        ids = {key: chunk_id for chunk_id, key in keys.items()}
        rows = snapshot.rows.take([snapshot.position[ids[key]] for key in wanted])
        return {keys[chunk.id]: chunk for chunk in self._chunks_of(rows)}

    def _load_chunks(self, ids: list[str]) -> dict[str, Chunk]:
        by_id: dict[str, Chunk] = {}
        for batch in batches(sorted(ids)):
            for chunk in self._chunks_of(self._scan(sqlf.sql_in("id", batch), list(CHUNK_COLUMNS))):
                by_id[chunk.id] = chunk
        return by_id

    def get_stored(self, ids: list[str]) -> list[StoredChunk]:
        by_id: dict[str, StoredChunk] = {}
        for batch in batches(sorted(set(ids))):
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
        version = self._version()
        cached = self._vector_counts
        if cached is not None and cached[0] == version:
            return cached[1]
        # Every search of a version reads its snapshot anyway: its flags are the counts, and a
        # new version (an edit's commit) skips four count scans.
        snapshot = self.vector_snapshot()
        primary_flags, static_flags = snapshot.has_primary, snapshot.has_static
        counts = VectorCounts(
            total=len(snapshot.ids), primary=int(primary_flags.sum()),
            static=int(static_flags.sum()) if static_flags is not None else 0,
            static_only=int((static_flags & ~primary_flags).sum()) if static_flags is not None else 0)
        self._vector_counts = (snapshot.dataset.version, counts)
        return counts

    def count_matching(self, filters: Filters) -> int:
        """Chunks the filters admit."""
        where = sqlf.to_sql(filters)
        return self._table.count_rows(where) if where else self._table.count_rows()

    def names(self) -> tuple[frozenset[str], frozenset[str]]:
        """(every chunk name, every qualified name) in the table: the vocabulary a mistyped
        identifier is matched against, from the version's snapshot (read by fragment)."""
        snapshot = self.vector_snapshot()
        return snapshot.names, snapshot.qualified_names

    # ---- search -------------------------------------------------------------------------

    def search_lexical(self, query: str, filters: Filters, limit: int) -> list[ScoredChunk]:
        """Raw BM25 over the split-identifier text, best first.

        Rows written since the FTS index was last built are searched exhaustively by LanceDB,
        so a chunk is findable the moment `apply_changes` returns.
        """
        text = split_identifiers(query)
        if limit <= 0 or not text:
            return []
        # Through the Lance dataset, as `_scan` reads: the same BM25, filter and unindexed rows as
        # LanceDB's FTS query (compared on ws-300k, scores equal), without its builder's ~5 ms of
        # schema fetches through its event loop per search.
        dataset, where = self._chunk_rows.dataset(), sqlf.to_sql(filters) or None
        # The engine returns equal scores (a file repeated across a monorepo's packages) in
        # whichever order it meets them, so a cut inside such a run would keep either copy from
        # one search to the next. Read past the cut until the run ends (or the cap), then cut by
        # (score, id): the same hits every time.
        wanted = limit + _TIE_SLACK
        while True:
            rows = dataset.to_table(
                columns=["id", "_score"], full_text_query={"query": text, "columns": [FTS_COLUMN]},
                filter=where, prefilter=True, limit=wanted)
            rows = rows.sort_by([("_score", "descending"), ("id", "ascending")])
            scores = rows.column("_score")
            if (rows.num_rows < wanted or wanted >= limit * _TIE_READ_CAP
                    or scores[wanted - 1].as_py() < scores[limit - 1].as_py()):
                break
            wanted *= 2
        return self._scored(rows.slice(0, limit), "_score", float)

    def find_by_names(self, names: Sequence[str], filters: Filters, limit: int) -> list[Chunk]:
        """Chunks whose name or qualified name equals one of `names`, ignoring case, in the
        table's order: looked up in the version's snapshot, or by a scan when filters narrow it."""
        lowered = sorted({n.lower() for n in names if n})
        if limit <= 0 or not lowered:
            return []
        where = sqlf.to_sql(filters)
        if not where:
            snapshot = self.vector_snapshot()
            ids = [snapshot.ids[row] for row in snapshot.named(lowered)[:limit]]
        else:
            values = ", ".join(sqlf.sql_string(n) for n in lowered)
            predicate = sqlf.combine(f"(lower(name) IN ({values}) OR lower(qualified_name) IN ({values}))", where)
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
        snapshot = self.vector_snapshot()
        return self._exact(snapshot, query, False, snapshot.has_primary, filters, limit)

    def search_static_vector(
        self, vector: np.ndarray, filters: Filters, limit: int, *, without_primary: bool
    ) -> list[ScoredChunk]:
        """Nearest chunks by cosine similarity of their static vectors: among the rows that have
        no primary vector yet (`without_primary`), or among every row with a static vector
        (the primary model could not embed the query). Empty without a static channel."""
        if limit <= 0 or self.static is None:
            return []
        query = checked_vector(vector, self.static.dimensions, "static query vector")
        snapshot = self.vector_snapshot()
        assert snapshot.has_static is not None, "a store with a static channel reads its static vectors"
        rows = snapshot.has_static & ~snapshot.has_primary if without_primary else snapshot.has_static
        return self._exact(snapshot, query, True, rows, filters, limit)

    def _exact(self, snapshot: VectorSnapshot, query: np.ndarray, static: bool, rows: np.ndarray,
               filters: Filters, limit: int) -> list[ScoredChunk]:
        """Exact nearest neighbours in memory among `rows` (a mask) that the filters admit. Lance
        builds no ANN index on int8 vectors, and a scan of the vector column per query cost ~45 ms
        on ws-300k where the snapshot's matrix product costs ~3. The snapshot holds 2.5 KiB a
        chunk (float32, 384 + 256 dimensions): ~55 MiB for ws-300k's 22k chunks."""
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

    def _scored(self, rows: pa.Table, column: str, score: Callable[[Any], float]) -> list[ScoredChunk]:
        """Hits (rows of `id` and a score `column`) as chunks, in order; a chunk gone from the
        table since the query read it (a commit in between) is skipped."""
        ids = rows.column("id").to_pylist()
        found = self._hit_chunks(ids)
        return [ScoredChunk(chunk=found[i], score=score(v))
                for i, v in zip(ids, rows.column(column).to_pylist(), strict=True) if i in found]

    # ---- status -------------------------------------------------------------------------

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

    def _check_dims(self, vector: np.ndarray, what: str) -> np.ndarray:
        return checked_vector(vector, self.model.dimensions, what)

    def _scan(self, where: str | None, columns: list[str], limit: int | None = None) -> pa.Table:
        return self._chunk_rows.scan(where, columns, limit)

    def _source_texts(self, keys: Iterable[str]) -> dict[str, str]:
        return self._text_cache.get_many(list(dict.fromkeys(keys)), self._load_source_texts)

    def _load_source_texts(self, keys: list[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for batch in batches(sorted(keys)):
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


def _total_bytes(table: lancedb.table.Table) -> int:
    # lancedb annotates stats() as its TableStatistics dataclass, but it returns the older API's dict.
    return int(cast(dict[str, Any], table.stats())["total_bytes"])


def checked_vector(vector: np.ndarray, dims: int, what: str) -> np.ndarray:
    arr = np.asarray(vector, dtype=np.float32).reshape(-1)
    if arr.shape[0] != dims:
        raise DimensionMismatch(dims, int(arr.shape[0]), what)
    return arr


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
            chunk_id=chunk_id or "",
        )
        for r, chunk_id in zip(row["references"] or (), row["reference_ids"] or (), strict=True)
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
        indent=row["indent"] or "",
    )


def _unit(vector: np.ndarray) -> np.ndarray:
    vector = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm > 0 else vector
