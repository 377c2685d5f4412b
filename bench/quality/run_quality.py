"""Retrieval quality, per repository workspace, through the real services.

Starts analysis, embedding and retrieval once (one state dir), indexes every repo's
workspace `bench/.work/quality/<repo>/` with IndexWorkspace(wait_for_embeddings=true)
(an incremental sync: with --state-dir of an earlier run a READY index is reused and only
checked), then sends every query of bench/quality/queries.jsonl, in its own repo's
workspace, through RetrievalService.Search once per mode of MODES.

Per query and mode it scores MRR@10, R@1/5/10 and nDCG@10 over the symbol targets; recall
within token budgets of 500 / 2,000 / 8,000 tokens (results read in the order returned, each
costing a one-line header plus its collapsed source, cl100k_base; a result counts only if it
fits entirely, see codecompass_dev/evaluation/metrics.py); file-level nDCG@10 and R@10 over the query's files
(a `concept` query's `files`, and every symbol target's file with the symbol's lines as its
span: codecompass_dev/evaluation/metrics.py score_files); the tokens of the top 10 results; and server/client
latency. A `concept` query with files only has no symbol-level scores (None in its rows, left
out of the symbol-level means, whose count is "n symbol").
Aggregates are per split x query type x mode (plus all types, and nl queries by
`leaks_name`). Everything lands in one results file, bench/results/quality-<UTC>.json and
its copy quality-latest.json; `python -m bench.report` turns it into the README tables.

Queries without `repo` are the legacy single workspace (bench/.work/quality-ws); without
`split` they count as dev.

Run: .venv/bin/python -m bench.quality.run_quality [--split dev] [--modes bm25,hybrid]
     [--state-dir DIR] [--max-queries N] [--no-write]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.lib.testcode import is_test_code
from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.errors import ServiceError
from codecompass.clients.retrieval import RetrievalClient
from codecompass.contracts.retrieval.model import ResultView, SearchQuery
from codecompass_dev.corpus.assemble import QUALITY_REPOS_BY_NAME, is_code_file, workspace_digest
from codecompass_dev.evaluation.metrics import (
    BUDGET_METRIC_NAMES,
    FILE_METRIC_NAMES,
    METRIC_NAMES,
    TOKEN_BUDGETS,
    file_hit,
    percentile,
    relevant_files,
    result_token_cost,
    score_context,
    score_files,
    score_query,
    tokens_per_answer,
)
from codecompass_dev.evaluation.query_set import DEFAULT_QUERIES, Query, load_queries, target_hit
from codecompass_dev.evaluation.results import run_metadata, write_results
from codecompass_dev.evaluation.services import REPO_ROOT, ServiceProcess, ServiceStack, start_stack
from codecompass_dev.evaluation.workspaces import LEGACY_WORKSPACE, index_workspace, workspace_for

SPLITS = ("dev", "test")
SEARCH_DEADLINE_S = 60.0

# Deep enough that the 8,000-token budget is usually spent before the results run out
# (a query whose results end first is counted in `budget_not_spent`).
RESULT_LIMIT = 60

# Every mode is a set of SearchQuery fields; nothing else differs between modes.
# No semantic_ratio = the server's default ratio; ranked=False is the fused channel score alone.
MODES: dict[str, dict[str, Any]] = {
    "bm25": {"semantic_ratio": 0.0, "ranked": False},
    "vector": {"semantic_ratio": 1.0, "ranked": False},
    "hybrid": {"ranked": False},
    "hybrid+ranking": {"ranked": True},  # the product's default
}
COMMON_REQUEST: dict[str, Any] = {"limit": RESULT_LIMIT, "view": ResultView.CODE}

# One row per (query, mode) in the results file, in this column order. The symbol-level
# columns (first_rank through the budgets) are None for a query without symbol targets.
PER_QUERY_COLUMNS = (
    "first_rank",  # 1-based rank of the first relevant result; 0 = none returned
    "mrr10",
    "r1",
    "r5",
    "r10",
    "ndcg10",
    *(f"r_{b}tok" for b in TOKEN_BUDGETS),
    "tokens_top10",
    "search_ms",
    "client_ms",
    "results",
    "first_test",  # 1 when the first result is test code (bench/lib/testcode.py, the benchmark's own rule)
    "test_top10",  # how many of the first 10 results are test code
    "file_ndcg10",  # file level: each relevant file once, at its first (overlapping) result
    "file_r10",
)
SYMBOL_COLUMNS = ("first_rank", "mrr10", "r1", "r5", "r10", "ndcg10", *(f"r_{b}tok" for b in TOKEN_BUDGETS))


def repo_label(repo: str | None) -> str:
    return repo or LEGACY_WORKSPACE.name


def unresolvable_queries(analysis: ServiceProcess, workspace: Path, queries: Sequence[Query]) -> list[str]:
    """Ids of queries none of whose targets (symbols or files) is a chunk the analysis service
    produces (unanswerable)."""
    paths = sorted({t.path for q in queries for t in q.file_targets})
    by_path: dict[str, list] = defaultdict(list)
    client = AnalysisClient(analysis.address)
    try:
        for chunked in client.chunks(str(workspace), paths, 600):
            by_path[chunked.relative_path].extend(chunked.chunks)
    finally:
        client.close()
    unresolvable = []
    for q in queries:
        files = relevant_files(q.file_targets)
        chunks = [chunk for f in files for chunk in by_path[f.path]]
        if not any(
            target_hit(chunk, q.targets) is not None
            or (q.files and file_hit(chunk.relative_path, chunk.start_line, chunk.end_line, files) is not None)
            for chunk in chunks
        ):
            unresolvable.append(q.id)
    return unresolvable


def search_query(query: Query, mode: str) -> SearchQuery:
    fields = {**COMMON_REQUEST, **MODES[mode]}
    return SearchQuery(workspace_root=str(workspace_for(query.repo)), query=query.query, **fields)


class TokenCosts:
    """Token cost per result, cached by chunk id + content hash (the same chunk recurs across modes)."""

    def __init__(self) -> None:
        self._cache: dict[tuple[str, str], int] = {}

    def __call__(self, chunk) -> int:
        key = (chunk.id, chunk.snippet_hash)
        cost = self._cache.get(key)
        if cost is None:
            cost = result_token_cost(chunk.relative_path, chunk.qualified_name, chunk.collapsed_source)
            self._cache[key] = cost
        return cost


@dataclass
class Outcome:
    """One query under one mode."""

    row: list[float | None]  # PER_QUERY_COLUMNS
    ratio_used: float
    skipped_reason: str
    budget_not_spent: bool  # the results ran out before the largest budget did
    error: str = ""  # the RPC failed: scored as a miss, and the run writes no results file


def is_test_result(repo: str | None, chunk) -> bool:
    """Test code by the benchmark's own rule; the repository's published code never is."""
    quality_repo = QUALITY_REPOS_BY_NAME.get(repo or "")
    library = quality_repo is not None and is_code_file(quality_repo, chunk.relative_path)
    return is_test_code(chunk.relative_path, chunk.qualified_name, chunk.is_test, library_code=library)


def run_query(client: RetrievalClient, query: Query, mode: str, costs: TokenCosts) -> Outcome:
    request = search_query(query, mode)
    t0 = time.perf_counter()
    reply = client.search(request, SEARCH_DEADLINE_S)
    client_ms = (time.perf_counter() - t0) * 1000
    results = list(reply.results)
    result_costs = [costs(r.chunk) for r in results]
    symbol_level: list[float | None] = [None] * len(SYMBOL_COLUMNS)
    if query.targets:
        hits = [target_hit(r.chunk, query.targets) for r in results]
        ranking = score_query(hits[:10], len(query.targets))
        context = score_context(hits, result_costs, len(query.targets))
        first_rank = next((rank for rank, hit in enumerate(hits, start=1) if hit is not None), 0)
        symbol_level = [first_rank, *ranking.values(), *context.recall_by_budget]
    files = score_files(
        [(r.chunk.relative_path, r.chunk.start_line, r.chunk.end_line) for r in results], query.file_targets
    )
    tests = [is_test_result(query.repo, r.chunk) for r in results[:10]]
    row = [
        *symbol_level,
        tokens_per_answer(result_costs),
        reply.metadata.search_ms,
        client_ms,
        len(results),
        int(bool(tests) and tests[0]),
        sum(tests),
        *files.values(),
    ]
    return Outcome(
        row=row,
        ratio_used=reply.metadata.semantic_ratio_used,
        skipped_reason=reply.metadata.semantic_skipped_reason,
        budget_not_spent=sum(result_costs) < TOKEN_BUDGETS[-1],
    )


def failed(error: ServiceError, query: Query) -> Outcome:
    row: list[float | None] = [0.0] * len(PER_QUERY_COLUMNS)
    if not query.targets:
        for column in SYMBOL_COLUMNS:
            row[COL[column]] = None
    return Outcome(
        row=row,
        ratio_used=0.0,
        skipped_reason="",
        budget_not_spent=False,
        error=f"{error.status}: {error}",
    )


def run_mode(retrieval: ServiceProcess, queries: Sequence[Query], mode: str, costs: TokenCosts) -> dict[str, Outcome]:
    outcomes: dict[str, Outcome] = {}
    client = RetrievalClient(retrieval.address)
    try:
        for query in queries:
            try:
                outcomes[query.id] = run_query(client, query, mode, costs)
            except ServiceError as error:
                # One failing query must not lose the others; the failure is reported, never hidden.
                outcomes[query.id] = failed(error, query)
                log(f"  {mode} {query.id} failed: {outcomes[query.id].error}")
    finally:
        client.close()
    return outcomes


# --- Aggregation -------------------------------------------------------------------------

COL = {name: i for i, name in enumerate(PER_QUERY_COLUMNS)}
RANK_COLUMNS = ("mrr10", "r1", "r5", "r10", "ndcg10")
BUDGET_COLUMNS = tuple(f"r_{b}tok" for b in TOKEN_BUDGETS)
FILE_COLUMNS = ("file_ndcg10", "file_r10")


def aggregate(rows: Sequence[Sequence[float | None]]) -> dict[str, Any]:
    """Means of the ranking and budget metrics (symbol level: over the rows that have them, "n
    symbol" when that is not every row), file-level means, mean/median tokens of the top 10."""
    out: dict[str, Any] = {"n": len(rows)}
    if not rows:
        return out
    symbol_rows = [r for r in rows if r[COL["mrr10"]] is not None]
    if len(symbol_rows) != len(rows):
        out["n symbol"] = len(symbol_rows)
    for label, column in zip((*METRIC_NAMES, *BUDGET_METRIC_NAMES), (*RANK_COLUMNS, *BUDGET_COLUMNS), strict=True):
        out[label] = round(statistics.fmean(r[COL[column]] for r in symbol_rows), 4) if symbol_rows else None
    tokens = [r[COL["tokens_top10"]] for r in rows]
    out["tokens@10 mean"] = round(statistics.fmean(tokens), 1)
    out["tokens@10 median"] = round(statistics.median(tokens), 1)
    out["first is test code"] = round(statistics.fmean(r[COL["first_test"]] for r in rows), 4)
    out["test code in top 10"] = round(statistics.fmean(r[COL["test_top10"]] for r in rows) / 10, 4)
    for label, column in zip(FILE_METRIC_NAMES, FILE_COLUMNS, strict=True):
        out[label] = round(statistics.fmean(r[COL[column]] for r in rows), 4)
    return out


def query_groups(queries: Sequence[Query]) -> list[tuple[str, str, list[Query]]]:
    """(split, group label, queries): all types, each type, and nl by leaks_name where known."""
    groups = []
    for split in SPLITS:
        in_split = [q for q in queries if q.split == split]
        if not in_split:
            continue
        groups.append((split, "all", in_split))
        for qtype in sorted({q.type for q in in_split}):
            of_type = [q for q in in_split if q.type == qtype]
            groups.append((split, qtype, of_type))
            if qtype == "nl" and any(q.leaks_name is not None for q in of_type):
                for leaks in (False, True):
                    sub = [q for q in of_type if q.leaks_name is leaks]
                    if sub:
                        groups.append((split, f"nl, name {'leaked' if leaks else 'not leaked'}", sub))
    return groups


def build_tables(queries: Sequence[Query], outcomes: dict[str, dict[str, Outcome]]) -> list[dict[str, Any]]:
    rows = []
    for split, group, members in query_groups(queries):
        for mode, by_id in outcomes.items():
            stats = aggregate([by_id[q.id].row for q in members])
            rows.append({"split": split, "group": group, "mode": mode, **stats})
    return rows


def latency_table(queries: Sequence[Query], outcomes: dict[str, dict[str, Outcome]]) -> dict[str, dict[str, float]]:
    table = {}
    for mode, by_id in outcomes.items():
        server = [by_id[q.id].row[COL["search_ms"]] for q in queries]
        client = [by_id[q.id].row[COL["client_ms"]] for q in queries]
        table[mode] = {
            "search_ms p50": round(percentile(server, 50), 1),
            "search_ms p95": round(percentile(server, 95), 1),
            "client_ms p50": round(percentile(client, 50), 1),
            "client_ms p95": round(percentile(client, 95), 1),
        }
    return table


def mode_diagnostics(queries: Sequence[Query], outcomes: dict[str, dict[str, Outcome]]) -> dict[str, dict[str, Any]]:
    """What the server did with each mode's request: ratio actually used, skipped channels, depth."""
    out = {}
    for mode, by_id in outcomes.items():
        items = [by_id[q.id] for q in queries]
        requested = MODES[mode].get("semantic_ratio")
        out[mode] = {
            "request": describe_request(MODES[mode]),
            "semantic_ratio_used mean": round(statistics.fmean(o.ratio_used for o in items), 3),
            "ratio_lowered": sum(1 for o in items if requested is not None and o.ratio_used < requested - 1e-6),
            "semantic_skipped": dict(Counter(o.skipped_reason for o in items if o.skipped_reason)),
            "results mean": round(statistics.fmean(o.row[COL["results"]] for o in items), 1),
            "budget_not_spent": sum(1 for o in items if o.budget_not_spent),
            "errors": sum(1 for o in items if o.error),
        }
    return out


def describe_request(fields: dict[str, Any]) -> dict[str, Any]:
    """Query fields as the SearchRequest contract names them (ranking=RANKING_MODE_FUSION,
    view=RESULT_VIEW_CODE), so every results file describes its modes in the same words."""
    out: dict[str, Any] = {}
    for key, value in fields.items():
        if key == "ranked":
            out["ranking"] = "RANKING_MODE_FULL" if value else "RANKING_MODE_FUSION"
        elif key == "view":
            out["view"] = f"RESULT_VIEW_{value.name}"
        else:
            out[key] = value
    return out


def compact_row(row: Sequence[float]) -> list[float]:
    """Scores to 4 decimals, milliseconds to 0.1."""
    ms = {COL["search_ms"], COL["client_ms"]}
    return [round(v, 1 if i in ms else 4) if isinstance(v, float) else v for i, v in enumerate(row)]


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def relative(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def retrieval_settings() -> dict[str, str]:
    """CODECOMPASS_* settings the services inherit from this environment (never secrets)."""
    return {
        k: v
        for k, v in sorted(os.environ.items())
        if k.startswith("CODECOMPASS_")
        and "KEY" not in k
        and "STORAGE_OPTIONS" not in k
        and k != "CODECOMPASS_STATE_DIR"
    }


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def select_queries(
    queries: Iterable[Query], split: str | None, repos: set[str] | None, max_queries: int | None
) -> list[Query]:
    chosen = [
        q for q in queries if (split is None or q.split == split) and (repos is None or repo_label(q.repo) in repos)
    ]
    if max_queries:
        # An even sample across repos and types, for smoke runs: the first N of each group.
        per_group: dict[tuple, int] = Counter()
        kept = []
        for q in chosen:
            key = (q.repo, q.split, q.type)
            if per_group[key] < max_queries:
                per_group[key] += 1
                kept.append(q)
        chosen = kept
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=Path, default=DEFAULT_QUERIES)
    parser.add_argument("--split", choices=SPLITS, help="only this split (default: both)")
    parser.add_argument("--repos", help="comma-separated repo names (default: every repo of the query file)")
    parser.add_argument("--modes", default=",".join(MODES), help=f"comma-separated, of {', '.join(MODES)}")
    parser.add_argument("--max-queries", type=int, help="smoke run: at most N queries per repo x split x type")
    parser.add_argument(
        "--state-dir", type=Path, help="index location; an earlier run's is reused (default: a temp dir)"
    )
    parser.add_argument("--no-write", action="store_true", help="print the tables, write no results file")
    parser.add_argument("--results-dir", type=Path, help="where results files go (default bench/results)")
    parser.add_argument("--echo-logs", action="store_true")
    args = parser.parse_args(argv)

    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = [m for m in modes if m not in MODES]
    if unknown:
        parser.error(f"unknown mode(s) {unknown}; choose from {list(MODES)}")
    repos = {r.strip() for r in args.repos.split(",")} if args.repos else None
    queries = select_queries(load_queries(args.queries), args.split, repos, args.max_queries)
    if not queries:
        parser.error("no queries selected")
    by_repo: dict[str | None, list[Query]] = defaultdict(list)
    for query in queries:
        by_repo[query.repo].append(query)
    missing = [str(workspace_for(r)) for r in by_repo if not workspace_for(r).is_dir()]
    if missing:
        raise SystemExit(f"workspace(s) missing: {', '.join(missing)}; build them first (make bench-quality)")

    state_dir = (args.state_dir or Path(tempfile.mkdtemp(prefix="cc-quality-"))).resolve()
    state_dir_reused = state_dir.is_dir() and any(state_dir.iterdir())
    env = {"CODECOMPASS_STATE_DIR": str(state_dir)}
    metadata = run_metadata()
    started = time.perf_counter()
    log(f"quality: {len(queries)} queries in {len(by_repo)} repo(s), modes {modes}, state dir {state_dir}")
    stack: ServiceStack = start_stack(env, echo=args.echo_logs)
    indexes: dict[str, dict[str, Any]] = {}
    unanswerable: dict[str, list[str]] = {}
    outcomes: dict[str, dict[str, Outcome]] = {}
    try:
        for repo, repo_queries in by_repo.items():
            workspace = workspace_for(repo)
            log(f"index {repo_label(repo)} ({workspace}) ...")
            indexes[repo_label(repo)] = index_workspace(stack.retrieval, workspace)
            if repo in QUALITY_REPOS_BY_NAME:
                # What exactly was measured: the pinned commit, and the workspace's bytes after blanking.
                indexes[repo]["commit"] = QUALITY_REPOS_BY_NAME[repo].commit
                indexes[repo]["workspace_sha256"] = workspace_digest(workspace)
            log(f"  {indexes[repo_label(repo)]}")
            unanswerable[repo_label(repo)] = unresolvable_queries(stack.analysis, workspace, repo_queries)
        costs = TokenCosts()
        for mode in modes:
            t0 = time.perf_counter()
            outcomes[mode] = run_mode(stack.retrieval, queries, mode, costs)
            overall = aggregate([o.row for o in outcomes[mode].values()])
            log(f"mode {mode}: {time.perf_counter() - t0:.0f} s, " + ", ".join(f"{k} {v}" for k, v in overall.items()))
        peak_rss = stack.peak_rss_mib()
        retrieval_log_tail = [line for line in stack.retrieval.log_lines if '"ERROR"' in line or "Traceback" in line][
            -10:
        ]
    finally:
        stack.stop()

    not_ready = {r: i["status"] for r, i in indexes.items() if i["status"] != "INDEXING_STATUS_READY"}
    errors = {f"{mode}/{qid}": o.error for mode, by_id in outcomes.items() for qid, o in by_id.items() if o.error}
    models = sorted({i["embedding_model"] for i in indexes.values()})
    payload = {
        "run": {
            **metadata,
            "seconds": round(time.perf_counter() - started, 1),
            "state_dir_reused": state_dir_reused,
            "peak_rss_mib": {k: (round(v) if v is not None else None) for k, v in peak_rss.items()},
        },
        "settings": {
            "queries_file": relative(args.queries),
            "queries_sha256": file_sha256(args.queries),
            "selection": {
                "split": args.split,
                "repos": sorted(repos) if repos else None,
                "max_queries": args.max_queries,
            },
            "modes": {m: describe_request(MODES[m]) for m in modes},
            "common_request": describe_request(COMMON_REQUEST),
            "token_budgets": list(TOKEN_BUDGETS),
            "token_encoding": "cl100k_base",
            "result_cost": "tokens of '// <relative_path> > <qualified_name>\\n' + collapsed_source",
            "budget_rule": "results in the order returned; a result counts only if it fits entirely; the walk "
            "stops at the first that does not",
            "relevance": "same path and (qualified name or exact line range); each target counted once",
            "file_relevance": "same path and, when the file target has a line span, overlapping lines; each file "
            "counted once; a symbol target is its file with the symbol's lines as its span",
            "embedding_models": models,
            "environment": retrieval_settings(),
        },
        "queries": {
            "total": len(queries),
            "by_split_type": {
                f"{s}/{t}": n for (s, t), n in sorted(Counter((q.split, q.type) for q in queries).items())
            },
            "by_repo": {repo_label(r): len(qs) for r, qs in by_repo.items()},
            "unanswerable": {r: ids for r, ids in unanswerable.items() if ids},
        },
        "indexes": indexes,
        "tables": build_tables(queries, outcomes),
        "latency": latency_table(queries, outcomes),
        "mode_diagnostics": mode_diagnostics(queries, outcomes),
        "per_query": {
            "columns": list(PER_QUERY_COLUMNS),
            "queries": {q.id: [q.split, q.type, repo_label(q.repo)] for q in queries},
            "rows": {mode: {qid: compact_row(o.row) for qid, o in by_id.items()} for mode, by_id in outcomes.items()},
        },
    }

    from bench.report.quality import render_quality_summary  # the report module owns all table layout

    print(render_quality_summary({"kind": "quality", **payload}))
    if not_ready or errors:
        log(f"not writing a results file: index not READY for {not_ready}" if not_ready else "")
        for key, error in list(errors.items())[:20]:
            log(f"not writing a results file: {key} failed: {error}")
        for line in retrieval_log_tail:
            log(f"[retrieval] {line}")
        return 1
    if args.no_write:
        return 0
    kwargs = {"results_dir": args.results_dir} if args.results_dir else {}
    path = write_results("quality", payload, **kwargs)
    log(f"wrote {relative(path)} (and quality-latest.json); refresh READMEs with: .venv/bin/python -m bench.report")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
