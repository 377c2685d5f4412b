"""Does the analysis service still answer while it chunks a cold 300k-line workspace? (issue 8)

Starts the built Node analysis service alone, then runs one cold ChunkFiles over the whole
workspace (include_references=true by default: the type checker's work, Program per window)
and meanwhile
  - polls grpc.health.v1 Check every 100 ms and records each call's latency;
  - calls RenderSymbols once a second (one symbol of one small file, learnt before the run
    from a plain ChunkFiles of that file, which builds no Program).
A poll is sent only after the previous one answered, so one stalled answer shows up as one
long latency, not as a pile of queued calls. Goal: every health check answers within 1 s.

Prints p50/p95/max for both and writes bench/results/health-<UTC>.json (+ health-latest.json).

Run: .venv/bin/python -m bench.speed.health_during_index [--workspace bench/.work/ws-300k] [--no-references]
     [--node-main other/build/dist/src/main.js --label before]   # the same run against another build
"""

from __future__ import annotations

import argparse
import threading
import time
from pathlib import Path

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.errors import ServiceError
from codecompass.common.channels import traced_channel
from codecompass.common.chunks import NodeKind
from codecompass.contracts.analysis.model import RenderRequest
from codecompass_dev.evaluation.results import RESULTS_DIR, write_results
from codecompass_dev.evaluation.services import BENCH_ANALYSIS_ENV, NODE_MAIN, REPO_ROOT, start_service

DEFAULT_WORKSPACE = REPO_ROOT / "bench" / ".work" / "ws-300k"
# A small file of the rxjs package in ws-300k: rendering one of its symbols is cheap, so
# RenderSymbols latency measures how long the call waited, not how long it worked.
RENDER_TARGET = "packages/rxjs/src/internal/operators/map.ts"
HEALTH_INTERVAL_S = 0.1
RENDER_INTERVAL_S = 1.0
# A check that has not answered in this long is recorded as this long and counted as a miss.
CALL_TIMEOUT_S = 30.0
CHUNK_TIMEOUT_S = 1800.0
GOALS = {"health_max_ms": 1000.0}


def display_path(path: Path) -> str:
    path = path.resolve()
    return str(path.relative_to(REPO_ROOT)) if path.is_relative_to(REPO_ROOT) else str(path)


def percentile(values: list[float], pct: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(pct / 100.0 * (len(ordered) - 1))))
    return ordered[k]


def summary(values: list[float]) -> dict[str, float | int]:
    return {
        "count": len(values),
        "p50_ms": percentile(values, 50),
        "p95_ms": percentile(values, 95),
        "max_ms": max(values) if values else float("nan"),
    }


def render_spec(client: AnalysisClient, workspace: Path) -> RenderRequest:
    """One symbol of RENDER_TARGET, found by a plain (no Program) ChunkFiles of that file."""
    for chunked in client.chunks(str(workspace), [RENDER_TARGET], 60):
        symbols = [c for c in chunked.chunks if c.node_kind != NodeKind.MODULE] or list(chunked.chunks)
        if symbols:
            return RenderRequest(symbol_id=symbols[0].id, relative_path=chunked.relative_path)
    raise SystemExit(f"{RENDER_TARGET} has no chunks in {workspace}")


class ChunkRun(threading.Thread):
    """The cold ChunkFiles stream, consumed in the background."""

    def __init__(self, client: AnalysisClient, workspace: Path, include_references: bool) -> None:
        super().__init__(daemon=True)
        self.workspace = workspace
        self.include_references = include_references
        self.client = client
        self.files = 0
        self.references = 0
        self.started = 0.0
        self.first_file_s: float | None = None
        self.ended: float | None = None
        self.error: str | None = None

    def run(self) -> None:
        self.started = time.perf_counter()
        try:
            for chunked in self.client.chunks(str(self.workspace), ["."], CHUNK_TIMEOUT_S,
                                              include_references=self.include_references):
                if self.first_file_s is None:
                    self.first_file_s = time.perf_counter() - self.started
                self.files += 1
                self.references += sum(len(c.references) for c in chunked.chunks)
        except ServiceError as exc:
            self.error = f"{exc.status}: {exc}"
        finally:
            self.ended = time.perf_counter()


def timed(call) -> tuple[float, str | None]:
    """Latency of one call in ms, and its error (None when it answered)."""
    t0 = time.perf_counter()
    try:
        call()
        return (time.perf_counter() - t0) * 1000.0, None
    except ServiceError as exc:
        return (time.perf_counter() - t0) * 1000.0, exc.status
    except grpc.RpcError as exc:  # the health check, a standard gRPC service spoken directly
        return (time.perf_counter() - t0) * 1000.0, exc.code().name


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE)
    parser.add_argument(
        "--no-references", action="store_true", help="chunk without the type checker (the plain, main-thread path)"
    )
    parser.add_argument("--label", default="", help="free text stored with the results (e.g. 'before')")
    parser.add_argument(
        "--node-main", type=Path, default=NODE_MAIN, help="the analysis service's main.js (another build, to compare)"
    )
    parser.add_argument("--results-dir", type=Path, default=RESULTS_DIR)
    parser.add_argument("--echo-logs", action="store_true")
    args = parser.parse_args(argv)
    workspace = args.workspace.resolve()
    if not workspace.is_dir():
        raise SystemExit(f"{workspace} is missing: bench/speed/run_speed.py describes how it is assembled")
    include_references = not args.no_references

    if not args.node_main.exists():
        raise SystemExit(f"{args.node_main} is missing: build the analysis service (npx tsc -p node_ts_service)")
    analysis = start_service(
        "analysis", ["node", str(args.node_main)], "ANALYSIS_PORT", BENCH_ANALYSIS_ENV, echo=args.echo_logs
    )
    health_ms: list[float] = []
    health_errors: list[str] = []
    render_ms: list[float] = []
    render_errors: list[str] = []
    client = AnalysisClient(analysis.address)
    try:
        with traced_channel(analysis.address) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            spec = render_spec(client, workspace)
            check_request = health_pb2.HealthCheckRequest(service="")

            run = ChunkRun(client, workspace, include_references)
            run.start()
            next_render = time.perf_counter()
            while run.is_alive():
                tick = time.perf_counter()
                ms, err = timed(lambda: health.Check(check_request, timeout=CALL_TIMEOUT_S))
                health_ms.append(ms)
                if err:
                    health_errors.append(err)
                if time.perf_counter() >= next_render:
                    ms, err = timed(lambda: client.render(str(workspace), [spec], CALL_TIMEOUT_S))
                    render_ms.append(ms)
                    if err:
                        render_errors.append(err)
                    next_render += RENDER_INTERVAL_S
                time.sleep(max(0.0, tick + HEALTH_INTERVAL_S - time.perf_counter()))
            run.join()
        rss_mib = analysis.peak_rss_mib()
    finally:
        client.close()
        analysis.stop()

    if run.error:
        print(f"ChunkFiles failed: {run.error}")
    duration_s = (run.ended or time.perf_counter()) - run.started
    measures = {
        "include_references": include_references,
        "chunk_files": run.files,
        "chunk_references": run.references,
        "chunk_s": duration_s,
        "chunk_first_file_s": run.first_file_s,
        "chunk_error": run.error,
        "health": summary(health_ms),
        "health_over_1s": sum(1 for ms in health_ms if ms > 1000.0),
        "health_errors": len(health_errors),
        "render": summary(render_ms),
        "render_errors": len(render_errors),
        "peak_rss_mib": rss_mib,
    }
    payload = {
        "label": args.label,
        "node_main": display_path(args.node_main),
        "workspace": display_path(workspace),
        "goals": GOALS,
        "measures": measures,
    }
    h, r = measures["health"], measures["render"]
    print(
        f"ChunkFiles(., include_references={include_references}): {run.files} files, "
        f"{run.references} references in {duration_s:.1f} s (first file after {run.first_file_s or 0:.1f} s)"
    )
    print(
        f"health Check   n={h['count']:4d}  p50 {h['p50_ms']:8.1f} ms  p95 {h['p95_ms']:8.1f} ms  "
        f"max {h['max_ms']:8.1f} ms  (>1 s: {measures['health_over_1s']}, errors: {len(health_errors)})"
    )
    print(
        f"RenderSymbols  n={r['count']:4d}  p50 {r['p50_ms']:8.1f} ms  p95 {r['p95_ms']:8.1f} ms  "
        f"max {r['max_ms']:8.1f} ms  (errors: {len(render_errors)})"
    )
    path = write_results("health", payload, results_dir=args.results_dir)
    print(f"wrote {path}")
    return 0 if h["max_ms"] <= GOALS["health_max_ms"] and not run.error else 1


if __name__ == "__main__":
    raise SystemExit(main())
