"""Build the quality benchmark's query set and its workspaces.

Corpus: the repositories of codecompass_dev/corpus/assemble.py QUALITY_REPOS, each checked out at the
commit of a pinned npm release as one workspace per repository, bench/.work/quality/<repo>/
(everything a clone has: tests, examples and docs compete with the code). Queries are drawn
from the library's own code only (`code_paths`: the paths its npm package publishes). A query
of repository R is searched in workspace R only (a user has one repository open).

Query types (rules fixed in code; a fixed seed picks the samples; the set is committed as
queries.jsonl, and re-running this script reproduces it byte for byte):
  nl          the subject of a real commit of the repository -> the symbols its diff
              changed, mined by bench/quality/mine_commits.py (needs git mirrors, so its
              output bench/quality/commit_queries.jsonl is committed); targets are checked
              against the pinned sources here and dropped when they no longer match.
  jsdoc, identifier, error, path
              the symbol query rules of codecompass_dev/queries/symbol_queries.py (the training
              corpus mines by the same rules). A jsdoc query's comment, and any other in the
              repository containing its sentence, is blanked here (spaces; lines and offsets
              kept) in the workspace, so the query does not find itself; every other comment
              stays, as in a real repository.
  concept     how a part of the library works, in the repository's own prose (a docs
              section that names code files or API, a package's description, a commit body)
              -> the file or few files that do it (`files`, whole files), plus symbol targets
              where the rule names symbols; mined by bench/quality/mine_concepts.py (needs
              git mirrors, so its output bench/quality/concept_queries.jsonl is committed);
              files and symbols are checked against the pinned sources here. A quota per
              repository is drawn round-robin over the mining rules, so no one source fills it.

Targets: `targets` are symbols (path, qualified name, pinned line range); a `concept` query
also has `files`, file-level targets (path, start_line 0 and end_line 0: the whole file),
and may have no symbol target. Lines of the other types have no `files` key; scored at file
level, their symbol targets are their files (codecompass_dev/evaluation/metrics.py score_files).

Split: every query carries its repository's fixed split ("dev" | "test", QUALITY_REPOS);
tune on dev, report test.

Run: .venv/bin/python -m bench.quality.build_queries [--seed 20261122]
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from codecompass_dev.corpus.assemble import QUALITY_REPOS, QualityRepo, assemble_quality, code_files
from codecompass_dev.corpus.policy import assert_allowed
from codecompass_dev.evaluation.metrics import FileTarget, Target
from codecompass_dev.queries.symbol_queries import (
    Candidate,
    add_copies_to_blank,
    error_queries,
    identifier_queries,
    jsdoc_queries,
    path_queries,
    target_of,
)
from codecompass_dev.queries.symbols import extract
from codecompass_dev.queries.text import leaks_name

HERE = Path(__file__).resolve().parent
QUERIES_PATH = HERE / "queries.jsonl"
COMMIT_QUERIES_PATH = HERE / "commit_queries.jsonl"
CONCEPT_QUERIES_PATH = HERE / "concept_queries.jsonl"

DEFAULT_SEED = 20261122
# Per repository; small repositories give fewer.
QUOTAS = {"jsdoc": 18, "identifier": 10, "error": 12, "path": 6, "concept": 50}
# A file's card: the analysis service's chunk of the whole file (node_ts_service/src/symbols.ts).
# Sampled in this order from one generator per repository: a new type goes last, so the
# earlier types' samples (and their lines of queries.jsonl) stay as they were.
TYPE_ORDER = ("nl", "jsdoc", "identifier", "error", "path", "concept")


@dataclass
class Query:
    id: str
    type: str
    repo: str
    split: str
    query: str
    targets: list[Target]
    files: list[FileTarget] = field(default_factory=list)  # written only when there are some
    source: dict = field(default_factory=dict)
    leaks_name: bool = False


def mined_rows(path: Path, repo: str) -> Iterator[dict]:
    """The rows of a committed miner's output (commit_queries.jsonl, concept_queries.jsonl) for one
    repository; none when the file is absent."""
    if not path.exists():
        return
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            if row["repo"] == repo:
                yield row


def commit_queries(repo: QualityRepo, records: list[dict], stats: Counter) -> list[Candidate]:
    """The mined commit queries of `repo`, their targets checked against the pinned sources."""
    by_key = {}
    for record in records:
        for symbol in record["symbols"]:
            key = (record["path"], symbol["qualified_name"])
            if key not in by_key or (symbol["has_body"], symbol["end_line"] - symbol["start_line"]) > (
                by_key[key]["has_body"],
                by_key[key]["end_line"] - by_key[key]["start_line"],
            ):
                by_key[key] = symbol
    candidates = []
    for row in mined_rows(COMMIT_QUERIES_PATH, repo.name):
        targets = []
        for t in row["targets"]:
            symbol = by_key.get((t["path"], t["qualified_name"]))
            if symbol is None or (symbol["start_line"], symbol["end_line"]) != (t["start_line"], t["end_line"]):
                stats["nl_targets_not_in_pinned"] += 1
                continue
            targets.append(target_of(t["path"], symbol))
        if targets:
            candidates.append(Candidate(row["query"], targets, row["source"], row["leaks_name"]))
    return candidates


def concept_queries(repo: QualityRepo, records: list[dict], stats: Counter) -> list[Candidate]:
    """The mined concept queries of `repo`, their files and symbols checked against the pinned sources.

    A file that is no longer a code file drops the query (its text is about that file); a symbol
    target that moved or went away is dropped alone, as for `nl`.
    """
    symbols = {(r["path"], s["qualified_name"], s["start_line"], s["end_line"]) for r in records for s in r["symbols"]}
    code = {r["path"] for r in records}
    candidates = []
    for row in mined_rows(CONCEPT_QUERIES_PATH, repo.name):
        if not row["files"] or any(path not in code for path in row["files"]):
            stats["concept_files_not_in_pinned"] += 1
            continue
        targets = []
        for t in row["targets"]:
            if (t["path"], t["qualified_name"], t["start_line"], t["end_line"]) not in symbols:
                stats["concept_targets_not_in_pinned"] += 1
                continue
            targets.append(Target(t["path"], t["qualified_name"], t["start_line"], t["end_line"]))
        files = [FileTarget(path) for path in row["files"]]
        candidates.append(Candidate(row["query"], targets, row["source"], row["leaks_name"], files))
    return candidates


def sample(candidates: list[Candidate], quota: int, rng: random.Random) -> list[Candidate]:
    pool = sorted(candidates, key=lambda c: (c.targets[0].path, c.targets[0].start_line, c.text))
    rng.shuffle(pool)
    return pool[:quota]


def sample_by_rule(candidates: list[Candidate], quota: int, rng: random.Random) -> list[Candidate]:
    """Round-robin over the mining rules (each in a seeded order), so no one source fills the quota."""
    by_rule: dict[str, list[Candidate]] = defaultdict(list)
    for candidate in sorted(candidates, key=lambda c: (c.files[0].path, c.text)):
        by_rule[candidate.source["kind"]].append(candidate)
    for rule in sorted(by_rule):
        rng.shuffle(by_rule[rule])
    chosen: list[Candidate] = []
    depth = 0
    while len(chosen) < quota and any(depth < len(pool) for pool in by_rule.values()):
        for rule in sorted(by_rule):
            if depth < len(by_rule[rule]) and len(chosen) < quota:
                chosen.append(by_rule[rule][depth])
        depth += 1
    return chosen


def repo_queries(repo: QualityRepo, root: Path, rng: random.Random, stats: Counter) -> list[Query]:
    rels = code_files(repo, root / repo.name)
    records = extract(root / repo.name, rels)
    texts = {rel: (root / repo.name / rel).read_text(encoding="utf-8").removeprefix("\ufeff") for rel in rels}
    pools = {
        "nl": commit_queries(repo, records, stats),
        "jsdoc": jsdoc_queries(records, texts),
        "identifier": identifier_queries(records, rng),
        "error": error_queries(records),
        "path": path_queries(records),
        "concept": concept_queries(repo, records, stats),
    }
    queries: list[Query] = []
    for kind in TYPE_ORDER:
        pool = pools[kind]
        stats[f"{kind}_candidates"] += len(pool)
        if kind == "nl":
            chosen = pool
        elif kind == "concept":
            chosen = sample_by_rule(pool, QUOTAS[kind], rng)
        else:
            chosen = sample(pool, QUOTAS[kind], rng)
        for n, candidate in enumerate(chosen, start=1):
            if kind == "jsdoc":
                add_copies_to_blank(candidate, records, texts)
            leaks = candidate.leaks
            if leaks is None:
                leaks = any(leaks_name(candidate.text, t.qualified_name.split(".")[-1]) for t in candidate.targets)
            source = {"repo_url": f"https://github.com/{repo.github}", "release": repo.release_tag, **candidate.source}
            queries.append(
                Query(
                    id=f"{kind}-{repo.name}-{n:04d}",
                    type=kind,
                    repo=repo.name,
                    split=repo.split,
                    query=candidate.text,
                    targets=candidate.targets,
                    files=candidate.files,
                    source=source,
                    leaks_name=leaks,
                )
            )
    stats["files"] += len(records)
    stats["lines"] += sum(r["line_count"] for r in records)
    return queries


def build(seed: int) -> tuple[list[Query], Counter]:
    stats: Counter = Counter()
    queries: list[Query] = []
    with tempfile.TemporaryDirectory(prefix="quality-src-") as tmp:
        # Queries are always drawn from the code as committed, never from a blanked workspace.
        root = assemble_quality(True, queries_path=None, dest=Path(tmp) / "quality")
        for repo in QUALITY_REPOS:
            assert_allowed(repo.github)
            # One generator per repository: adding a repository does not reshuffle the others.
            rng = random.Random(f"{seed}:{repo.name}")
            queries.extend(repo_queries(repo, root, rng, stats))
    return queries, stats


def write(queries: list[Query], path: Path) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for query in queries:
            record = asdict(query)
            if not record["files"]:
                del record["files"]  # the symbol types' lines stay as they always were
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")


def count_table(queries: list[Query]) -> str:
    """Markdown: queries per repository and type, with each repository's split."""
    types = [t for t in TYPE_ORDER if any(q.type == t for q in queries)]
    lines = [
        "| Repository | Split | " + " | ".join(types) + " | all | nl leaking a name |",
        "|---|---|" + "---|" * (len(types) + 2),
    ]
    per = Counter((q.repo, q.type) for q in queries)
    leaks = Counter(q.repo for q in queries if q.type == "nl" and q.leaks_name)
    for repo in QUALITY_REPOS:
        row = [per[(repo.name, t)] for t in types]
        lines.append(
            f"| {repo.name} | {repo.split} | " + " | ".join(map(str, row)) + f" | {sum(row)} | {leaks[repo.name]} |"
        )
    for split in ("dev", "test"):
        chosen = [q for q in queries if q.split == split]
        row = [sum(q.type == t for q in chosen) for t in types]
        n_leaks = sum(q.type == "nl" and q.leaks_name for q in chosen)
        lines.append(f"| **{split}** | | " + " | ".join(map(str, row)) + f" | {sum(row)} | {n_leaks} |")
    row = [sum(q.type == t for q in queries) for t in types]
    n_leaks = sum(q.type == "nl" and q.leaks_name for q in queries)
    lines.append("| **all** | | " + " | ".join(map(str, row)) + f" | {sum(row)} | {n_leaks} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    parser.add_argument("--out", type=Path, default=QUERIES_PATH)
    args = parser.parse_args(argv)
    queries, stats = build(args.seed)
    write(queries, args.out)
    workspace = assemble_quality(True, queries_path=args.out)
    print(json.dumps({"workspaces": str(workspace), "queries": str(args.out), **stats}, indent=2))
    print(count_table(queries))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
