"""The embedding models side by side: each alone and in the hybrid, against BM25 alone (issue 16, §3).

Each model is measured by its own `run_quality` run on the same queries, with the embedding
service started on that model's profile and a state dir of its own (an index keeps one
model's vectors). This reads those results files, one per model with a label, and writes per
split x query type the MRR@10 of BM25 alone (it does not depend on the model: taken from the
first run, and checked equal in the others), of each model's vectors alone (`vector`) and of
each model in the product's ranked list (`hybrid+ranking`), to bench/results/models-<UTC>.json;
`python -m bench.report` renders it into the READMEs.

Run: .venv/bin/python -m bench.quality.compare_models \\
       --run "MiniLM=bench/results/quality-<UTC>.json" --run "code-static=..." --run "code-small=..."
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from bench.quality.compare_runs import load, parse_named, run_info
from codecompass_dev.evaluation.results import REPO_ROOT, run_metadata, write_results

LEXICAL_MODE = "bm25"
MODEL_MODES = ("vector", "hybrid+ranking")
METRIC = "MRR@10"
# BM25 alone must not move between runs of the same queries; more than this says the runs
# did not index the same workspaces (or the lexical stage changed between them).
BM25_TOLERANCE = 0.005


def _by_cell(doc: dict[str, Any], mode: str) -> dict[tuple[str, str], dict[str, Any]]:
    return {(r["split"], r["group"]): r for r in doc["tables"] if r["mode"] == mode}


def compare(runs: list[tuple[str, Path]]) -> dict[str, Any]:
    docs = [(label, path, load(path, "quality")) for label, path in runs]
    lexical = _by_cell(docs[0][2], LEXICAL_MODE)
    for _, path, doc in docs[1:]:
        for cell, row in _by_cell(doc, LEXICAL_MODE).items():
            first = lexical.get(cell)
            if first is not None and abs(first[METRIC] - row[METRIC]) > BM25_TOLERANCE:
                raise SystemExit(f"{path}: BM25 alone differs from the first run on {cell} "
                                 f"({row[METRIC]:.3f} vs {first[METRIC]:.3f}); not the same index or queries")
    rows = [{"split": s, "group": g, "n": row["n"], "model": "", "mode": LEXICAL_MODE, METRIC: row[METRIC]}
            for (s, g), row in lexical.items()]
    for label, _, doc in docs:
        for mode in MODEL_MODES:
            rows += [{"split": s, "group": g, "n": row["n"], "model": label, "mode": mode, METRIC: row[METRIC]}
                     for (s, g), row in _by_cell(doc, mode).items()]
    return {
        "metric": METRIC,
        "models": {label: {**run_info(path, doc), "embedding_models": doc["settings"].get("embedding_models", [])}
                   for label, path, doc in docs},
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run", action="append", default=[], type=parse_named, metavar="LABEL=FILE",
                        help="one quality results file per model; the first is the reference")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    if not args.run:
        parser.error("name at least one quality results file")
    payload = {"run": run_metadata(), **compare(args.run)}

    from bench.report.comparison import render_models  # the report module owns all table layout

    print(render_models({"kind": "models", **payload}))
    if not args.no_write:
        path = write_results("models", payload)
        print(f"\nwrote {path.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
