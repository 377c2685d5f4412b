"""Mine `concept` queries from the quality repositories: how a part of the library works -> its file(s).

The rules (docs-file, docs-api, package, commit-body) and what an explanatory sentence is are
codecompass_dev/queries/concepts.py's; this script runs them over every repository of
codecompass_dev/corpus/assemble.py QUALITY_REPOS at its pinned commit, read from its git mirror,
and writes the benchmark's committed file.

Leaks: a query whose sentence names a target is kept and marked (`leaks_name`). In a repository
where docs-api sentences that leak outnumber those that do not, a seeded sample of them (as many
as the leak-free ones) is kept, so a leak-free majority stays.

Duplicates: a text (case-folded) with two different answers, in any repositories, is dropped; the
same text with the same answer is kept once.

Output: bench/quality/concept_queries.jsonl (committed): per query the repository, rule, text,
target files, symbol targets (path, qualified name, pinned line range), leaks_name and provenance
(`source`: kind = the rule, the repository URL; file, line and heading, or commit, date, subject
and the line of the body); no code. bench/quality/build_queries.py samples the `concept` queries
of queries.jsonl from it.

Needs the git mirrors ($BENCH_MIRRORS, codecompass_dev/corpus/mirrors.py) and node (symbol extraction).
Not run by CI.

Run: .venv/bin/python -m bench.quality.mine_concepts [--repos pino,knex] [--max-commits 3000]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path

from bench.quality.build_queries import DEFAULT_SEED
from codecompass_dev.corpus.assemble import QUALITY_REPOS, QualityRepo
from codecompass_dev.corpus.mirrors import MirrorError, ensure_mirror
from codecompass_dev.corpus.policy import assert_allowed
from codecompass_dev.queries.commits import DEFAULT_MAX_COMMITS
from codecompass_dev.queries.concepts import (
    RULES,
    Candidate,
    commit_candidates,
    docs_candidates,
    package_candidates,
    pinned_tree,
)

OUT_PATH = Path(__file__).resolve().parent / "concept_queries.jsonl"


# --- Selection and output -----------------------------------------------------------------------


def keep_leak_free_majority(candidates: list[Candidate], seed: int, repo: str, stats: Counter) -> list[Candidate]:
    """docs-api sentences that name their API: at most as many as the leak-free ones (seeded sample)."""
    api = [c for c in candidates if c.rule == "docs-api"]
    leaking = [c for c in api if c.leaks_name]
    room = len(api) - len(leaking)
    if len(leaking) <= room:
        return candidates
    kept = {id(c) for c in random.Random(f"{seed}:{repo}:concept-leaks").sample(leaking, room)}
    stats["docs-api_leaking_sampled_out"] += len(leaking) - room
    return [c for c in candidates if not (c.rule == "docs-api" and c.leaks_name and id(c) not in kept)]


def mine_repo(repo: QualityRepo, max_commits: int, seed: int, stats: Counter) -> list[Candidate]:
    mirror = ensure_mirror(repo.github, repo.commit)
    with tempfile.TemporaryDirectory(prefix="concepts-pin-") as tmp:
        pinned = pinned_tree(repo, mirror, Path(tmp) / repo.name)
        candidates = docs_candidates(pinned, stats) + package_candidates(pinned, stats)
        candidates += commit_candidates(pinned, mirror, max_commits, stats)
    return keep_leak_free_majority(candidates, seed, repo.name, stats)


def deduplicate(rows: list[tuple[str, Candidate]], stats: Counter) -> list[tuple[str, Candidate]]:
    """One text, two answers: dropped everywhere; one text, one answer: kept once."""
    answers: dict[str, set] = defaultdict(set)
    for repo, c in rows:
        answers[c.query.lower()].add((repo, c.answer()))
    seen: set[str] = set()
    out = []
    for repo, c in rows:
        key = c.query.lower()
        if len(answers[key]) > 1:
            stats["duplicate_text_two_answers"] += 1
        elif key in seen:
            stats["duplicate_text_same_answer"] += 1
        else:
            seen.add(key)
            out.append((repo, c))
    return out


def record(repo: str, c: Candidate) -> dict:
    return {
        "repo": repo,
        "rule": c.rule,
        "query": c.query,
        "files": c.files,
        "targets": c.targets,
        "leaks_name": c.leaks_name,
        "source": c.source,
    }


def count_table(rows: Sequence[dict]) -> str:
    """Markdown: mined concept queries per repository and rule (of them leaking a name)."""
    per = Counter((r["repo"], r["rule"]) for r in rows)
    leaked = Counter((r["repo"], r["rule"]) for r in rows if r["leaks_name"])
    lines = ["| Repository | Split | " + " | ".join(RULES) + " | all |", "|---|---|" + "---|" * (len(RULES) + 1)]
    for repo in QUALITY_REPOS:
        cells = [f"{per[(repo.name, rule)]} ({leaked[(repo.name, rule)]})" for rule in RULES]
        total = sum(per[(repo.name, rule)] for rule in RULES)
        lines.append(f"| {repo.name} | {repo.split} | " + " | ".join(cells) + f" | {total} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repos", help="comma-separated repository names (default: every quality repository)")
    parser.add_argument("--max-commits", type=int, default=DEFAULT_MAX_COMMITS)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--out", type=Path, default=OUT_PATH)
    args = parser.parse_args(argv)
    wanted = {r.strip() for r in args.repos.split(",")} if args.repos else None
    rows: list[tuple[str, Candidate]] = []
    for repo in QUALITY_REPOS:
        if wanted and repo.name not in wanted:
            continue
        assert_allowed(repo.github)
        stats: Counter = Counter()
        try:
            found = mine_repo(repo, args.max_commits, args.seed, stats)
        except MirrorError as err:
            raise SystemExit(f"{repo.name}: {err}") from None
        print(f"{repo.name}: {dict(sorted(stats.items()))}")
        rows.extend((repo.name, c) for c in found)
    stats = Counter()
    kept = [record(repo, c) for repo, c in deduplicate(rows, stats)]
    print(dict(stats))
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in kept)
    print(count_table(kept))
    print(f"{len(kept)} concept queries -> {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
