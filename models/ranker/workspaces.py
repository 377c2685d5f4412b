"""Train workspaces for the learned ranker, indexed by the product as a user would index them.

The ranker learns from the first stage's candidates on repositories it will never be scored on:
the corpus's train repositories (models/corpus/manifest.json), never the benchmark's dev/test
ones; and only those the embedding models never trained on, the held-out tenth
(`vocabulary.held_out`, 14 of 160). The ranker weighs each model's cosine; code-small and
code-static learned from the other repositories' mined pairs, the very questions the ranker would
be taught with, so on them their cosines find the answer far more often than on code no model
has seen. A ranker taught there trusts cosines the product never gets: on identical dev/test
pools the ranker trained on all 160 repositories with the `full` code-small and code-static v2
scored dev MRR@10 0.575 and test 0.479 (the static cosine's rank first, 37% of its gain), the one
trained on the 14 held-out repositories alone 0.627 and 0.527, and the one trained on all 160
with the earlier models (the `cpu` code-small, code-static v1) 0.609 and 0.527. By a written rule:

- every held-out repository with a mined pair;
- a repository of more than CAP_LINES lines of TS/JS is indexed as a sample of CAP_LINES lines:
  first the files that hold a chosen query's target or are one (a concept pair's `files`: the
  answers must be there), then the other files of those files' folders (the hardest negatives:
  same folder, same vocabulary), then the rest in a seeded order, each file whole, until the cap.
  20k lines keeps every repository's candidates realistic (the sampled ones are 20k-line
  repositories of their own code) while the large repositories do not outweigh the rest.

Queries per repository: the mined pairs (models/corpus/pairs/train.jsonl.gz, and the concept pairs
of models/corpus/pairs/concept.jsonl.gz, models/corpus/concepts.py), at most CAPS[rule] per rule,
seeded; identifier and path queries are made from the index later (`dump.py`), by the benchmark's
own rules. The caps take about three pairs in five of the held-out repositories' (2,052 of
3,344), chosen on dev: a quarter of them (855) ranked dev MRR@10 0.614, these 0.623 (0.627 on a
rebuild: two builds differ by that much), all but a few (2,728) 0.619. `concept` is capped as
`test` is, about a tenth of a repository's queries: the benchmark's dev/test have three in ten,
but a concept pair's answer is up to five whole files, which go into the sample whatever their
size and push out the hard negatives of the other queries' folders. Each workspace is the
checkout's TS/JS sources with the chosen pairs' blanks applied (a JSDoc query must not find its
own comment), as the benchmark does.

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

from codecompass_dev.evaluation.services import start_stack
from codecompass_dev.evaluation.workspaces import index_workspace
from models.code_static import vocabulary
from models.code_static.evaluate import blanked_workspace
from models.corpus.build import CORPUS_DIR
from models.corpus.concepts import OUT_PATH as CONCEPT_PAIRS
from models.corpus.select import WORK_DIR

HERE = Path(__file__).resolve().parent
PAIRS = HERE.parent / "corpus" / "pairs" / "train.jsonl.gz"
RANKER_DIR = WORK_DIR / "ranker"
WORKSPACES_DIR = RANKER_DIR / "ws"
STATE_DIR = RANKER_DIR / "state"
QUERIES_PATH = RANKER_DIR / "train_queries.jsonl"

CAP_LINES = 20_000
MIN_PAIRS = 1
CAPS = {"commit": 160, "jsdoc": 60, "test": 40, "concept": 40, "error": 32, "comment": 20, "header": 12, "doc": 12}
# Rules added after the first workspaces were built draw last from a repository's generator, so the
# earlier rules' samples stay as they were.
ADDED_RULES = ("concept",)
SEED = 20261126


def file_lines(path: Path) -> int:
    try:
        with open(path, "rb") as fh:
            return fh.read().count(b"\n")
    except OSError:
        return 0


def repo_lines(checkout: Path) -> int:
    return sum(file_lines(path) for path in vocabulary.source_files(checkout))


def sample_files(checkout: Path, pairs: list[dict], repo: str) -> list[str] | None:
    """The files of a repository's workspace (relative paths), or None for all of them: target
    files, then their folders' other files, then the rest in a seeded order, until CAP_LINES."""
    sizes = {str(p.relative_to(checkout)): file_lines(p) for p in vocabulary.source_files(checkout)}
    if sum(sizes.values()) <= CAP_LINES:
        return None
    answers = [t["path"] for pair in pairs for t in [*pair["targets"], *pair.get("files", [])]]
    targets = sorted({path for path in answers if path in sizes})
    folders = {str(Path(path).parent) for path in targets}
    neighbours = sorted(path for path in sizes if str(Path(path).parent) in folders and path not in targets)
    rest = sorted(path for path in sizes if path not in targets and path not in neighbours)
    random.Random(f"{SEED}:{repo}:files").shuffle(rest)
    chosen, total = [], 0
    for path in [*targets, *neighbours, *rest]:
        # Target files always go in; the others only while they fit.
        if path in targets or total + sizes[path] <= CAP_LINES:
            chosen.append(path)
            total += sizes[path]
    return chosen


def build_workspace(checkout: Path, pairs: list[dict], files: list[str] | None, into: Path) -> bool:
    """Write the workspace unless it holds these files with these blanks already; True when written.

    Rebuilt when what it is made of changes (a new rule's answers must be in it); a file rewritten
    unchanged costs the index nothing (its catalog compares content hashes)."""
    stamp = json.dumps({"files": files, "blank": sorted(json.dumps(p.get("blank", [])) for p in pairs)}) + "\n"
    built = into / ".built"
    if built.is_file() and built.read_text(encoding="utf-8") == stamp:
        return False
    shutil.rmtree(into, ignore_errors=True)
    into.mkdir(parents=True)
    blanked_workspace(checkout, pairs, into, files)
    built.write_text(stamp, encoding="utf-8")
    return True


def load_pairs() -> dict[str, list[dict]]:
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for path in (PAIRS, CONCEPT_PAIRS):
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            for line in fh:
                pair = json.loads(line)
                by_repo[pair["repo"]].append(pair)
    return by_repo


def choose(by_repo: dict[str, list[dict]]) -> list[str]:
    """Every held-out repository (no embedding model trained on it) with enough pairs whose
    checkout `make corpus` wrote, in a stable order."""
    return sorted(repo for repo, pairs in by_repo.items()
                  if vocabulary.held_out(repo) and len(pairs) >= MIN_PAIRS
                  and (CORPUS_DIR / repo.replace("/", "+")).is_dir())


def sample_pairs(repo: str, pairs: list[dict]) -> list[dict]:
    rng = random.Random(f"{SEED}:{repo}")
    by_rule: dict[str, list[dict]] = defaultdict(list)
    for pair in sorted(pairs, key=lambda p: p["id"]):
        by_rule[pair["rule"]].append(pair)
    out = []
    for rule, members in sorted(by_rule.items(), key=lambda item: (item[0] in ADDED_RULES, item[0])):
        rng.shuffle(members)
        out += members[: CAPS.get(rule, 0)]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--no-index", action="store_true", help="build the workspaces and queries only")
    args = parser.parse_args(argv)
    by_repo = load_pairs()
    chosen = choose(by_repo)
    WORKSPACES_DIR.mkdir(parents=True, exist_ok=True)
    queries, lines = [], {}
    for repo in chosen:
        pairs = sample_pairs(repo, by_repo[repo])
        checkout = CORPUS_DIR / repo.replace("/", "+")
        into = WORKSPACES_DIR / repo.replace("/", "+")
        build_workspace(checkout, pairs, sample_files(checkout, pairs, repo), into)
        lines[repo] = repo_lines(into)
        queries += [{"id": p["id"], "repo": repo, "rule": p["rule"], "query": p["query"], "targets": p["targets"],
                     "files": p.get("files", [])} for p in pairs]
    print(f"{len(chosen)} repositories, {sum(lines.values()):,} lines", file=sys.stderr)
    with open(QUERIES_PATH, "w", encoding="utf-8") as fh:
        fh.writelines(json.dumps(query, sort_keys=True) + "\n" for query in queries)
    print(f"{len(queries)} pair queries -> {QUERIES_PATH}", file=sys.stderr)
    if args.no_index:
        return 0
    stack = start_stack({"CODECOMPASS_STATE_DIR": str(STATE_DIR)})
    try:
        for repo in chosen:
            t0 = time.perf_counter()
            info = index_workspace(stack.retrieval, WORKSPACES_DIR / repo.replace("/", "+"))
            print(f"{repo}: {lines[repo]:,} lines, {info['chunks']} chunks, {info['status']}, "
                  f"{time.perf_counter() - t0:.0f} s", file=sys.stderr, flush=True)
    finally:
        stack.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
