"""An index on object storage vs on local disk (issue 18 §4): index time, and a searcher's warm
p50/p95, on the 300k-line workspace.

For each store, a local folder and the local S3 server (moto, a real process on loopback):
1. the index writer (a retrieval process in role `writer`, the code-static profile so a cold
   index takes minutes rather than the hour code-small's vectors would) indexes ws-300k from
   scratch: wall seconds until IndexWorkspace returns with every vector written;
2. a separate searcher process (role `searcher`, its own empty state dir: the index URI is all it
   shares with the writer) answers run_speed's warm query sample, names the index by workspace id
   (it needs no files), one warm-up pass first. Search only, as the gateway calls it
   (`RetrievalClient.search`), so the numbers are the retrieve stage.
On S3 the searcher runs twice: with its local copy of the index (the default: retrieval/mirror.py
copies what the writer commits, refreshed every second, and queries read the copy) and without it
(`retrieval.searcher_cache` off: every query reads the bucket; it checks for a newer version at most
once a second).

moto is a Python server on the same two cores: each request costs it CPU the searcher also
needs, and nothing like S3's network latency (tens of ms a request on AWS). The S3 columns say
what our code does per request; on real S3 expect each uncached request to add that latency.

Writes bench/results/store-speed-<UTC>.json (+ -latest) and prints its README section (bench/report/).

Run: .venv/bin/python -m bench.speed.run_store_speed [--workspace bench/.work/ws-300k] [--queries 50]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

from tests.fixtures.s3 import MotoS3Server, S3Bucket

from bench.report.speed import render_store_speed
from bench.speed.run_pipeline_speed import query_texts
from bench.speed.run_speed import DEFAULT_WORKSPACE, assembled_workspace, source_stats
from codecompass.clients.retrieval import RetrievalClient
from codecompass.contracts.retrieval.model import SearchQuery
from codecompass.retrieval.location import workspace_id_of
from codecompass_dev.evaluation.metrics import percentile
from codecompass_dev.evaluation.results import load_latest, write_results
from codecompass_dev.evaluation.services import ServiceProcess, start_analysis, start_embedding, start_retrieval

BUCKET = "store-speed"
INDEX_TIMEOUT_S = 7200.0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def index(writer: ServiceProcess, workspace: Path) -> float:
    client = RetrievalClient(writer.address)
    started = time.perf_counter()
    try:
        for _ in client.index(str(workspace), wait_for_embeddings=True, timeout_s=INDEX_TIMEOUT_S):
            pass
    finally:
        client.close()
    return time.perf_counter() - started


def searches(searcher: ServiceProcess, workspace_id: str, texts: list[str]) -> dict:
    """Warm-up pass, then one measured pass: ms per search, p50/p95."""
    client = RetrievalClient(searcher.address)
    timings: list[float] = []
    try:
        for measured in (False, True):
            for text in texts:
                started = time.perf_counter()
                outcome = client.search(SearchQuery(workspace_root="", workspace_id=workspace_id, query=text,
                                                    limit=10), 120)
                if measured:
                    timings.append((time.perf_counter() - started) * 1000)
                    if not outcome.results:
                        log(f"  no results for {text!r}")
    finally:
        client.close()
    return {"queries": len(timings), "p50_ms": round(percentile(timings, 50), 1),
            "p95_ms": round(percentile(timings, 95), 1)}


def run_store(name: str, workspace: Path, env: dict[str, str], analysis: ServiceProcess,
              embedding: ServiceProcess, texts: list[str], scratch: Path, searchers: dict[str, dict[str, str]]) -> dict:
    common = {**env, "CODECOMPASS_EMBEDDING_PROFILE": "code-static"}
    writer = start_retrieval(analysis.address, embedding.address, {
        **common, "CODECOMPASS_RETRIEVAL_ROLE": "writer", "CODECOMPASS_STATE_DIR": str(scratch / f"{name}-writer")})
    try:
        log(f"{name}: indexing {workspace} ...")
        seconds = index(writer, workspace)
        log(f"{name}: indexed in {seconds:.1f} s")
    finally:
        writer.stop()
    row: dict = {"store": name, "index_s": round(seconds, 1), "search": {}}
    for label, extra in searchers.items():
        searcher = start_retrieval(analysis.address, embedding.address, {
            **common, **extra, "CODECOMPASS_RETRIEVAL_ROLE": "searcher",
            "CODECOMPASS_STATE_DIR": str(scratch / f"{name}-searcher-{len(row['search'])}")})
        try:
            started = time.perf_counter()
            row["search"][label] = searches(searcher, workspace_id_of(workspace.resolve()), texts)
            row["search"][label]["first_query_and_passes_s"] = round(time.perf_counter() - started, 1)
            log(f"{name} {label}: {row['search'][label]}")
        finally:
            searcher.stop()
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE)
    parser.add_argument("--queries", type=int, default=50)
    args = parser.parse_args(argv)
    workspace = assembled_workspace(args.workspace)
    texts = query_texts(args.queries)
    rows = []
    with tempfile.TemporaryDirectory(prefix="store-speed-") as folder:
        scratch = Path(folder)
        analysis = start_analysis()
        embedding = start_embedding({"CODECOMPASS_EMBEDDING_PROFILE": "code-static"})
        moto = MotoS3Server(scratch)
        try:
            rows.append(run_store("local", workspace, {"CODECOMPASS_RETRIEVAL_DB_URI": str(scratch / "index")},
                                  analysis, embedding, texts, scratch, {"local disk": {}}))
            moto.start()
            moto.client().create_bucket(Bucket=BUCKET)
            bucket = S3Bucket(moto, BUCKET)
            s3_env = {"CODECOMPASS_RETRIEVAL_DB_URI": bucket.uri("indexes"),
                      "CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS": json.dumps(bucket.storage_options)}
            rows.append(run_store("s3 (moto)", workspace, s3_env, analysis, embedding, texts, scratch, {
                "local copy (default)": {},
                "no copy: reads the bucket": {"CODECOMPASS_RETRIEVAL_SEARCHER_CACHE": "false"}}))
        finally:
            moto.stop()
            embedding.stop()
            analysis.stop()
            shutil.rmtree(scratch, ignore_errors=True)
    files, lines, size = source_stats(workspace)
    results = {
        "workspace": {"name": workspace.name, "files": files, "lines": lines, "source_bytes": size},
        "profile": "code-static",
        "queries": len(texts),
        "stores": rows,
    }
    path = write_results("store-speed", results)
    print(render_store_speed(load_latest("store-speed")))
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
