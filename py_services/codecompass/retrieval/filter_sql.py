"""Search filters translated to LanceDB SQL predicates.

Both search channels (full text and vector) push the same predicate into LanceDB's `where`
(pre-filtering), so a filter never shrinks one channel's candidate list after the fact.

Filter values come from users and file names (`src/o'brien.ts` is a legal path), so every
literal goes through `sql_string`, the only place a value is spliced into SQL. LanceDB's
type-safe `Expr` builder cannot express `starts_with`/`regexp_like`/`array_has_any` in this
version, hence a vetted quoting function rather than `Expr`. What a path pattern means is the
contract's (`codecompass.contracts.retrieval.filters`).
"""

from __future__ import annotations

from collections.abc import Iterable

from codecompass.contracts.retrieval.filters import FilterError, Filters, glob_to_regex, is_glob


def sql_string(value: str) -> str:
    """A SQL string literal for `value`: single quotes doubled, nothing else interpreted.

    DataFusion (LanceDB's SQL dialect) does not treat backslashes specially in plain string
    literals, so doubling `'` is the complete escape. NUL cannot appear in a literal at all.
    """
    if "\x00" in value:
        raise FilterError("NUL character in filter value")
    return "'" + value.replace("'", "''") + "'"


def sql_in(column: str, values: Iterable[str]) -> str:
    """`column IN (...)` over quoted literals; callers guarantee `values` is non-empty."""
    return f"{column} IN ({', '.join(sql_string(v) for v in values)})"


def sql_list(values: Iterable[str]) -> str:
    """An array literal usable with `array_has_any`."""
    return "[" + ", ".join(sql_string(v) for v in values) + "]"


def _path_predicate(pattern: str) -> str:
    if is_glob(pattern):
        return f"regexp_like(relative_path, {sql_string(glob_to_regex(pattern))})"
    prefix = pattern.strip().lstrip("/")
    prefix = prefix.removeprefix("./")
    prefix = prefix.rstrip("/")
    if not prefix:
        return "true"
    return f"(relative_path = {sql_string(prefix)} OR starts_with(relative_path, {sql_string(prefix + '/')}))"


def to_sql(filters: Filters) -> str | None:
    """The predicate for `filters`, or None when nothing is filtered."""
    clauses: list[str] = []
    if filters.path_patterns:
        paths = " OR ".join(_path_predicate(p) for p in filters.path_patterns)
        clauses.append(f"({paths})")
    if filters.languages:
        clauses.append(sql_in("language", (lang.value for lang in filters.languages)))
    if filters.node_kinds:
        clauses.append(sql_in("node_kind", (kind.value for kind in filters.node_kinds)))
    if filters.exclude_tests:
        clauses.append("is_test = false")
    if filters.only_tests:
        clauses.append("is_test = true")
    return " AND ".join(clauses) if clauses else None


def combine(*predicates: str | None) -> str | None:
    present = [p for p in predicates if p]
    if not present:
        return None
    if len(present) == 1:
        return present[0]
    return " AND ".join(f"({p})" for p in present)
