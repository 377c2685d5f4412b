"""Validation of our embedding models on held-out corpus repositories: mined queries -> their symbols.

One evaluator for every model we train: `code-static`, `code-small` (models/code_small, whose
export.py also calls `compare` to price its int8 quantization) and the default MiniLM profile.

The held-out repositories (vocabulary.held_out, one in ten of the manifest's train repositories
by a hash of the name) give no word to the vocabulary and no text to the refinement (train.py),
so their queries measure what the model does on code it never saw. In each repository the
candidates are every chunk of the files that hold an answer, made by the real analysis service
from a copy of the repository with the pairs' blanks applied (the mined JSDoc and header
comments removed): the index's own embedding texts. Each query ranks them by cosine.
The same candidates and queries go to every model, so the numbers compare the models and
nothing else (no BM25, no ranking: the quality benchmark measures the product).

Run: .venv/bin/python -m models.code_static.evaluate [--model [LABEL=]DIR ...] [--code-small DIR] [--json OUT]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path

import numpy as np

from codecompass.embedding.minilm import CODE_SMALL_FILE, CODE_SMALL_MODEL_DIR, MiniLMProvider, code_small
from codecompass.embedding.static import StaticProvider
from codecompass_dev.queries.text import blank_spans
from models.code_static import vocabulary
from models.code_static.vocabulary import held_out

PACKAGE_DIR = Path(__file__).resolve().parent
MODELS_DIR = PACKAGE_DIR.parent
MERGED_PAIRS = MODELS_DIR / "corpus" / "pairs" / "train.jsonl.gz"
PAIRS_DIR = MODELS_DIR / ".work" / "pairs"
CHECKOUTS = (MODELS_DIR / ".work" / "corpus", MODELS_DIR / ".work" / "checkouts")
K = 10


def read_pairs(source: Path) -> list[dict]:
    paths = sorted(source.glob("*.jsonl")) if source.is_dir() else [source]
    rows = []
    for path in paths:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", encoding="utf-8") as fh:
            rows.extend(json.loads(line) for line in fh if line.strip())
    return rows


def checkout_of(github: str, roots: tuple[Path, ...]) -> Path | None:
    for root in roots:
        folder = root / github.replace("/", "+", 1)
        if folder.is_dir():
            return folder
    return None


def blanked_workspace(checkout: Path, pairs: list[dict], into: Path, only: Iterable[str] | None = None) -> Path:
    """A copy of the checkout's TS/JS sources (those of `only`, relative paths, when given) with
    every pair's blanks applied (line numbers kept)."""
    spans: dict[str, set] = defaultdict(set)
    for pair in pairs:
        for blank in pair.get("blank", []):
            spans[blank["path"]].update(tuple(span) for span in blank["spans"])
    keep = None if only is None else set(only)
    for path in vocabulary.source_files(checkout):
        relative = str(path.relative_to(checkout))
        if keep is not None and relative not in keep:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if spans.get(relative):
            try:
                text = blank_spans(text, sorted(spans[relative]))
            except ValueError:
                continue  # spans from another version of the file: leave it out rather than leak
        (into / relative).parent.mkdir(parents=True, exist_ok=True)
        (into / relative).write_text(text, encoding="utf-8")
    return into


def answer_of(target: dict, chunks: list) -> int | None:
    """Index of the chunk the target names: same path and name, else the tightest chunk around its lines."""
    same_file = [(index, chunk) for index, chunk in enumerate(chunks) if chunk.relative_path == target["path"]]
    for index, chunk in same_file:
        if chunk.qualified_name == target["qualified_name"]:
            return index
    around = [(chunk.end_line - chunk.start_line, index) for index, chunk in same_file
              if chunk.start_line <= target["start_line"] and target["end_line"] <= chunk.end_line]
    return min(around)[1] if around else None


def repository_task(client, pairs: list[dict], workspace: Path) -> tuple[list[str], list[dict]] | None:
    """(candidate texts, queries with the indices of their answers): every chunk of the files that
    hold an answer, as the analysis service makes it for the index."""
    paths = sorted({t["path"] for pair in pairs for t in pair["targets"] if (workspace / t["path"]).is_file()})
    if not paths:
        return None
    chunks = [chunk for chunked in client.chunk_files(str(workspace), paths) for chunk in chunked.chunks
              if chunk.embedding_text]
    queries = []
    for pair in pairs:
        answers = {answer_of(target, chunks) for target in pair["targets"]} - {None}
        if answers:
            queries.append({"query": pair["query"], "rule": pair["rule"], "answers": sorted(answers)})
    return ([chunk.embedding_text for chunk in chunks], queries) if queries else None


def build_tasks(by_repo: dict[str, list[dict]], scratch: Path) -> dict[str, tuple[list[str], list[dict]]]:
    from codecompass.clients.analysis import AnalysisClient
    from codecompass_dev.evaluation.services import start_analysis

    tasks = {}
    analysis = start_analysis()
    client = AnalysisClient(analysis.address, timeout_s=300)
    try:
        for github, pairs in sorted(by_repo.items()):
            checkout = checkout_of(github, CHECKOUTS)
            if checkout is None:
                continue
            workspace = blanked_workspace(checkout, pairs, scratch / checkout.name)
            task = repository_task(client, pairs, workspace)
            if task:
                tasks[github] = task
    finally:
        client.close()
        analysis.stop()
    return tasks


def score(provider, documents: list[str], queries: list[dict]) -> list[float]:
    """Reciprocal rank (0 past K) of each query's best-ranked answer."""
    docs = provider.embed(documents, "document")
    asked = provider.embed([q["query"] for q in queries], "query")
    ranks = np.argsort(-(asked @ docs.T), axis=1)[:, :K]
    out = []
    for row, query in zip(ranks, queries, strict=True):
        hits = [position for position, index in enumerate(row) if index in set(query["answers"])]
        out.append(1.0 / (hits[0] + 1) if hits else 0.0)
    return out


def held_out_tasks(pairs_path: Path, all_repositories: bool = False) -> dict[str, tuple[list[str], list[dict]]]:
    """Candidates and queries of each held-out repository (or of every one, for development)."""
    by_repo: dict[str, list[dict]] = defaultdict(list)
    for pair in read_pairs(pairs_path):
        if all_repositories or held_out(pair["repo"]):
            by_repo[pair["repo"]].append(pair)
    with tempfile.TemporaryDirectory(prefix="models-eval-") as scratch:
        return build_tasks(by_repo, Path(scratch))


def compare(tasks: dict[str, tuple[list[str], list[dict]]], providers: dict) -> dict[str, dict]:
    """MRR@10 by query rule (and "all") of each provider over the same tasks."""
    results: dict[str, dict] = {}
    for name, provider in providers.items():
        provider.warmup()
        started = time.monotonic()
        by_rule: dict[str, list[float]] = defaultdict(list)
        for documents, queries in tasks.values():
            for query, rr in zip(queries, score(provider, documents, queries), strict=True):
                by_rule[query["rule"]].append(rr)
                by_rule["all"].append(rr)
        results[name] = {"seconds": round(time.monotonic() - started, 1),
                         "mrr@10": {rule: round(float(np.mean(v)), 4) for rule, v in sorted(by_rule.items())},
                         "queries": {rule: len(v) for rule, v in sorted(by_rule.items())},
                         "model_version": provider.info().model_version}
    return results


def report(tasks: dict, results: dict[str, dict], json_path: Path | None) -> None:
    """The table on stdout and, with `json_path`, the numbers as validation.json."""
    documents = sum(len(d) for d, _ in tasks.values())
    print(f"## validation: {len(tasks)} held-out repositories, {documents} candidate chunks\n")
    rules = sorted(next(iter(results.values()))["queries"])
    print("| rule | queries | " + " | ".join(f"{name} MRR@10" for name in results) + " |")
    print("|---|---:|" + "---:|" * len(results))
    for rule in rules:
        cells = " | ".join(f"{results[name]['mrr@10'][rule]:.3f}" for name in results)
        print(f"| {rule} | {next(iter(results.values()))['queries'][rule]} | {cells} |")
    if json_path:
        json_path.write_text(json.dumps({"repositories": sorted(tasks), "candidates": documents, "models": results},
                                        indent=2) + "\n", encoding="utf-8")


def named_folder(value: str) -> tuple[str, Path]:
    """`LABEL=DIR`, or `DIR` labelled code-static."""
    label, _, folder = value.rpartition("=")
    return label or "code-static", Path(folder)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m models.code_static.evaluate", description=__doc__.split("\n")[0])
    parser.add_argument("--model", action="append", type=named_folder, default=[], metavar="[LABEL=]DIR",
                        help="a code-static model folder, repeatable (default: the committed one, as code-static)")
    parser.add_argument("--code-small", type=Path, default=CODE_SMALL_MODEL_DIR,
                        help="the code-small model folder (skipped when it holds no model)")
    parser.add_argument("--pairs", type=Path, default=MERGED_PAIRS if MERGED_PAIRS.exists() else PAIRS_DIR)
    parser.add_argument("--all-repositories", action="store_true",
                        help="evaluate every repository with pairs, not only the held-out ones (development)")
    parser.add_argument("--no-minilm", action="store_true", help="skip the MiniLM baseline (slow: ~20-60 texts/s)")
    parser.add_argument("--json", type=Path, help="write the numbers here")
    args = parser.parse_args(argv)

    tasks = held_out_tasks(args.pairs, args.all_repositories)
    if not tasks:
        print(f"no held-out repository with pairs and a checkout ({args.pairs})", file=sys.stderr)
        return 1
    providers: dict = {label: StaticProvider(model_dir=folder)
                       for label, folder in args.model or [("code-static", PACKAGE_DIR / "model")]}
    if (args.code_small / CODE_SMALL_FILE).is_file():
        providers["code-small"] = MiniLMProvider(spec=code_small(args.code_small))
    if not args.no_minilm:
        providers["minilm"] = MiniLMProvider()
    report(tasks, compare(tasks, providers), args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
