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
     chunks in RPCs of 64 texts like the index writer does;
  4. single-query latency p50/p95 on a warm service; RSS after the run.

For code-static (issue 16) it also embeds the same chunks in-process, as the retrieval service
does when it computes static vectors in the pass that writes chunks, and reports the model's
size on disk and load time.

Run: .venv/bin/python -m bench.embed_bench [--workspace DIR] [--chunks 512] [--profile minilm]
     .venv/bin/python -m bench.embed_bench --profile code-static --chunks 4096 --batch-sizes 64 [--model DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import time
from pathlib import Path

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.embedding import EmbeddingClient
from codecompass.embedding.minilm import WindowedTokenizer
from codecompass_dev.evaluation.services import REPO_ROOT, read_vm_rss_kib, start_analysis, start_embedding

DEFAULT_WORKSPACE = REPO_ROOT / "node_ts_service" / "node_modules" / "@grpc" / "grpc-js"
# Issue 3 set 60 chunks/s for the transformer profiles (code-small is one); issue 16 sets 5,000 for code-static.
TARGET_CHUNKS_PER_S = {"minilm": 60.0, "e5-small": 60.0, "code-small": 60.0, "code-static": 5000.0}
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
    client = AnalysisClient(analysis.address, timeout_s=120)
    try:
        scan = client.scan(str(workspace), tuple, version=None)
        paths = [entry.relative_path for entry in scan.files]
        texts = [chunk.embedding_text for chunked in client.chunks(str(workspace), paths, 600, include_references=True)
                 for chunk in chunked.chunks]
    finally:
        client.close()
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
        client = EmbeddingClient(service.address, timeout_s=600, batch_size=RPC_TEXTS)
        try:
            client.embed_documents(texts[:8])
            started, cpu_started = time.perf_counter(), cpu_seconds(service.pid)
            for offset in range(0, len(texts), RPC_TEXTS):
                client.embed_documents(texts[offset : offset + RPC_TEXTS])
            seconds = time.perf_counter() - started
            cpu = cpu_seconds(service.pid) - cpu_started
            latencies = []
            for round_index in range(5):
                for query in QUERIES:
                    t0 = time.perf_counter()
                    client.embed_query(f"{query} {round_index}", timeout_s=30)
                    latencies.append((time.perf_counter() - t0) * 1000)
        finally:
            client.close()
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


def measure_static_in_process(texts: list[str], model_dir: Path | None, rounds: int = 3) -> dict:
    """code-static embedded in this process: the cost the retrieval service pays per chunk."""
    from codecompass.embedding.static import DEFAULT_MODEL_DIR, StaticProvider

    folder = model_dir or DEFAULT_MODEL_DIR
    started = time.perf_counter()
    provider = StaticProvider(model_dir=folder)
    provider.warmup()
    load_s = time.perf_counter() - started
    walls, cpus = [], []
    for _ in range(rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        for offset in range(0, len(texts), RPC_TEXTS):
            provider.embed(texts[offset : offset + RPC_TEXTS], "document")
        walls.append(len(texts) / (time.perf_counter() - wall))
        cpus.append(len(texts) / (time.process_time() - cpu))
    return {
        "load_s": load_s,
        "size_mb": sum(f.stat().st_size for f in folder.iterdir() if f.is_file()) / 1e6,
        "chunks_per_s": max(walls),
        "chunks_per_cpu_s": max(cpus),
        "dimensions": provider.info().dimensions,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE)
    parser.add_argument("--chunks", type=int, default=512)
    parser.add_argument("--profile", default="minilm", choices=sorted(TARGET_CHUNKS_PER_S))
    parser.add_argument("--model", type=Path, help="code-static: a model2vec folder other than the committed one")
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
    if args.model:
        base_env["CODECOMPASS_EMBEDDING_MODEL"] = str(args.model.resolve())
    in_process = measure_static_in_process(texts, args.model) if args.profile == "code-static" else None
    target = TARGET_CHUNKS_PER_S[args.profile]
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
            f"| {batch_size} | {run['chunks_per_s']:.1f} | {run['chunks_per_cpu_s']:.1f} | {target:.0f} "
            f"| {run['query_p50_ms']:.1f} | {run['query_p95_ms']:.1f} | {run['rss_loaded_mib']:.0f} "
            f"| {run['rss_peak_mib']:.0f} |"
        )
    if in_process:
        print(
            f"\nin-process (the retrieval service's pass), {RPC_TEXTS} texts per call: "
            f"{in_process['chunks_per_s']:.0f} chunks/s wall, {in_process['chunks_per_cpu_s']:.0f} chunks/CPU-s "
            f"(one thread; target {target:.0f}); model {in_process['size_mb']:.1f} MB on disk (target <= 30), "
            f"{in_process['dimensions']} dimensions, loaded in {in_process['load_s']:.2f}s"
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
                    "in_process": in_process,
                },
                indent=2,
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
