"""What test code does to the ranking: how often it answers first, and what it costs, per query type.

The quality workspaces are the repositories as a clone has them, so tests, fixtures and
examples compete with the code. For every query of one split (dev unless told otherwise:
decisions are taken there), this runs the product's first stage in process over the index a
quality run built (`hybrid.hybrid_search`, the ranking policy as configured, the same local
model; as bench/quality/tune_ranking.py does) and reports per query type:

- `first is test`: share of queries whose first result is test code, by the benchmark's own
  yardstick (bench/lib/testcode.py: the product's is_test flag, a describe/it/test block, a
  test file or folder; the library's published code never counts), and by reason;
- `first is test, not penalised`: the same, where the ranking did not apply its test penalty
  to that result (test code the product's detection missed);
- `first is other non-library code`: the first result is neither test code nor the library's
  published code (examples, docs, benchmarks, scripts, tooling): the ranking's example,
  compat and vendor penalties act there; every target is library code, so this is a miss;
- `tests in top 10`: share of the first ten results that are test code;
- `answer under a test`: of the queries answered first by test code, the share whose target
  is still in the top 10 (what demoting the test would win back);
- MRR@10 and recall within 8,000 tokens of the list as ranked, and the same with every test
  result taken out (an oracle: the most a perfect test demotion could give);
- `library marked test`: results in the top 10 that are the library's published code but
  carry the product's is_test flag (a detection rule that hits product code, such as a
  framework's lib/test.js);
- `read as about tests`: share of queries the product reads as a question about tests (a test
  word such as `test`, `spec`, `mock` or `mocha`), which turns the test penalty onto the
  implementation. Every target of this query set is the library's code, so here that reading
  can only cost; the set has no question whose answer is a test. Those queries are also a
  group of their own.

Variants change ranking weights (`--variant NAME=FIELD:VALUE[,FIELD:VALUE]`, repeatable), so
a default that touches test code is measured on the same queries and index.

Writes bench/results/testcode-<UTC>.json (and testcode-latest.json) unless --no-write.

Run: .venv/bin/python -m bench.quality.testcode_share --state-dir bench/.work/quality-state [--split dev]
     [--label "repository, chunker 4"] [--variant "test 0.3=test_penalty:0.3"]
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from dataclasses import dataclass, fields, replace
from pathlib import Path

from bench.lib.testcode import REASONS, why_test_code
from bench.quality.run_quality import RESULT_LIMIT, SPLITS
from codecompass.common.config import RetrievalSettings
from codecompass.contracts.retrieval.filters import Filters
from codecompass.embedding.minilm import MiniLMProvider
from codecompass.policy.ranking import DEFAULT_POLICY, RankingPolicy
from codecompass.retrieval.search.hybrid import hybrid_search
from codecompass_dev.corpus.assemble import QUALITY_REPOS_BY_NAME, is_code_file
from codecompass_dev.evaluation.metrics import TOKEN_BUDGETS, recall_within_budget, reciprocal_rank, result_token_cost
from codecompass_dev.evaluation.query_set import DEFAULT_QUERIES, load_queries, target_hit
from codecompass_dev.evaluation.results import write_results
from codecompass_dev.evaluation.store import open_store
from codecompass_dev.evaluation.workspaces import workspace_for

BUDGET = TOKEN_BUDGETS[-1]
# The signal the ranking records on a result it demoted as test code (ranking._path_penalty).
TEST_PENALTY_SIGNAL = "test_file"
COLUMNS = (
    ("first is test", "first_test"),
    *((f"  by {reason}", f"first_{reason}") for reason in REASONS),
    ("first is test, not penalised", "first_unpenalised"),
    ("first is other non-library code", "first_other"),
    ("tests in top 10", "test_top10"),
    ("answer under a test", "answer_under_test"),
    ("MRR@10", "mrr10"),
    ("MRR@10 without tests", "mrr10_no_tests"),
    ("R@8k tok", "r8k"),
    ("R@8k tok without tests", "r8k_no_tests"),
    ("library marked test", "library_flagged"),
    ("read as about tests", "about_tests"),
)


@dataclass(frozen=True)
class Judged:
    """One query's ranked list, judged."""

    reasons: list[str | None]  # per result: why it is test code, None when it is not
    penalised: list[bool]  # per result: the ranking applied its test penalty
    library: list[bool]  # per result: the library's published code (where every target is)
    hits: list[int | None]  # per result: the target it is
    costs: list[int]  # per result: tokens it costs a reader
    library_flagged: int  # top-10 results of the library's code that the product marks is_test


def judge(repo: str, targets, results) -> Judged:
    quality_repo = QUALITY_REPOS_BY_NAME.get(repo)
    reasons, libraries, flagged = [], [], 0
    for rank, result in enumerate(results):
        chunk = result.chunk
        library = quality_repo is not None and is_code_file(quality_repo, chunk.relative_path)
        reasons.append(why_test_code(chunk.relative_path, chunk.qualified_name, chunk.is_test, library_code=library))
        libraries.append(library)
        flagged += int(library and chunk.is_test and rank < 10)
    hits = [target_hit(r.chunk, targets) for r in results]
    costs = [
        result_token_cost(r.chunk.relative_path, r.chunk.qualified_name, r.chunk.collapsed_source) for r in results
    ]
    penalised = [TEST_PENALTY_SIGNAL in r.signals for r in results]
    return Judged(reasons, penalised, libraries, hits, costs, flagged)


def query_row(judged: Judged, n_targets: int, about_tests: bool = False) -> dict[str, float]:
    first = judged.reasons[0] if judged.reasons else None
    kept = [i for i, reason in enumerate(judged.reasons) if reason is None]
    hits_kept = [judged.hits[i] for i in kept]
    row = {
        "first_test": float(first is not None),
        **{f"first_{reason}": float(first == reason) for reason in REASONS},
        "first_unpenalised": float(first is not None and not judged.penalised[0]),
        "first_other": float(bool(judged.library) and first is None and not judged.library[0]),
        "test_top10": sum(r is not None for r in judged.reasons[:10]) / 10,
        "mrr10": reciprocal_rank(judged.hits, 10),
        "mrr10_no_tests": reciprocal_rank(hits_kept, 10),
        "r8k": recall_within_budget(judged.hits, judged.costs, n_targets, BUDGET),
        "r8k_no_tests": recall_within_budget(hits_kept, [judged.costs[i] for i in kept], n_targets, BUDGET),
        "library_flagged": float(judged.library_flagged),
        "about_tests": float(about_tests),
    }
    if first is not None:
        row["answer_under_test"] = float(any(h is not None for h in judged.hits[:10]))
    return row


def mean_rows(rows: list[dict[str, float]]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for _, key in COLUMNS:
        values = [r[key] for r in rows if key in r]
        out[key] = round(statistics.fmean(values), 4) if values else None
    return out


def parse_variant(text: str) -> tuple[str, dict]:
    """`NAME=FIELD:VALUE[,FIELD:VALUE]` -> (name, policy changes)."""
    name, _, spec = text.partition("=")
    types = {f.name: f.type for f in fields(RankingPolicy)}
    changes: dict = {}
    for item in filter(None, spec.split(",")):
        field_name, _, value = item.partition(":")
        if field_name not in types:
            raise SystemExit(f"--variant {text!r}: {field_name!r} is not a RankingPolicy field")
        changes[field_name] = value.lower() == "true" if types[field_name] in ("bool", bool) else float(value)
    if not name or not changes:
        raise SystemExit(f"--variant {text!r}: expected NAME=FIELD:VALUE[,FIELD:VALUE]")
    return name, changes


def fmt(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state-dir", type=Path, required=True, help="the state dir of a quality run")
    parser.add_argument("--queries", type=Path, default=DEFAULT_QUERIES)
    parser.add_argument("--split", choices=SPLITS, default="dev")
    parser.add_argument("--repos", help="comma-separated repo names (default: every repo of the split)")
    parser.add_argument("--label", default="", help="what this index is (kept in the results file)")
    parser.add_argument("--variant", action="append", default=[], help="NAME=FIELD:VALUE[,FIELD:VALUE]")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)

    variants = {"default": {}, **dict(parse_variant(v) for v in args.variant)}
    repos = {r.strip() for r in args.repos.split(",")} if args.repos else None
    queries = [
        qy
        for qy in load_queries(args.queries, symbol_level=True)
        if qy.split == args.split and (not repos or qy.repo in repos)
    ]
    settings = RetrievalSettings()
    model = MiniLMProvider()
    model.warmup()
    vectors = dict(zip((qy.id for qy in queries), model.embed([qy.query for qy in queries], "query"), strict=True))
    stores = {repo: open_store(args.state_dir, workspace_for(repo)) for repo in sorted({qy.repo for qy in queries})}

    rows = []
    for name, changes in variants.items():
        policy = replace(DEFAULT_POLICY, **changes)
        groups: dict[str, list[dict[str, float]]] = defaultdict(list)
        for qy in queries:
            outcome = hybrid_search(
                stores[qy.repo],
                qy.query,
                query_vector=vectors[qy.id],
                filters=Filters(),
                limit=RESULT_LIMIT,
                semantic_ratio=settings.semantic_ratio,
                candidate_pool=settings.candidate_pool,
                policy=policy,
            )
            judged = judge(qy.repo, qy.targets, outcome.results)
            row = query_row(judged, len(qy.targets), outcome.shape.mentions_tests)
            about = ("read as about tests",) if outcome.shape.mentions_tests else ()
            for group in ("all", qy.type, f"repo {qy.repo}", *about):
                groups[group].append(row)
        for group in sorted(groups, key=lambda g: (g != "all", g.startswith(("repo ", "read as")), g)):
            rows.append({"variant": name, "group": group, "n": len(groups[group]), **mean_rows(groups[group])})

    print(f"{len(queries)} {args.split} queries, index {args.state_dir} {args.label}\n")
    print("| Variant | Group | n | " + " | ".join(label for label, _ in COLUMNS) + " |")
    print("|---|---|---|" + "---|" * len(COLUMNS))
    for row in rows:
        cells = " | ".join(fmt(row[key]) for _, key in COLUMNS)
        print(f"| {row['variant']} | {row['group']} | {row['n']} | {cells} |")
    if not args.no_write:
        path = write_results(
            "testcode",
            {
                "label": args.label,
                "split": args.split,
                "repos": sorted(repos) if repos else None,
                "state_dir": str(args.state_dir),
                "semantic_ratio": settings.semantic_ratio,
                "candidate_pool": settings.candidate_pool,
                "list_depth": RESULT_LIMIT,
                "token_budget": BUDGET,
                "policy": {f.name: getattr(DEFAULT_POLICY, f.name) for f in fields(RankingPolicy)},
                "variants": variants,
                "columns": {key: label.strip() for label, key in COLUMNS},
                "rows": rows,
            },
        )
        print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
