"""Merging two searches' candidates into one ranked list (the rewrite's second search with the
first): one candidate per id, the higher score winning, best first.

Generic over the candidate type: the gateway passes how to read a candidate's id and score, so the
rule lives here without the policy knowing the gateway's types.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def merge_results(first: Sequence[T], second: Sequence[T], key: Callable[[T], str],
                  score: Callable[[T], float]) -> tuple[list[T], int]:
    """Both searches' candidates, one per `key` with the higher `score`, best first (ties keep
    the first search's candidate and its order); and how many only the second found."""
    by_id = {key(c): c for c in first}
    added = 0
    for c in second:
        here = by_id.get(key(c))
        if here is None:
            added += 1
            by_id[key(c)] = c
        elif score(c) > score(here):
            by_id[key(c)] = c
    return sorted(by_id.values(), key=lambda c: -score(c)), added
