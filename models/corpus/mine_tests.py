"""Test titles -> the non-test symbols the test body calls, where every call is unambiguous.

A test is a call of `it`, `test` or `specify` (with `.only`, `.skip`, `.serial`, ...) whose first
argument is a string literal and whose last argument is a function, nested in any number of
`describe`/`context`/`suite` blocks (models/corpus/extract_tests.js). Its body's calls
(`f()`, `x.f()`, `new F()`, in nested callbacks too) are resolved by the TypeScript compiler
over the whole repository (imports followed to the declaration, CommonJS `require` included);
where the compiler cannot follow an import (a package importing itself by name), a callee bound
to an import of the repository's own code resolves by name. A call resolves when it lands on
exactly one named symbol of the repository's non-test code. `new F()` calls F's constructor, so its target is
that constructor; a class with no constructor of its own is the target only when it is small
(SMALL_CLASS_LINES in extract_tests.js), as constructing a 2,700-line class says nothing about
which of its members a test is about. Calls of test helpers (callees declared in files the
product counts as test code, codecompass.common.testcode, as models/corpus/pairs.py sorts
them) are neither targets nor a reason to drop the test: `expectParsed(...)` from
test/helpers.js is how the test checks, not what it checks.

Kept: tests with 1..3 resolved symbols (more is an integration test with no clear answer), no
call that lands on several symbols and no call into the repository's code that lands on no named
symbol (`ky.get()`, an interface's method): the answer could be the one we cannot name. Query: the
enclosing `describe` titles that do not name a target, then the test title; at least 4 prose
words (quoted literals do not count: `"a/*.js" should match "b"` is no question), and not
naming a target. Blanked: the title's string literal in the test file, so the test's own chunk
does not answer by its text.
"""

from __future__ import annotations

from collections import Counter

from codecompass_dev.evaluation.metrics import Target
from codecompass_dev.queries.commits import MAX_GOLD
from models.corpus.pairs import Pair, finalize, leaks_any, well_sized

RULE = "test"


def mine(scanned: list[dict], cap: int, seed: str, stats: Counter) -> list[Pair]:
    pairs = []
    for case in scanned:
        if case["type"] != "test":
            continue
        stats["test_cases"] += 1
        stats["test_helper_calls_ignored"] += len(case["helpers"])
        stats["test_large_class_constructions_ignored"] += len(case["large_classes"])
        if case["ambiguous"] or case["unnamed"]:
            stats["test_ambiguous_call" if case["ambiguous"] else "test_unnamed_call"] += 1
            continue
        if not 1 <= len(case["calls"]) <= MAX_GOLD:
            stats["test_no_call" if not case["calls"] else "test_too_many_calls"] += 1
            continue
        names = [call["name"] for call in case["calls"]]
        suites = [title for title in case["describe"] if not leaks_any(title, names)]
        query = " ".join(" ".join(part.split()) for part in [*suites, case["title"]])
        if not well_sized(query):
            stats["test_too_short_or_long"] += 1
            continue
        if leaks_any(query, names):
            stats["test_leaks_name"] += 1
            continue
        targets = [Target(c["path"], c["qualified_name"], c["start_line"], c["end_line"]) for c in case["calls"]]
        source = {"path": case["path"], "line": case["line"], "resolved_by": [c["how"] for c in case["calls"]]}
        pairs.append(Pair(RULE, query, targets, [{"path": case["path"], "spans": [case["title_span"]]}], source))
    kept, dropped = finalize(pairs, cap, seed)
    stats.update({f"test_{key}": value for key, value in dropped.items()})
    return kept
