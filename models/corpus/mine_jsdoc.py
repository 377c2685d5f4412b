"""JSDoc first sentence -> the symbol it documents, that JSDoc blanked.

The benchmark's `jsdoc` rule (codecompass_dev/queries/symbol_queries.py jsdoc_queries and
add_copies_to_blank), over every non-test source file of the repository: the first sentence of
the description, 5..40 words; dropped when it names the symbol or documents two symbols.
Blanked: that JSDoc comment and every other JSDoc comment of the repository holding the same
sentence (overload copies).

The bench asks only about functions, methods, constructors and accessors. Training also takes
every symbol the analysis service makes a chunk of and names the same way: classes, and the
module-scope interfaces, type aliases, enums and variables (`export const DEFAULTS = {...}`) a
file exports (models/corpus/extract_tests.js lists the exports and the documented variables).
A private type's or constant's doc is mostly a note to the file's maintainers; an exported
one's is the package's documentation, what a user would ask about. A JSDoc with tags only
(`@param`, `@returns`, `@type`) has no description and makes no pair.
"""

from __future__ import annotations

from collections import Counter

from codecompass_dev.queries.symbol_queries import FUNCTION_KINDS, add_copies_to_blank, jsdoc_queries
from models.corpus.pairs import Pair, finalize

RULE = "jsdoc"
ANY_SCOPE_KINDS = frozenset(FUNCTION_KINDS | {"class"})
EXPORTED_KINDS = frozenset({"interface", "type", "enum", "variable"})


def documented(records: list[dict], scanned: list[dict]) -> list[dict]:
    """The records with the symbols the rule may target: exported module-scope declarations added and kept."""
    by_path = {item["path"]: item for item in scanned if item["type"] == "declarations"}
    out = []
    for record in records:
        found = by_path.get(record["path"], {"exported": [], "variables": []})
        exported = set(found["exported"])
        names = {symbol["qualified_name"] for symbol in record["symbols"]}
        variables = [
            {
                "name": v["name"],
                "qualified_name": v["name"],
                "kind": "variable",
                "start_line": v["start_line"],
                "end_line": v["end_line"],
                "has_body": True,
                "jsdoc": v["jsdoc"],
                "jsdoc_spans": v["jsdoc_spans"],
            }
            for v in found["variables"]
            if v["name"] not in names  # a bound function or class: extract_symbols.js lists it already
        ]
        symbols = [
            s
            for s in [*record["symbols"], *variables]
            if s["kind"] in ANY_SCOPE_KINDS
            or (s["kind"] in EXPORTED_KINDS and s["qualified_name"] == s["name"] and s["name"] in exported)
        ]
        out.append({**record, "symbols": symbols})
    return out


def mine(
    records: list[dict], texts: dict[str, str], scanned: list[dict], cap: int, seed: str, stats: Counter
) -> list[Pair]:
    admitted = documented(records, scanned)
    kinds = {(r["path"], s["qualified_name"]): s["kind"] for r in admitted for s in r["symbols"]}
    candidates = {}
    for candidate in jsdoc_queries(admitted, texts, ANY_SCOPE_KINDS | EXPORTED_KINDS):
        target = candidate.targets[0]
        source = {"path": target.path, "kind": kinds[(target.path, target.qualified_name)]}
        pair = Pair(RULE, candidate.text, candidate.targets, [], source)
        candidates[id(pair)] = (pair, candidate)
    stats["jsdoc_candidates"] += len(candidates)
    kept, dropped = finalize([pair for pair, _ in candidates.values()], cap, seed)
    stats.update({f"jsdoc_{key}": value for key, value in dropped.items()})
    # Searching every comment for copies is the slow part: only for the pairs kept.
    for pair in kept:
        candidate = candidates[id(pair)][1]
        add_copies_to_blank(candidate, records, texts)
        pair.blank = candidate.source.pop("blanked_jsdoc")
        stats[f"jsdoc_kind_{pair.source['kind']}"] += 1
    return kept
