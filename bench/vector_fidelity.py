"""What storing vectors at fewer bits costs a search: the static channel's vectors of a real
index at float32 (recomputed from the chunks' texts), int8 (`stored_vectors`) and packed int4
(`stored_int4`), compared on the rows, on the rankings of mined questions, and on the quality
benchmark's own questions.

Per stored form:
- agreement: each row's cosine to its float original (mean, 1st percentile, minimum), and over a
  seeded sample of the corpus's mined questions (models/corpus/pairs, none about this workspace),
  the share of the float top ten the stored vectors keep, how often the first result is the same,
  and the largest change of a top-ten score;
- quality: MRR@10 of the static vectors alone on the quality benchmark's questions
  (bench/quality/queries.jsonl) about the repositories ws-300k holds as published packages
  (rxjs, undici, mocha: dev; knex, TanStack Query: test), each searched among its own package's
  chunks, a target found by its qualified name in the file of the same path.

Results: bench/results/vector-fidelity-<stamp>.json (and -latest); the table in
docs/benchmarks.md is generated from it.

Run (on an index `bench.index_size` or a quality run built; `make bench-index-size` runs it):
  .venv/bin/python -m bench.vector_fidelity --workspace bench/.work/ws-300k --state-dir DIR
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
from collections import defaultdict
from pathlib import Path

import numpy as np

from codecompass.common.chunks import Chunk
from codecompass.retrieval.schema import int4_values, stored_int4, stored_vectors
from codecompass.retrieval.search.readcache import unit_rows
from codecompass.retrieval.static_channel import static_text
from codecompass_dev.evaluation.results import write_results
from codecompass_dev.evaluation.store import open_store, static_embedder

ROOT = Path(__file__).resolve().parents[1]
PAIRS = ROOT / "models" / "corpus" / "pairs" / "train.jsonl.gz"
BENCH_QUERIES = ROOT / "bench" / "quality" / "queries.jsonl"
# The benchmark repositories ws-300k holds, as codecompass_dev/corpus/assemble.py lays out their
# published packages: the folders each one's files are in.
WS_300K_FOLDERS = {
    "rxjs": ("packages/rxjs/",),
    "undici": ("packages/undici/",),
    "mocha": ("packages/mocha/",),
    "knex": ("packages/knex/",),
    "tanstack-query": ("packages/@tanstack__query-core/", "packages/@tanstack__react-query/"),
}
TOP = 10
_BATCH = 2_000


def _questions(count: int, seed: int) -> list[str]:
    with gzip.open(PAIRS, "rt", encoding="utf-8") as handle:
        texts = sorted({json.loads(line)["query"] for line in handle})
    return random.Random(seed).sample(texts, min(count, len(texts)))


def _forms(originals: np.ndarray) -> dict[str, np.ndarray]:
    """Unit rows of each stored form of `originals`, float first."""
    dims = originals.shape[1]
    return {
        "float32": originals,
        "int8": unit_rows(stored_vectors(originals).astype(np.float32)),
        "int4": unit_rows(int4_values(stored_int4(originals), dims)),
    }


def _top(scores: np.ndarray) -> np.ndarray:
    """The rows of the ten best scores, best first."""
    best = np.argpartition(-scores, TOP)[:TOP] if len(scores) > TOP else np.arange(len(scores))
    return best[np.argsort(-scores[best], kind="stable")]


def _agreement(originals: np.ndarray, stored: np.ndarray, queries: np.ndarray) -> dict[str, float]:
    row_cosines = np.einsum("ij,ij->i", originals, stored)
    kept = same_first = 0.0
    largest_change = 0.0
    for query in queries:
        exact, approx = originals @ query, stored @ query
        best, found = _top(exact), _top(approx)
        kept += len(set(best.tolist()) & set(found.tolist())) / TOP
        same_first += float(best[0] == found[0])
        largest_change = max(largest_change, float(np.abs(approx[best] - exact[best]).max()))
    return {
        "row_cosine_mean": float(row_cosines.mean()),
        "row_cosine_p1": float(np.percentile(row_cosines, 1)),
        "row_cosine_min": float(row_cosines.min()),
        "top10_kept": kept / len(queries),
        "top1_same": same_first / len(queries),
        "top10_largest_score_change": largest_change,
    }


def _without_monorepo_folder(path: str) -> str:
    """A repository path as its package publishes it: `packages/query-core/src/x.ts` is
    `src/x.ts` of the package."""
    parts = path.split("/")
    return "/".join(parts[2:]) if parts[0] == "packages" and len(parts) > 2 else path


def _bench_quality(chunks: list[Chunk], forms: dict[str, np.ndarray], embed) -> dict[str, dict]:
    """{form: {"<split> <type>": {"queries", "mrr10"}}} of the static vectors alone."""
    paths = np.array([c.relative_path for c in chunks])
    by_name: dict[str, list[int]] = defaultdict(list)
    for row, chunk in enumerate(chunks):
        by_name[chunk.qualified_name].append(row)
    ranks: dict[str, dict[str, list[float]]] = {form: defaultdict(list) for form in forms}
    for line in BENCH_QUERIES.read_text(encoding="utf-8").splitlines():
        query = json.loads(line)
        folders = WS_300K_FOLDERS.get(query["repo"])
        if folders is None:
            continue
        allowed = np.zeros(len(chunks), dtype=bool)
        for folder in folders:
            allowed |= np.char.startswith(paths, folder)
        gold = {row for t in query["targets"] for row in by_name.get(t["qualified_name"], ())
                if allowed[row] and paths[row].endswith("/" + _without_monorepo_folder(t["path"]))}
        if not gold:  # the published package lacks it (a test, a file it does not ship)
            continue
        vector = unit_rows(embed([query["query"]]))[0]
        for form, matrix in forms.items():
            scores = np.where(allowed, matrix @ vector, -np.inf)
            rank = next((r for r, row in enumerate(_top(scores)) if row in gold), None)
            for key in (f"{query['split']} all", f"{query['split']} {query['type']}"):
                ranks[form][key].append(0.0 if rank is None else 1.0 / (rank + 1))
    return {form: {key: {"queries": len(values), "mrr10": float(np.mean(values))}
                   for key, values in sorted(by_key.items())} for form, by_key in ranks.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, required=True)
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--questions", type=int, default=1_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-write", action="store_true", help="print only; write no results file")
    args = parser.parse_args(argv)

    store = open_store(args.state_dir, args.workspace)
    if store.static is None:
        raise SystemExit("this index has no static channel")
    ids = [i for part in store.vector_snapshot().fragments for i in part.ids]
    chunks = [c for start in range(0, len(ids), _BATCH) for c in store.get_chunks(ids[start : start + _BATCH])]
    model = static_embedder(store.static)

    def embed(texts: list[str], kind: str = "query") -> np.ndarray:
        return np.concatenate([model.embed(texts[start : start + _BATCH], kind)
                               for start in range(0, len(texts), _BATCH)]).astype(np.float32)

    originals = unit_rows(embed([static_text(c) for c in chunks], "document"))
    forms = _forms(originals)
    questions = _questions(args.questions, args.seed)
    queries = unit_rows(embed(questions))
    agreement = {form: _agreement(originals, stored, queries) for form, stored in forms.items() if form != "float32"}
    quality = _bench_quality(chunks, forms, embed)
    widths = {"float32": 4 * originals.shape[1], "int8": originals.shape[1],
              "int4": stored_int4(originals[:1]).shape[1]}

    print(f"static channel of {args.workspace}: {len(chunks):,} rows, {originals.shape[1]} dimensions, "
          f"{len(questions):,} mined questions\n")
    print("| stored as | bytes a row | row cosine mean / p1 / min | top 10 kept | same first "
          "| largest top-10 score change |")
    print("|---|---:|---|---:|---:|---:|")
    for form, r in agreement.items():
        print(f"| {form} | {widths[form]} | {r['row_cosine_mean']:.4f} / {r['row_cosine_p1']:.4f} / "
              f"{r['row_cosine_min']:.4f} | {r['top10_kept']:.1%} | {r['top1_same']:.1%} | "
              f"{r['top10_largest_score_change']:.4f} |")
    print("\nstatic vectors alone, MRR@10 on the quality benchmark's questions about ws-300k's packages:")
    print("| split, type | questions | " + " | ".join(forms) + " |")
    print("|---|---:|" + "---:|" * len(forms))
    for key, first in quality["float32"].items():
        print(f"| {key} | {first['queries']} | " + " | ".join(f"{quality[f][key]['mrr10']:.4f}" for f in forms) + " |")
    if not args.no_write:
        path = write_results("vector-fidelity", {
            "workspace": str(args.workspace), "rows": len(chunks), "dimensions": int(originals.shape[1]),
            "questions": len(questions), "seed": args.seed, "static_model": store.static.identity(),
            "bytes_per_row": widths, "agreement": agreement, "bench_quality": quality,
        })
        print(f"\nresults: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
