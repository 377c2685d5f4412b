"""A one-file edit made visible (issue 27 §2: ≤ 100 ms): how long the search right after an edit
waits for it, on a READY index of a large workspace.

What a gateway does after an agent saves a file: Sync (the edited file re-chunked, its rows
written) and then Search. Each edit appends a new exported function to one file (a different name
and body each time, so every edit is a real change), then times the Sync (client-side, and the
server's own duration) and the Search for the new function's words, and checks the new function is
among the first ten results: visible, not only synced. Edits come THINK_S apart, as an agent's do
(the background embedder writes the primary vectors of an edit's chunks meanwhile). The file is
restored and synced at the end.

The index: `--state-dir` (default bench/.work/edit-visible-state), indexed with the default
profile (code-small) on the first run and reused after (a later run's first sync writes only what
changed). The first edit is reported apart from the rest: it is the first write after a restart.

Writes bench/results/edit-visible-<UTC>.json (+ -latest); `python -m bench.report` renders it.

Run: .venv/bin/python -m bench.speed.edit_visible [--edits 10] [--workspace DIR] [--state-dir DIR]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path
from typing import Any

from bench.quality.run_quality import log
from bench.report.speed import render_edit_visible
from bench.speed.index_stages import log_records
from bench.speed.run_speed import DEFAULT_WORKSPACE, EDIT_TARGET, assembled_workspace, percentile, source_stats
from codecompass.clients.retrieval import RetrievalClient
from codecompass.contracts.retrieval.model import SearchQuery
from codecompass_dev.evaluation.results import run_metadata, write_results
from codecompass_dev.evaluation.services import (
    REPO_ROOT,
    ServiceProcess,
    start_analysis,
    start_embedding,
    start_retrieval,
)
from codecompass_dev.evaluation.workspaces import index_workspace

DEFAULT_STATE = REPO_ROOT / "bench" / ".work" / "edit-visible-state"
GOAL_MS = 100.0
# Between edits: an agent reads, thinks and edits for seconds, not milliseconds.
THINK_S = 2.0
# Searches before the first edit: caches and the JIT warm, as on a workspace in use.
WARM_QUERIES = ("project each value", "subscribe to an observable", "retry with a delay")


def edited(original: str, i: int) -> tuple[str, str, str]:
    """The file with a new function appended, its name, and a query in words for it."""
    name = f"scaleReadingByFactor{i}"
    text = (f"{original}\n/** Scales a sensor reading by factor {i}, rounding to whole units. */\n"
            f"export function {name}(reading: number): number {{\n  return Math.round(reading * {i + 2});\n}}\n")
    return text, name, f"scale a sensor reading by a factor {i}"


def server_steps(record: dict[str, Any] | None) -> dict[str, float]:
    """The retrieval service's milliseconds per step of one sync (its "sync wrote changes" line)."""
    if record is None:
        return {}
    return {k.removesuffix("_ms"): v for k, v in record.items() if k.endswith("_ms") and k != "sync_ms"}


def measure(client: RetrievalClient, retrieval: ServiceProcess, workspace: Path, target: Path,
            edits: int) -> list[dict[str, Any]]:
    original = target.read_text(encoding="utf-8")
    runs = []
    lines = log_records(retrieval, "sync wrote changes")
    last = lines[-1] if lines else None
    try:
        for i in range(edits):
            text, name, query = edited(original, i)
            target.write_text(text, encoding="utf-8")
            t0 = time.perf_counter()
            synced = client.sync(str(workspace), 0, 120)
            t1 = time.perf_counter()
            reply = client.search(SearchQuery(workspace_root=str(workspace), query=query, limit=10), 120)
            t2 = time.perf_counter()
            names = [r.chunk.name for r in reply.results]
            runs.append({
                "sync_ms": round((t1 - t0) * 1000, 1), "search_ms": round((t2 - t1) * 1000, 1),
                "visible_ms": round((t2 - t0) * 1000, 1), "server_sync_ms": round(synced.duration_ms, 1),
                "server_search_ms": round(reply.metadata.search_ms, 1),
                "chunks_upserted": synced.stats.chunks_upserted if synced.stats else 0,
                "chunks_embedded": synced.stats.chunks_embedded if synced.stats else 0,
                "found_rank": names.index(name) + 1 if name in names else None,
            })
            time.sleep(THINK_S)
            # Read after the pause: the service's log lines arrive through a pipe.
            lines = log_records(retrieval, "sync wrote changes")
            # This edit's sync's line, if it wrote one (none: no steps rather than the last edit's).
            new = lines[-1] if lines and lines[-1] != last else None
            last = new or last
            runs[-1]["server_steps_ms"] = server_steps(new)
            log(f"  edit {i + 1}: {runs[-1]}")
    finally:
        target.write_text(original, encoding="utf-8")
        client.sync(str(workspace), 0, 120)
    return runs


def summary(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """p50 / p95 of each time over the edits after the first, and how many were found."""
    steady = runs[1:] or runs
    out: dict[str, Any] = {"edits": len(runs), "first_edit": runs[0] if runs else None}
    for key in ("sync_ms", "search_ms", "visible_ms", "server_sync_ms", "server_search_ms"):
        values = [r[key] for r in steady]
        out[key] = {"p50": round(statistics.median(values), 1), "p95": round(percentile(values, 95), 1)}
    steps = sorted({step for r in steady for step in r.get("server_steps_ms", {})})
    out["server_steps_p50_ms"] = {
        step: round(statistics.median(r["server_steps_ms"].get(step, 0.0) for r in steady), 1) for step in steps}
    out["found_in_top10"] = sum(r["found_rank"] is not None for r in runs)
    out["chunks_embedded_inline"] = sum(r["chunks_embedded"] for r in runs)
    out["goal_ms"] = GOAL_MS
    out["met"] = out["visible_ms"]["p50"] <= GOAL_MS
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE)
    parser.add_argument("--target", default=EDIT_TARGET, help="workspace-relative file to edit")
    parser.add_argument("--state-dir", type=Path, default=DEFAULT_STATE)
    parser.add_argument("--edits", type=int, default=10)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    workspace = assembled_workspace(args.workspace)
    target = workspace / args.target
    if not target.is_file():
        raise SystemExit(f"{target} is not a file")
    started = time.perf_counter()
    metadata = run_metadata()
    n_files, n_lines, n_bytes = source_stats(workspace)
    env = {"CODECOMPASS_STATE_DIR": str(args.state_dir.resolve())}
    services = []
    try:
        analysis = start_analysis(env)
        services.append(analysis)
        embedding = start_embedding(env)
        services.append(embedding)
        retrieval = start_retrieval(analysis.address, embedding.address, env)
        services.append(retrieval)
        log(f"edit visible: {workspace.name} ({n_lines:,} lines), state {args.state_dir}: indexing ...")
        index = index_workspace(retrieval, workspace)
        if index["status"] != "INDEXING_STATUS_READY":
            raise SystemExit(f"the index is not ready: {index}")
        client = RetrievalClient(retrieval.address)
        for text in WARM_QUERIES:
            client.sync(str(workspace), 0, 120)
            client.search(SearchQuery(workspace_root=str(workspace), query=text, limit=10), 120)
        time.sleep(THINK_S)
        runs = measure(client, retrieval, workspace, target, args.edits)
        client.close()
    finally:
        for service in reversed(services):
            service.stop()
    payload = {"run": {**metadata, "seconds": round(time.perf_counter() - started, 1)},
               "workspace": {"name": workspace.name, "files": n_files, "lines": n_lines, "bytes": n_bytes,
                             "target": args.target},
               "index": {k: index[k] for k in ("chunks", "embedded", "embedding_model") if k in index},
               "think_s": THINK_S, "summary": summary(runs), "per_edit": runs}
    if not args.no_write:
        log(f"wrote {write_results('edit-visible', payload)}")
    print(render_edit_visible({"kind": "edit-visible", **payload}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
