"""Where the seconds of a cold index go, stage by stage (issue 27 §2), on `ws-300k` by default.

One cold index through the real services (a fresh state dir, IndexWorkspace until READY), with
the services' spans written to a trace file and their logs read back:
  stages (wall)    from the index's own progress reports: scan, the lexical pass (syntax-only
                   chunks, rows and static vectors: everything searchable), the reference pass
                   (Programs built, chunks with references, rows rewritten), the primary model's
                   background embedding until READY;
  inside the sync  the retrieval service's own timings of the whole sync ("sync wrote changes"):
                   waiting on the analysis stream, the signature cascade, static vectors, Lance
                   writes (full-text and catalog included);
  analysis         its ChunkFiles streams per pass (spans), so type-checking shows as the
                   reference pass's chunking minus the lexical pass's over the same files;
  embedding        the embedding service's own time (embedding.embed spans) against the wall time
                   of the embedding stage, and its chunks/s;
  maintenance      every `index maintained` of the retrieval log: count and total (compaction,
                   index segments, version cleanup);
  CPU              seconds per service process over the whole run.
Writes bench/results/index-stages-<UTC>.json (+ -latest); `python -m bench.report` renders it.

Run: .venv/bin/python -m bench.speed.index_stages [--workspace bench/.work/ws-300k] [--max-embed-wait 1800]
     (the 1M-line run: --workspace bench/.work/ws-1m --kind index-stages-1m)
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.report.speed import index_stages_table
from bench.speed.run_speed import DEFAULT_WORKSPACE, assembled_workspace, source_stats
from codecompass.clients.retrieval import RetrievalClient
from codecompass.common.files import tree_bytes
from codecompass.common.telemetry import TRACE_FILE_ENV
from codecompass.contracts.retrieval.model import IndexPhase
from codecompass_dev.evaluation.results import write_results
from codecompass_dev.evaluation.services import ServiceProcess, start_stack


def log_records(service: ServiceProcess, message: str) -> list[dict[str, Any]]:
    """The service's JSON log lines whose message is `message`."""
    out = []
    for line in service.log_lines:
        if f'"{message}"' not in line:
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if record.get("msg") == message:
            out.append(record)
    return out


def spans(trace_file: Path) -> list[dict[str, Any]]:
    if not trace_file.is_file():
        return []
    return [json.loads(line) for line in trace_file.read_text(encoding="utf-8").splitlines() if line.strip()]


def span_seconds(all_spans: list[dict[str, Any]], service: str, name: str, **attributes: Any) -> tuple[float, int]:
    """Total seconds and count of the spans of `service` named `name` with these attributes."""
    chosen = [s for s in all_spans if s.get("service") == service and s.get("name") == name
              and all(s.get("attributes", {}).get(k) == v for k, v in attributes.items())]
    return sum((s["end_ns"] - s["start_ns"]) / 1e9 for s in chosen), len(chosen)


def stage_walls(phases: dict[str, float], ready_s: float) -> dict[str, float]:
    """Wall seconds of each stage, from when the index first reported each phase."""
    order = [IndexPhase.LEXICAL.value, IndexPhase.CHUNKING.value, IndexPhase.EMBEDDING.value]
    starts = [(p, phases[p]) for p in order if p in phases]
    out = {"scan": starts[0][1] if starts else ready_s}
    names = {IndexPhase.LEXICAL.value: "lexical pass", IndexPhase.CHUNKING.value: "reference pass",
             IndexPhase.EMBEDDING.value: "primary embedding"}
    for i, (phase, start) in enumerate(starts):
        end = starts[i + 1][1] if i + 1 < len(starts) else ready_s
        out[names[phase]] = end - start
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE)
    parser.add_argument("--max-embed-wait", type=float, default=1800.0)
    parser.add_argument("--no-write", action="store_true", help="print only")
    parser.add_argument("--kind", default="index-stages",
                        help="results kind to write (index-stages-1m: the ws-1m run, a table of its own)")
    args = parser.parse_args(argv)
    workspace = assembled_workspace(args.workspace)
    n_files, n_lines, source_bytes = source_stats(workspace)
    work = Path(tempfile.mkdtemp(prefix="cc-stages-"))
    trace_file = work / "spans.jsonl"
    env = {"CODECOMPASS_STATE_DIR": str(work / "state"), TRACE_FILE_ENV: str(trace_file)}

    phases: dict[str, float] = {}
    stack = start_stack(env)
    try:
        client = RetrievalClient(stack.retrieval.address)
        try:
            started = time.perf_counter()
            for progress in client.index(str(workspace), True, args.max_embed_wait):
                phases.setdefault(progress.phase.value, time.perf_counter() - started)
            ready_s = time.perf_counter() - started
            status = client.status(str(workspace), 60)
        finally:
            client.close()
        cpu = {s.name: s.cpu_seconds() for s in (stack.analysis, stack.embedding, stack.retrieval)}
        rss = stack.peak_rss_mib()
        index_bytes = tree_bytes(work / "state")
    finally:
        stack.stop()

    retrieval = stack.retrieval
    syncs = log_records(retrieval, "sync wrote changes")
    sync = max(syncs, key=lambda r: r.get("chunks_upserted", 0)) if syncs else {}
    maintained = log_records(retrieval, "index maintained")
    all_spans = spans(trace_file)
    lexical_s, lexical_calls = span_seconds(all_spans, "analysis", "codecompass.v1.CodeAnalysisService/ChunkFiles",
                                            **{"codecompass.chunk.lexical_only": True})
    refs_s, refs_calls = span_seconds(all_spans, "analysis", "codecompass.v1.CodeAnalysisService/ChunkFiles",
                                      **{"codecompass.chunk.references": True})
    embed_s, embed_calls = span_seconds(all_spans, "embedding", "embedding.embed")
    walls = stage_walls(phases, ready_s)
    results: dict[str, Any] = {
        "workspace": {"name": workspace.name, "path": str(workspace.relative_to(Path.cwd()))
                      if workspace.is_relative_to(Path.cwd()) else str(workspace),
                      "files": n_files, "lines": n_lines, "source_bytes": source_bytes},
        "ready_s": ready_s,
        "chunks": status.chunks,
        "embedded_chunks": status.embedded_chunks,
        "embedding_model": f"{status.embedding_model_id} {status.embedding_model_version}".strip(),
        "stages_s": walls,
        "sync_ms": {k.removesuffix("_ms"): v for k, v in sync.items() if k.endswith("_ms")},
        "analysis": {"lexical_chunk_s": lexical_s, "lexical_calls": lexical_calls,
                     "reference_chunk_s": refs_s, "reference_calls": refs_calls},
        "embedding": {"service_s": embed_s, "calls": embed_calls,
                      "chunks_per_s": status.embedded_chunks / walls["primary embedding"]
                      if embed_calls and walls.get("primary embedding") else None},
        "maintenance": {"count": len(maintained), "total_s": sum(r.get("maintain_ms", 0) for r in maintained) / 1000,
                        "longest_s": max((r.get("maintain_ms", 0) for r in maintained), default=0) / 1000},
        "cpu_s": cpu,
        "peak_rss_mib": rss,
        "index_bytes_at_ready": index_bytes,
    }
    for line in index_stages_table(results):
        print(line)
    if not args.no_write:
        print(f"wrote {write_results(args.kind, results)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
