"""Batch planning for local models (by length) and for remote APIs (by request limits).

A padded batch costs (texts x longest text), so local batches group texts of
similar length: sorting by token length before batching cuts padding waste
on a typical chunk mix by more than half. Results go back in input order.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np


def length_sorted_batches(lengths: Sequence[int], max_texts: int, max_padded_tokens: int) -> list[list[int]]:
    """Index batches, shortest texts first; each batch holds <= max_texts and <= max_padded_tokens after padding."""
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        # Sorted ascending, so this text is the longest of the batch it would join.
        padded = (len(current) + 1) * max(lengths[index], 1)
        if current and (len(current) >= max_texts or padded > max_padded_tokens):
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
