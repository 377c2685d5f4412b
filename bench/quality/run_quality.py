"""Retrieval quality on the JSDoc-stripped workspace, through the real services.

Starts the analysis (Node), embedding and retrieval services on port 0, indexes
bench/.work/quality-ws with IndexWorkspace(wait_for_embeddings=true), then sends
every query of bench/quality/queries.jsonl through RetrievalService.Search in
three modes:
  bm25     semantic_ratio=0: the lexical channel alone;
  vector   semantic_ratio=1: the vector channel's own ranking (results ordered by
           semantic_rank). The server may still skip the vector channel for a
           query (lexical short-circuit); such queries are counted and reported,
           and scored over the queries where the channel ran ("vector (ran)");
  hybrid   the server's default ratio and runtime policy, ranked as returned.
The retrieval service is restarted once per fusion (CODECOMPASS_RETRIEVAL_FUSION=
rrf | blend) over the same index. Reports MRR@10, Recall@1/5/10 and nDCG@10 per
mode and per query type as markdown.

Run: .venv/bin/python -m bench.quality.run_quality [--fusions rrf,blend]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import grpc

from bench.lib.metrics import METRIC_NAMES, QueryScore, mean_scores, score_query
from bench.lib.services import (
    ServiceProcess,
    start_analysis,
    start_embedding,
    start_retrieval,
)
from codecompass.v1 import analysis_pb2, analysis_pb2_grpc, retrieval_pb2, retrieval_pb2_grpc

BENCH_DIR = Path(__file__).resolve().parent.parent
DEFAULT_WORKSPACE = BENCH_DIR / ".work" / "quality-ws"
DEFAULT_QUERIES = Path(__file__).resolve().parent / "queries.jsonl"
FETCH_LIMIT = 20
INDEX_DEADLINE_S = 1800.0
SEARCH_DEADLINE_S = 60.0


@dataclass(frozen=True)
class Target:
    path: str
    qualified_name: str
    start_line: int
    end_line: int


@dataclass(frozen=True)
class Query:
    id: str
    type: str
    query: str
    targets: tuple[Target, ...]


def load_queries(path: Path) -> list[Query]:
    queries = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                raw = json.loads(line)
                targets = tuple(Target(**t) for t in raw["targets"])
                queries.append(Query(raw["id"], raw["type"], raw["query"], targets))
    return queries


def target_hit(chunk, targets: tuple[Target, ...]) -> int | None:
    """Index of the target this chunk is, by qualified name or exact line range in the same file."""
    for index, target in enumerate(targets):
        if chunk.relative_path != target.path:
            continue
        if chunk.qualified_name == target.qualified_name or (
            chunk.start_line == target.start_line and chunk.end_line == target.end_line
        ):
            return index
    return None


def unresolvable_targets(analysis: ServiceProcess, workspace: Path, queries: list[Query]) -> list[str]:
    """Ids of queries none of whose targets is a chunk the analysis service produces (unanswerable)."""
    paths = sorted({t.path for q in queries for t in q.targets})
    by_path: dict[str, list] = defaultdict(list)
    with analysis.channel() as channel:
        stub = analysis_pb2_grpc.CodeAnalysisServiceStub(channel)
        request = analysis_pb2.ChunkFilesRequest(workspace_root=str(workspace), paths=paths)
        for reply in stub.ChunkFiles(request, timeout=300):
            by_path[reply.relative_path].extend(reply.chunks)
    return [
        q.id
        for q in queries
        if not any(target_hit(chunk, q.targets) is not None for t in q.targets for chunk in by_path[t.path])
    ]


def index_workspace(retrieval: ServiceProcess, workspace: Path) -> dict:
    """Index and embed the workspace unless the state dir already holds a READY index of it."""
    status_request = retrieval_pb2.GetIndexStatusRequest(workspace_root=str(workspace))
    with retrieval.channel() as channel:
        stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        t0 = time.perf_counter()
        last = None
        status = stub.GetIndexStatus(status_request, timeout=30)
        # The workspace never changes during a run, so a READY index (a second fusion, or
        # --state-dir of an earlier run) is reused as is.
        if status.indexing_status != retrieval_pb2.INDEXING_STATUS_READY or status.chunks == 0:
            request = retrieval_pb2.IndexWorkspaceRequest(workspace_root=str(workspace), wait_for_embeddings=True)
            for last in stub.IndexWorkspace(request, timeout=INDEX_DEADLINE_S):
                pass
            status = stub.GetIndexStatus(status_request, timeout=30)
        elapsed = time.perf_counter() - t0
    stats = last.stats if last is not None else None
    return {
        "seconds": elapsed,
        "status": retrieval_pb2.IndexingStatus.Name(status.indexing_status),
        "files": status.files,
        "chunks": status.chunks,
        "embedded": status.embedded_chunks,
        "model": f"{status.embedding_model_id} {status.embedding_model_version}".strip(),
        "chunks_embedded_this_run": stats.chunks_embedded if stats else 0,
    }


@dataclass
class ModeOutcome:
    scores: dict[str, QueryScore]
    skipped_channel: dict[str, str]
    latencies_ms: list[float]


def ranked_hits(reply, query: Query, mode: str) -> list[int | None]:
    results = list(reply.results)
    if mode == "vector":
        results = sorted((r for r in results if r.semantic_rank > 0), key=lambda r: r.semantic_rank)
    elif mode == "bm25":
        results = sorted((r for r in results if r.lexical_rank > 0), key=lambda r: r.lexical_rank)
    return [target_hit(r.chunk, query.targets) for r in results[:10]]


def run_mode(retrieval: ServiceProcess, workspace: Path, queries: list[Query], mode: str) -> ModeOutcome:
    outcome = ModeOutcome({}, {}, [])
    with retrieval.channel() as channel:
        stub = retrieval_pb2_grpc.RetrievalServiceStub(channel)
        for query in queries:
            request = retrieval_pb2.SearchRequest(
                workspace_root=str(workspace), query=query.query, limit=FETCH_LIMIT, skip_sync=True
            )
            if mode == "bm25":
                request.semantic_ratio = 0.0
            elif mode == "vector":
                request.semantic_ratio = 1.0
            t0 = time.perf_counter()
            reply = stub.Search(request, timeout=SEARCH_DEADLINE_S)
            outcome.latencies_ms.append((time.perf_counter() - t0) * 1000)
            if mode == "vector" and reply.metadata.semantic_ratio_used < 1.0:
                outcome.skipped_channel[query.id] = (
                    reply.metadata.semantic_skipped_reason
                    or f"ratio lowered to {reply.metadata.semantic_ratio_used:.2f}"
                )
            outcome.scores[query.id] = score_query(ranked_hits(reply, query, mode), len(query.targets))
    return outcome


def table(rows: list[tuple[str, str, int, tuple[float, ...]]]) -> str:
    header = "| Fusion | Mode | Queries | " + " | ".join(METRIC_NAMES) + " |"
    lines = [header, "|" + "---|" * (3 + len(METRIC_NAMES))]
    for fusion, mode, n, values in rows:
        lines.append(f"| {fusion} | {mode} | {n} | " + " | ".join(f"{v:.3f}" for v in values) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE)
    parser.add_argument("--queries", type=Path, default=DEFAULT_QUERIES)
    parser.add_argument("--fusions", default="rrf,blend")
    parser.add_argument("--state-dir", type=Path, help="index location (default: a fresh temp dir)")
    parser.add_argument("--json", type=Path, help="also write per-query scores here")
    parser.add_argument("--echo-logs", action="store_true")
    args = parser.parse_args(argv)
    workspace = args.workspace.resolve()
    if not workspace.is_dir():
        raise SystemExit(f"{workspace} is missing: run .venv/bin/python -m bench.quality.build_queries")
    queries = load_queries(args.queries)
    fusions = [f.strip() for f in args.fusions.split(",") if f.strip()]
    state_dir = args.state_dir or Path(tempfile.mkdtemp(prefix="cc-quality-"))
    env = {"CODECOMPASS_STATE_DIR": str(state_dir)}

    analysis = start_analysis(env, echo=args.echo_logs)
    embedding = start_embedding(env, echo=args.echo_logs)
    rows: list[tuple[str, str, int, tuple[float, ...]]] = []
    per_type_rows: list[tuple[str, str, int, tuple[float, ...]]] = []
    notes: list[str] = []
    raw: dict = {}
    try:
        missing = unresolvable_targets(analysis, workspace, queries)
        notes.append(
            f"{len(queries) - len(missing)} of {len(queries)} query targets match a chunk of the analysis service "
            f"(by path + qualified name or exact lines); the other {len(missing)} count as misses: "
            f"{', '.join(missing[:12])}{' …' if len(missing) > 12 else ''}"
        )
        for fusion in fusions:
            retrieval = start_retrieval(
                analysis.address,
                embedding.address,
                {**env, "CODECOMPASS_RETRIEVAL_FUSION": fusion},
                echo=args.echo_logs,
            )
            try:
                info = index_workspace(retrieval, workspace)
                notes.append(
                    f"index ({fusion} run): {info['files']} files, {info['chunks']} chunks, {info['embedded']} embedded, "
                    f"status {info['status']}, model {info['model']}, {info['seconds']:.1f} s "
                    f"({info['chunks_embedded_this_run']} embedded in this run)"
                )
                # Channel-only modes do not depend on the fusion; measure them once.
                modes = ["bm25", "vector", "hybrid"] if fusion == fusions[0] else ["hybrid"]
                for mode in modes:
                    outcome = run_mode(retrieval, workspace, queries, mode)
                    label = "any" if mode != "hybrid" else fusion
                    raw[f"{label}/{mode}"] = {qid: s.values() for qid, s in outcome.scores.items()}
                    rows.append((label, mode, len(queries), mean_scores(outcome.scores.values())))
                    if mode == "vector" and outcome.skipped_channel:
                        ran = [q for q in queries if q.id not in outcome.skipped_channel]
                        rows.append((label, "vector (ran)", len(ran), mean_scores(outcome.scores[q.id] for q in ran)))
                        reasons = defaultdict(int)
                        for reason in outcome.skipped_channel.values():
                            reasons[reason] += 1
                        notes.append(
                            f"vector mode: the server skipped or lowered the vector channel for "
                            f"{len(outcome.skipped_channel)} of {len(queries)} queries ({dict(reasons)}); they score 0 "
                            "in 'vector' and are left out of 'vector (ran)'"
                        )
                    by_type: dict[str, list[QueryScore]] = defaultdict(list)
                    for query in queries:
                        by_type[query.type].append(outcome.scores[query.id])
                    for qtype, scores in sorted(by_type.items()):
                        per_type_rows.append((label, f"{mode} / {qtype}", len(scores), mean_scores(scores)))
                    p50 = statistics.median(outcome.latencies_ms)
                    p95 = sorted(outcome.latencies_ms)[int(0.95 * (len(outcome.latencies_ms) - 1))]
                    notes.append(f"{label}/{mode}: search latency p50 {p50:.0f} ms, p95 {p95:.0f} ms")
                    # Printed as it comes: a later fusion failing must not lose this one.
                    print(f"progress: {label}/{mode} " + " ".join(f"{v:.3f}" for v in rows[-1][3]), flush=True)
            except grpc.RpcError as err:
                notes.append(f"**{fusion} run failed**: {err.code().name}: {err.details()}")
            finally:
                retrieval.stop()
    finally:
        embedding.stop()
        analysis.stop()

    types = defaultdict(int)
    for query in queries:
        types[query.type] += 1
    print(
        f"Quality benchmark: {len(queries)} queries ({', '.join(f'{k} {v}' for k, v in sorted(types.items()))}) "
        f"on {workspace.name}\n"
    )
    print(table(rows))
    print("\nPer query type:\n")
    print(table(per_type_rows))
    print()
    for note in notes:
        print(f"- {note}")
    if args.json:
        args.json.write_text(json.dumps(raw, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
