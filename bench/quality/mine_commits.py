"""Mine natural-language queries from the commit history of the quality repositories.

A query is the subject line of a real commit; its relevant symbols ("gold") are chosen by
a rule, never by hand: the named symbols whose code the commit's diff changed. Nobody on
this project wrote the text, and nobody picked the answers.

The rule, per repository of bench/corpus/assemble.py QUALITY_REPOS (its git mirror named on
the command line, its pinned npm version's release tag in QUALITY_REPOS):

1. Window: non-merge commits reachable from the pinned release commit, at most --window-days
   older than it and at most --max-commits of the newest, that touch the library's own code
   (`code_paths`: the folders its npm package publishes).
2. Subject: conventional-commit prefixes (`fix(core): `, `[v4] `, `fetch: `) and trailing
   PR/issue references (`(#1234)`) are stripped; release, version bump, merge, revert,
   docs, chore, ci, test, build, style, typo, lint, format and dependency commits are
   dropped, as are subjects shorter than 4 words.
3. Diff: `git show --unified=0` of the commit, code files only (no tests, no .d.ts, the
   same filter as the other query types). Commits touching more than MAX_SOURCE_FILES are refactors
   and dropped. Each changed line of the post-commit file goes to the innermost named symbol
   containing it (symbols from bench/quality/extract_symbols.js, the same TypeScript-compiler
   extraction as the other query types); a pure deletion counts when the lines on both sides
   of it lie in the same innermost symbol. Lines outside every symbol (imports, top-level
   constants) select nothing.
4. Keep commits whose changes select 1..3 symbols (more is a refactor with no clear answer).
5. Keep the symbols that still exist in the pinned version (same workspace path, same
   qualified name), with their line ranges in the pinned version; drop the commit if none
   survive.
6. Subjects that occur more than once (across all repositories) are dropped entirely, as they
   cannot have one answer; then the newest --cap commits per repository are kept (nearest to
   the pinned code, and no repository dominates).
7. `leaks_name` is true when the subject contains a gold symbol's name verbatim or its split
   identifier words in sequence (bench/lib/text.py leaks_name); such queries are kept and
   tagged, so the runner can report with and without them.

Output: bench/quality/commit_queries.jsonl (committed): one line per query with the subject
text, gold symbols, leaks_name and provenance (repository URL, commit sha, date, original
subject). bench/quality/build_queries.py turns it into the `nl` queries of queries.jsonl.
No code of the repositories is stored, only these derived facts.

Needs the quality workspaces assembled (python -m bench.corpus.assemble quality), which also
brings the git mirrors it reads (bench/corpus/mirrors.py; or name a mirror per repository).
Not run by CI.

Run: .venv/bin/python -m bench.quality.mine_commits [rxjs=/path/to/rxjs.git ...] [--cap 80]
     (no repositories named: every quality repository, from its mirror)
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.corpus.assemble import QUALITY_DIR, QUALITY_REPOS, QUALITY_REPOS_BY_NAME, QualityRepo, is_code_file
from bench.corpus.mirrors import MirrorError, ensure_mirror, git, git_bytes
from bench.corpus.policy import assert_allowed
from bench.lib.text import leaks_name, words

HERE = Path(__file__).resolve().parent
EXTRACTOR = HERE / "extract_symbols.js"
OUT_PATH = HERE / "commit_queries.jsonl"

MIN_WORDS = 4
MAX_GOLD = 3
MAX_SOURCE_FILES = 6
DEFAULT_WINDOW_DAYS = 5 * 365
DEFAULT_MAX_COMMITS = 3000
DEFAULT_CAP = 80
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


def extract(root: Path, rels: list[str]) -> dict[str, list[dict]]:
    symbols: dict[str, list[dict]] = {}
    for i in range(0, len(rels), 400):
        batch = rels[i : i + 400]
        out = subprocess.run(
            ["node", str(EXTRACTOR), str(root), *batch], check=True, capture_output=True, text=True, timeout=1200
        )
        for line in out.stdout.splitlines():
            record = json.loads(line)
            symbols[record["path"]] = record["symbols"]
    return symbols


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
        post = extract(root, rels)
    pinned_paths = sorted(
        {c.path for _, changes, _ in with_changes for c in changes if (pinned_root / c.path).is_file()}
    )
    pinned_symbols = extract(pinned_root, pinned_paths) if pinned_paths else {}
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


def mine_repo(mirror: Path, repo: QualityRepo, window_days: int, max_commits: int) -> tuple[list[dict], Counter]:
    stats: Counter = Counter()
    workspace = QUALITY_DIR / repo.name
    if not workspace.is_dir():
        raise SystemExit(f"{workspace} is missing: run python -m bench.corpus.assemble quality")
    found = mine_history(
        mirror,
        repo.commit,
        workspace,
        repo.code_paths,
        lambda path: is_code_file(repo, path),
        window_days,
        max_commits,
        stats,
    )
    mined = []
    for item in found:
        commit, targets = item.commit, item.targets
        leaked = any(leaks_name(commit.query, t["qualified_name"].split(".")[-1]) for t in targets)
        mined.append(
            {
                "repo": repo.name,
                "query": commit.query,
                "targets": targets,
                "leaks_name": leaked,
                "source": {
                    "url": f"https://github.com/{repo.github}",
                    "commit": commit.sha,
                    "date": commit.date,
                    "subject": commit.subject,
                    "gold_rule": GOLD_RULE,
                    "gold_in_commit": item.gold_in_commit,
                },
            }
        )
    return mined, stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "mirrors",
        nargs="*",
        metavar="REPO=GIT_DIR",
        help="a quality repository and its git mirror (default: every repository, its own mirror)",
    )
    parser.add_argument("--window-days", type=int, default=DEFAULT_WINDOW_DAYS)
    parser.add_argument("--max-commits", type=int, default=DEFAULT_MAX_COMMITS)
    parser.add_argument("--cap", type=int, default=DEFAULT_CAP, help="most queries kept per repository")
    parser.add_argument("--out", type=Path, default=OUT_PATH)
    args = parser.parse_args(argv)
    mined: list[dict] = []
    named = dict(item.partition("=")[::2] for item in args.mirrors)
    for name in named:
        if name not in QUALITY_REPOS_BY_NAME:
            raise SystemExit(f"unknown repository {name!r}: one of {sorted(QUALITY_REPOS_BY_NAME)}")
    for repo in QUALITY_REPOS:
        if named and repo.name not in named:
            continue
        name = repo.name
        assert_allowed(repo.github)
        try:
            mirror = Path(named[name]) if named.get(name) else ensure_mirror(repo.github, repo.commit)
            rows, stats = mine_repo(mirror, repo, args.window_days, args.max_commits)
        except MirrorError as err:
            raise SystemExit(f"{name}: {err}") from None
        print(f"{name}: {dict(stats)}")
        mined.extend(rows)
    # One subject, several commits: no single right answer.
    counts = Counter(row["query"].lower() for row in mined)
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for row in mined:
        if counts[row["query"].lower()] == 1:
            by_repo[row["repo"]].append(row)
    kept = []
    for name in sorted(by_repo):
        rows = sorted(by_repo[name], key=lambda r: (r["source"]["date"], r["source"]["commit"]), reverse=True)
        kept.extend(rows[: args.cap])
        print(f"{name}: {len(rows)} unique, kept {min(len(rows), args.cap)}")
    with open(args.out, "w", encoding="utf-8") as fh:
        for row in kept:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(kept)} commit queries -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
