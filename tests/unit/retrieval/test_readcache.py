"""The searcher's read caches: what they keep, for which table version, and exact vector search."""

from __future__ import annotations

import time

import lance
import numpy as np
import pyarrow as pa

from codecompass.common.readcache import ReadCache
from codecompass.retrieval.search.readcache import RowsInMemory, VectorSnapshot, unit_rows


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


def snapshot(vectors: np.ndarray, has: list[bool]) -> VectorSnapshot:
    ids = tuple(f"c{i}" for i in range(len(vectors)))
    return VectorSnapshot(dataset=None, rows=None, ids=ids, position={c: i for i, c in enumerate(ids)},  # type: ignore[arg-type]
                          primary=unit_rows(vectors.astype(np.float32)), has_primary=np.array(has),
                          static=None, has_static=None)


def test_exact_search_is_brute_force_cosine_over_the_allowed_rows() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.normal(size=(200, 16))
    has = [i % 7 != 0 for i in range(200)]
    snap = snapshot(vectors, has)
    query = rng.normal(size=16).astype(np.float32)
    query /= np.linalg.norm(query)
    allowed = snap.has_primary & (np.arange(200) % 2 == 0)
    hits = snap.nearest(query, False, allowed, 10)
    expected = sorted(((float(snap.primary[i] @ query), i) for i in np.flatnonzero(allowed)), reverse=True)[:10]
    assert [row for row, _ in hits] == [i for _, i in expected]
    assert all(abs(score - cos) < 1e-6 for (_, score), (cos, _) in zip(hits, expected, strict=True))
    assert snap.nearest(query, False, np.zeros(200, dtype=bool), 10) == []


def test_equal_scores_keep_the_table_order_and_rows_without_vectors_have_no_cosine() -> None:
    vectors = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    snap = snapshot(vectors, [True, True, True, False])
    query = np.array([1.0, 0.0], dtype=np.float32)
    assert [row for row, _ in snap.nearest(query, False, snap.has_primary, 2)] == [0, 1]
    assert snap.cosines([3, 2, 0], query, static=False) == [None, 0.0, 1.0]


def test_rows_come_from_the_dataset_until_they_are_in_memory_and_agree(tmp_path) -> None:
    dataset = lance.write_dataset(pa.table({"id": [f"r{i}" for i in range(50)], "n": list(range(50))}),
                                  str(tmp_path / "t.lance"))
    rows = RowsInMemory(dataset, ["id", "n"])
    first = rows.take([7, 3, 49])  # from the dataset; the read into memory starts
    deadline = time.monotonic() + 10
    while rows._table is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert rows._table is not None
    assert first.to_pylist() == rows.take([7, 3, 49]).to_pylist() == [
        {"id": "r7", "n": 7}, {"id": "r3", "n": 3}, {"id": "r49", "n": 49}]
