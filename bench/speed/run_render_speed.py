"""The select stage with and without renderings from the index (issue 27 §3), and where the rest
of a warm answer's time goes.

Starts the five services (analysis, embedding with `--profile`, retrieval, rerank, selection)
over a temporary state dir, indexes `--workspace` with every vector, then asks `--questions`
fixed questions through the gateway's `Pipeline` as an MCP answer runs it (sync on, rerank local,
selection on), under two configurations, question by question in turn (each first on every other
question) so that drift in machine load and warm caches hit both alike:

  render all    every rendering asked of the analysis service (RenderSymbols), as before: the
                gateway's selection client sends `index_fresh = false` whatever the sync found;
  from index    as the gateway runs: after a fresh sync, a symbol shown with no child expanded
                is rendered from its chunk, and only merged parents go to RenderSymbols.

One warm-up pass precedes the measured passes. Per configuration it reports p50/p95 of every
stage the gateway timed (sync, retrieve, select), of the selection service's own time inside the
select stage (`SelectOutcome.duration_ms`: the engine, RenderSymbols included; the rest of the
stage is the gRPC hop and conversion), of the gateway's own time around the stages (the total
less the stages, the sync and the search counted once as they run at once: understanding,
relevance, confidence, conversion) and of the client-side total around `Pipeline.run`. Every
measured question's two answers are compared (results, tokens, counts): they must be identical,
since the files do not change.

Prints a markdown table and writes bench/results/render-speed-<UTC>.json (+ -latest).

Run: .venv/bin/python -m bench.speed.run_render_speed
     [--workspace node_ts_service/node_modules/@grpc/grpc-js] [--profile code-static] [--passes 3]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from codecompass_gateway.pipeline import RETRIEVE, SELECT, SYNC, Pipeline, PipelineAnswer, PipelineRequest

from bench.quality.run_quality import log
from bench.speed.run_speed import source_stats
from codecompass.common.config import load_settings
from codecompass.contracts.selection.model import SelectOutcome, SelectQuery
from codecompass_dev.evaluation.metrics import percentile
from codecompass_dev.evaluation.results import run_metadata, write_results
from codecompass_dev.evaluation.services import REPO_ROOT, ServiceProcess, start_service, start_stack
from codecompass_dev.evaluation.workspaces import index_workspace

DEFAULT_WORKSPACE = REPO_ROOT / "node_ts_service" / "node_modules" / "@grpc" / "grpc-js"
RENDER_ALL, FROM_INDEX = "render all", "from index"
ENGINE, GATEWAY, TOTAL = "select engine", "gateway", "total"
STAGES = (SYNC, RETRIEVE, SELECT, ENGINE, GATEWAY, TOTAL)
PERCENTILES = (50, 95)
# Questions an agent asks of a gRPC library, fixed so that runs compare; about grpc-js's own
# concepts (channels, load balancing, retries, metadata, servers), not tuned to any result.
QUESTIONS = (
    "how does a channel pick a subchannel for a call",
    "round robin load balancer",
    "pick first load balancing policy",
    "parse the service config json",
    "retry throttling and retry policy",
    "how is the call deadline propagated",
    "serialize metadata to http2 headers",
    "keepalive ping timeout",
    "dns resolver resolves a target",
    "compression filter gzip",
    "call credentials compose",
    "server registers a unary handler",
    "client streaming call write",
    "status code from an http2 error",
    "backoff timeout exponential",
    "channelz tracing of sockets",
    "subchannel connectivity state transitions",
    "max message size limit",
    "server interceptors",
    "resolve a unix domain socket address",
)


def _sent_as_before(pipeline: Pipeline) -> None:
    """Today's selection call: the gateway's client sends index_fresh false, so every rendering
    goes to RenderSymbols (a bench-only wrapper; the product always sends what the sync found)."""
    select = pipeline.selection.select

    def render_all(query: SelectQuery, timeout_s: float) -> SelectOutcome:
        return select(dataclasses.replace(query, index_fresh=False), timeout_s)

    pipeline.selection.select = render_all  # type: ignore[method-assign]


def critical_path_ms(stage_ms: dict[str, float]) -> float:
    """The stages' share of an answer's time: the search starts with the sync and, when the sync
    wrote nothing (a warm workspace), answers for the query, so the two overlap."""
    overlapping = max(stage_ms.get(SYNC, 0.0), stage_ms.get(RETRIEVE, 0.0))
    return overlapping + sum(ms for stage, ms in stage_ms.items() if stage not in (SYNC, RETRIEVE))


def _comparable(answer: PipelineAnswer) -> SelectOutcome | None:
    return None if answer.selection is None else dataclasses.replace(answer.selection, duration_ms=0.0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE)
    parser.add_argument("--profile", default="code-static", help="embedding profile")
    parser.add_argument("--passes", type=int, default=3, help="measured passes over the questions (after a warm-up)")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--echo-logs", action="store_true")
    args = parser.parse_args(argv)
    workspace = args.workspace.resolve()
    n_files, n_lines, _ = source_stats(workspace)
    started = time.perf_counter()
    metadata = run_metadata()
    log(f"render speed: {workspace.name} ({n_files:,} files, {n_lines:,} lines), profile {args.profile}, "
        f"{len(QUESTIONS)} questions x {args.passes} pass(es)")
    ms: dict[str, dict[str, list[float]]] = {c: defaultdict(list) for c in (RENDER_ALL, FROM_INDEX)}
    fallbacks: dict[str, int] = defaultdict(int)
    # Answers whose sync did not find the index fresh: selection rendered everything remotely.
    not_fresh: dict[str, int] = defaultdict(int)
    identical = differing = 0
    examples: list[str] = []
    with tempfile.TemporaryDirectory(prefix="cc-render-speed-") as state:
        env = {"CODECOMPASS_STATE_DIR": state, "CODECOMPASS_EMBEDDING_PROFILE": args.profile}
        services: list[ServiceProcess] = []
        stack = start_stack(env, echo=args.echo_logs)
        try:
            python = sys.executable
            services.append(start_service("rerank", [python, "-m", "codecompass.rerank"], "RERANK_PORT", env,
                                          echo=args.echo_logs))
            services.append(start_service("selection", [python, "-m", "codecompass.selection"], "SELECTION_PORT",
                                          {**env, "ANALYSIS_ADDR": stack.analysis.address}, echo=args.echo_logs))
            index = index_workspace(stack.retrieval, workspace)
            log(f"index: {index}")
            if index["status"] != "INDEXING_STATUS_READY":
                raise SystemExit(f"index of {workspace.name} is not ready: {index}")
            settings = dataclasses.replace(load_settings(), retrieval_addr=stack.retrieval.address,
                                           rerank_addr=services[0].address, selection_addr=services[1].address)
            pipelines = {RENDER_ALL: Pipeline(settings), FROM_INDEX: Pipeline(settings)}
            _sent_as_before(pipelines[RENDER_ALL])
            load_before = [round(x, 2) for x in os.getloadavg()]
            try:
                for pass_no in range(args.passes + 1):
                    for number, question in enumerate(QUESTIONS):
                        answers: dict[str, PipelineAnswer] = {}
                        # Each goes first on every other question: the first pays for whatever the
                        # question's files have not warmed yet (the analysis service's parsed files).
                        order = list(pipelines.items())
                        for config, pipeline in order if number % 2 else reversed(order):
                            request = PipelineRequest(workspace_root=str(workspace), query=question,
                                                      rerank_provider="local")
                            t0 = time.perf_counter()
                            answers[config] = answer = pipeline.run(request)
                            total = (time.perf_counter() - t0) * 1000
                            if not pass_no:
                                continue
                            for stage in (SYNC, RETRIEVE, SELECT):
                                if stage in answer.stage_ms:
                                    ms[config][stage].append(answer.stage_ms[stage])
                            if answer.selection is not None:
                                ms[config][ENGINE].append(answer.selection.duration_ms)
                            ms[config][GATEWAY].append(total - critical_path_ms(answer.stage_ms))
                            ms[config][TOTAL].append(total)
                            if answer.selection is not None and answer.selection.render_fallback:
                                fallbacks[config] += 1
                            if answer.freshness_status != "fresh":
                                not_fresh[config] += 1
                        if not pass_no:
                            continue
                        if _comparable(answers[RENDER_ALL]) == _comparable(answers[FROM_INDEX]):
                            identical += 1
                        else:
                            differing += 1
                            examples.append(question)
                    log(f"{'warm-up' if not pass_no else f'pass {pass_no}'} done")
            finally:
                for pipeline in pipelines.values():
                    pipeline.close()
            load_after = [round(x, 2) for x in os.getloadavg()]
        finally:
            for service in reversed(services):
                service.stop()
            stack.stop()

    latency = {config: {stage: {"n": len(values), **{f"p{p}": round(percentile(values, p), 1) for p in PERCENTILES}}
                        for stage, values in by_stage.items()}
               for config, by_stage in ms.items()}
    lines = [f"| {workspace.name}, {len(QUESTIONS) * args.passes} answers each, ms p50 / p95 | "
             + " | ".join(STAGES) + " |", "|---|" + "---:|" * len(STAGES)]
    for config, by_stage in latency.items():
        cells = [f"{by_stage[s]['p50']:.1f} / {by_stage[s]['p95']:.1f}" if s in by_stage else "—" for s in STAGES]
        lines.append(f"| {config} | " + " | ".join(cells) + " |")
    print("\n".join(lines))
    print(f"identical answers: {identical} of {identical + differing}; render fallbacks: {dict(fallbacks) or 'none'}; "
          f"answers without a fresh sync: {dict(not_fresh) or 'none'}")
    if examples:
        print(f"differing answers, e.g. {examples[:5]}")
    payload: dict[str, Any] = {
        "run": {**metadata, "seconds": round(time.perf_counter() - started, 1),
                "load_avg_before_measuring": load_before, "load_avg_after_measuring": load_after},
        "workspace": {"name": workspace.name, "files": n_files, "lines": n_lines, "chunks": index["chunks"],
                      "embedding_model": index["embedding_model"], "sync_seconds": index["sync_seconds"]},
        "settings": {"profile": args.profile, "questions": list(QUESTIONS), "passes": args.passes,
                     "warm_up_passes": 1, "sync": True, "rerank_provider": "local"},
        "latency_ms": latency,
        "answers": {"identical": identical, "differing": differing, "differing_questions": examples[:20]},
        "render_fallbacks": dict(fallbacks),
        "answers_without_a_fresh_sync": dict(not_fresh),
    }
    if not args.no_write:
        log(f"wrote {write_results('render-speed', payload)}")
    return 0 if differing == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
