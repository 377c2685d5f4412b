"""Commit history as queries: a real commit's subject -> the symbols its diff changed.

A query is the subject line of a real commit; its relevant symbols ("gold") are chosen by
a rule, never by hand: the named symbols whose code the commit's diff changed. Nobody on
this project wrote the text, and nobody picked the answers.

`mine_history` runs steps 1-5 of the rule over one repository's history (read from its git
mirror, codecompass_dev/corpus/mirrors.py), with `is_code` naming the library's own code:

1. Window: non-merge commits reachable from the pinned commit, at most `window_days` older
   than it (None: the whole history) and at most `max_commits` of the newest, that touch the
   library's own code (`pathspecs`: the benchmark's `code_paths`, the folders its npm package
   publishes).
2. Subject: conventional-commit prefixes (`fix(core): `, `[v4] `, `fetch: `) and trailing
   PR/issue references (`(#1234)`) are stripped; release, version bump, merge, revert,
   docs, chore, ci, test, build, style, typo, lint, format and dependency commits are
   dropped, as are subjects shorter than 4 words.
3. Diff: `git show --unified=0` of the commit, code files only (no tests, no .d.ts, the
   same filter as the other query types). Commits touching more than MAX_SOURCE_FILES are refactors
   and dropped. Each changed line of the post-commit file goes to the innermost named symbol
   containing it (symbols from codecompass_dev/queries/extract_symbols.js, the same TypeScript-compiler
   extraction as the other query types); a pure deletion counts when the lines on both sides
   of it lie in the same innermost symbol. Lines outside every symbol (imports, top-level
   constants) select nothing.
4. Keep commits whose changes select 1..3 symbols (more is a refactor with no clear answer).
5. Keep the symbols that still exist in the pinned version (same workspace path, same
   qualified name), with their line ranges in the pinned version; drop the commit if none
   survive.

The benchmark's commit queries (bench/quality/mine_commits.py, which adds the rule's last
steps: duplicates dropped, a cap per repository, leaks marked) and the training corpus's commit
pairs (models/corpus/mine_commits.py) both run it.
"""

from __future__ import annotations

import re
import tempfile
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from codecompass_dev.corpus.mirrors import MirrorError, git, git_bytes
from codecompass_dev.queries.symbols import symbols_by_path
from codecompass_dev.queries.text import words

MIN_WORDS = 4
MAX_GOLD = 3
MAX_SOURCE_FILES = 6
DEFAULT_MAX_COMMITS = 3000
GOLD_RULE = "innermost named symbols containing the commit's changed lines"

_BRACKET_PREFIX = re.compile(r"^\s*\[[^\]]*\]\s*")
_CONVENTIONAL = re.compile(r"^(?P<type>[A-Za-z][\w-]*)(?:\((?P<scope>[^)]*)\))?!?:\s+")
_TRAILING_REF = re.compile(
    r"\s*(?:\((?:(?:fix(?:es)?|close[sd]?|refs?|see|resolves?)\s+)?(?:[\w.-]+/[\w.-]+)?#\d+(?:\s*,\s*#?\d+)*\)"
    r"|(?:(?:fix(?:es)?|close[sd]?|refs?|resolves?)\s+)?(?:[\w.-]+/[\w.-]+)?#\d+)\s*[.,;]?$",
    re.IGNORECASE,
)
DROP_TYPES = {
    "docs", "doc", "chore", "ci", "test", "tests", "build", "style", "release", "revert", "deps", "dep",
    "lint", "format", "typo", "bench", "benchmark", "example", "examples", "website", "site", "bump", "wip",
}  # fmt: skip
_DROP_START = re.compile(
    r"^(?:merge|revert|release|bump|prepare|publish|v?\d+\.\d+|fixup!|squash!|wip\b|format\b|reformat|lint\b)",
    re.IGNORECASE,
)
_DROP_WORD = re.compile(
    r"\b(?:typos?|lint|linting|linter|eslint|prettier|formatting|changelog|readme|bump|bumped|dependencies|"
    r"dependency|deps|devdependencies|jsdoc|docs|documentation|license|copyright|release|version)\b",
    re.IGNORECASE,
)


def clean_subject(subject: str) -> str | None:
    """The natural-language part of a commit subject, or None when the commit is not a behaviour change."""
    text = subject.strip()
    while True:
        before = text
        text = _BRACKET_PREFIX.sub("", text)
        match = _CONVENTIONAL.match(text)
        if match:
            if match.group("type").lower() in DROP_TYPES:
                return None
            text = text[match.end() :]
        text = _TRAILING_REF.sub("", text).strip()
        if text == before:
            break
    if _DROP_START.match(text) or _DROP_WORD.search(text):
        return None
    if len(words(text)) < MIN_WORDS:
        return None
    return text


@dataclass(frozen=True)
class Commit:
    sha: str
    date: str
    subject: str
    query: str


@dataclass
class FileChange:
    path: str
    changed: set[int]  # post-commit lines that were added or modified
    deletions: list[int]  # post-commit line after which lines were deleted


def window_commits(
    mirror: Path, pinned: str, pathspecs: Sequence[str], window_days: int | None, max_commits: int
) -> list[Commit]:
    """Window None: the whole history (the training corpus; the bench keeps its window for relevance)."""
    since = []
    if window_days is not None:
        tag_time = int(git(mirror, "log", "-1", "--format=%ct", pinned).strip())
        since = [f"--since={tag_time - window_days * 86400}"]
    out = git(
        mirror,
        "log",
        "--no-merges",
        f"--max-count={max_commits}",
        *since,
        "--format=%H%x1f%cI%x1f%s",
        pinned,
        "--",
        *pathspecs,
    )
    commits = []
    for line in out.splitlines():
        sha, date, subject = line.split("\x1f", 2)
        query = clean_subject(subject)
        if query:
            commits.append(Commit(sha, date, subject, query))
    return commits


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")


def diff_changes(mirror: Path, sha: str, pathspecs: Sequence[str], is_code: Callable[[str], bool]) -> list[FileChange]:
    out = git(mirror, "show", "--format=", "--unified=0", "--no-color", "--no-ext-diff", sha, "--", *pathspecs)
    changes: list[FileChange] = []
    current: FileChange | None = None
    for line in out.splitlines():
        if line.startswith("+++ "):
            target = line[4:]
            path = target[2:] if target.startswith("b/") else None
            current = FileChange(path, set(), []) if path and is_code(path) else None
            if current:
                changes.append(current)
        elif current is not None and (match := _HUNK.match(line)):
            start, count = int(match.group(1)), int(match.group(2) or "1")
            if count == 0:
                current.deletions.append(start)
            else:
                current.changed.update(range(start, start + count))
    return changes


def innermost(symbols: list[dict], line: int) -> dict | None:
    holders = [s for s in symbols if s["start_line"] <= line <= s["end_line"]]
    return min(holders, key=lambda s: (s["end_line"] - s["start_line"], -s["start_line"]), default=None)


def touched_symbols(change: FileChange, symbols: list[dict]) -> set[str]:
    names = set()
    for line in change.changed:
        symbol = innermost(symbols, line)
        if symbol:
            names.add(symbol["qualified_name"])
    for after in change.deletions:
        before_sym, after_sym = innermost(symbols, after), innermost(symbols, after + 1)
        if before_sym and after_sym and before_sym is after_sym:
            names.add(before_sym["qualified_name"])
    return names


def pinned_symbol(symbols: list[dict], qualified_name: str) -> dict | None:
    """The pinned version's symbol of that name; of overloads, the implementation (the one with a body)."""
    matches = [s for s in symbols if s["qualified_name"] == qualified_name]
    return max(matches, key=lambda s: (s["has_body"], s["end_line"] - s["start_line"]), default=None)


@dataclass
class MinedCommit:
    commit: Commit
    targets: list[dict]  # path, qualified_name and line range in the pinned version
    gold_in_commit: int


def mine_history(
    mirror: Path,
    pinned: str,
    pinned_root: Path,
    pathspecs: Sequence[str],
    is_code: Callable[[str], bool],
    window_days: int | None,
    max_commits: int,
    stats: Counter,
) -> list[MinedCommit]:
    """Steps 1-5 of the rule over one repository's history: its commits, each with its gold in the pinned checkout."""
    commits = window_commits(mirror, pinned, pathspecs, window_days, max_commits)
    stats["subjects_kept"] += len(commits)
    with_changes: list[tuple[Commit, list[FileChange], list[bytes]]] = []
    for commit in commits:
        try:
            changes = [c for c in diff_changes(mirror, commit.sha, pathspecs, is_code) if c.changed or c.deletions]
            if len(changes) <= MAX_SOURCE_FILES:
                posts = [git_bytes(mirror, "show", f"{commit.sha}:{change.path}") for change in changes]
        except MirrorError:
            # A partial snapshot lacks some old blobs: that commit cannot be read, the others can.
            stats["unreadable_commit"] += 1
            continue
        if not changes:
            stats["no_source_change"] += 1
        elif len(changes) > MAX_SOURCE_FILES:
            stats["too_many_files"] += 1
        else:
            with_changes.append((commit, changes, posts))
    with tempfile.TemporaryDirectory(prefix="mine-") as tmp:
        root = Path(tmp)
        rels = []
        for commit, changes, posts in with_changes:
            for change, post_text in zip(changes, posts, strict=True):
                rel = f"{commit.sha}/{change.path}"
                target = root / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(post_text)
                rels.append(rel)
        post = symbols_by_path(root, rels)
    pinned_paths = sorted(
        {c.path for _, changes, _ in with_changes for c in changes if (pinned_root / c.path).is_file()}
    )
    pinned_symbols = symbols_by_path(pinned_root, pinned_paths) if pinned_paths else {}
    mined = []
    for commit, changes, _ in with_changes:
        gold: list[tuple[str, str]] = []
        for change in changes:
            names = touched_symbols(change, post.get(f"{commit.sha}/{change.path}", []))
            gold.extend((change.path, name) for name in sorted(names))
        if not 1 <= len(gold) <= MAX_GOLD:
            stats["no_gold" if not gold else "too_many_symbols"] += 1
            continue
        targets = []
        for path, name in gold:
            symbol = pinned_symbol(pinned_symbols.get(path, []), name)
            if symbol:
                targets.append(
                    {
                        "path": path,
                        "qualified_name": name,
                        "start_line": symbol["start_line"],
                        "end_line": symbol["end_line"],
                    }
                )
        if not targets:
            stats["gold_gone_in_pinned"] += 1
            continue
        stats["mined"] += 1
        mined.append(MinedCommit(commit, targets, len(gold)))
    return mined
