"""One before/after table from several named quality (and pipeline) results files.

A change to the corpus or to the product is judged by runs made before and after it; each run
keeps its own results file (bench/results/quality-<UTC>.json, pipeline-<UTC>.json). This reads
the ones named on the command line, each with a label, and writes per split x query type what
each run measured for the product's default ranked list (`hybrid+ranking`: MRR@10, recall
within 8,000 tokens, the share of queries whose first result is test code) and, for pipeline
files, for the selected answer (`selection`: MRR@10, recall within 2,000 and 8,000 tokens); and
file-level nDCG@10 when one of the runs has it (results files from before it lack the field), to
bench/results/comparison-<UTC>.json; `python -m bench.report` renders it into the READMEs.

Run: .venv/bin/python -m bench.quality.compare_runs --title "..." \\
       --quality "published sources=bench/results/quality-published-sources-20261123T143655Z.json" \\
       --quality "repository=bench/results/quality-<UTC>.json" [--pipeline LABEL=FILE ...]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from codecompass_dev.evaluation.results import REPO_ROOT, run_metadata, write_results

RANKED_MODE = "hybrid+ranking"  # the product's default ranked list
SELECTED_STAGE = "selection"  # the product's default answer
QUALITY_METRICS = {"MRR@10": "MRR@10", "R@8k tok": "R@8k tok", "first is test code": "first is test code"}
PIPELINE_METRICS = {"MRR@10": "mrr10", "R@2k tok": "r_2000tok", "R@8k tok": "r_8000tok"}
FILE_METRIC = {"quality": ("file nDCG@10", "file nDCG@10"), "pipeline": ("file nDCG@10", "file_ndcg10")}


def parse_named(text: str) -> tuple[str, Path]:
    label, _, path = text.rpartition("=")
    if not label or not path:
        raise SystemExit(f"{text!r}: expected LABEL=FILE")
    return label, Path(path)


def load(path: Path, kind: str) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise SystemExit(f"{path}: cannot read a results file ({err})") from None
    if doc.get("kind") != kind:
        raise SystemExit(f"{path}: a {doc.get('kind')!r} results file, expected {kind!r}")
    return doc


def run_info(path: Path, doc: dict[str, Any]) -> dict[str, Any]:
    indexes = doc.get("indexes", {})
    return {
        "file": str(path.resolve().relative_to(REPO_ROOT)) if path.resolve().is_relative_to(REPO_ROOT) else str(path),
        "date_utc": doc.get("run", {}).get("date_utc"),
        "commit": doc.get("run", {}).get("git", {}).get("commit", ""),
        "chunks": sum(i.get("chunks", 0) for i in indexes.values()) or None,
        "files": sum(i.get("files", 0) for i in indexes.values()) or None,
        "index_format": sorted({i["index_format_version"] for i in indexes.values() if "index_format_version" in i}),
    }


def source_metrics(source: str, docs: list[dict[str, Any]]) -> dict[str, str]:
    """Shown name -> results field of one source's metrics; file level when a run has it."""
    metrics = dict(QUALITY_METRICS if source == "quality" else PIPELINE_METRICS)
    name, key = FILE_METRIC[source]
    if any(key in row for doc in docs for row in doc["tables"]):
        metrics[name] = key
    return metrics


def table_rows(label: str, doc: dict[str, Any], source: str, metrics: dict[str, str]) -> list[dict[str, Any]]:
    """The rows of one run for the product's default: the ranked list of a quality file, the
    selected answer of a pipeline file."""
    column, wanted = ("mode", RANKED_MODE) if source == "quality" else ("stage", SELECTED_STAGE)
    return [
        {
            "label": label,
            "source": source,
            "split": row["split"],
            "group": row["group"],
            "n": row["n"],
            **{name: row.get(key) for name, key in metrics.items()},
        }
        for row in doc["tables"]
        if row[column] == wanted
    ]


def compare(quality: list[tuple[str, Path]], pipeline: list[tuple[str, Path]], title: str) -> dict[str, Any]:
    runs: dict[str, dict[str, Any]] = {"quality": {}, "pipeline": {}}
    rows: list[dict[str, Any]] = []
    metrics: dict[str, dict[str, str]] = {}
    for source, named in (("quality", quality), ("pipeline", pipeline)):
        docs = [(label, path, load(path, source)) for label, path in named]
        metrics[source] = source_metrics(source, [doc for _, _, doc in docs])
        for label, path, doc in docs:
            runs[source][label] = run_info(path, doc)
            rows += table_rows(label, doc, source, metrics[source])
    return {
        "title": title,
        "ranked_mode": RANKED_MODE,
        "selected_stage": SELECTED_STAGE,
        "metrics": {source: list(found) for source, found in metrics.items()},
        "runs": runs,
        "rows": rows,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--title", required=True, help="what the runs compare (shown above the tables)")
    parser.add_argument("--quality", action="append", default=[], type=parse_named, metavar="LABEL=FILE")
    parser.add_argument("--pipeline", action="append", default=[], type=parse_named, metavar="LABEL=FILE")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    if not args.quality:
        parser.error("name at least one quality results file")
    payload = {"run": run_metadata(), **compare(args.quality, args.pipeline, args.title)}

    from bench.report.comparison import render_comparison  # the report module owns all table layout

    print(render_comparison({"kind": "comparison", **payload}))
    if not args.no_write:
        path = write_results("comparison", payload)
        print(f"\nwrote {path.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
