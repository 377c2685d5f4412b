"""Indexing spread over workers (retrieval/index/shard/): ws-300k indexed by 1, 2 and 3 worker
processes, into an index on local disk and on the local S3 server (moto), through real services.

Each run starts from an empty index and fresh analysis services, one per worker (as a pod of the
Indexed Job has its own: the Node service type-checks on one thread, so workers sharing one
would queue behind it). The writer's side runs here: scan, open the index, plan, `run_shards`,
`commit_shards`. Profile: code-static, whose vectors the workers compute in process, so the
numbers are chunking + static vectors + writing; with a model embedder (code-small, ~40 chunks/s
on these cores) embedding would be most of an index's time, and it shards the same way (each
worker asks its own embedding service) or stays with the writer's background embedder.
`--baseline` also times today's single-process sync (`Syncer`, lexical-first pass included) on
local disk, for comparison.

The machine has few cores; bench/report.py predicts more from the runs' CPU seconds against
their worker count (`shard_prediction`): what each added worker costs that no split divides,
what divides among them, and the writer's own steps.

Prints a markdown table and writes bench/results/shard-speed-<UTC>.json (+ -latest).

Run: .venv/bin/python -m bench.speed.run_shard_speed [--workspace bench/.work/ws-300k] [--workers 1,2,3]
     [--storage local,s3] [--baseline]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

import lancedb
from tests.fixtures.s3 import MotoS3Server, S3Bucket

from bench.report.speed import render_shard_speed
from bench.speed.run_speed import DEFAULT_WORKSPACE, assembled_workspace, source_stats
from codecompass.clients.analysis import AnalysisClient
from codecompass.common.config import load_settings
from codecompass.retrieval.catalog import Catalog, IndexIdentity
from codecompass.retrieval.index.chunk_writer import ChunkWriter
from codecompass.retrieval.index.shard.plan import make_plan
from codecompass.retrieval.index.shard.processes import run_shards
from codecompass.retrieval.index.shard.results import commit_shards
from codecompass.retrieval.index.sync import Syncer
from codecompass.retrieval.static_channel import StaticChannel
from codecompass_dev.evaluation.results import run_metadata, write_results
from codecompass_dev.evaluation.services import REPO_ROOT, ServiceProcess, start_analysis

RPC_TIMEOUT_S = 600.0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def children_cpu_s() -> float:
    """CPU seconds of every child process this one has waited for (the workers)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def static_identity(chunker_version: str) -> IndexIdentity:
    """The code-static profile: the static model is the primary one (no second column)."""
    settings = load_settings()
    model = StaticChannel(enabled=True, model_dir=settings.retrieval.static_model_dir,
                          max_tokens=settings.embedding.max_tokens).model()
    if model is None:
        raise SystemExit("the static model (models/code_static) did not load")
    return IndexIdentity(model=model, chunker_version=chunker_version, static=None)


def open_index(uri: str, storage_options: dict[str, str], identity: IndexIdentity) -> tuple[lancedb.DBConnection,
                                                                                             ChunkWriter, Catalog]:
    db = lancedb.connect(uri, storage_options=storage_options or None)
    store = ChunkWriter.open(uri, model=identity.model, chunker_version=identity.chunker_version,
                            static=identity.static, storage_options=storage_options)
    catalog = Catalog.open(db)
    catalog.reset(identity)
    return db, store, catalog


def scan(analysis: ServiceProcess, workspace: Path):
    client = AnalysisClient(analysis.address, timeout_s=RPC_TIMEOUT_S)
    try:
        return client.scan(str(workspace), list, version=object())
    finally:
        client.close()


def run_sharded(workspace: Path, uri: str, storage_options: dict[str, str], workers: int,
                moto: MotoS3Server | None) -> dict:
    """One sharded index from scratch; seconds per step, CPU, rows."""
    analyses: list[ServiceProcess] = []
    try:
        for _ in range(workers):
            analyses.append(start_analysis())
        moto_cpu = _cpu_of(moto.pid) if moto is not None else None
        analysis_cpu = [a.cpu_seconds() or 0.0 for a in analyses]
        started = time.perf_counter()
        scanned = scan(analyses[0], workspace)
        scanned_at = time.perf_counter()
        identity = static_identity(scanned.chunker_version)
        db, store, catalog = open_index(uri, storage_options, identity)
        plan = make_plan(str(workspace), uri, identity, scanned.files, workers,
                         analysis=[a.address for a in analyses])
        opened_at = time.perf_counter()
        cpu_before = children_cpu_s()
        results = run_shards(plan, workers, db=db, timeout_s=3600,
                             env={"CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS": json.dumps(storage_options)})
        ran_at = time.perf_counter()
        workers_cpu = children_cpu_s() - cpu_before
        commit_shards(store, catalog, results)
        done_at = time.perf_counter()
        total, _ = store.counts()
        return {
            "workers": workers,
            "files": len(scanned.files),
            "chunks": total,
            "seconds": {
                "total": round(done_at - started, 2),
                "scan": round(scanned_at - started, 2),
                "open_and_plan": round(opened_at - scanned_at, 2),
                "workers": round(ran_at - opened_at, 2),
                "commit": round(done_at - ran_at, 2),
            },
            "shards": [{"files": r.stats.files, "chunks": r.stats.chunks, "fragments": len(r.staged),
                        "seconds": {k: round(v, 2) for k, v in r.stats.seconds.items()}} for r in results],
            "cpu_seconds": {
                "workers": round(workers_cpu, 1),
                "analysis": round(sum((a.cpu_seconds() or 0.0) - c for a, c in zip(analyses, analysis_cpu,
                                                                                   strict=True)), 1),
                **({"s3_server": round(_cpu_of(moto.pid) - moto_cpu, 1)} if moto is not None else {}),
            },
            "analysis_peak_rss_mib": [round(a.peak_rss_mib() or 0.0) for a in analyses],
            # These cores are shared: what else ran shows in the load when the run ended.
            "load_avg_after": [round(x, 2) for x in os.getloadavg()],
        }
    finally:
        for analysis in analyses:
            analysis.stop()


def run_baseline(workspace: Path, uri: str) -> dict:
    """Today's path: one in-process sync (Syncer) into a local index, same profile."""
    analysis = start_analysis()
    try:
        started = time.perf_counter()
        scanned = scan(analysis, workspace)
        identity = static_identity(scanned.chunker_version)
        _, store, catalog = open_index(uri, {}, identity)
        settings = load_settings()
        static = StaticChannel(enabled=True, model_dir=settings.retrieval.static_model_dir,
                               max_tokens=settings.embedding.max_tokens)
        client = AnalysisClient(analysis.address, timeout_s=RPC_TIMEOUT_S)
        try:
            syncer = Syncer(root=str(workspace), catalog=catalog, store=store, analysis=client, embedder=None,
                            model=identity.model, write_lock=threading.Lock(), static=static)
            syncer.run(scanned)
        finally:
            client.close()
        return {"files": len(scanned.files), "chunks": store.counts()[0],
                "seconds": round(time.perf_counter() - started, 2),
                "steps_ms": {k: round(v) for k, v in syncer.timings.items()}}
    finally:
        analysis.stop()


def _cpu_of(pid: int | None) -> float:
    if pid is None:
        return 0.0
    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE)
    parser.add_argument("--workers", default="1,2,3")
    parser.add_argument("--storage", default="local,s3")
    parser.add_argument("--baseline", action="store_true", help="also time one in-process sync (local disk)")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    workspace = assembled_workspace(args.workspace)
    counts = [int(n) for n in args.workers.split(",")]
    storages = args.storage.split(",")
    started = time.perf_counter()
    metadata = run_metadata()
    n_files, n_lines, source_bytes = source_stats(workspace)
    log(f"shard speed: {workspace.name} ({n_files:,} files, {n_lines:,} lines), workers {counts}, {storages}")
    payload: dict = {"runs": {}}
    with tempfile.TemporaryDirectory(prefix="shard-speed-") as scratch:
        moto = None
        try:
            if "s3" in storages:
                moto = MotoS3Server(Path(scratch))
                moto.start()
                moto.client().create_bucket(Bucket="shard-speed")
                bucket = S3Bucket(moto, "shard-speed")
            for storage in storages:
                runs = []
                for n in counts:
                    if storage == "s3":
                        uri, options = bucket.uri(f"w{n}"), bucket.storage_options
                    else:
                        uri, options = str(Path(scratch) / f"local-w{n}"), {}
                    log(f"{storage}, {n} worker(s) ...")
                    run = run_sharded(workspace, uri, options, n, moto if storage == "s3" else None)
                    log(f"  {run['seconds']} cpu {run['cpu_seconds']}")
                    runs.append(run)
                payload["runs"][storage] = runs
            if args.baseline:
                log("baseline: one in-process sync ...")
                payload["baseline"] = run_baseline(workspace, str(Path(scratch) / "baseline"))
        finally:
            if moto is not None:
                moto.stop()
    payload["run"] = {**metadata, "seconds": round(time.perf_counter() - started, 1)}
    payload["workspace"] = {"name": workspace.name,
                            "path": str(workspace.relative_to(REPO_ROOT)) if workspace.is_relative_to(REPO_ROOT)
                            else str(workspace), "files": n_files, "lines": n_lines, "source_bytes": source_bytes}
    payload["settings"] = {"profile": "code-static (vectors computed by the workers, in process)",
                           "analysis_services": "one per worker, started fresh for each run"}
    print(render_shard_speed({"kind": "shard-speed", **payload}))
    if not args.no_write:
        path = write_results("shard-speed", payload)
        log(f"wrote {path.relative_to(REPO_ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
