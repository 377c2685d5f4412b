"""Embedding benchmark: throughput on real chunks, service start time, RSS (issue 3, section 1).

Chunks come from the real analysis service (ChunkFiles with one-hop references,
so embedding_text carries the full preamble) over a TypeScript source tree,
by default the TS sources of @grpc/grpc-js (~27k lines) in node_ts_service's
node_modules. Everything else goes over gRPC to a real `python -m
codecompass.embedding` process, as the retrieval service uses it:
  1. start time: process start -> health SERVING, several fresh starts;
  2. token lengths of the model inputs (after identifier splitting and the
     256-token window), i.e. what "typical chunks" means here;
  3. document throughput (chunks/s) per service batch size, sending the
     chunks in RPCs of 64 texts like the indexer does;
  4. single-query latency p50/p95 on a warm service; RSS after the run.

Run: .venv/bin/python -m bench.embed_bench [--workspace DIR] [--chunks 512] [--profile minilm]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path

from bench.lib.services import REPO_ROOT, read_vm_rss_kib, start_analysis, start_embedding
from codecompass.embedding import convert
from codecompass.embedding.minilm import WindowedTokenizer
from codecompass.v1 import analysis_pb2, analysis_pb2_grpc, embedding_pb2_grpc

DEFAULT_WORKSPACE = REPO_ROOT / "node_ts_service" / "node_modules" / "@grpc" / "grpc-js"
TARGET_CHUNKS_PER_S = 60.0
TARGET_START_S = 3.0
RPC_TEXTS = 64
QUERIES = [
    "validate a JWT token",
    "retry with exponential backoff",
    "parse the service config json",
    "close the channel when idle",
    "resolve dns addresses",
    "load balancer picks a subchannel",
]


def collect_chunks(workspace: Path, limit: int, seed: int) -> list[str]:
    analysis = start_analysis()
    try:
        with analysis.channel() as channel:
            stub = analysis_pb2_grpc.CodeAnalysisServiceStub(channel)
            scan = stub.ScanWorkspace(analysis_pb2.ScanWorkspaceRequest(workspace_root=str(workspace)), timeout=120)
            request = analysis_pb2.ChunkFilesRequest(
                workspace_root=str(workspace),
                include_references=True,
                paths=[entry.relative_path for entry in scan.files],
            )
            texts = [chunk.embedding_text for reply in stub.ChunkFiles(request, timeout=600) for chunk in reply.chunks]
    finally:
        analysis.stop()
    if not texts:
        raise SystemExit(f"no chunks found under {workspace}")
    random.Random(seed).shuffle(texts)
    return texts[:limit]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def measure_starts(env: dict[str, str], runs: int) -> list[float]:
    starts = []
    for _ in range(runs):
        service = start_embedding(env)
        starts.append(time.perf_counter() - service.started_s)
        service.stop()
    return starts


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process; with other work on the machine, wall time alone misleads."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measure_throughput(texts: list[str], env: dict[str, str]) -> dict:
    service = start_embedding(env)
    try:
        rss_loaded = (read_vm_rss_kib(service.pid) or 0) / 1024
        with service.channel() as channel:
            stub = embedding_pb2_grpc.EmbeddingServiceStub(channel)
            stub.Embed(convert.embed_request_to_proto(texts[:8], "document"), timeout=120)
            started, cpu_started = time.perf_counter(), cpu_seconds(service.pid)
            for offset in range(0, len(texts), RPC_TEXTS):
                batch = texts[offset : offset + RPC_TEXTS]
                stub.Embed(convert.embed_request_to_proto(batch, "document"), timeout=600)
            seconds = time.perf_counter() - started
            cpu = cpu_seconds(service.pid) - cpu_started
            latencies = []
            for round_index in range(5):
                for query in QUERIES:
                    t0 = time.perf_counter()
                    stub.Embed(convert.embed_request_to_proto([f"{query} {round_index}"], "query"), timeout=30)
                    latencies.append((time.perf_counter() - t0) * 1000)
        return {
            "chunks_per_s": len(texts) / seconds,
            "chunks_per_cpu_s": len(texts) / cpu,
            "seconds": seconds,
            "query_p50_ms": percentile(latencies, 0.5),
            "query_p95_ms": percentile(latencies, 0.95),
            "rss_loaded_mib": rss_loaded,
            "rss_peak_mib": service.peak_rss_mib() or 0.0,
        }
    finally:
        service.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE)
    parser.add_argument("--chunks", type=int, default=512)
    parser.add_argument("--profile", default="minilm", choices=["minilm", "e5-small"])
    parser.add_argument("--batch-sizes", default="16,32,64")
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--json", type=Path, help="also write the raw numbers here")
    args = parser.parse_args()

    texts = collect_chunks(args.workspace.resolve(), args.chunks, args.seed)
    tokenizer = WindowedTokenizer.from_package(256)
    lengths = [len(tokenizer.ids(text)) for text in texts]
    chars = [len(text) for text in texts]
    base_env = {"CODECOMPASS_EMBEDDING_PROFILE": args.profile}
    starts = measure_starts(base_env, args.starts)
    runs = {}
    for batch_size in (int(b) for b in args.batch_sizes.split(",")):
        runs[batch_size] = measure_throughput(texts, base_env | {"CODECOMPASS_EMBEDDING_BATCH_SIZE": str(batch_size)})

    load = os.getloadavg()[0]
    print(f"## Embedding benchmark ({args.profile}, {os.cpu_count()} cores, 1-min load at end {load:.1f})\n")
    print(f"corpus: {len(texts)} chunks sampled from {args.workspace} (analysis service, one-hop references)")
    print(f"embedding_text chars: median {statistics.median(chars):.0f}, p90 {percentile(chars, 0.9):.0f}")
    print(
        f"model input tokens (minilm, split + window 256): median {statistics.median(lengths):.0f}, "
        f"p90 {percentile(lengths, 0.9):.0f}, at the 256 cap {sum(n >= 256 for n in lengths) / len(lengths):.0%}\n"
    )
    print(
        f"start to SERVING: {', '.join(f'{s:.2f}s' for s in starts)} "
        f"(median {statistics.median(starts):.2f}s, target <= {TARGET_START_S:.0f}s)\n"
    )
    print("chunks/CPU-s is throughput per busy core (service process user+sys time); on an otherwise idle")
    print("2-core machine wall chunks/s approaches 2x that number.\n")
    print(
        "| service batch size | chunks/s (wall) | chunks/CPU-s | target | query p50 ms | query p95 ms "
        "| RSS loaded MiB | RSS peak MiB |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for batch_size, run in runs.items():
        print(
            f"| {batch_size} | {run['chunks_per_s']:.1f} | {run['chunks_per_cpu_s']:.1f} | {TARGET_CHUNKS_PER_S:.0f} "
            f"| {run['query_p50_ms']:.1f} | {run['query_p95_ms']:.1f} | {run['rss_loaded_mib']:.0f} "
            f"| {run['rss_peak_mib']:.0f} |"
        )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "profile": args.profile,
                    "chunks": len(texts),
                    "starts_s": starts,
                    "token_median": statistics.median(lengths),
                    "load_avg_1m": load,
                    "runs": runs,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
