"""The searcher's read caches: what they keep, for which table version, and exact vector search."""

from __future__ import annotations

import time

import lance
import numpy as np
import pyarrow as pa
import pytest

from codecompass.common.chunks import SymbolReference
from codecompass.common.readcache import ReadCache
from codecompass.retrieval.search.readcache import FragmentVectors, RowsInMemory, VectorSnapshot, unit_rows


def loader(calls: list[list[str]], values: dict[str, str]):
    def load(keys: list[str]) -> dict[str, str]:
        calls.append(keys)
        return {k: values[k] for k in keys if k in values}
    return load


def test_a_cached_value_is_not_loaded_again_at_the_same_version() -> None:
    calls: list[list[str]] = []
    cache: ReadCache[str] = ReadCache("test", 10)
    load = loader(calls, {"a": "A", "b": "B"})
    assert cache.get_many(["a", "b", "gone"], load, version=1) == {"a": "A", "b": "B"}
    assert cache.get_many(["b", "a"], load, version=1) == {"a": "A", "b": "B"}
    assert calls == [["a", "b", "gone"]]


def test_another_table_version_reads_everything_again() -> None:
    calls: list[list[str]] = []
    cache: ReadCache[str] = ReadCache("test", 10)
    cache.get_many(["a"], loader(calls, {"a": "old"}), version=1)
    assert cache.get_many(["a"], loader(calls, {"a": "new"}), version=2) == {"a": "new"}
    assert len(calls) == 2


def test_the_least_recently_used_go_first_by_weight() -> None:
    calls: list[list[str]] = []
    cache: ReadCache[str] = ReadCache("test", 6, weigh=len)
    load = loader(calls, {"a": "aaa", "b": "bbb", "c": "cc"})
    cache.get_many(["a"], load)
    cache.get_many(["b"], load)
    cache.get_many(["a"], load)  # a read again: b is now the oldest
    cache.get_many(["c"], load)  # 8 characters: b goes
    calls.clear()
    cache.get_many(["a", "b", "c"], load)
    assert calls == [["b"]]


def snapshot(vectors: np.ndarray, has: list[bool], split: int | None = None) -> VectorSnapshot:
    """The rows as one fragment, or as two split at `split`."""
    ids = tuple(f"c{i}" for i in range(len(vectors)))
    matrix, flags = unit_rows(vectors.astype(np.float32)), np.array(has)
    cuts = [0, split, len(ids)] if split is not None else [0, len(ids)]
    parts = tuple(FragmentVectors(key=(a,), files=f"part-{a}", ids=ids[a:b], primary=matrix[a:b],
                                  has_primary=flags[a:b], static=None, has_static=None, names=frozenset(),
                                  qualified_names=frozenset(), in_degrees={})
                  for a, b in zip(cuts, cuts[1:], strict=False))
    return VectorSnapshot(dataset=None, rows=None, ids=ids, position={c: i for i, c in enumerate(ids)},  # type: ignore[arg-type]
                          has_primary=flags, has_static=None, fragments=parts)


def primary(snap: VectorSnapshot) -> np.ndarray:
    return np.concatenate([part.primary for part in snap.fragments])


def static(snap: VectorSnapshot) -> np.ndarray:
    return np.concatenate([part.static for part in snap.fragments])  # type: ignore[misc]


@pytest.mark.parametrize("split", [None, 77])
def test_exact_search_is_brute_force_cosine_over_the_allowed_rows(split: int | None) -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(200, 16))
    has = [i % 7 != 0 for i in range(200)]
    snap = snapshot(vectors, has, split)
    query = rng.normal(size=16).astype(np.float32)
    query /= np.linalg.norm(query)
    allowed = snap.has_primary & (np.arange(200) % 2 == 0)
    hits = snap.nearest(query, False, allowed, 10)
    matrix = primary(snap)
    expected = sorted(((float(matrix[i] @ query), i) for i in np.flatnonzero(allowed)), reverse=True)[:10]
    assert [row for row, _ in hits] == [i for _, i in expected]
    assert all(abs(score - cos) < 1e-6 for (_, score), (cos, _) in zip(hits, expected, strict=True))
    assert snap.nearest(query, False, np.zeros(200, dtype=bool), 10) == []
    # A candidate's cosine, whichever fragment holds it, in the order asked.
    asked = [150, 3, 77, 76, 199]
    cosines = snap.cosines(asked, query, static=False)
    assert cosines == [pytest.approx(float(matrix[i] @ query), abs=1e-6) if has[i] else None for i in asked]


def test_equal_scores_keep_the_table_order_and_rows_without_vectors_have_no_cosine() -> None:
    vectors = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    snap = snapshot(vectors, [True, True, True, False])
    query = np.array([1.0, 0.0], dtype=np.float32)
    assert [row for row, _ in snap.nearest(query, False, snap.has_primary, 2)] == [0, 1]
    assert snap.cosines([3, 2, 0], query, static=False) == [None, 0.0, 1.0]


def test_rows_come_from_the_dataset_until_they_are_in_memory_and_agree(tmp_path) -> None:
    dataset = lance.write_dataset(pa.table({"id": [f"r{i}" for i in range(50)], "n": list(range(50))}),
                                  str(tmp_path / "t.lance"))
    rows = RowsInMemory(dataset, ["id", "n"], [50])
    first = rows.take([7, 3, 49])  # from the dataset; the read into memory starts
    _wait_in_memory(rows)
    assert first.to_pylist() == rows.take([7, 3, 49]).to_pylist() == [
        {"id": "r7", "n": 7}, {"id": "r3", "n": 3}, {"id": "r49", "n": 49}]


def _wait_in_memory(rows: RowsInMemory) -> None:
    deadline = time.monotonic() + 10
    while rows.parts is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert rows.parts is not None


def test_a_new_version_reads_only_the_fragments_a_commit_changed_and_equals_a_full_read(tmp_path, monkeypatch) -> None:
    # An edit's commit deletes some rows of a fragment and appends a fragment: the snapshot of the
    # new version reuses the untouched fragments and must be the one a full read gives.
    from tests.unit.retrieval.test_staged_writes import open_store
    from tests.unit.retrieval.test_store import make_chunk, unit

    from codecompass.retrieval.search import readcache

    writer = open_store(str(tmp_path / "index"))

    def calls(*targets: str) -> tuple[SymbolReference, ...]:
        return tuple(SymbolReference(name=t, signature="", relative_path="", chunk_id=t) for t in targets)

    for file in range(4):  # four commits: four fragments; every chunk calls f0c0, the second ones f3c1 too
        chunks = [make_chunk(f"f{file}c{i}", f"name{file}x{i}", f"src/f{file}.ts",
                             references=calls("f0c0", "f3c1") if i == 1 else calls("f0c0")) for i in range(3)]
        writer.apply_changes(upserts=chunks, delete_ids=[],
                             vectors={c.id: unit(1, file, i, 0) for i, c in enumerate(chunks)},
                             static_vectors={chunks[0].id: unit(0, 1, file)})
    reads: list[int] = []
    real = readcache._fragment_vectors
    monkeypatch.setattr(readcache, "_fragment_vectors", lambda rows, *args: reads.append(1) or real(rows, *args))

    def snapshot(previous: VectorSnapshot | None) -> VectorSnapshot:
        return VectorSnapshot.read(writer._table.to_lance(), 4, 3, ["id", "relative_path", "start_line"],
                                   previous=previous)

    first = snapshot(None)
    assert len(reads) == 4 and len(first.ids) == 12
    assert first.rows.parts is None  # a first version's rows are read in the background
    first.rows.take([0])
    _wait_in_memory(first.rows)
    # The edit: one chunk of f1 rewritten with a new vector, one of f2 deleted.
    reads.clear()
    writer.apply_changes(upserts=[make_chunk("f1c0", "renamed", "src/f1.ts")], delete_ids=["f2c2"],
                         vectors={"f1c0": unit(0, 0, 0, 1)})  # f1c0 no longer calls f0c0
    second = snapshot(first)
    assert len(reads) == 1  # the new fragment alone: f1 and f2 only lost rows, f0 and f3 nothing
    monkeypatch.setattr(readcache, "_fragment_vectors", real)
    full = snapshot(None)
    # The chunk columns too: the new fragments' were read with their vectors, the rest kept, so a
    # search's hits come from memory at once, and they are the rows the dataset holds.
    assert second.rows.parts is not None
    every = list(range(len(second.ids)))
    shuffled = every[::-1][::2] + every[::2]
    dataset = writer._table.to_lance()
    assert second.rows.take(shuffled).to_pylist() == dataset.take(shuffled, columns=["id", "relative_path",
                                                                                      "start_line"]).to_pylist()
    assert second.rows.take(every).column("id").to_pylist() == list(second.ids)
    assert second.rows.take([]).num_rows == 0
    assert second.ids == full.ids and "f2c2" not in second.ids
    np.testing.assert_array_equal(primary(second), primary(full))
    np.testing.assert_array_equal(second.has_primary, full.has_primary)
    assert second.has_static is not None
    np.testing.assert_array_equal(static(second), static(full))
    np.testing.assert_array_equal(second.has_static, full.has_static)
    np.testing.assert_allclose(primary(second)[second.position["f1c0"]], unit(0, 0, 0, 1))
    # What is derived per fragment follows the commit too.
    assert second.names == full.names and "renamed" in second.names and "name1x0" not in second.names
    assert first.in_degrees(["f0c0", "f3c1", "f1c1"]) == {"f0c0": 12, "f3c1": 4, "f1c1": 0}
    assert second.in_degrees(["f0c0", "f3c1"]) == full.in_degrees(["f0c0", "f3c1"]) == {"f0c0": 10, "f3c1": 4}
    # The fragments the commit left alone keep their matrices: nothing is copied for them.
    before = {part.key: part for part in first.fragments}
    kept = [part for part in second.fragments if part.key in before]
    assert kept and all(part.primary is before[part.key].primary and part.static is before[part.key].static
                        for part in kept)
    # A compaction rewrites the fragments: everything is read again, with the same result.
    writer.maintain(settle=True)
    compacted = snapshot(second)
    assert compacted.ids == snapshot(None).ids
    assert compacted.rows.parts is not None  # a dozen rows: read with the vectors
    assert compacted.rows.take(list(range(len(compacted.ids)))).column("id").to_pylist() == list(compacted.ids)


def test_a_fragment_that_only_lost_rows_is_derived_and_one_that_gained_rows_is_not() -> None:
    refs = pa.array([["t"], ["t", "u"], [], ["u"]], pa.list_(pa.string()))
    part = FragmentVectors(key=("k",), files="f", ids=("a", "b", "c", "d"), primary=np.eye(4, dtype=np.float32),
                           has_primary=np.ones(4, dtype=bool), static=None, has_static=None,
                           names=frozenset("abcd"), qualified_names=frozenset(), in_degrees={"t": 2, "u": 2},
                           row_names=(("a", ""), ("b", ""), ("c", ""), ("d", "")),
                           offsets=np.array([0, 2, 3, 5], dtype=np.uint32), references=refs)
    derived = part.without(("k2",), np.array([0, 3, 5], dtype=np.uint32))
    assert derived is not None
    smaller, kept = derived
    assert kept.tolist() == [True, False, True, True]
    assert smaller.ids == ("a", "c", "d") and smaller.names == frozenset("acd") and smaller.key == ("k2",)
    assert smaller.in_degrees == {"t": 1, "u": 1}
    np.testing.assert_array_equal(smaller.primary, np.eye(4, dtype=np.float32)[[0, 2, 3]])
    # A version restored from before a deletion holds a row this one lost: read again, not derived.
    assert smaller.without(("k3",), np.array([0, 2, 3], dtype=np.uint32)) is None
