"""Error messages -> the function that throws them: what a user pastes when something fails.

The benchmark's `error` rule (codecompass_dev/queries/symbol_queries.py error_queries): the literal message
of `throw new XError("...")` (a template's literal head), thrown in exactly one function of the
repository's non-test code; here also 4..40 prose words and not naming the function. Nothing is
blanked: the message in the code is what the user saw, and finding it is the task.
"""

from __future__ import annotations

from collections import Counter

from codecompass_dev.queries.symbol_queries import error_queries
from models.corpus.pairs import Pair, finalize, leaks_any, target_name, well_sized

RULE = "error"


def mine(records: list[dict], cap: int, seed: str, stats: Counter) -> list[Pair]:
    pairs = []
    for candidate in error_queries(records):
        target = candidate.targets[0]
        if not well_sized(candidate.text) or leaks_any(candidate.text, [target_name(target)]):
            stats["error_too_short_or_leaks"] += 1
            continue
        pairs.append(Pair(RULE, candidate.text, candidate.targets, [], {"path": target.path}))
    kept, dropped = finalize(pairs, cap, seed)
    stats.update({f"error_{key}": value for key, value in dropped.items()})
    return kept
