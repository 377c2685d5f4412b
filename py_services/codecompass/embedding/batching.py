"""Batch planning for local models (by length) and for remote APIs (by request limits).

A padded batch costs (texts x longest text), so local batches group texts of
similar length: sorting by token length before batching cuts padding waste
on a typical chunk mix by more than half. Results go back in input order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

# A text starts a batch of its own rather than pad the batch it would join by more than this many
# tokens in all: a run costs about its padded tokens, and another run costs little. An edit's
# chunks are a few texts of any lengths: a 256-token chunk and a 13-token one took 80-93 ms as one
# run (both padded to 256) and 43 ms as two; on the index writer's RPCs of 64 chunks (ws-300k's
# mix, 164 tokens on average) code-small did 38.1-38.3 chunks/s against 37.1-37.4.
MAX_ADDED_PADDING = 64


def length_sorted_batches(lengths: Sequence[int], max_texts: int, max_padded_tokens: int) -> list[list[int]]:
    """Index batches, shortest texts first; each batch holds <= max_texts and <= max_padded_tokens after
    padding, and a text that would add more than MAX_ADDED_PADDING tokens of padding starts the next."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        # Sorted ascending, so this text is the longest of the batch it would join.
        width = max(lengths[index], 1)
        padded = (len(current) + 1) * width
        added = len(current) * (width - max(lengths[current[-1]], 1)) if current else 0
        if current and (len(current) >= max_texts or padded > max_padded_tokens or added > MAX_ADDED_PADDING):
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches


def padded(inputs: Sequence[Sequence[int]], batch: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """The token ids of the texts `batch` names (indices into `inputs`), right-padded with 0 to the
    longest of them, and their attention mask: a transformer's two inputs."""
    width = max(len(inputs[i]) for i in batch)
    ids = np.zeros((len(batch), width), dtype=np.int64)
    mask = np.zeros((len(batch), width), dtype=np.int64)
    for row, index in enumerate(batch):
        ids[row, : len(inputs[index])] = inputs[index]
        mask[row, : len(inputs[index])] = 1
    return ids, mask


def run_in_batches(batches: list[list[int]], total: int, dimensions: int,
                   run: Callable[[list[int]], np.ndarray]) -> np.ndarray:
    """Call run(batch) per batch and place each row at its text's input position."""
    out = np.zeros((total, dimensions), dtype=np.float32)
    for batch in batches:
        out[batch] = run(batch)
    return out


def request_batches(costs: Sequence[int], max_items: int, max_cost: int) -> list[list[int]]:
    """Consecutive index groups within a remote API's per-request limits (item count and total cost).

    Input order is kept so a failure part-way is easy to reason about; a single
    item above max_cost still goes alone (the provider truncates it).
    """
    batches: list[list[int]] = []
    current: list[int] = []
    cost = 0
    for index, item_cost in enumerate(costs):
        if current and (len(current) >= max_items or cost + item_cost > max_cost):
            batches.append(current)
            current, cost = [], 0
        current.append(index)
        cost += item_cost
    if current:
        batches.append(current)
    return batches
