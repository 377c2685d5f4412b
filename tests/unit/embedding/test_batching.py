"""Length-sorted local batches and limit-respecting remote batches."""

from __future__ import annotations

import numpy as np

from codecompass.embedding.batching import MAX_ADDED_PADDING, length_sorted_batches, request_batches, run_in_batches
from codecompass.embedding.compute_lock import PriorityLock


def test_length_sorted_batches_cover_every_text_once_grouped_by_length():
    lengths = [50, 3, 200, 7, 3, 120, 60, 9]
    batches = length_sorted_batches(lengths, max_texts=3, max_padded_tokens=10_000)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert all(len(b) <= 3 for b in batches)
    flat = [lengths[i] for b in batches for i in b]
    assert flat == sorted(lengths)


def test_length_sorted_batches_respect_padded_token_budget():
    lengths = [100] * 10 + [10] * 10
    batches = length_sorted_batches(lengths, max_texts=64, max_padded_tokens=300)
    for batch in batches:
        assert len(batch) * max(lengths[i] for i in batch) <= 300


def test_a_text_that_would_pad_its_batch_by_much_starts_the_next():
    # An edit's two chunks: one run would pad the short one to 256 tokens.
    assert length_sorted_batches([256, 13], max_texts=64, max_padded_tokens=2048) == [[1], [0]]
    # Texts of about one length still share a run; the padding they add stays within the bound.
    lengths = [250, 256, 240, 256, 255, 248]
    batches = length_sorted_batches(lengths, max_texts=64, max_padded_tokens=2048)
    assert len(batches) == 1
    # Each text joins while what it adds (the batch so far, padded up to it) is within the bound.
    mixed = [5, 9, 40, 44, 90, 200, 210, 256]
    assert length_sorted_batches(mixed, max_texts=64, max_padded_tokens=2048) == [[0, 1, 2, 3], [4], [5, 6], [7]]
    assert 3 * (90 - 44) > MAX_ADDED_PADDING >= 2 * (40 - 9)


def test_run_in_batches_restores_input_order():
    lengths = [30, 5, 18, 5, 99, 1]
    batches = length_sorted_batches(lengths, max_texts=2, max_padded_tokens=1000)
    calls = []

    def run(batch):
        calls.append(batch)
        return np.array([[float(i), float(lengths[i])] for i in batch], dtype=np.float32)

    out = run_in_batches(batches, len(lengths), 2, run)
    assert out[:, 0].tolist() == list(range(len(lengths)))
    assert out[:, 1].tolist() == lengths
    assert calls[0] != [0, 1], "batches ran in length order, not input order"


def test_request_batches_keep_order_and_limits():
    costs = [10, 10, 10, 500, 10, 10]
    batches = request_batches(costs, max_items=2, max_cost=100)
    assert batches == [[0, 1], [2], [3], [4, 5]]
    assert request_batches([1] * 2500, max_items=1000, max_cost=10**9) == [
        list(range(1000)), list(range(1000, 2000)), list(range(2000, 2500))]
    assert request_batches([], max_items=10, max_cost=10) == []


def test_priority_lock_lets_a_waiting_query_go_before_waiting_documents():
    import threading
    import time

    lock = PriorityLock()
    order: list[str] = []
    release_first = threading.Event()

    def first():
        with lock.hold(urgent=False):
            order.append("doc-1")
            release_first.wait(5)

    def worker(name, urgent):
        with lock.hold(urgent=urgent):
            order.append(name)

    threads = [threading.Thread(target=first)]
    threads[0].start()
    while not order:
        time.sleep(0.001)
    doc = threading.Thread(target=worker, args=("doc-2", False))
    doc.start()
    time.sleep(0.05)
    query = threading.Thread(target=worker, args=("query", True))
    query.start()
    deadline = time.monotonic() + 5
    while lock._urgent_waiting == 0 and time.monotonic() < deadline:  # the query is queued before the release
        time.sleep(0.001)
    release_first.set()
    for t in (*threads, doc, query):
        t.join(5)
    assert order == ["doc-1", "query", "doc-2"]
