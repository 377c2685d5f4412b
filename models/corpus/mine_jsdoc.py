"""JSDoc first sentence -> the function or method it documents, that JSDoc blanked.

The benchmark's `jsdoc` rule (bench/quality/build_queries.py jsdoc_queries and
add_copies_to_blank), over every non-test source file of the repository: functions, methods,
constructors and accessors with a body; the first sentence of the description, 5..40 words;
dropped when it names the symbol or documents two symbols. Blanked: that JSDoc comment and
every other JSDoc comment of the repository holding the same sentence (overload copies).
"""

from __future__ import annotations

from collections import Counter

from bench.quality.build_queries import add_copies_to_blank, jsdoc_queries

from models.corpus.pairs import Pair, finalize

RULE = "jsdoc"


def mine(records: list[dict], texts: dict[str, str], cap: int, seed: str, stats: Counter) -> list[Pair]:
    candidates = {}
    for candidate in jsdoc_queries(records, texts):
        pair = Pair(RULE, candidate.text, candidate.targets, [], {"path": candidate.targets[0].path})
        candidates[id(pair)] = (pair, candidate)
    stats["jsdoc_candidates"] += len(candidates)
    kept, dropped = finalize([pair for pair, _ in candidates.values()], cap, seed)
    stats.update({f"jsdoc_{key}": value for key, value in dropped.items()})
    # Searching every comment for copies is the slow part: only for the pairs kept.
    for pair in kept:
        candidate = candidates[id(pair)][1]
        add_copies_to_blank(candidate, records, texts)
        pair.blank = candidate.source.pop("blanked_jsdoc")
    return kept
