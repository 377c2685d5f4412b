"""Load on a deployment of every service apart (issue 19 §4): concurrent MCP and gRPC clients on
the 300k-line workspace, a sweep of concurrency levels for the knee, then the target run.

The deployment (bench/lib/deployment.py): analysis, embedding, one index writer, `--searchers`
searchers behind one RETRIEVAL_ADDR list (round_robin), rerank, selection, and the gateway over
streamable HTTP requiring its bearer token, each its own process on loopback, sharing one index
root. The index is bench/.work/load-state/index (kept between runs; on the first run copied from
bench-pipeline-speed's index of ws-300k when there is one, else indexed, which embeds every chunk:
long); each run syncs it first (a rescan when nothing changed).

Clients (bench/lib/loadgen.py) are closed-loop, no pause between calls: a level of N clients is
N calls in flight at all times, the heaviest load N users could make. Of each level a fifth are
gRPC clients (`RetrievalClient.search` on the searchers: the retrieve stage alone) and the rest
MCP clients (the SDK's client, `semantic_search` and `search_code` in turn: sync through the
writer, search, selection). Queries: run_speed's seeded sample of the quality queries.

The target run is repeated with agent-paced clients (`--think-s`): the same 50 sessions, each
pausing between an answer and its next call (exponential, mean 5 s, then 10 s), because an agent
sends its next tool call only after its model's next turn, which reads the answer and writes the
call: seconds, not nothing. Closed-loop clients measure capacity; paced ones, what 50 working
agents would see. Both are reported, and the target is judged on each.

Per level: calls, errors, answered calls per second, p50/p95/p99 per client kind, and the CPU
seconds each service used (what the cores went to: the bottleneck). The knee is the fewest
clients at which the services keep 90% of the cores busy: past it more clients only queue. Then
the target run, TARGET_CLIENTS clients for TARGET_S: no errors, p95 of every call ≤ 1 s.

The machine's load average is recorded before and after each level: other work on the machine
takes cores from the services, and the numbers hold only for the load they were measured under.

Writes bench/results/load-<UTC>.json (+ -latest) and prints its README section (bench/report/).

Run: .venv/bin/python -m bench.load [--levels 1,5,10,25,50,75] [--level-s 20] [--target-s 60]
     [--searchers 2] [--think-s 5,10] [--no-target] [--no-sweep]
"""

from __future__ import annotations

import argparse
import inspect
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.lib import deployment, loadgen
from bench.report.load import render_load
from bench.speed.run_pipeline_speed import DEFAULT_STATE_DIR as PIPELINE_SPEED_STATE
from bench.speed.run_pipeline_speed import query_texts
from bench.speed.run_speed import DEFAULT_WORKSPACE, assembled_workspace, source_stats
from codecompass.clients.retrieval import RetrievalClient
from codecompass.common.cores import usable_cores
from codecompass.common.serving import start_server
from codecompass_dev.evaluation.results import load_latest, write_results
from codecompass_dev.evaluation.services import REPO_ROOT

DEFAULT_STATE_DIR = REPO_ROOT / "bench" / ".work" / "load-state"
DEFAULT_LEVELS = (1, 5, 10, 25, 50, 75)
LEVEL_S = 20.0
TARGET_CLIENTS, TARGET_S = 50, 60.0
GOAL_P95_MS = 1000.0
# Mean pauses of the agent-paced target runs (module docstring).
THINK_S = (5.0, 10.0)
GRPC_SHARE = 0.2
QUERIES = 200
WARM_UP = (4, 10.0)  # clients, seconds: the Program selection renders from, the searchers' caches
KNEE_SHARE = 0.9
INDEX_TIMEOUT_S = 7200.0
# A level's setup (opening its sessions) and its calls in flight at the end count in its wall time.
PAUSE_S = 2.0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def split(clients: int, grpc_share: float) -> tuple[int, int]:
    """(MCP clients, gRPC clients) of a level: a `grpc_share` of them gRPC, rounded down."""
    grpc = int(clients * grpc_share)
    return clients - grpc, grpc


def knee(levels: list[dict[str, Any]], cores: int) -> dict[str, Any] | None:
    """The fewest clients at which the services keep KNEE_SHARE of the cores busy: from there the
    CPU is saturated, throughput grows little and every client added waits in a queue. (Judged on
    the cores, not on throughput near its best: closed-loop throughput creeps up with queue depth,
    as batches fill, long after the cores are full.)"""
    busy = [(r, sum(r["cpu_s"].values()) / r["wall_s"]) for r in levels if r["wall_s"]]
    if not busy:
        return None
    row, used = next(((r, u) for r, u in busy if u >= KNEE_SHARE * cores), max(busy, key=lambda b: b[1]))
    return {"clients": row["clients"], "throughput_per_s": row["summary"]["all"]["throughput_per_s"],
            "p95_ms": row["summary"]["all"]["p95_ms"], "cores_busy": round(used, 2), "cores": cores,
            "best_throughput_per_s": max(r["summary"]["all"]["throughput_per_s"] for r in levels)}


def judged(row: dict[str, Any]) -> dict[str, Any]:
    """A target run with the goal and whether it was met."""
    everything = row["summary"]["all"]
    row["goal"] = {"errors": 0, "p95_ms": GOAL_P95_MS}
    row["met"] = everything["errors"] == 0 and everything["p95_ms"] <= GOAL_P95_MS
    return row


def prepare_index(state_dir: Path) -> Path:
    """The index root: state_dir/index, seeded from bench-pipeline-speed's when it has none."""
    index = state_dir / "index"
    seed = PIPELINE_SPEED_STATE / "index"
    if not index.exists() and seed.is_dir():
        log(f"copying the index of {seed} into {index} (once)")
        shutil.copytree(seed, index)
    index.mkdir(parents=True, exist_ok=True)
    return index


def sync_index(deployed: deployment.Deployment, workspace: Path) -> dict[str, Any]:
    """Index through the writer (a rescan when nothing changed); the index as a searcher sees it."""
    writer, searchers = RetrievalClient(deployed.writer_addr), RetrievalClient(deployed.retrieval_addr)
    started = time.perf_counter()
    try:
        for _ in writer.index(str(workspace), wait_for_embeddings=True, timeout_s=INDEX_TIMEOUT_S):
            pass
        status = searchers.status(str(workspace), 30)
    finally:
        writer.close()
        searchers.close()
    return {"sync_s": round(time.perf_counter() - started, 1), "status": status.indexing_status.name,
            "files": status.files, "chunks": status.chunks, "embedded_chunks": status.embedded_chunks,
            "embedding_model": f"{status.embedding_model_id} {status.embedding_model_version}".strip()}


def run_level(deployed: deployment.Deployment, workspace: Path, queries: tuple[str, ...], clients: int,
              seconds: float, grpc_share: float, think_s: float = 0.0) -> dict[str, Any]:
    mcp, grpc = split(clients, grpc_share)
    plan = loadgen.LoadPlan(workspace=str(workspace), queries=queries, duration_s=seconds, mcp_clients=mcp,
                            grpc_clients=grpc, url=deployed.url, token=deployed.token,
                            retrieval_addr=deployed.retrieval_addr, think_s=think_s)
    load_before = [round(x, 2) for x in os.getloadavg()]
    cpu_before = deployed.cpu_seconds()
    run = loadgen.run_load(plan)
    cpu_after = deployed.cpu_seconds()
    row = {
        "clients": clients, "mcp_clients": mcp, "grpc_clients": grpc, "seconds": seconds, "think_s": think_s,
        "wall_s": round(run.wall_s, 1),
        "summary": loadgen.summarize_run(run),
        # What the cores went to during the level: each service's CPU seconds, and the clients'.
        "cpu_s": {name: round(cpu_after[name] - cpu_before.get(name, 0.0), 1) for name in cpu_after},
        "client_cpu_s": run.client_cpu_s,
        "load_avg_before": load_before, "load_avg_after": [round(x, 2) for x in os.getloadavg()],
    }
    everything = row["summary"]["all"]
    paced = f", think {think_s:g} s" if think_s else ""
    log(f"  {clients:3d} clients ({mcp} MCP + {grpc} gRPC{paced}), {seconds:.0f} s: {everything['calls']} calls, "
        f"{everything['errors']} errors, {everything['throughput_per_s']}/s, p50/p95/p99 "
        f"{everything['p50_ms']}/{everything['p95_ms']}/{everything['p99_ms']} ms; cpu {row['cpu_s']}")
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE)
    parser.add_argument("--state-dir", type=Path, default=DEFAULT_STATE_DIR, help="holds the index between runs")
    parser.add_argument("--levels", default=",".join(str(n) for n in DEFAULT_LEVELS),
                        help="concurrency levels of the sweep (clients, comma-separated)")
    parser.add_argument("--level-s", type=float, default=LEVEL_S, help="seconds per sweep level")
    parser.add_argument("--target-clients", type=int, default=TARGET_CLIENTS)
    parser.add_argument("--target-s", type=float, default=TARGET_S)
    parser.add_argument("--searchers", type=int, default=2)
    parser.add_argument("--grpc-share", type=float, default=GRPC_SHARE, help="share of each level's clients on gRPC")
    parser.add_argument("--think-s", default=",".join(f"{t:g}" for t in THINK_S),
                        help="mean pauses (s) of the agent-paced target runs, comma-separated; empty: none")
    parser.add_argument("--no-sweep", action="store_true")
    parser.add_argument("--no-target", action="store_true")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    workspace = assembled_workspace(args.workspace)
    levels = [] if args.no_sweep else [int(n) for n in args.levels.split(",") if n.strip()]
    thinks = [float(t) for t in args.think_s.split(",") if t.strip()]
    queries = tuple(query_texts(QUERIES))
    index = prepare_index(args.state_dir.resolve())
    load_at_start = [round(x, 2) for x in os.getloadavg()]
    started = time.perf_counter()
    sweep: list[dict[str, Any]] = []
    target = None
    paced: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="load-") as scratch:
        log(f"load: starting the deployment ({args.searchers} searchers) over {index}")
        with deployment.running(Path(scratch), str(index), workspaces=(workspace,), searchers=args.searchers) as up:
            log("syncing the index through the writer ...")
            indexed = sync_index(up, workspace)
            log(f"index: {indexed}")
            log(f"warm-up: {WARM_UP[0]} clients for {WARM_UP[1]:.0f} s")
            run_level(up, workspace, queries, WARM_UP[0], WARM_UP[1], args.grpc_share)
            for clients in levels:
                time.sleep(PAUSE_S)
                sweep.append(run_level(up, workspace, queries, clients, args.level_s, args.grpc_share))
            if not args.no_target:
                time.sleep(PAUSE_S)
                log(f"target: {args.target_clients} clients for {args.target_s:.0f} s")
                target = judged(run_level(up, workspace, queries, args.target_clients, args.target_s,
                                          args.grpc_share))
                for think in thinks:
                    time.sleep(PAUSE_S)
                    log(f"target, agent-paced: {args.target_clients} clients for {args.target_s:.0f} s, "
                        f"mean pause {think:g} s")
                    paced.append(judged(run_level(up, workspace, queries, args.target_clients, args.target_s,
                                                  args.grpc_share, think)))
    files, lines, size = source_stats(workspace)
    results = {
        "workspace": {"name": workspace.name, "files": files, "lines": lines, "source_bytes": size, **indexed},
        "deployment": {
            "searchers": args.searchers, "writer": 1,
            "processes": ["analysis", "embedding", "writer",
                          *(f"retrieval-{i} (searcher)" for i in range(1, args.searchers + 1)),
                          "rerank", "selection", "gateway (streamable HTTP, 0.0.0.0, bearer token)"],
            "gateway_auth": "Authorization: Bearer required (a request without it: 401, checked at start)",
            "grpc_server_threads": inspect.signature(start_server).parameters["max_workers"].default,
        },
        "settings": {"levels": levels, "level_s": args.level_s, "grpc_share": args.grpc_share,
                     "queries": len(queries), "call_timeout_s": loadgen.LoadPlan.call_timeout_s,
                     "warm_up": {"clients": WARM_UP[0], "seconds": WARM_UP[1]}, "knee_share": KNEE_SHARE,
                     "cores": usable_cores()},
        "load_avg_at_start": load_at_start,
        "seconds": round(time.perf_counter() - started, 1),
        "sweep": sweep,
        "knee": knee(sweep, usable_cores()),
        "target": target,
        "paced": paced,
    }
    if args.no_write:
        return 0
    path = write_results("load", results)
    print(render_load(load_latest("load")))
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
