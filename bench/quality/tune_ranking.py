"""Ranking ablations on an index the quality run already built: fast enough to tune on.

`run_quality` measures the product end to end through the services; re-running it per weight
takes minutes. This opens the same LanceDB tables in process (read only), embeds each query
once with the same local model, and runs the real first stage (`hybrid.hybrid_search`) with
each policy variant, so a variant costs seconds. Use the **dev** split to decide; the test
split is only reported by `run_quality`.

Each run writes bench/results/ranking-<UTC>.json (and ranking-latest.json); `python -m
bench.report` renders its table into bench/README.md ("Ranking ablation").

Run (after `make bench-quality`, or with the state dir of any run):
  .venv/bin/python -m bench.quality.tune_ranking --state-dir bench/.work/quality-state [--split dev]
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from dataclasses import fields, replace
from pathlib import Path

from codecompass.common.config import RetrievalSettings
from codecompass.contracts.retrieval.filters import Filters
from codecompass.policy.ranking import DEFAULT_POLICY, FUSION_ONLY, RankingPolicy
from codecompass.retrieval.search.hybrid import hybrid_search
from codecompass_dev.evaluation.metrics import METRIC_NAMES, mean_scores, score_query
from codecompass_dev.evaluation.query_set import DEFAULT_QUERIES, load_queries, target_hit
from codecompass_dev.evaluation.results import write_results
from codecompass_dev.evaluation.store import open_store, query_embedder
from codecompass_dev.evaluation.workspaces import workspace_for

# Each variant turns one signal off (or changes one choice), so its row shows what that signal adds.
ABLATIONS: dict[str, dict] = {
    "full": {},
    "fusion only": {"full": False},
    "raw cosine": {"semantic_minmax": False},
    "- definition": {"definition": 0.0},
    "+ definition in sentences": {"definition_embedded": 0.5},
    "- name_words": {"name_words": 0.0},
    "- path": {"path": 0.0},
    "- phrase": {"phrase": 0.0},
    "+ file_words": {"file_words": 0.3},
    "+ file_coherence": {"file_coherence": 0.15},
    "- test penalty": {"test_penalty": 1.0, "not_test_penalty": 1.0},
    "- example penalty": {"example_penalty": 1.0},
    "- tiny penalty": {"tiny_penalty": 1.0},
    "- module penalty": {"module_penalty": 1.0},
    "+ saturation": {"saturation": 0.8},
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--queries", type=Path, default=DEFAULT_QUERIES)
    parser.add_argument("--split", default="dev")
    parser.add_argument("--ratio", type=float, default=RetrievalSettings().semantic_ratio,
                        help="semantic ratio cap (default: the product's default)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="evaluate the full policy with these weights changed (repeatable)")
    parser.add_argument("--pool", type=int, default=RetrievalSettings().candidate_pool,
                        help="candidates per channel (default: the product's default)")
    parser.add_argument("--only", help="comma-separated ablation names to run")
    parser.add_argument("--no-write", action="store_true", help="print only; write no results file")
    args = parser.parse_args(argv)

    queries = [qy for qy in load_queries(args.queries, symbol_level=True) if qy.split == args.split]
    stores = {repo: open_store(args.state_dir, workspace_for(repo)) for repo in {qy.repo for qy in queries}}
    models = {store.model for store in stores.values()}
    if len(models) != 1:
        raise SystemExit(f"the indexes in {args.state_dir} were written by several models: "
                         f"{sorted(m.identity() for m in models)}")
    model = query_embedder(models.pop())
    vectors = dict(zip((qy.id for qy in queries), model.embed([qy.query for qy in queries], "query"), strict=True))

    variants = dict(ABLATIONS)
    if args.set:
        types = {f.name: f.type for f in fields(RankingPolicy)}
        changes = {}
        for item in args.set:
            name, value = item.split("=", 1)
            changes[name] = value.lower() == "true" if types[name] in ("bool", bool) else float(value)
        variants = {"full": {}, f"set {' '.join(args.set)}": changes}
    if args.only:
        keep = {name.strip() for name in args.only.split(",")}
        variants = {k: v for k, v in variants.items() if k in keep}

    rows: list[dict] = []
    print(f"{len(queries)} {args.split} queries; ratio cap {args.ratio}\n")
    header = "| Variant | Type | n | " + " | ".join(METRIC_NAMES) + " |"
    print(header)
    print("|" + "---|" * (3 + len(METRIC_NAMES)))
    for name, changes in variants.items():
        policy = FUSION_ONLY if changes.get("full") is False else replace(DEFAULT_POLICY, **changes)
        by_type = defaultdict(list)
        for qy in queries:
            store = stores[qy.repo]
            outcome = hybrid_search(
                store, qy.query, query_vector=vectors[qy.id], filters=Filters(), limit=10,
                semantic_ratio=args.ratio, candidate_pool=args.pool, policy=policy,
            )
            hits = [target_hit(r.chunk, qy.targets) for r in outcome.results]
            score = score_query(hits, len(qy.targets))
            by_type[qy.type].append(score)
            by_type["all"].append(score)
        for qtype in sorted(by_type, key=lambda t: (t != "all", t)):
            values = mean_scores(by_type[qtype])
            rows.append({"variant": name, "type": qtype, "n": len(by_type[qtype]),
                         **{m: round(v, 4) for m, v in zip(METRIC_NAMES, values, strict=True)}})
            print(f"| {name} | {qtype} | {len(by_type[qtype])} | " + " | ".join(f"{v:.3f}" for v in values) + " |")
    if not args.no_write and not args.set:
        path = write_results("ranking", {
            "split": args.split, "semantic_ratio_cap": args.ratio, "candidate_pool": args.pool,
            "policy": {f.name: getattr(DEFAULT_POLICY, f.name) for f in fields(RankingPolicy)},
            "variants": {name: changes for name, changes in variants.items()}, "rows": rows,
        })
        print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
