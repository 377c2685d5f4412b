"""Search filters: what a search may be narrowed to, and what a path pattern means.

Path patterns:
- no glob characters (`*?[{`): a path prefix, matched on whole path segments:
  `src/auth` matches `src/auth` and `src/auth/x.ts`, not `src/authz.ts`;
- otherwise a glob over the workspace-relative path: `*` and `?` stay within one segment, `**`
  spans segments, `[abc]` and `{a,b}` as in shells; a glob without `/` matches the base name at
  any depth (`*.test.ts`), as in .gitignore. Globs become anchored regular expressions
  (`glob_to_regex`) that LanceDB evaluates (`codecompass.retrieval.filter_sql`).
Several patterns are OR-ed; the other filters are AND-ed. An absolute pattern inside the
workspace is read as the relative one (`relative_patterns`); outside it, it is an error.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path

from codecompass.common.chunks import Language, NodeKind
from codecompass.common.inputs import MAX_PATH_CHARS, quoted, text_problem

_GLOB_CHARS = frozenset("*?[{")
# Characters that are special in the (Rust) regex syntax LanceDB evaluates.
_REGEX_SPECIAL = frozenset(".+*?()|[]{}^$\\#&-~")


class FilterError(ValueError):
    """A filter value that cannot be honoured (e.g. an unbalanced glob)."""


@dataclass(frozen=True)
class Filters:
    path_patterns: tuple[str, ...] = ()
    languages: tuple[Language, ...] = ()
    node_kinds: tuple[NodeKind, ...] = ()
    exclude_tests: bool = False
    only_tests: bool = False

    def __post_init__(self) -> None:
        if self.exclude_tests and self.only_tests:
            raise FilterError("exclude_tests and only_tests cannot both be set")
        for pattern in self.path_patterns:
            if not pattern.strip():
                raise FilterError("path pattern must not be empty")
            if (problem := text_problem(pattern, "path pattern", MAX_PATH_CHARS)) is not None:
                raise FilterError(problem)
            # Indexed paths are workspace-relative and never hold `..`: such a pattern would
            # match nothing, silently.
            if ".." in pattern.strip().replace("\\", "/").split("/"):
                raise FilterError(f"path pattern {quoted(pattern)} leaves the workspace; patterns are relative to "
                                  "its root")
            if is_glob(pattern):
                glob_to_regex(pattern)


def relative_patterns(filters: Filters, root: Path) -> Filters:
    """`filters` with absolute path patterns inside `root` made workspace-relative, the form
    indexed paths have (an agent often passes the absolute path it sees in its editor). An
    absolute pattern outside the workspace is a FilterError naming it; one that is the root
    itself means the whole workspace and is dropped."""
    if not any(_is_absolute(p) for p in filters.path_patterns):
        return filters
    roots = [root.as_posix().rstrip("/"), root.resolve().as_posix().rstrip("/")]
    patterns: list[str] = []
    for pattern in filters.path_patterns:
        text = pattern.strip().replace("\\", "/")
        if not _is_absolute(text):
            patterns.append(pattern)
            continue
        for base in roots:
            if text.rstrip("/") == base:
                break  # the whole workspace: no narrowing
            if text.startswith(base + "/"):
                patterns.append(text[len(base) + 1:])
                break
        else:
            raise FilterError(f"path pattern {quoted(pattern)} is outside the workspace {root}; patterns are "
                              "relative to its root (e.g. src/auth or **/*.ts)")
    return replace(filters, path_patterns=tuple(patterns))


def _is_absolute(pattern: str) -> bool:
    text = pattern.strip()
    return text.startswith("/") or bool(re.match(r"^[A-Za-z]:[\\/]", text))


def is_glob(pattern: str) -> bool:
    return any(ch in _GLOB_CHARS for ch in pattern)


def _escape_regex_char(ch: str) -> str:
    return "\\" + ch if ch in _REGEX_SPECIAL else ch


def glob_to_regex(pattern: str) -> str:
    """Anchored regex equivalent of a workspace-relative glob (see module docstring)."""
    glob = pattern.strip().lstrip("/")
    glob = glob.removeprefix("./")
    if "/" not in glob.rstrip("/"):
        glob = "**/" + glob
    if glob.endswith("/"):
        glob += "**"
    out: list[str] = []
    i = 0
    brace_depth = 0
    while i < len(glob):
        ch = glob[i]
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if glob.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if ch == "*":
            out.append("[^/]*")
        elif ch == "?":
            out.append("[^/]")
        elif ch == "[":
            end = glob.find("]", i + 2 if glob[i + 1 : i + 2] in ("!", "^") else i + 1)
            if end == -1:
                raise FilterError(f"unbalanced '[' in path glob {quoted(pattern)}")
            body = glob[i + 1 : end]
            negate = body[:1] in ("!", "^")
            if negate:
                body = body[1:]
            escaped = "".join("\\" + c if c in "\\[]^" else c for c in body)
            out.append(f"[{'^' if negate else ''}{escaped}]")
            i = end + 1
            continue
        elif ch == "{":
            brace_depth += 1
            out.append("(?:")
        elif ch == "}" and brace_depth:
            brace_depth -= 1
            out.append(")")
        elif ch == "," and brace_depth:
            out.append("|")
        else:
            out.append(_escape_regex_char(ch))
        i += 1
    if brace_depth:
        raise FilterError(f"unbalanced '{{' in path glob {quoted(pattern)}")
    return "^" + "".join(out) + "$"
