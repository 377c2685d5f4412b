"""Mine natural-language queries from the commit history of the quality repositories.

A query is the subject line of a real commit; its relevant symbols ("gold") are chosen by
a rule, never by hand: the named symbols whose code the commit's diff changed. Nobody on
this project wrote the text, and nobody picked the answers.

The rule, per repository of codecompass_dev/corpus/assemble.py QUALITY_REPOS (its git mirror named on
the command line, its pinned npm version's release tag in QUALITY_REPOS):

1-5. Window, subject, diff, gold, pinned: codecompass_dev/queries/commits.py (mine_history), with
   --window-days, --max-commits and the library's `code_paths` (the folders its npm package
   publishes).
6. Subjects that occur more than once (across all repositories) are dropped entirely, as they
   cannot have one answer; then the newest --cap commits per repository are kept (nearest to
   the pinned code, and no repository dominates).
7. `leaks_name` is true when the subject contains a gold symbol's name verbatim or its split
   identifier words in sequence (codecompass_dev/queries/text.py leaks_name); such queries are kept and
   tagged, so the runner can report with and without them.

Output: bench/quality/commit_queries.jsonl (committed): one line per query with the subject
text, gold symbols, leaks_name and provenance (repository URL, commit sha, date, original
subject). bench/quality/build_queries.py turns it into the `nl` queries of queries.jsonl.
No code of the repositories is stored, only these derived facts.

Needs the quality workspaces assembled (python -m codecompass_dev.corpus.assemble quality), which also
brings the git mirrors it reads (codecompass_dev/corpus/mirrors.py; or name a mirror per repository).
Not run by CI.

Run: .venv/bin/python -m bench.quality.mine_commits [rxjs=/path/to/rxjs.git ...] [--cap 80]
     (no repositories named: every quality repository, from its mirror)
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path

from codecompass_dev.corpus.assemble import QUALITY_DIR, QUALITY_REPOS, QUALITY_REPOS_BY_NAME, QualityRepo, is_code_file
from codecompass_dev.corpus.mirrors import MirrorError, ensure_mirror
from codecompass_dev.corpus.policy import assert_allowed
from codecompass_dev.queries.commits import DEFAULT_MAX_COMMITS, GOLD_RULE, mine_history
from codecompass_dev.queries.text import leaks_name

OUT_PATH = Path(__file__).resolve().parent / "commit_queries.jsonl"
DEFAULT_WINDOW_DAYS = 5 * 365
DEFAULT_CAP = 80


def mine_repo(mirror: Path, repo: QualityRepo, window_days: int, max_commits: int) -> tuple[list[dict], Counter]:
    stats: Counter = Counter()
    workspace = QUALITY_DIR / repo.name
    if not workspace.is_dir():
        raise SystemExit(f"{workspace} is missing: run python -m codecompass_dev.corpus.assemble quality")
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
