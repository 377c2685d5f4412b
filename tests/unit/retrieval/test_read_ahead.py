"""The searcher reads ahead while it is idle: the rows of the index searched last that no search
has read, a batch at a time, only once searches and syncs have been quiet, until there is nothing
left, and again after the next search."""

from __future__ import annotations

import gc
import threading
import time

import pytest

from codecompass.retrieval.interactive import InteractiveWork
from codecompass.retrieval.search import searcher
from codecompass.retrieval.search.searcher import ReadAhead


class RowsToRead:
    """A store with `rows` unread rows, read `batch` at a time, saying when each batch was read."""

    def __init__(self, rows: int) -> None:
        self.left = rows
        self.reads: list[float] = []
        self.done = threading.Event()

    def read_ahead(self, limit: int) -> list[str]:
        batch = [f"row{self.left - i}" for i in range(min(limit, self.left))]
        self.left -= len(batch)
        if batch:
            self.reads.append(time.monotonic())
        else:
            self.done.set()
        return batch


@pytest.fixture
def remembered(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    monkeypatch.setattr(searcher, "remember_words", seen.extend)
    monkeypatch.setattr(ReadAhead, "QUIET_S", 0.2)
    return seen


def test_it_reads_only_once_searches_are_quiet_then_every_row_then_stops(remembered: list[str]) -> None:
    work = InteractiveWork()
    ahead = ReadAhead(work)
    store = RowsToRead(100)
    with work.running():
        ahead.searched(store)  # type: ignore[arg-type]
        time.sleep(0.3)
        assert store.reads == []
        ended = time.monotonic()
    assert store.done.wait(5)
    ahead.close()
    assert store.reads[0] >= ended + ReadAhead.QUIET_S - 0.02
    assert store.left == 0 and len(store.reads) == -(-100 // ReadAhead.BATCH)
    assert sorted(remembered) == sorted(f"row{i}" for i in range(1, 101))


def test_a_search_after_it_stopped_starts_it_again_on_what_is_left(remembered: list[str]) -> None:
    work = InteractiveWork()
    ahead = ReadAhead(work)
    first = RowsToRead(10)
    ahead.searched(first)  # type: ignore[arg-type]
    assert first.done.wait(5)
    second = RowsToRead(40)  # say, the rows a commit wrote, or another index
    with work.running():
        ahead.searched(second)  # type: ignore[arg-type]
    assert second.done.wait(5)
    ahead.close()
    assert first.left == second.left == 0 and len(remembered) == 50


def test_what_it_read_leaves_the_collectors_sight(remembered: list[str]) -> None:
    # The caches it fills live for long; tracked by the collector, a full collection walked them
    # all (250-300 ms on ws-300k, in the middle of a search).
    gc.unfreeze()
    try:
        cached: list[object] = []
        store = RowsToRead(64)
        real_read = store.read_ahead

        def read_into_a_cache(limit: int) -> list[str]:
            batch = real_read(limit)
            cached.extend({"row": row} for row in batch)  # dicts: objects the collector tracks
            return batch

        store.read_ahead = read_into_a_cache  # type: ignore[method-assign]
        ahead = ReadAhead(InteractiveWork())
        ahead.searched(store)  # type: ignore[arg-type]
        assert store.done.wait(5)
        ahead.close()
        assert len(cached) == 64
        assert gc.get_freeze_count() >= len(cached)
        tracked = {id(o) for o in gc.get_objects()}
        assert not any(id(o) in tracked for o in cached)
    finally:
        gc.unfreeze()
