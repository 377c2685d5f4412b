"""What a searcher keeps of the index it reads, so that a search reads only what it has not read.

- `DatasetView`: the Lance dataset of the table version being read, opened once per version
  (LanceDB's query builder costs ~15 ms a call before reading anything).
- `VectorSnapshot`: every row's unit vectors at that version, for exact vector search and the
  candidates' cosines in memory (the index has no ANN index: its vectors are int8), the names
  and reference in-degrees a search asks about, and the chunk columns of every row, read in the
  background (`RowsInMemory`).
- chunks rebuilt from their rows (valid for one table version) and source texts (valid forever:
  a text's key is its hash) are kept in `common.readcache.ReadCache`s by the chunk reader.

On ws-300k (bench-pipeline-speed) these took the retrieval stage of a warm search from 213 to
~150 ms p50 (the whole pipeline's p95 from 622 to 270 ms with selection's changes).
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

import lance
import lancedb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from codecompass.retrieval.schema import (
    PACKED_INT4_TYPE,
    STATIC_FLAG_COLUMN,
    STATIC_VECTOR_COLUMN,
    VECTOR_COLUMN,
    int4_values,
    int4_width,
)

_log = logging.getLogger(__name__)


class DatasetView:
    """Filtered reads of a LanceDB table through its Lance dataset, opened once per table version.

    LanceDB's query builder costs ~15 ms a call on ws-300k before any data is read (it fetches
    the schema three times through its event loop); the dataset reads the same rows with the
    same SQL filter in ~4. Reads see the version the table handle reads (`checkout_latest`
    moves both)."""

    def __init__(self, table: lancedb.table.Table, version: Callable[[], int]) -> None:
        self._table = table
        # The version the handle reads (its owner knows when that moves; see ChunkReader._version).
        self._version = version
        self._lock = threading.Lock()
        self._opened: tuple[int, lance.LanceDataset] | None = None

    def dataset(self) -> lance.LanceDataset:
        version = self._version()
        with self._lock:
            if self._opened is None:
                self._opened = (version, self._table.to_lance())
            elif self._opened[0] != version:
                # From the dataset read before, so the new version shares its session (the index
                # and file metadata caches): the first full-text query after an edit's commit
                # then costs ~5 ms instead of ~9 on ws-300k, as the index is not loaded again.
                self._opened = (version, self._opened[1].checkout_version(version))
            return self._opened[1]

    def latest_version(self) -> int:
        """The newest committed version of the table, listed by the dataset already open (~10 µs
        on a local disk, one listing on an object store), not by a reload of the table through
        LanceDB's event loop."""
        return self.dataset().latest_version

    def scan(self, where: str | None, columns: list[str], limit: int | None = None) -> pa.Table:
        """The `columns` of every row matching `where` (all rows: None), at most `limit`."""
        return self.dataset().to_table(columns=columns, filter=where or None, limit=limit)


# A new version whose fragments not seen before hold at most this many rows (an edit's commit)
# reads their chunk columns at once, with their vectors; the rest it takes from the last version.
ROWS_READ_AT_ONCE = 4096


class RowsInMemory:
    """Some columns of every row of one dataset version, per fragment: the fragments the last
    version held are taken from it, and the rest are read with the version's vectors when they
    are few (an edit's commit); otherwise every row is read in the background the first time
    one is asked for, and until then each read takes its rows from the dataset.

    A search takes ~200 hits' rows; from the dataset that is ~20 ms (a random read per column),
    from memory ~0.5 (ws-300k's chunk columns are 28 MB, read in ~190 ms once). Before the
    fragments were kept, every commit read them all again, and the first searches after an edit
    took their hits from the dataset meanwhile."""

    def __init__(self, dataset: lance.LanceDataset, columns: Sequence[str], sizes: Sequence[int],
                 parts: Sequence[pa.Table] | None = None) -> None:
        self._dataset = dataset
        self._columns = list(columns)
        self._sizes = list(sizes)  # rows per fragment, in the dataset's order
        self._starts = np.cumsum([0, *self._sizes])
        self._lock = threading.Lock()
        self._parts: tuple[pa.Table, ...] | None = tuple(parts) if parts is not None else None
        self._reading = False

    @property
    def parts(self) -> tuple[pa.Table, ...] | None:
        """Each fragment's rows, in order; None while they are not in memory."""
        return self._parts

    def take(self, positions: Sequence[int]) -> pa.Table:
        """The rows at `positions` (offsets in this version), in that order."""
        parts = self._parts
        if parts is not None:
            return self._take_parts(parts, positions)
        with self._lock:
            if not self._reading:
                self._reading = True
                threading.Thread(target=self._read, name="rows-in-memory", daemon=True).start()
        return self._dataset.take(list(positions), columns=self._columns)

    def _take_parts(self, parts: tuple[pa.Table, ...], positions: Sequence[int]) -> pa.Table:
        if not positions:
            return parts[0].slice(0, 0) if parts else pa.table({c: [] for c in self._columns})
        fragment, local = _locate(self._starts, positions)
        order = np.argsort(fragment, kind="stable")
        # One take per fragment (one chunk per column each: a take across chunks costs ~15x more),
        # then the rows back in the order asked.
        pieces = [parts[f].take(pa.array(local[order][fragment[order] == f], pa.int64()))
                  for f in np.unique(fragment)]
        taken = pa.concat_tables(pieces).combine_chunks() if len(pieces) > 1 else pieces[0]
        return taken.take(pa.array(np.argsort(order, kind="stable"), pa.int64()))

    def _read(self) -> None:
        try:
            table = self._dataset.to_table(columns=self._columns)
            self._parts = tuple(table.slice(int(start), size).combine_chunks()
                                for start, size in zip(self._starts, self._sizes, strict=False))
        except Exception as exc:  # noqa: BLE001 - reads go on from the dataset; say why once
            _log.warning("rows of index version %s stay on disk: %s", self._dataset.version, exc)


@dataclass(frozen=True)
class FragmentVectors:
    """One Lance fragment's rows in a `VectorSnapshot`: their unit vectors (each version that keeps
    the fragment shares them), views into the snapshot's flags, and what the snapshot derives from
    its rows, kept so that the next version reads only the fragments a commit wrote or deleted from."""

    key: tuple  # the fragment's files, rows and deletion file: equal keys, equal rows
    # Its data files alone: a row they hold is the same row in every version that keeps it live,
    # whatever was deleted around it since (`VectorSnapshot.row_keys`).
    files: str
    ids: tuple[str, ...]
    primary: np.ndarray
    has_primary: np.ndarray
    static: np.ndarray | None
    has_static: np.ndarray | None
    names: frozenset[str]
    qualified_names: frozenset[str]
    # {chunk id: how many of this fragment's rows reference it}
    in_degrees: dict[str, int]
    # Each row's name and qualified name, in order: the name lookup's rows (`named`).
    row_names: tuple[tuple[str, str], ...] = ()
    # Each row's place in the data files (its row address's lower half) and the ids it references:
    # what a later version that only deleted rows of the fragment is derived from (`without`).
    offsets: np.ndarray | None = None
    references: pa.Array | None = None
    # Holds {lowercased name or qualified name: its rows} once a lookup first needs it, shared
    # by every version that keeps the fragment (`dataclasses.replace` keeps the list): built
    # whole, then put in, so a search beside the building one never reads half of it.
    name_rows: list[dict[str, list[int]]] = field(default_factory=list, repr=False, compare=False)

    def without(self, key: tuple, live: np.ndarray) -> tuple[FragmentVectors, np.ndarray] | None:
        """This fragment at a version whose deletion file is `key`'s and whose live rows are at the
        offsets `live` (ascending), and the mask of its rows kept; None when that is not a subset
        of its rows (a version restored from before a deletion). An edit deletes a few rows of a
        fragment: they are dropped here rather than the fragment read again, which on a settled
        index (one fragment of every row) read the whole table after every edit."""
        if self.offsets is None or self.references is None:
            return None
        kept = np.isin(self.offsets, live, assume_unique=True)
        if int(kept.sum()) != len(live):
            return None
        in_degrees = dict(self.in_degrees)
        for target, count in _in_degree_counts(self.references.filter(pa.array(~kept))).items():
            if (left := in_degrees[target] - count) > 0:
                in_degrees[target] = left
            else:
                del in_degrees[target]
        rows = np.flatnonzero(kept)
        row_names = tuple(self.row_names[row] for row in rows)
        return dataclasses.replace(
            self, key=key, ids=tuple(self.ids[row] for row in rows), primary=self.primary[kept],
            has_primary=self.has_primary[kept],
            static=self.static[kept] if self.static is not None else None,
            has_static=self.has_static[kept] if self.has_static is not None else None,
            names=frozenset(name for name, _ in row_names if name),
            qualified_names=frozenset(qualified for _, qualified in row_names if qualified),
            in_degrees=in_degrees, row_names=row_names, offsets=self.offsets[kept],
            references=self.references.filter(pa.array(kept)), name_rows=[]), kept

    def named(self, lowered: Iterable[str]) -> list[int]:
        """This fragment's rows named (or qualified-named) one of `lowered`."""
        self.index_names()
        index = self.name_rows[0]
        return [row for key in lowered for row in index.get(key, ())]

    def index_names(self) -> bool:
        """Builds the name index unless it is there (~1.3 ms a thousand rows); whether it built it."""
        if self.name_rows:
            return False
        built: dict[str, list[int]] = {}
        for row, (name, qualified) in enumerate(self.row_names):
            for key in {name.lower(), qualified.lower()} - {""}:
                built.setdefault(key, []).append(row)
        self.name_rows.append(built)
        return True


@dataclass(frozen=True)
class VectorSnapshot:
    """Every row's unit vectors at one table version, for exact nearest-neighbour search and
    candidate cosines in memory (a matrix product instead of a scan of the vector columns per
    query: ~3 ms instead of ~45 on ws-300k's 22k rows).

    A new version is read fragment by fragment from the last one: an edit's commit deletes a few
    rows of one fragment and appends one, so only those two are read again (rxjs, 9.9k rows in 12
    fragments, after a one-chunk edit: 22 ms instead of 91 for a full read, median of 8 each on a
    loaded machine)."""

    dataset: lance.LanceDataset  # the version read: a row's place in `ids` is its offset in it
    rows: RowsInMemory  # the columns a search's hits are read with, at this version
    ids: tuple[str, ...]
    position: dict[str, int]
    has_primary: np.ndarray  # bool per row
    has_static: np.ndarray | None  # the same for the static column; None without a static channel
    # In the version's order, each with its own unit vectors (zeros where a row has none): a new
    # version shares the matrices of the fragments it keeps rather than copying every fragment's
    # into one, which took ~45 ms of the first search after an edit on ws-300k (57 MB written).
    fragments: tuple[FragmentVectors, ...] = ()

    @classmethod
    def read(cls, dataset: lance.LanceDataset, primary_dims: int, static_dims: int | None,
             row_columns: Sequence[str], previous: VectorSnapshot | None = None) -> VectorSnapshot:
        """The snapshot of `dataset`'s version, taking the fragments it shares with `previous`."""
        columns = ["id", "has_vector", VECTOR_COLUMN, "name", "qualified_name", "reference_ids"]
        if static_dims is not None:
            columns += [STATIC_FLAG_COLUMN, STATIC_VECTOR_COLUMN]
        # `previous` is the same reader's, so of the same models: only the fragments can differ.
        known = {part.key: part for part in previous.fragments} if previous is not None else {}
        # A fragment whose data files the last version held too has only lost rows since.
        by_files = {part.files: part for part in previous.fragments} if previous is not None else {}
        fragments = [(fragment, fragment_key(fragment)) for fragment in dataset.get_fragments()]
        # The chunk columns of the fragments the last version held, when it has them in memory:
        # the new fragments' are then read here, with their vectors, if they are few.
        known_rows = dict(zip((part.key for part in previous.fragments), previous.rows.parts or (),
                              strict=False)) if previous is not None and previous.rows.parts is not None else {}
        unseen = [fragment for fragment, key in fragments
                  if key not in known_rows and fragment_files(fragment) not in by_files]
        rows_too = bool(known_rows) and sum(f.count_rows() for f in unseen) <= ROWS_READ_AT_ONCE
        parts, row_parts = [], []
        for fragment, key in fragments:
            if key in known:
                parts.append(known[key])
                row_parts.append(known_rows.get(key))
                continue
            files = fragment_files(fragment)
            if (same := by_files.get(files)) is not None and (derived := same.without(key, _live_offsets(
                    fragment.to_table(columns=[], with_row_address=True)))) is not None:
                part, kept = derived
                parts.append(part)
                rows = known_rows.get(same.key)
                row_parts.append(rows.filter(pa.array(kept)) if rows is not None else None)
                continue
            read = fragment.to_table(columns=columns + [c for c in row_columns if c not in columns] if rows_too
                                     else columns, with_row_address=True)
            parts.append(_fragment_vectors(read, key, files, primary_dims, static_dims))
            row_parts.append(read.select(list(row_columns)).combine_chunks() if rows_too else None)

        def joined(arrays: list[np.ndarray], empty: np.ndarray) -> np.ndarray:
            return np.concatenate(arrays) if arrays else empty

        ids = tuple(itertools.chain.from_iterable(part.ids for part in parts))
        has_primary = joined([p.has_primary for p in parts], np.zeros(0, dtype=bool))
        has_static = None
        if static_dims is not None:
            has_static = joined([p.has_static for p in parts if p.has_static is not None], np.zeros(0, dtype=bool))
        # The flags become views of this version's: an old version's flag arrays go with it.
        views, start = [], 0
        for part in parts:
            end = start + len(part.ids)
            views.append(dataclasses.replace(
                part, has_primary=has_primary[start:end],
                has_static=has_static[start:end] if has_static is not None else None))
            start = end
        return cls(
            dataset=dataset,
            rows=RowsInMemory(dataset, row_columns, [len(p.ids) for p in parts],
                              row_parts if all(r is not None for r in row_parts) else None),
            ids=ids,
            position=dict(zip(ids, range(len(ids)), strict=True)),
            has_primary=has_primary,
            has_static=has_static,
            fragments=tuple(views),
        )

    # Every chunk name and qualified name: the vocabulary a mistyped identifier is matched
    # against. Joined when a search first asks (one with a name the index lacks), not at every
    # version: ~2 ms of the first search after each edit on ws-300k.
    @cached_property
    def names(self) -> frozenset[str]:
        return frozenset().union(*(part.names for part in self.fragments))

    @cached_property
    def qualified_names(self) -> frozenset[str]:
        return frozenset().union(*(part.qualified_names for part in self.fragments))

    def named(self, names: Iterable[str]) -> list[int]:
        """The rows (offsets in this version, in its order) whose name or qualified name is one
        of `names`, ignoring case: a lookup in memory where a scan of the name columns took
        ~7 ms a search on rxjs's 10k rows."""
        lowered = {n.lower() for n in names if n}
        rows: list[int] = []
        for part, start in zip(self.fragments, self._starts, strict=False):
            rows += [int(start) + row for row in part.named(lowered)]
        return sorted(set(rows))

    def index_names(self) -> None:
        """Builds the name index of one fragment that lacks it: a step of idle read-ahead, so
        that the first name lookup of a version finds them built (29 ms for ws-300k's 22k rows)."""
        for part in self.fragments:
            if part.index_names():
                return

    def in_degrees(self, chunk_ids: Sequence[str]) -> dict[str, int]:
        """{chunk id: how many rows of this version reference it} (the reference graph's
        in-degree), summed over the fragments: a new version counts only the edges of the
        fragments it reads again."""
        counts = dict.fromkeys(chunk_ids, 0)
        # Fragment by fragment: a generator per id over ws-300k's 19 fragments took 1.2 ms a search.
        for part in self.fragments:
            found = part.in_degrees
            for i in counts:
                if (n := found.get(i)) is not None:
                    counts[i] += n
        return counts

    @cached_property
    def _starts(self) -> np.ndarray:
        """Each fragment's first row, and the row count last."""
        return np.cumsum([0, *(len(part.ids) for part in self.fragments)])

    def row_keys(self, chunk_ids: Sequence[str]) -> dict[str, str]:
        """{chunk id: a key of its row that no other row of any version has}, for the ids this
        version holds: what a row read once is cached under, so that a commit, which rewrites a
        file's rows into a new fragment and deletes the old ones, leaves every other row cached."""
        held = [i for i in chunk_ids if i in self.position]
        fragment, _ = _locate(self._starts, [self.position[i] for i in held])
        return {i: f"{self.fragments[part].files}/{i}" for i, part in zip(held, fragment.tolist(), strict=True)}

    def _matrices(self, static: bool) -> list[np.ndarray]:
        matrices = [part.static if static else part.primary for part in self.fragments]
        assert all(m is not None for m in matrices), "static vectors exist whenever a static search is asked for"
        return matrices  # type: ignore[return-value]

    def nearest(self, query: np.ndarray, static: bool, allowed: np.ndarray, limit: int) -> list[tuple[int, float]]:
        """(row, cosine) of the `limit` rows most similar to the unit vector `query` among the
        rows `allowed` (a bool mask), best first."""
        rows = np.flatnonzero(allowed)
        if limit <= 0 or len(rows) == 0:
            return []
        # The whole products, then the rows wanted: selecting rows first copies the matrices (~8x slower).
        products = [matrix @ query for matrix in self._matrices(static)]
        scores = np.concatenate(products)[rows] if products else np.zeros(0, dtype=np.float32)
        if len(rows) > limit:
            # Every row scoring at least the limit-th best: identical texts (a file repeated
            # across a monorepo's packages) have equal cosines, and the cut below keeps the same
            # ones of such a run whatever the rows' order in this version.
            kth = np.partition(scores, len(scores) - limit)[len(scores) - limit]
            top = np.flatnonzero(scores >= kth)
        else:
            top = np.arange(len(rows))
        ids = self.ids
        best = sorted(top.tolist(), key=lambda i: (-scores[i], ids[rows[i]]))[:limit]
        return [(int(rows[i]), float(scores[i])) for i in best]

    def cosines(self, positions: list[int], query: np.ndarray, static: bool) -> list[float | None]:
        """Each row's cosine to the unit vector `query`, None where the row has no such vector."""
        has = self.has_static if static else self.has_primary
        assert has is not None, "asked only with a static channel"
        matrices = self._matrices(static)
        fragment, local = _locate(self._starts, positions)
        scores = np.zeros(len(local), dtype=np.float32)
        for part in np.unique(fragment):
            mine = fragment == part
            scores[mine] = matrices[part][local[mine]] @ query
        return [float(s) if has[p] else None for p, s in zip(positions, scores, strict=True)]


def _locate(starts: np.ndarray, positions: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """Each of `positions` (row offsets in a table version) as its fragment and its row in that
    fragment, given each fragment's first offset (`starts`, ascending)."""
    wanted = np.asarray(positions, dtype=np.int64)
    fragment = np.searchsorted(starts, wanted, side="right") - 1
    return fragment, wanted - starts[fragment]


def _in_degree_counts(edges: pa.ChunkedArray | pa.Array) -> dict[str, int]:
    """{target id: how many rows list it} over a list<string> column, each row counted once per
    target. In Arrow and numpy: a Python loop over ws-300k's edges took ~50 ms."""
    if isinstance(edges, pa.ChunkedArray):
        edges = edges.combine_chunks()
    targets = pc.dictionary_encode(pc.list_flatten(edges))
    names = targets.dictionary
    if len(names) == 0:
        return {}
    rows = pc.list_parent_indices(edges).to_numpy().astype(np.int64)
    # One (row, target) pair per edge, duplicates within a row dropped, then counted per target.
    # Sorted and compared with their neighbours: np.unique took 30 ms of it here, a sort takes 2.
    pairs = np.sort(rows * len(names) + targets.indices.to_numpy().astype(np.int64))
    first = np.ones(len(pairs), dtype=bool)
    first[1:] = pairs[1:] != pairs[:-1]
    counts = np.bincount(pairs[first] % len(names), minlength=len(names))
    found = dict(zip(names.to_pylist(), counts.tolist(), strict=True))
    found.pop("", None)  # a reference to a symbol outside the index
    return found


def fragment_key(fragment: lance.LanceFragment) -> tuple:
    """What makes a fragment's live rows what they are: its data files and row count (its repr)
    and its deletion file (whose repr gives only the count, so its id and version too)."""
    metadata = fragment.metadata
    deletion = metadata.deletion_file
    return (repr(metadata), None if deletion is None else (deletion.id, deletion.read_version))


def fragment_files(fragment: lance.LanceFragment) -> str:
    """A fragment's data files, by name: Lance names each new file uniquely and never rewrites
    one, so the rows of a fragment with these files are these rows in every version."""
    return "|".join(data_file.path for data_file in fragment.metadata.files)


def _fragment_vectors(rows: pa.Table, key: tuple, files: str, primary_dims: int,
                      static_dims: int | None) -> FragmentVectors:
    static = has_static = None
    if static_dims is not None:
        static = unit_rows(vectors_of(rows.column(STATIC_VECTOR_COLUMN), static_dims))
        has_static = np.asarray(rows.column(STATIC_FLAG_COLUMN).to_numpy(zero_copy_only=False), dtype=bool)
    names = [n or "" for n in rows.column("name").to_pylist()]
    qualified = [n or "" for n in rows.column("qualified_name").to_pylist()]
    references = rows.column("reference_ids").combine_chunks()
    return FragmentVectors(
        key=key,
        files=files,
        ids=tuple(rows.column("id").to_pylist()),
        primary=unit_rows(vectors_of(rows.column(VECTOR_COLUMN), primary_dims)),
        has_primary=np.asarray(rows.column("has_vector").to_numpy(zero_copy_only=False), dtype=bool),
        static=static,
        has_static=has_static,
        names=frozenset(n for n in names if n),
        qualified_names=frozenset(n for n in qualified if n),
        in_degrees=_in_degree_counts(references),
        row_names=tuple(zip(names, qualified, strict=True)),
        offsets=_live_offsets(rows),
        references=references,
    )


def _live_offsets(rows: pa.Table) -> np.ndarray:
    """The place of each of a fragment's rows in its data files, from their row addresses."""
    return (rows.column("_rowaddr").to_numpy() & 0xFFFF_FFFF).astype(np.uint32)


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """`matrix` (float32, owned by the caller) with each non-zero row scaled to unit length, in
    place: every new table version reads the whole vector columns again, and the norm and a copy
    took 17 ms of that on ws-300k's 22k x 384 where this takes 5."""
    norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
    norms[norms == 0] = 1.0
    matrix /= norms[:, None]
    return matrix


def vectors_of(column: pa.ChunkedArray | pa.Array, dims: int) -> np.ndarray:
    """A fixed-size-list vector column (int8, or packed int4 as uint8) as a (rows, dims) float32
    matrix (zeros where null)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if len(column) == 0:
        return np.zeros((0, dims), dtype=np.float32)
    values = column.values
    if values.null_count:  # a null row's components come back null from Lance
        values = pc.fill_null(values, 0)
    values = values.to_numpy(zero_copy_only=False)
    if column.type.value_type == PACKED_INT4_TYPE:
        return int4_values(values.reshape(len(column), int4_width(dims)), dims)
    return values.astype(np.float32).reshape(len(column), dims)
