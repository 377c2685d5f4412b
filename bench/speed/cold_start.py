"""The first useful answer on a never-indexed workspace, from services down (issue 27 §3: ≤ 3 s on
an 85k-line workspace), measured several times because one cold start on two cores varies by a
second from run to run.

Each run is `run_mcp_speed`'s cold start: a fresh, empty state dir, `codecompass mcp --workspace W`
through the SDK's stdio client (the CLI starts every service behind the handshake), `semantic_search`
retried until an answer has results, then `codecompass down` and the state dir removed. Per run:
the handshake, the tools listed, the first answer, each service's time to SERVING and when the
gateway served. The summary is the median run by its first answer, with the spread. Runs
alternate with nothing else: start it on a quiet machine.

The workspace: `bench/.work/quality/fastify` by default (78k lines: fastify at its pinned release,
`python -m codecompass_dev.corpus.assemble quality`), the quality corpus's repository closest to
the issue's 85k lines; any folder with `--workspace`.

Writes bench/results/cold-start-<UTC>.json (+ -latest); `python -m bench.report` renders it.

Run: .venv/bin/python -m bench.speed.cold_start [--runs 3] [--workspace DIR] [--query TEXT]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from bench.quality.run_quality import log
from bench.speed.run_mcp_speed import cold_start
from bench.speed.run_speed import source_stats
from codecompass_dev.evaluation.results import run_metadata, write_results
from codecompass_dev.evaluation.services import REPO_ROOT

DEFAULT_WORKSPACE = REPO_ROOT / "bench" / ".work" / "quality" / "fastify"
# A question in words about how a part of the workspace works: what an agent asks first.
DEFAULT_QUERY = "how are route handlers registered and matched"
GOAL_S = 3.0


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The median run by its first answer (a run without one counts as the slowest), and the spread."""
    answered = [r["first_answer_s"] for r in runs if r.get("first_answer_s") is not None]
    ordered = sorted(runs, key=lambda r: (r.get("first_answer_s") is None, r.get("first_answer_s") or 0.0))
    median = ordered[(len(ordered) - 1) // 2]
    return {
        "runs": len(runs),
        "first_answer_s": {"median": median.get("first_answer_s"), "min": min(answered, default=None),
                           "max": max(answered, default=None),
                           "mean": round(statistics.fmean(answered), 2) if answered else None},
        "tools_listed_s_max": max(r["tools_listed_s"] for r in runs),
        "median_run": median,
        "goal_s": GOAL_S,
        "met": median.get("first_answer_s") is not None and median["first_answer_s"] <= GOAL_S,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE)
    parser.add_argument("--query", default=DEFAULT_QUERY)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    workspace = args.workspace.resolve()
    if not workspace.is_dir():
        raise SystemExit(f"{workspace} is not a folder (the default is assembled by "
                         "`python -m codecompass_dev.corpus.assemble quality`)")
    started = time.perf_counter()
    metadata = run_metadata()
    n_files, n_lines, n_bytes = source_stats(workspace)
    log(f"cold start: {workspace.name} ({n_files:,} files, {n_lines:,} lines), {args.runs} run(s), "
        f"query {args.query!r}")
    work = REPO_ROOT / "bench" / ".work"
    work.mkdir(parents=True, exist_ok=True)
    runs = []
    for i in range(args.runs):
        run = cold_start(workspace, args.query, work)
        log(f"  run {i + 1}: tools listed {run['tools_listed_s']:.3f} s, first answer "
            f"{run.get('first_answer_s')} s, services ready {run['services_ready_s']}, "
            f"answer's stages (ms) {run['try_log'][-1].get('stage_ms')}")
        runs.append(run)
    result = summary(runs)
    first = result["first_answer_s"]
    print(f"| cold start, {workspace.name} ({n_lines:,} lines), {len(runs)} runs | seconds |\n|---|---:|\n"
          f"| tools listed (slowest run) | {result['tools_listed_s_max']:.3f} |\n"
          f"| first answer with results, median (min–max) | {first['median']} ({first['min']}–{first['max']}) |\n"
          f"| goal | ≤ {GOAL_S:.0f}: {'met' if result['met'] else 'MISSED'} |")
    if args.no_write:
        return 0
    payload = {"run": {**metadata, "seconds": round(time.perf_counter() - started, 1)},
               "workspace": {"name": workspace.name, "path": str(workspace.relative_to(REPO_ROOT))
                             if workspace.is_relative_to(REPO_ROOT) else str(workspace),
                             "files": n_files, "lines": n_lines, "bytes": n_bytes},
               "query": args.query, "summary": result, "per_run": runs}
    log(f"wrote {write_results('cold-start', payload)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
