"""The whole pipeline, stage by stage, through the real services: what an agent receives.

Starts analysis, embedding, retrieval, rerank and selection (one state dir; with the quality
run's --state-dir the indexes are reused after a sync), then runs every query of
bench/quality/queries.jsonl through the gateway's `Pipeline` once per stage configuration:

- `first stage`: retrieval's ranked list (hybrid + ranking), nothing after it;
- `+ rerank`: the configured reranker (the local default keeps the first-stage order, so this
  row equals the first stage by construction; a model reranker needs a key and the gates);
- `+ hubs`: hub elevation over the ranked list;
- `selection` / `selection + hubs`: the selected, rendered answer (gate, budget, merging, focus).

Ranked lists are scored as in run_quality (a result is a target when it is that symbol; context
cost = header + collapsed source per result). A selected answer is scored on what it shows: a
target counts when a result is that symbol or shows it expanded inside a merged parent; its
context is the rendered results in order, each costing its own token count. Both get MRR@10,
nDCG@10, R@1, R@5, recall within 500 / 2,000 / 8,000 tokens, tokens per answer (top 10 for a
list, the whole answer for a selection) and the share of returned code lines that belong to a
target symbol (lines compared by text within the target's file; blank and bracket-only lines
left out); and file-level nDCG@10 and R@10 as run_quality scores them (codecompass_dev/evaluation/metrics.py
score_files; a selected result is its own path and lines). A `concept` query with files only has
None for the symbol-level columns and its gold-line share, and is left out of their means ("n
symbol" counts the rows that have them), of the budget curve and of the reliability table.
Also: stage latencies, and for queries with no answer (nonsense, the other repositories' queries
asked of a workspace, names that exist nowhere) how many results they get and whether the
gateway flags them low-confidence.

The budget curve: per split and query type, the recall of the answer selection gives when asked
for B tokens (max_tokens = B; a target counts when a result shows it whole, not clipped) against
the ranked list's recall within B tokens, for each B in CURVE_BUDGETS. The default budget
(SelectionSettings.max_tokens) is read off it.

Reliability: per query, the search's calibrated confidence (metadata.confidence) and the
gateway's composite confidence against whether the first stage's first result is a target (what
confidence claims): a table of bins (mean predicted vs observed) and the expected calibration error.

Writes bench/results/pipeline-<UTC>.json (and pipeline-latest.json); `python -m bench.report`
renders it into the READMEs.

Run: .venv/bin/python -m bench.quality.run_pipeline --state-dir bench/.work/quality-state [--split test]
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import statistics
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from codecompass_gateway.answer import guidance_for
from codecompass_gateway.pipeline import Pipeline, PipelineAnswer, PipelineRequest

from bench.quality.run_quality import SPLITS, TokenCosts, log, repo_label, select_queries
from codecompass.common.config import load_settings
from codecompass.policy.selection import LOW_CONFIDENCE_MAX_TOKENS
from codecompass_dev.evaluation.metrics import (
    TOKEN_BUDGETS,
    Target,
    percentile,
    recall_within_budget,
    score_context,
    score_files,
    score_query,
)
from codecompass_dev.evaluation.query_set import DEFAULT_QUERIES, Query, load_queries, target_hit
from codecompass_dev.evaluation.results import run_metadata, write_results
from codecompass_dev.evaluation.services import ServiceProcess, start_service, start_stack
from codecompass_dev.evaluation.workspaces import index_workspace, workspace_for

LIST_DEPTH = 60
STAGES: dict[str, dict[str, Any]] = {
    "first stage": {"rerank": False, "hubs": False, "select": False, "limit": LIST_DEPTH},
    "+ hubs": {"hubs": True, "select": False, "limit": LIST_DEPTH},
    "selection": {"hubs": False, "select": True},
    "selection + hubs": {"hubs": True, "select": True},
}
# Queries no workspace can answer: punctuation, a name that exists nowhere, unrelated words.
NONSENSE_QUERIES = (
    "?!;:,.", "zzqxNotANameAnywhere", "purple elephant quantum banana", "qwxz vbnm plok",
    "recipe for sourdough bread starter", "how tall is the eiffel tower", "FluxCapacitorWarpDriveImpl",
    "the migration of arctic terns", "asdf jkl asdf jkl", "volcanic eruptions in iceland 2010",
)
# Code-shaped names no workspace defines; a name the index turns out to hold is left out and counted.
NOWHERE_NAMES = (
    "parseWidgetManifestV7", "QuantumLedgerStore", "useSpreadsheetCellBinding", "TelemetryBeaconRegistry",
    "flushGlacierCache", "createHoloDeckSession", "validateZebraStripes", "MarmaladeTokenizer.rehydrate",
    "computeOrbitalDrift", "PelicanRouteResolver",
)
# Every other dev/test query of a repository asked of the next repository's workspace: a question
# about code that is not there.
WRONG_REPO_STRIDE = 4
# What a query with no answer may cost an agent: a low-confidence answer's budget.
UNANSWERABLE_MAX_TOKENS = LOW_CONFIDENCE_MAX_TOKENS
CURVE_BUDGETS = (500, 1_000, 2_000, 4_000, 8_000, 16_000)
RELIABILITY_BINS = 10
COLUMNS = ("first_rank", "mrr10", "r1", "r5", "r10", "ndcg10", *(f"r_{b}tok" for b in TOKEN_BUDGETS),
           "tokens", "gold_line_share", "results", "client_ms", "file_ndcg10", "file_r10")
_MEANINGFUL = re.compile(r"[A-Za-z0-9_$]")


def meaningful(line: str) -> str | None:
    text = line.strip()
    return text if _MEANINGFUL.search(text) else None


class GoldLines:
    """Stripped text of each target's lines, per query (read from the workspace's files)."""

    def __init__(self) -> None:
        self._files: dict[Path, list[str]] = {}

    def lines(self, query: Query) -> dict[str, set[str]]:
        out: dict[str, set[str]] = defaultdict(set)
        root = workspace_for(query.repo)
        for target in query.targets:
            path = root / target.path
            if path not in self._files:
                try:
                    self._files[path] = path.read_text(encoding="utf-8", errors="replace").splitlines()
                except OSError:
                    self._files[path] = []
            text = self._files[path][max(target.start_line - 1, 0): target.end_line]
            out[target.path].update(t for t in (meaningful(line) for line in text) if t)
        return out


def gold_share(shown: Sequence[tuple[str, str]], gold: dict[str, set[str]]) -> float:
    """Share of meaningful returned lines (path, code) whose text is a line of a target in that file."""
    total = inside = 0
    for path, code in shown:
        targets = gold.get(path, set())
        for line in code.splitlines():
            text = meaningful(line)
            if text is None:
                continue
            total += 1
            inside += text in targets
    return inside / total if total else 0.0


def selection_hits(answer: PipelineAnswer, targets: Sequence[Target]) -> list[tuple[int, ...]]:
    """Per selected result: every target it shows (itself, and each one expanded inside it: a file
    card or a parent that shows three targets answers all three), in the order shown."""
    by_id = {c.result.chunk.id: c.result.chunk for c in answer.candidates}
    out: list[tuple[int, ...]] = []
    for result in answer.selection.results:
        shown = [(result.relative_path, result.qualified_name, result.start_line, result.end_line)]
        shown += [(c.relative_path, c.qualified_name, c.start_line, c.end_line)
                  for c in (by_id.get(i) for i in result.expanded_child_ids) if c is not None]
        found: dict[int, None] = {}
        for path, name, start, end in shown:
            for index, t in enumerate(targets):
                if path == t.path and (name == t.qualified_name or (start, end) == (t.start_line, t.end_line)):
                    found[index] = None
        out.append(tuple(found))
    return out


def score(query: Query, answer: PipelineAnswer, client_ms: float, costs: TokenCosts,
          gold: GoldLines) -> list[float | None]:
    if answer.selection is not None:
        results = answer.selection.results
        shows = selection_hits(answer, query.targets)
        # Ranked by the first target each result shows; read for context, every one it shows
        # (the others at no extra cost: they are inside the same result).
        hits = [shown[0] if shown else None for shown in shows]
        result_costs = [r.token_count for r in results]
        context_hits = [t for shown in shows for t in (shown or (None,))]
        context_costs = [c for shown, cost in zip(shows, result_costs, strict=True)
                         for c in (cost, *[0] * (len(shown) - 1))]
        tokens = answer.selection.total_tokens
        shown = [(r.relative_path, r.source) for r in results]
        spans = [(r.relative_path, r.start_line, r.end_line) for r in results]
    else:
        chunks = [c.result.chunk for c in answer.candidates]
        hits = [target_hit(c, query.targets) for c in chunks]
        result_costs = [costs(c) for c in chunks]
        context_hits, context_costs = hits, result_costs
        tokens = sum(result_costs[:10])
        shown = [(c.relative_path, c.collapsed_source) for c in chunks[:10]]
        spans = [(c.relative_path, c.start_line, c.end_line) for c in chunks]
    files = score_files(spans, query.file_targets)
    values: dict[str, float | None] = {"tokens": tokens, "results": len(hits), "client_ms": client_ms,
                                       "file_ndcg10": files.ndcg10, "file_r10": files.r10}
    if query.targets:  # else the symbol-level columns stay None
        ranking = score_query(hits[:10], len(query.targets))
        context = score_context(context_hits, context_costs, len(query.targets))
        values["first_rank"] = next((rank for rank, hit in enumerate(hits, start=1) if hit is not None), 0)
        values.update(zip(("mrr10", "r1", "r5", "r10", "ndcg10"), ranking.values(), strict=True))
        values.update(zip((f"r_{b}tok" for b in TOKEN_BUDGETS), context.recall_by_budget, strict=True))
        values["gold_line_share"] = gold_share(shown, gold.lines(query))
    return [values.get(name) for name in COLUMNS]


def aggregate(rows: Sequence[Sequence[float | None]]) -> dict[str, float | None]:
    """Column means (a symbol-level column over the rows that have it), token median and max."""
    col = {name: i for i, name in enumerate(COLUMNS)}
    out: dict[str, float | None] = {"n": len(rows)}
    if not rows:
        return out
    with_symbols = sum(1 for r in rows if r[col["mrr10"]] is not None)
    if with_symbols != len(rows):
        out["n symbol"] = with_symbols
    for name in COLUMNS[1:]:
        values = [r[col[name]] for r in rows if r[col[name]] is not None]
        out[name] = round(statistics.fmean(values), 4) if values else None
    out["tokens median"] = statistics.median(r[col["tokens"]] for r in rows)
    out["tokens max"] = max(r[col["tokens"]] for r in rows)
    out["empty answers"] = round(sum(1 for r in rows if r[col["results"]] == 0) / len(rows), 4)
    return out


def curve_row(query: Query, answer: PipelineAnswer) -> float:
    """Recall of a selected answer asked for B tokens: targets a whole (unclipped) result shows."""
    assert answer.selection is not None
    shows = selection_hits(answer, query.targets)
    found = {t for shown, r in zip(shows, answer.selection.results, strict=True) if not r.clipped for t in shown}
    return len(found) / len(query.targets)


def list_curve(query: Query, answer: PipelineAnswer, costs: TokenCosts,
               budgets: Sequence[int] = CURVE_BUDGETS) -> list[float]:
    chunks = [c.result.chunk for c in answer.candidates]
    hits = [target_hit(c, query.targets) for c in chunks]
    cost = [costs(c) for c in chunks]
    return [recall_within_budget(hits, cost, len(query.targets), b) for b in budgets]


def reliability(pairs: Sequence[tuple[float, bool]], bins: int = RELIABILITY_BINS) -> dict[str, Any]:
    """Equal-width bins of predicted confidence: count, mean predicted, share observed; and the
    expected calibration error (bin-size-weighted mean |predicted - observed|)."""
    table = []
    ece = 0.0
    for b in range(bins):
        low, high = b / bins, (b + 1) / bins
        members = [(p, o) for p, o in pairs if low <= p < high or (b == bins - 1 and p == 1.0)]
        if not members:
            continue
        predicted = statistics.fmean(p for p, _ in members)
        observed = statistics.fmean(float(o) for _, o in members)
        ece += len(members) / len(pairs) * abs(predicted - observed)
        table.append({"bin": f"{low:.1f}-{high:.1f}", "n": len(members), "predicted": round(predicted, 4),
                      "observed": round(observed, 4)})
    return {"bins": table, "ece": round(ece, 4) if pairs else None, "n": len(pairs)}


def unanswerable_sets(queries: Sequence[Query], repos: Sequence[str | None]) -> dict[str, list[tuple[str | None, str]]]:
    """(workspace repo, query text) per kind of query no workspace answers."""
    ordered = sorted(repos, key=repo_label)
    wrong: list[tuple[str | None, str]] = []
    if len(ordered) > 1:
        for i, repo in enumerate(ordered):
            other = ordered[(i + 1) % len(ordered)]
            own = sorted((q for q in queries if q.repo == repo), key=lambda q: q.id)
            wrong += [(other, q.query) for q in own[::WRONG_REPO_STRIDE]]
    return {"nonsense": [(r, t) for r in ordered for t in NONSENSE_QUERIES], "wrong repository": wrong,
            "names nowhere": [(r, t) for r in ordered for t in NOWHERE_NAMES]}


def start_pipeline_services(state_dir: Path, echo: bool) -> tuple[list[ServiceProcess], Any]:
    env = {"CODECOMPASS_STATE_DIR": str(state_dir)}
    stack = start_stack(env, echo=echo)
    extra = [start_service("rerank", [_python(), "-m", "codecompass.rerank"], "RERANK_PORT", env, echo=echo),
             start_service("selection", [_python(), "-m", "codecompass.selection"], "SELECTION_PORT",
                           {**env, "ANALYSIS_ADDR": stack.analysis.address}, echo=echo)]
    return extra, stack


def _python() -> str:
    import sys

    return sys.executable


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=Path, default=DEFAULT_QUERIES)
    parser.add_argument("--split", choices=SPLITS, help="only this split (default: both)")
    parser.add_argument("--repos", help="comma-separated repo names")
    parser.add_argument("--stages", default=",".join(STAGES), help=f"comma-separated, of {', '.join(STAGES)}")
    parser.add_argument("--max-queries", type=int, help="smoke run: at most N queries per repo x split x type")
    parser.add_argument("--state-dir", type=Path, help="index location; the quality run's is reused")
    parser.add_argument("--no-curve", action="store_true", help="skip the budget curve (one pass per budget)")
    parser.add_argument("--curve-budgets", default=",".join(map(str, CURVE_BUDGETS)),
                        help="comma-separated token budgets of the curve (one pass each)")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--echo-logs", action="store_true")
    args = parser.parse_args(argv)
    budgets = tuple(int(b) for b in args.curve_budgets.split(",") if b.strip())

    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    if unknown := [s for s in stages if s not in STAGES]:
        parser.error(f"unknown stage(s) {unknown}")
    repos = {r.strip() for r in args.repos.split(",")} if args.repos else None
    queries = select_queries(load_queries(args.queries), args.split, repos, args.max_queries)
    by_repo: dict[str | None, list[Query]] = defaultdict(list)
    for query in queries:
        by_repo[query.repo].append(query)
    state_dir = (args.state_dir or Path(tempfile.mkdtemp(prefix="cc-pipeline-"))).resolve()
    started = time.perf_counter()
    metadata = run_metadata()
    log(f"pipeline: {len(queries)} queries in {len(by_repo)} repo(s), stages {stages}, state dir {state_dir}")
    extra, stack = start_pipeline_services(state_dir, args.echo_logs)
    rows: dict[str, dict[str, list[float | None]]] = {s: {} for s in stages}
    stage_ms: dict[str, dict[str, list[float]]] = {s: defaultdict(list) for s in stages}
    confidences: dict[str, tuple[float, float]] = {}
    lists: dict[str, list[float]] = {}  # the curves: queries with symbol targets only
    curve: dict[str, list[float]] = {}
    unanswerable: dict[str, list[dict[str, Any]]] = defaultdict(list)
    threshold = load_settings().gateway.confidence_threshold
    errors: list[str] = []
    try:
        settings = dataclasses.replace(load_settings(), retrieval_addr=stack.retrieval.address,
                                       rerank_addr=extra[0].address, selection_addr=extra[1].address)
        pipeline = Pipeline(settings)
        costs, gold = TokenCosts(), GoldLines()
        for repo in by_repo:
            log(f"index {repo_label(repo)} ...")
            info = index_workspace(stack.retrieval, workspace_for(repo))
            if info["status"] != "INDEXING_STATUS_READY":
                raise SystemExit(f"index of {repo_label(repo)} is not ready: {info}")
        for stage in stages:
            t0 = time.perf_counter()
            for query in queries:
                request = PipelineRequest(workspace_root=str(workspace_for(query.repo)), query=query.query,
                                          sync=False, **STAGES[stage])
                c0 = time.perf_counter()
                answer = pipeline.run(request)
                client_ms = (time.perf_counter() - c0) * 1000
                for failed, why in answer.skipped.items():
                    if why != "off":
                        errors.append(f"{stage}/{query.id}: {failed} {why}")
                rows[stage][query.id] = score(query, answer, client_ms, costs, gold)
                if stage == "first stage":
                    confidences[query.id] = (answer.metadata.confidence, guidance_for(answer, threshold).confidence,
                                             answer.metadata.answerability or 0.0)
                    if query.targets:
                        lists[query.id] = list_curve(query, answer, costs, budgets)
                for name, ms in answer.stage_ms.items():
                    stage_ms[stage][name].append(ms)
                stage_ms[stage]["total"].append(client_ms)
            overall = aggregate(list(rows[stage].values()))
            log(f"{stage}: {time.perf_counter() - t0:.0f} s, MRR@10 {overall.get('mrr10')}, "
                f"R@2k {overall.get('r_2000tok')}, tokens {overall.get('tokens')}")
        if not args.no_curve:
            t0 = time.perf_counter()
            for query in (q for q in queries if q.targets):
                curve[query.id] = [curve_row(query, pipeline.run(PipelineRequest(
                    workspace_root=str(workspace_for(query.repo)), query=query.query, sync=False, hubs=False,
                    max_tokens=budget))) for budget in budgets]
            log(f"budget curve: {time.perf_counter() - t0:.0f} s")
        for kind, asked in unanswerable_sets(queries, list(by_repo)).items():
            for repo, text in asked:
                answer = pipeline.run(PipelineRequest(workspace_root=str(workspace_for(repo)), query=text, sync=False))
                if kind == "names nowhere" and text.split(".")[-1] not in answer.metadata.missing_names \
                        and text not in answer.metadata.missing_names:
                    unanswerable["names found (left out)"].append({"repo": repo_label(repo), "query": text})
                    continue
                unanswerable[kind].append({
                    "repo": repo_label(repo), "query": text,
                    "results": len(answer.selection.results) if answer.selection else -1,
                    "tokens": answer.selection.total_tokens if answer.selection else -1,
                    "low_confidence": guidance_for(answer, threshold).low_confidence if answer.candidates else True,
                    "confidence": round(guidance_for(answer, threshold).confidence, 4) if answer.candidates else 0.0,
                    "answerability": round(answer.metadata.answerability or 0.0, 4)})
        pipeline.close()
    finally:
        for service in reversed(extra):
            service.stop()
        stack.stop()

    tables = []
    for split in SPLITS:
        in_split = [q for q in queries if q.split == split]
        if not in_split:
            continue
        groups = [("all", in_split)] + [(t, [q for q in in_split if q.type == t])
                                         for t in sorted({q.type for q in in_split})]
        for group, members in groups:
            for stage in stages:
                tables.append({"split": split, "group": group, "stage": stage,
                               **aggregate([rows[stage][q.id] for q in members])})
    latency = {stage: {name: {"p50": round(percentile(v, 50), 1), "p95": round(percentile(v, 95), 1)}
                       for name, v in by_name.items()} for stage, by_name in stage_ms.items()}
    curves, calibration = [], {}
    for split in SPLITS:
        in_split = [q for q in queries if q.split == split]
        if not in_split:
            continue
        for group, members in [("all", in_split)] + [(t, [q for q in in_split if q.type == t])
                                                     for t in sorted({q.type for q in in_split})]:
            row: dict[str, Any] = {"split": split, "group": group, "n": len(members), "budgets": list(budgets)}
            symbol_members = [q for q in members if q.targets]
            if len(symbol_members) != len(members):
                row["n symbol"] = len(symbol_members)
            if symbol_members and all(q.id in lists for q in symbol_members):
                row["list"] = [round(statistics.fmean(lists[q.id][i] for q in symbol_members), 4)
                               for i in range(len(budgets))]
            if symbol_members and all(q.id in curve for q in symbol_members):
                row["selection"] = [round(statistics.fmean(curve[q.id][i] for q in symbol_members), 4)
                                    for i in range(len(budgets))]
            curves.append(row)
        scored = [q for q in in_split if q.targets and q.id in confidences and q.id in rows.get("first stage", {})]
        col = COLUMNS.index("first_rank")
        # What confidence claims (policy.confidence): the first result is a right answer.
        found = {q.id: rows["first stage"][q.id][col] == 1 for q in scored}
        # What answerability claims: a right answer among the first ten.
        in_ten = {q.id: 1 <= rows["first stage"][q.id][col] <= 10 for q in scored}
        calibration[split] = {
            "calibrated": reliability([(confidences[q.id][0], found[q.id]) for q in scored]),
            "composite": reliability([(confidences[q.id][1], found[q.id]) for q in scored]),
            "answerability": reliability([(confidences[q.id][2], in_ten[q.id]) for q in scored]),
            "composite_threshold": threshold,
            "observed": "the first result is a target",
            "answerable_low_confidence": round(sum(confidences[q.id][1] < threshold for q in scored) / len(scored), 4)
            if scored else None,
        }
    unanswerable_summary = {
        kind: {"n": len(items),
               "within_budget": round(sum(0 <= i["tokens"] <= UNANSWERABLE_MAX_TOKENS for i in items) / len(items), 4),
               "max_tokens": max(i["tokens"] for i in items),
               "low_confidence": round(sum(i["low_confidence"] for i in items) / len(items), 4),
               "max_results": max(i["results"] for i in items)}
        for kind, items in unanswerable.items() if items and "results" in items[0]}
    payload = {
        "run": {**metadata, "seconds": round(time.perf_counter() - started, 1)},
        "settings": {"stages": {s: STAGES[s] for s in stages}, "token_budgets": list(TOKEN_BUDGETS),
                     "list_depth": LIST_DEPTH, "gateway": dataclasses.asdict(load_settings().gateway),
                     "selection": dataclasses.asdict(load_settings().selection)},
        "queries": {"total": len(queries), "by_repo": {repo_label(r): len(q) for r, q in by_repo.items()}},
        "tables": tables,
        "latency_ms": latency,
        "unanswerable": {"summary": unanswerable_summary, "queries": dict(unanswerable)},
        "budget_curve": curves,
        "calibration": calibration,
        "errors": errors[:50],
        "per_query": {"columns": list(COLUMNS),
                      "queries": {q.id: [q.split, q.type, repo_label(q.repo)] for q in queries},
                      "rows": {s: {qid: [None if v is None else round(v, 4) for v in row] for qid, row in by_id.items()}
                               for s, by_id in rows.items()},
                      # Per answerable query, for offline study of where the answer falls below its
                      # list: the list's and the selection's recall per CURVE_BUDGETS, and the
                      # calibrated and composite confidence and the answerability.
                      "curve": {qid: {"list": [round(v, 4) for v in lists[qid]],
                                      "selection": [round(v, 4) for v in curve[qid]],
                                      "confidence": [round(v, 4) for v in confidences[qid]]}
                                for qid in curve if qid in lists and qid in confidences}},
    }
    for row in tables:
        if row["group"] in ("all", "nl"):
            log(f"{row['split']:<5} {row['group']:<5} {row['stage']:<17} MRR {row.get('mrr10') or 0:.3f} "
                f"R@2k {row.get('r_2000tok') or 0:.3f} gold lines {row.get('gold_line_share') or 0:.3f} "
                f"tokens {row.get('tokens', 0):.0f} empty {row.get('empty answers', 0):.2f}")
    log(f"latency: {latency}")
    log(f"unanswerable: {unanswerable_summary}")
    for row in curves:  # every query type: "answer never below its list" is judged per type
        log(f"curve {row['split']} {row['group']} {row['budgets']}: list {row.get('list')} "
            f"selection {row.get('selection')}")
    eces = {s: {k: v["ece"] for k, v in c.items() if isinstance(v, dict)} for s, c in calibration.items()}
    log(f"calibration: {eces}")
    if errors:
        log(f"{len(errors)} stage failures, e.g. {errors[:3]}")
    if args.no_write:
        return 0
    path = write_results("pipeline", payload)
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
