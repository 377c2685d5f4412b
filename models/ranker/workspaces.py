"""Train workspaces for the learned ranker, indexed by the product as a user would index them.

The ranker learns from the first stage's candidates on repositories it will never be scored on:
the corpus's train repositories (models/corpus/manifest.json), never the benchmark's dev/test
ones. Which repositories, by a written rule:

- between MIN_LINES and MAX_LINES lines of TS/JS (the benchmark's repositories are 20k-60k
  lines: rankers trained on toy repositories learn that every candidate is close), with at
  least MIN_PAIRS mined pairs;
- smallest first until TOTAL_LINES, so indexing with the default model fits an hour on 2 cores.

Queries per repository: the mined pairs (models/corpus/pairs/train.jsonl.gz), at most CAPS[rule]
per rule, seeded; identifier and path queries are made from the index later (`dump.py`), by the
benchmark's own rules. Each workspace is the checkout's TS/JS sources with the chosen pairs'
blanks applied (a JSDoc query must not find its own comment), as the benchmark does.

Run: .venv/bin/python -m models.ranker.workspaces   (then it indexes them all; rerun resumes)
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import shutil
import sys
import time
from collections import defaultdict
from pathlib import Path

from bench.lib.services import start_stack
from bench.quality.run_quality import index_workspace

from models.code_static import vocabulary
from models.code_static.evaluate import blanked_workspace
from models.corpus.build import CORPUS_DIR
from models.corpus.select import WORK_DIR

HERE = Path(__file__).resolve().parent
PAIRS = HERE.parent / "corpus" / "pairs" / "train.jsonl.gz"
RANKER_DIR = WORK_DIR / "ranker"
WORKSPACES_DIR = RANKER_DIR / "ws"
STATE_DIR = RANKER_DIR / "state"
QUERIES_PATH = RANKER_DIR / "train_queries.jsonl"

MIN_LINES, MAX_LINES, TOTAL_LINES = 8_000, 45_000, 650_000
MIN_PAIRS = 60
CAPS = {"commit": 40, "jsdoc": 15, "test": 10, "error": 8, "comment": 5, "header": 3, "doc": 3}
SEED = 20261126


def repo_lines(checkout: Path) -> int:
    total = 0
    for path in vocabulary.source_files(checkout):
        try:
            with open(path, "rb") as fh:
                total += fh.read().count(b"\n")
        except OSError:
            continue
    return total


def load_pairs() -> dict[str, list[dict]]:
    by_repo: dict[str, list[dict]] = defaultdict(list)
    with gzip.open(PAIRS, "rt", encoding="utf-8") as fh:
        for line in fh:
            pair = json.loads(line)
            by_repo[pair["repo"]].append(pair)
    return by_repo


def choose(by_repo: dict[str, list[dict]]) -> list[tuple[str, int]]:
    sized = []
    for repo, pairs in by_repo.items():
        if len(pairs) < MIN_PAIRS:
            continue
        lines = repo_lines(CORPUS_DIR / repo.replace("/", "+"))
        if MIN_LINES <= lines <= MAX_LINES:
            sized.append((repo, lines))
    sized.sort(key=lambda x: (x[1], x[0]))
    chosen, total = [], 0
    for repo, lines in sized:
        if total + lines > TOTAL_LINES:
            break
        chosen.append((repo, lines))
        total += lines
    return chosen


def sample_pairs(repo: str, pairs: list[dict]) -> list[dict]:
    rng = random.Random(f"{SEED}:{repo}")
    by_rule: dict[str, list[dict]] = defaultdict(list)
    for pair in sorted(pairs, key=lambda p: p["id"]):
        by_rule[pair["rule"]].append(pair)
    out = []
    for rule, members in sorted(by_rule.items()):
        rng.shuffle(members)
        out += members[: CAPS.get(rule, 0)]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-index", action="store_true", help="build the workspaces and queries only")
    args = parser.parse_args(argv)
    by_repo = load_pairs()
    chosen = choose(by_repo)
    print(f"{len(chosen)} repositories, {sum(n for _, n in chosen):,} lines", file=sys.stderr)
    WORKSPACES_DIR.mkdir(parents=True, exist_ok=True)
    queries = []
    for repo, _ in chosen:
        pairs = sample_pairs(repo, by_repo[repo])
        into = WORKSPACES_DIR / repo.replace("/", "+")
        if not (into / ".built").exists():
            shutil.rmtree(into, ignore_errors=True)
            into.mkdir(parents=True)
            blanked_workspace(CORPUS_DIR / repo.replace("/", "+"), pairs, into)
            (into / ".built").write_text("ok\n")
        queries += [{"id": p["id"], "repo": repo, "rule": p["rule"], "query": p["query"], "targets": p["targets"]}
                    for p in pairs]
    with open(QUERIES_PATH, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(query, sort_keys=True) + "\n" for query in queries)
    print(f"{len(queries)} pair queries -> {QUERIES_PATH}", file=sys.stderr)
    if args.no_index:
        return 0
    stack = start_stack({"CODECOMPASS_STATE_DIR": str(STATE_DIR)})
    try:
        for repo, lines in chosen:
            t0 = time.perf_counter()
            info = index_workspace(stack.retrieval, WORKSPACES_DIR / repo.replace("/", "+"))
            print(f"{repo}: {lines:,} lines, {info['chunks']} chunks, {info['status']}, "
                  f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    finally:
        stack.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
