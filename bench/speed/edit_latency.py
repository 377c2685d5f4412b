"""Analysis-side latency of re-chunking one edited file with references (issue 3, section 5).

Starts the analysis service, times the first ChunkFiles of the target (a restarted service
over an existing index), warms it with one ChunkFiles(include_references=true) over the
whole workspace (as a first index does), then edits one file N times (appending a function,
alternating between two bodies so each edit is a real content change) and times
ChunkFiles([that file], include_references=true) after each edit: the analysis share of the
sync that runs before the next Search. Prints p50/p95. The edited file is restored afterwards.

Run: .venv/bin/python -m bench.speed.edit_latency [--workspace bench/.work/ws-300k] [--edits 10]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

from bench.speed.run_speed import EDIT_TARGET, percentile
from codecompass.clients.analysis import AnalysisClient
from codecompass_dev.evaluation.services import REPO_ROOT, start_analysis

DEFAULT_WORKSPACE = REPO_ROOT / "bench" / ".work" / "ws-300k"


def chunk(client: AnalysisClient, workspace: Path, paths: list[str]) -> tuple[int, int, float]:
    """(files, references) returned and the wall time in ms."""
    t0 = time.perf_counter()
    files = refs = 0
    for chunked in client.chunks(str(workspace), paths, 600, include_references=True):
        files += 1
        refs += sum(len(c.references) for c in chunked.chunks)
    return files, refs, (time.perf_counter() - t0) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE)
    parser.add_argument("--target", default=EDIT_TARGET, help="workspace-relative file to edit")
    parser.add_argument("--edits", type=int, default=10)
    parser.add_argument("--echo-logs", action="store_true")
    args = parser.parse_args(argv)
    workspace = args.workspace.resolve()
    target = workspace / args.target
    original = target.read_bytes()

    analysis = start_analysis(echo=args.echo_logs)
    client = AnalysisClient(analysis.address)
    try:
        # What the first sync after a service restart pays when the index already exists.
        _, cold_refs, cold_ms = chunk(client, workspace, [args.target])
        print(f"first call after start: ChunkFiles([target], refs) {cold_ms:.0f} ms ({cold_refs} references)")
        files, refs, warm_ms = chunk(client, workspace, ["."])
        print(f"warm-up: ChunkFiles(all, refs) {files} files, {refs} references in {warm_ms:.0f} ms")
        _, base_refs, unchanged_ms = chunk(client, workspace, [args.target])
        print(f"unchanged file: {unchanged_ms:.0f} ms ({base_refs} references)")
        timings = []
        for i in range(args.edits):
            body = f"\nexport function editLatencyProbe{i % 2}(value: number): number {{\n  return value + {i};\n}}\n"
            target.write_bytes(original + body.encode())
            _, edit_refs, ms = chunk(client, workspace, [args.target])
            timings.append(ms)
            print(f"edit {i}: {ms:.0f} ms ({edit_refs} references)")
        print(
            f"one-file edit ChunkFiles(refs): p50 {statistics.median(timings):.0f} ms, "
            f"p95 {percentile(timings, 95):.0f} ms, max {max(timings):.0f} ms over {len(timings)} edits"
        )
    finally:
        target.write_bytes(original)
        client.close()
        analysis.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
