"""Cache a large first-stage candidate pool per query, for offline ranking experiments.

For every query of one split it asks retrieval for candidate_pool=200, limit=200,
ranking=FUSION (the fused channel score alone, no ranking policy), view=SUMMARY (identity,
location, signature, JSDoc; no source), at the server's default semantic ratio, and writes
one JSON line per query to bench/.work/candidates-<split>.jsonl:

  {"id", "type", "repo", "split", "query", "leaks_name", "n_targets", "n_files",
   "total_candidates", "semantic_ratio_used", "candidates": [{"id", "path", "qualified_name",
   "name", "kind", "start_line", "end_line", "depth", "parent_id", "is_test", "signature",
   "jsdoc", "lexical_score", "vector_similarity", "lexical_rank", "semantic_rank",
   "fusion_score", "provenance", "target", "file_target"}, ...]}

in fused order; `target` is the index of the query target the candidate is (None when it
is none), by the same rule as run_quality; `file_target` the index of the relevant file it
hits (codecompass_dev/evaluation/metrics.py relevant_files and file_hit over the query's file targets, of
`n_files`), so file-level nDCG is scored offline too. A `concept` query may have no symbol
target (`n_targets` 0). A ranking policy is then a function of these
fields, and evaluate_ranking()-style loops over the cache score it in milliseconds,
without services. Tune on dev; run the test split only to report (STYLE.md, habit 16).
Indexes are shared with run_quality: pass the same --state-dir to reuse them.

Run: .venv/bin/python -m bench.quality.dump_candidates --split dev [--state-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from bench.quality.run_quality import SPLITS, repo_label
from codecompass.clients.retrieval import RetrievalClient
from codecompass.contracts.retrieval.model import ResultView, SearchOutcome, SearchQuery
from codecompass.policy.ranking import RankedResult
from codecompass_dev.evaluation.metrics import RelevantFile, file_hit, relevant_files
from codecompass_dev.evaluation.query_set import DEFAULT_QUERIES, Query, load_queries, target_hit
from codecompass_dev.evaluation.services import start_stack
from codecompass_dev.evaluation.workspaces import index_workspace, workspace_for

BENCH_DIR = Path(__file__).resolve().parent.parent
CANDIDATE_POOL = 200
SEARCH_DEADLINE_S = 120.0
JSDOC_CHARS = 400  # enough for a doc-match signal; keeps the cache small


def candidate_query(query: Query) -> SearchQuery:
    return SearchQuery(
        workspace_root=str(workspace_for(query.repo)),
        query=query.query,
        limit=CANDIDATE_POOL,
        candidate_pool=CANDIDATE_POOL,
        ranked=False,
        view=ResultView.SUMMARY,
    )


def candidate_record(result: RankedResult, query: Query, files: list[RelevantFile]) -> dict[str, Any]:
    chunk = result.chunk
    return {
        "id": chunk.id,
        "path": chunk.relative_path,
        "qualified_name": chunk.qualified_name,
        "name": chunk.name,
        "kind": chunk.node_kind.value,
        "start_line": chunk.start_line,
        "end_line": chunk.end_line,
        "depth": chunk.depth,
        "parent_id": chunk.parent_id,
        "is_test": chunk.is_test,
        "signature": chunk.signature,
        "jsdoc": chunk.jsdoc[:JSDOC_CHARS],
        "lexical_score": round(result.lexical_score, 5),
        "vector_similarity": round(result.vector_similarity, 5),
        "lexical_rank": result.lexical_rank,
        "semantic_rank": result.semantic_rank,
        "fusion_score": round(result.fusion_score, 5),
        "provenance": result.provenance,
        "target": target_hit(chunk, query.targets),
        "file_target": file_hit(chunk.relative_path, chunk.start_line, chunk.end_line, files),
    }


def query_record(query: Query, reply: SearchOutcome) -> dict[str, Any]:
    files = relevant_files(query.file_targets)
    return {
        "id": query.id,
        "type": query.type,
        "repo": repo_label(query.repo),
        "split": query.split,
        "query": query.query,
        "leaks_name": query.leaks_name,
        "n_targets": len(query.targets),
        "n_files": len(files),
        "total_candidates": reply.metadata.total_candidates,
        "semantic_ratio_used": round(reply.metadata.semantic_ratio_used, 3),
        "candidates": [candidate_record(r, query, files) for r in reply.results],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--split", choices=SPLITS, default="dev")
    parser.add_argument("--queries", type=Path, default=DEFAULT_QUERIES)
    parser.add_argument(
        "--state-dir", type=Path, help="index location; an earlier run's is reused (default: a temp dir)"
    )
    parser.add_argument("--out", type=Path, help="default: bench/.work/candidates-<split>.jsonl")
    parser.add_argument("--echo-logs", action="store_true")
    args = parser.parse_args(argv)

    queries = [q for q in load_queries(args.queries) if q.split == args.split]
    if not queries:
        parser.error(f"no {args.split} queries in {args.queries}")
    by_repo: dict[str | None, list[Query]] = defaultdict(list)
    for query in queries:
        by_repo[query.repo].append(query)
    out = args.out or BENCH_DIR / ".work" / f"candidates-{args.split}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    state_dir = (args.state_dir or Path(tempfile.mkdtemp(prefix="cc-candidates-"))).resolve()

    stack = start_stack({"CODECOMPASS_STATE_DIR": str(state_dir)}, echo=args.echo_logs)
    found = kept = 0
    t0 = time.perf_counter()
    try:
        client = RetrievalClient(stack.retrieval.address)
        try:
            tmp = out.with_suffix(".jsonl.tmp")
            with open(tmp, "w", encoding="utf-8") as fh:
                for repo, repo_queries in by_repo.items():
                    info = index_workspace(stack.retrieval, workspace_for(repo))
                    print(f"{repo_label(repo)}: {info['chunks']} chunks, {info['status']}", file=sys.stderr)
                    for query in repo_queries:
                        record = query_record(query, client.search(candidate_query(query), SEARCH_DEADLINE_S))
                        kept += len(record["candidates"])
                        found += any(c["target"] is not None for c in record["candidates"])
                        fh.write(json.dumps(record, separators=(",", ":")) + "\n")
            tmp.replace(out)
        finally:
            client.close()
    finally:
        stack.stop()
    print(
        f"wrote {out}: {len(queries)} queries, {kept} candidates, a target in the pool for {found} "
        f"({found / len(queries):.1%}), {time.perf_counter() - t0:.0f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
