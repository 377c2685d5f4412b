"""The learned ranker's data: every query's first-stage candidates as feature rows and labels.

Runs the product's first stage in process (`hybrid.hybrid_search`, read only, the default
semantic ratio and candidate pool, queries embedded by the index's own models) over:

- train: the corpus train workspaces `workspaces.py` indexed (models/.work/ranker/state), with
  their sampled pairs (concept pairs included), plus identifier and path queries made from each
  index by the benchmark's own rules (codecompass_dev/queries/symbol_queries.py: a name split into words ->
  the one symbol so named; the last two segments of a file's path -> its top-level symbols and
  its card), from non-test library code;
- dev and test: the quality benchmark's queries on its indexes (`--quality-state`), every type,
  concept queries whose answer is files alone included.

Labels are graded (`label`; LambdaRank's gains 1 and 3): 2 for one of the query's symbol
targets (by qualified name or exact lines, as the benchmark scores them) or the file card (the
`module` chunk, `<module top level>`) of one of its file targets (a concept query's `files`): a
question a file answers is answered best by the chunk that stands for the whole file; 1 for any
other chunk of a file target: a question about how a part works is scored by the files it
reaches (file-level nDCG, codecompass_dev/evaluation/metrics.py), and a chunk of the right file is on the way
there. Everything else is 0.

`policy.learned.FeatureRecorder` stands in for the model, so the rows are exactly what the
model will read in the service. Writes models/.work/ranker/<split>.npz (X, y, group sizes) and
<split>.json (per query: id, type, repo, targets found in the pool).

Run: .venv/bin/python -m models.ranker.dump [--splits train,dev,test]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any

import lancedb
import numpy as np

from codecompass.common.chunks import Chunk, NodeKind
from codecompass.common.config import GatewaySettings, RetrievalSettings
from codecompass.common.testcode import is_test_path
from codecompass.contracts.retrieval.filters import Filters
from codecompass.policy.learned import FEATURES, FeatureRecorder
from codecompass.policy.ranking import example_path, vendored_path
from codecompass.retrieval.catalog import Catalog
from codecompass.retrieval.location import index_key, workspace_id_of
from codecompass.retrieval.search.hybrid import hybrid_search
from codecompass_dev.evaluation.metrics import Target
from codecompass_dev.evaluation.query_set import DEFAULT_QUERIES, load_queries, target_hit
from codecompass_dev.evaluation.store import open_store, query_embedder, static_embedder
from codecompass_dev.evaluation.workspaces import workspace_for
from codecompass_dev.queries.symbol_queries import identifier_queries, path_queries
from models.ranker.workspaces import QUERIES_PATH, RANKER_DIR, SEED, STATE_DIR, WORKSPACES_DIR

QUALITY_STATE = Path(__file__).resolve().parents[2] / "bench" / ".work" / "quality-state"
# Per train repository, by the benchmark's quotas (bench/quality/build_queries.py QUOTAS).
GENERATED = {"identifier": 8, "path": 5}
_BODY_KINDS = {"function", "method", "class", "constructor", "accessor", "component"}
# Pair rules as the benchmark's query types.
TYPE_OF_RULE = {"commit": "nl", "jsdoc": "jsdoc", "error": "error", "test": "test", "comment": "comment",
                "header": "header", "doc": "doc", "concept": "concept"}


def _targets(raw: list[dict]) -> tuple[Target, ...]:
    return tuple(Target(t["path"], t["qualified_name"], t["start_line"], t["end_line"]) for t in raw)


ANSWER, IN_ANSWER_FILE = 2.0, 1.0


def label(chunk: Chunk, targets: Sequence[Target], files: Collection[str]) -> float:
    """The label rule (module docstring): ANSWER for a symbol target or the card of a file target
    (`files`: paths), IN_ANSWER_FILE for another chunk of a file target, else 0."""
    if target_hit(chunk, targets) is not None:
        return ANSWER
    if chunk.relative_path in files:
        return ANSWER if chunk.node_kind == NodeKind.MODULE else IN_ANSWER_FILE
    return 0.0


def is_answer(chunk: Chunk, targets: Sequence[Target], files: Collection[str]) -> bool:
    """A right answer by the label rule: any relevant chunk, the right file's included."""
    return label(chunk, targets, files) > 0.0


def generated_queries(repo: str, outline: list[dict]) -> list[dict]:
    """Identifier and path queries of one train index, by the benchmark's rules."""
    library = [r for r in outline if not (r["is_test"] or is_test_path(r["relative_path"])
                                          or example_path(r["relative_path"]) or vendored_path(r["relative_path"]))]
    by_path: dict[str, list[dict]] = defaultdict(list)
    cards: dict[str, dict] = {}
    for row in library:
        if row["node_kind"] == "module":
            cards[row["relative_path"]] = {"start_line": row["start_line"], "end_line": row["end_line"]}
            continue
        by_path[row["relative_path"]].append({
            "name": row["name"], "qualified_name": row["qualified_name"], "kind": row["node_kind"],
            "has_body": row["node_kind"] in _BODY_KINDS, "start_line": row["start_line"],
            "end_line": row["end_line"],
        })
    records = [{"path": path, "card": cards.get(path),
                "symbols": sorted(symbols, key=lambda s: (s["start_line"], s["end_line"]))}
               for path, symbols in sorted(by_path.items())]
    rng = random.Random(f"{SEED}:{repo}:generated")
    out = []
    for kind, make in (("identifier", lambda: identifier_queries(records, rng)),
                       ("path", lambda: path_queries(records))):
        pool = sorted(make(), key=lambda c: (c.targets[0].path, c.targets[0].start_line, c.text))
        rng.shuffle(pool)
        for n, candidate in enumerate(pool[: GENERATED[kind]], start=1):
            out.append({"id": f"{kind}-{repo}-{n:04d}", "repo": repo, "type": kind, "query": candidate.text,
                        "targets": [vars(t) for t in candidate.targets]})
    return out


def train_queries() -> tuple[dict[str, Path], list[dict]]:
    """The sampled pairs of every train workspace whose index is complete (an indexing run cut short
    leaves the rest out, and says how many)."""
    rows = [json.loads(line) for line in QUERIES_PATH.read_text(encoding="utf-8").splitlines() if line.strip()]
    workspaces = {repo: WORKSPACES_DIR / repo.replace("/", "+") for repo in dict.fromkeys(r["repo"] for r in rows)}
    ready = {repo: path for repo, path in workspaces.items() if index_complete(STATE_DIR, path)}
    if len(ready) < len(workspaces):
        print(f"train: {len(workspaces) - len(ready)} of {len(workspaces)} workspaces not indexed to the end, "
              f"left out: {sorted(set(workspaces) - set(ready))}", file=sys.stderr)
    return ready, [{**row, "type": TYPE_OF_RULE[row["rule"]]} for row in rows if row["repo"] in ready]


def index_complete(state_dir: Path, workspace: Path) -> bool:
    """Whether the workspace's index finished a sync and holds every primary vector."""
    uri = state_dir / "index" / index_key(workspace_id_of(workspace.resolve()))
    if not uri.is_dir():
        return False
    try:
        counts = open_store(state_dir, workspace).vector_counts()
    except SystemExit:  # no chunk table yet
        return False
    return Catalog.open(lancedb.connect(str(uri))).complete and counts.total > 0 and counts.primary == counts.total


def quality_queries(split: str) -> tuple[dict[str, Path], list[dict]]:
    chosen = [q for q in load_queries(DEFAULT_QUERIES) if q.split == split]
    workspaces = {q.repo: workspace_for(q.repo) for q in chosen}
    return workspaces, [{"id": q.id, "repo": q.repo, "type": q.type, "query": q.query,
                         "targets": [vars(t) for t in q.targets], "files": [vars(f) for f in q.files]}
                        for q in chosen]


# Worker processes for the search loop (one repository's queries never split between two): the
# loop is CPU-bound Python and LanceDB, and the train split's ~11k searches take most of an hour
# in one process on two cores.
WORKERS = 2


def dump(split: str, state_dir: Path, workspaces: dict[str, Path], queries: list[dict], generate: bool,
         workers: int = WORKERS) -> None:
    stores = {repo: open_store(state_dir, path) for repo, path in workspaces.items()}
    if generate:
        for repo, store in stores.items():
            queries += generated_queries(repo, store.outline())
    models = {store.model for store in stores.values()}
    if len(models) != 1:
        raise SystemExit(f"{split}: indexes of several models: {sorted(m.identity() for m in models)}")
    statics = {store.static for store in stores.values()}
    embedder = query_embedder(models.pop())
    static = static_embedder(statics.pop() if len(statics) == 1 else None)
    texts = [q["query"] for q in queries]
    vectors = embedder.embed(texts, "query")
    static_vectors = static.embed(texts, "query")
    del embedder, static, stores
    t0 = time.perf_counter()
    items = [(q["repo"], (q, v, sv)) for q, v, sv in zip(queries, vectors, static_vectors, strict=True)]
    results, processes = by_repository(_search_part, state_dir, workspaces, items, workers)
    xs = [x for part in results for x in part["x"]]
    groups = [len(x) for x in xs]
    out = RANKER_DIR / f"{split}.npz"
    np.savez_compressed(out, x=np.concatenate(xs), y=np.concatenate([y for part in results for y in part["y"]]),
                        groups=np.array(groups),
                        row_file=np.concatenate([np.array(r, dtype=np.int32) for part in results
                                                 for r in part["row_file"]]),
                        row_span=np.concatenate([np.array(r, dtype=np.int32).reshape(-1, 2) for part in results
                                                 for r in part["row_span"]]))
    meta = [m for part in results for m in part["meta"]]
    (RANKER_DIR / f"{split}.json").write_text(json.dumps({"features": FEATURES, "queries": meta}), encoding="utf-8")
    found = sum(1 for m in meta if m["found"])
    print(f"{split}: {len(meta)} queries, {sum(groups)} rows, a target in the pool for {found} "
          f"({found / max(len(meta), 1):.1%}), {time.perf_counter() - t0:.0f} s in {processes} processes -> {out}",
          file=sys.stderr)


def by_repository(work: Callable[[Path, dict[str, Path], list], Any], state_dir: Path,
                  workspaces: dict[str, Path], items: list[tuple[str, Any]],
                  workers: int = WORKERS) -> tuple[list, int]:
    """`work(state_dir, its workspaces, its items)` in up to `workers` spawned processes, each
    repository's items (`(repo, item)` pairs) whole in one process, largest first to the least
    loaded, so the processes finish together; the results in process order, and how many ran."""
    by_repo: dict[str, list[Any]] = defaultdict(list)
    for repo, item in items:
        by_repo[repo].append(item)
    parts: list[list[str]] = [[] for _ in range(max(1, workers))]
    for repo in sorted(by_repo, key=lambda r: -len(by_repo[r])):
        min(parts, key=lambda part: sum(len(by_repo[r]) for r in part)).append(repo)
    jobs = [(state_dir, {repo: workspaces[repo] for repo in part}, [item for repo in part for item in by_repo[repo]])
            for part in parts if part]
    if len(jobs) <= 1:
        return [work(*job) for job in jobs], len(jobs)
    with multiprocessing.get_context("spawn").Pool(len(jobs)) as pool:
        return pool.starmap(work, jobs), len(jobs)


def _search_part(state_dir: Path, workspaces: dict[str, Path], items: list[tuple[dict, Any, Any]]) -> dict:
    """One worker's queries through the first stage: per query its feature rows, labels, and where
    each row is (its file, as an index into the query's `paths`, and its lines; the training
    report replays file diversity and scores answers at file level from them)."""
    settings = RetrievalSettings()
    # The gateway asks for this many results, and a channel contributes at least as many
    # candidates as the search asks for: the model learns from the pools it will rank.
    depth = GatewaySettings().candidates
    stores = {repo: open_store(state_dir, path) for repo, path in workspaces.items()}
    out: dict[str, list] = {"x": [], "y": [], "row_file": [], "row_span": [], "meta": []}
    for query, vector, static_vector in items:
        store = stores[query["repo"]]
        recorder = FeatureRecorder()
        hybrid_search(store, query["query"], query_vector=vector, filters=Filters(), limit=depth,
                      semantic_ratio=settings.semantic_ratio, candidate_pool=settings.candidate_pool,
                      static_query_vector=static_vector, model=recorder)
        if recorder.rows is None:
            continue
        targets = _targets(query["targets"])
        files = {f["path"] for f in query.get("files", [])}
        chunks = {c.id: c for c in store.get_chunks(recorder.ids)}
        labels = np.array([label(chunks[i], targets, files) if i in chunks else 0.0 for i in recorder.ids],
                          dtype=np.float32)
        out["x"].append(recorder.rows)
        out["y"].append(labels)
        rows = [chunks.get(i) for i in recorder.ids]
        paths = list(dict.fromkeys(c.relative_path for c in rows if c is not None))
        index = {path: n for n, path in enumerate(paths)}
        out["row_file"].append([index[c.relative_path] if c is not None else -1 for c in rows])
        out["row_span"].append([(c.start_line, c.end_line) if c is not None else (0, 0) for c in rows])
        file_targets = [[f["path"], f.get("start_line", 0), f.get("end_line", 0)] for f in query.get("files", [])]
        file_targets += [[t.path, t.start_line, t.end_line] for t in targets]
        out["meta"].append({"id": query["id"], "type": query["type"], "repo": query["repo"],
                            "n_targets": len(targets), "n_files": len(files), "found": int(labels.sum()),
                            "paths": paths, "file_targets": file_targets})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--splits", default="train,dev,test")
    parser.add_argument("--quality-state", type=Path, default=QUALITY_STATE)
    args = parser.parse_args(argv)
    for split in [s.strip() for s in args.splits.split(",") if s.strip()]:
        if split == "train":
            workspaces, queries = train_queries()
            dump(split, STATE_DIR, workspaces, queries, generate=True)
        else:
            workspaces, queries = quality_queries(split)
            dump(split, args.quality_state, workspaces, queries, generate=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
