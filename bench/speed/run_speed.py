"""Indexing and query speed on the >= 200k-line workspace, through the real services (issue 3, section 5).

Measures, on bench/.work/ws-300k with a fresh state dir:
  cold first lexical answer  services started -> the first Search (it starts the cold sync)
                             that returns results (goal < 5 s); then IndexWorkspace
                             (wait_for_embeddings=false) until every chunk is written;
  static channel             from the first Sync (the cold index starts): the first answer with
                             results (goal <= 3 s), the first with a hit of the static vectors,
                             every file written once with static vectors (the lexical-first pass),
                             and every chunk searchable with its final static vector (the sync's
                             end; goal <= 60 s); warm queries and a one-file edit measured again
                             while the primary model embeds in the background (goals 250 ms p95,
                             200 ms sync); --no-static-channel measures the same without it;
  full embedding             until GetIndexStatus says READY; chunks/s over the embedding phase
                             (goal <= 6 min for ~300k lines);
  warm queries               p50/p95 of Search (with its pre-search sync) over ~50 queries
                             (goal <= 80/250 ms);
  one-file edit              Search right after editing one file vs a no-change Search
                             (goal <= 200 ms overhead);
  index size                 bytes on disk vs source bytes, once versions older than the
                             retention are cleaned (and at READY);
  RSS                        peak RSS (VmHWM) per service.
Prints a markdown table and writes every number it shows, with the goals and the workspace's
size, to bench/results/speed-<UTC>.json (+ speed-latest.json), from which `make bench-report`
renders the README tables. The edited file is restored afterwards.

Run: .venv/bin/python -m bench.speed.run_speed [--workspace bench/.work/ws-300k] [--max-embed-wait 900]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import threading
import time
from pathlib import Path

from bench.report.speed import speed_table
from codecompass.clients.retrieval import RetrievalClient
from codecompass.common.files import tree_bytes
from codecompass.contracts.retrieval.model import IndexingStatus, IndexPhase, SearchOutcome, SearchQuery, SyncOutcome
from codecompass.policy.ranking import STATIC_VECTORS
from codecompass.retrieval.index.chunk_writer import DEFAULT_VERSION_RETENTION
from codecompass_dev.evaluation.results import RESULTS_DIR, write_results
from codecompass_dev.evaluation.services import (
    REPO_ROOT,
    ServiceProcess,
    start_analysis,
    start_embedding,
    start_retrieval,
)

BENCH_DIR = REPO_ROOT / "bench"
DEFAULT_WORKSPACE = BENCH_DIR / ".work" / "ws-300k"
QUERIES_PATH = BENCH_DIR / "quality" / "queries.jsonl"
EDIT_TARGET = "packages/rxjs/src/internal/operators/map.ts"
SOURCE_SUFFIXES = (".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs")
WARM_QUERIES = 50
# Past the version retention, for the service's cleanup run to finish.
SETTLE_S = 20.0
SEED = 20261122
# Issue 3, section 5. Cold is measured from process start; ready from SERVING.
GOALS = {
    "cold_first_lexical_s": 5.0,
    "index_to_ready_s": 360.0,
    "warm_p50_ms": 80.0,
    "warm_p95_ms": 250.0,
    "edit_overhead_ms": 200.0,
    # Issue 16, section 2 (from the first Sync of a cold workspace; during the background pass).
    "first_answer_s": 3.0,
    "static_searchable_s": 60.0,
    "background_warm_p95_ms": 250.0,
    "background_edit_sync_ms": 200.0,
}
# A question with no identifier in it: only vectors can answer it.
SEMANTIC_PROBE = "turn every emitted value into another value with a projection function"
WORKSPACE_KEYS = ("workspace", "files", "lines", "source_bytes")


def percentile(values: list[float], pct: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(pct / 100 * (len(ordered) - 1)))]


def assembled_workspace(path: Path) -> Path:
    """`path` resolved, or the one line that says how to assemble it (the corpus is not in git)."""
    workspace = path.resolve()
    if not workspace.is_dir():
        raise SystemExit(f"{workspace} is missing: run codecompass_dev/corpus/install.sh and "
                         "python -m codecompass_dev.corpus.assemble ws-300k")
    return workspace


def source_stats(workspace: Path) -> tuple[int, int, int]:
    files = lines = size = 0
    for path in workspace.rglob("*"):
        # Parts below the workspace: a workspace may itself lie in node_modules (a package's sources).
        if (path.is_file() and path.name.endswith(SOURCE_SUFFIXES)
                and "node_modules" not in path.relative_to(workspace).parts):
            files += 1
            data = path.read_bytes()
            size += len(data)
            lines += data.count(b"\n")
    return files, lines, size


def warm_query_texts() -> list[str]:
    texts = [json.loads(line)["query"] for line in QUERIES_PATH.read_text(encoding="utf-8").splitlines() if line]
    rng = random.Random(SEED)
    rng.shuffle(texts)
    return texts[:WARM_QUERIES]


# The gateway's default freshness budget (GatewaySettings.freshness_budget_ms).
GATEWAY_BUDGET_MS = 300


def search(client: RetrievalClient, workspace: Path, query: str,
           budget_ms: int = 0) -> tuple[SyncOutcome, SearchOutcome, float]:
    """A search as the gateway makes one: Sync within `budget_ms` (0: until done), then Search
    (a pure read). Returns (sync outcome, search outcome, wall ms of both)."""
    t0 = time.perf_counter()
    synced = client.sync(str(workspace), budget_ms, 120)
    reply = client.search(SearchQuery(workspace_root=str(workspace), query=query, limit=10), 120)
    return synced, reply, (time.perf_counter() - t0) * 1000


def warm_and_edit(client: RetrievalClient, workspace: Path, texts: list[str], original_edit_text: str | None,
                  prefix: str) -> dict:
    """Warm query latencies over `texts`, then a one-file edit's Sync and Search against a
    no-change Search; the edited file is restored (and synced back) before returning."""
    out: dict = {}
    for text in texts[:3]:
        search(client, workspace, text)
    latencies, sync_ms, search_ms = [], [], []
    for text in texts:
        synced, reply, ms = search(client, workspace, text)
        latencies.append(ms)
        sync_ms.append(synced.duration_ms)
        search_ms.append(reply.metadata.search_ms)
    out[f"{prefix}warm_p50_ms"] = percentile(latencies, 50)
    out[f"{prefix}warm_p95_ms"] = percentile(latencies, 95)
    out[f"{prefix}warm_server_sync_p50_ms"] = statistics.median(sync_ms)
    out[f"{prefix}warm_server_search_p50_ms"] = statistics.median(search_ms)
    out[f"{prefix}warm_queries"] = len(texts)
    if original_edit_text is None:
        return out
    edit_path = workspace / EDIT_TARGET
    nochange = [search(client, workspace, "project each value")[2] for _ in range(5)]
    out[f"{prefix}nochange_search_ms"] = statistics.median(nochange)
    edit_path.write_text(
        original_edit_text + "\nexport function benchEditProbe(value: number): number {\n  return value * 2;\n}\n",
        encoding="utf-8",
    )
    synced, _, edit_ms = search(client, workspace, "project each value")
    out[f"{prefix}edit_search_ms"] = edit_ms
    out[f"{prefix}edit_sync_ms_server"] = synced.duration_ms
    out[f"{prefix}edit_sync_files_changed"] = synced.stats.files_changed if synced.stats else 0
    out[f"{prefix}edit_sync_chunks_embedded"] = synced.stats.chunks_embedded if synced.stats else 0
    out[f"{prefix}edit_overhead_ms"] = edit_ms - out[f"{prefix}nochange_search_ms"]
    edit_path.write_text(original_edit_text, encoding="utf-8")
    search(client, workspace, "project each value")
    return out


def static_hit(reply: SearchOutcome) -> bool:
    return any(r.vector_channel == STATIC_VECTORS for r in reply.results)


def static_channel_lines(m: dict) -> str:
    """The static channel's measures (issue 16, section 2), one per line, with their goals."""
    def seconds(key: str) -> str:
        return f"{m[key]:.2f} s" if key in m else "not reached"

    lines = [
        f"static channel: {m.get('static_model_id') or 'off'}",
        f"  first answer with results       {seconds('first_answer_s')} (goal <= {GOALS['first_answer_s']:g} s)",
        f"  first static-vector hit         {seconds('first_static_answer_s')}",
        f"  every file written once         {seconds('static_first_pass_s')}",
        f"  every chunk static-searchable   {seconds('static_searchable_s')} "
        f"(goal <= {GOALS['static_searchable_s']:g} s)",
        f"  index bytes when written        {m.get('index_bytes_written', 0) / 2**20:,.1f} MiB",
    ]
    if "background_warm_p95_ms" in m:
        embedded = m.get("background_embedded_chunks", [0, 0, 0])
        lines += [
            f"  during the background pass (primary vectors {embedded[0]:,} -> {embedded[1]:,} of {embedded[2]:,}):",
            (f"    warm p50 / p95                {m['background_warm_p50_ms']:.0f} / "
             f"{m['background_warm_p95_ms']:.0f} ms (goal p95 <= {GOALS['background_warm_p95_ms']:g} ms)"),
            (f"    one-file edit sync            {m.get('background_edit_sync_ms', 0):.0f} ms server (goal <= "
             f"{GOALS['background_edit_sync_ms']:g} ms), search +{m.get('background_edit_overhead_ms', 0):.0f} ms"),
        ]
    return "\n".join(lines)


def build_payload(results: dict, workspace: Path, fresh_state_dir: bool, max_embed_wait_s: float) -> dict:
    """The results document: the workspace measured, how, the goals, and every measure of the run."""
    return {
        "workspace": {
            "name": workspace.name,
            "path": str(workspace.relative_to(REPO_ROOT)) if workspace.is_relative_to(REPO_ROOT) else str(workspace),
            "files": results["files"],
            "lines": results["lines"],
            "source_bytes": results["source_bytes"],
        },
        "settings": {
            # False: --state-dir named an existing index, so the "cold" measures are a restart.
            "fresh_state_dir": fresh_state_dir,
            "max_embed_wait_s": max_embed_wait_s,
            "edit_target": EDIT_TARGET,
            "version_retention_s": DEFAULT_VERSION_RETENTION.total_seconds(),
            "settle_s": SETTLE_S,
            "seed": SEED,
        },
        "goals": GOALS,
        "measures": {k: v for k, v in results.items() if k not in WORKSPACE_KEYS},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE)
    parser.add_argument("--state-dir", type=Path, help="fresh state dir (default: a new temp dir)")
    parser.add_argument(
        "--max-embed-wait",
        type=float,
        default=900.0,
        help="stop waiting for READY after this many seconds and report what was embedded",
    )
    parser.add_argument("--json", type=Path, help="also write the raw measures here")
    parser.add_argument(
        "--results-dir", type=Path, default=RESULTS_DIR, help="where speed-<UTC>.json and speed-latest.json go"
    )
    parser.add_argument("--echo-logs", action="store_true")
    parser.add_argument("--no-static-channel", action="store_true",
                        help="CODECOMPASS_RETRIEVAL_STATIC_CHANNEL=false: what the static channel costs and gives")
    args = parser.parse_args(argv)
    workspace = assembled_workspace(args.workspace)
    state_dir = args.state_dir or Path(tempfile.mkdtemp(prefix="cc-speed-"))
    fresh_state_dir = not state_dir.is_dir() or not any(state_dir.iterdir())
    env = {"CODECOMPASS_STATE_DIR": str(state_dir)}
    if args.no_static_channel:
        env["CODECOMPASS_RETRIEVAL_STATIC_CHANNEL"] = "false"
    n_files, n_lines, source_bytes = source_stats(workspace)
    results: dict = {"workspace": str(workspace), "files": n_files, "lines": n_lines, "source_bytes": source_bytes}
    edit_path = workspace / EDIT_TARGET
    original_edit_text = edit_path.read_text(encoding="utf-8") if edit_path.exists() else None

    services: list[ServiceProcess] = []
    try:
        t_start = time.perf_counter()
        analysis = start_analysis(env, echo=args.echo_logs)
        services.append(analysis)
        embedding = start_embedding(env, echo=args.echo_logs)
        services.append(embedding)
        retrieval = start_retrieval(analysis.address, embedding.address, env, echo=args.echo_logs)
        services.append(retrieval)
        t_serving = time.perf_counter()
        results["services_start_s"] = t_serving - t_start

        client = RetrievalClient(retrieval.address)
        try:
            # What an agent does on a new workspace: search at once, through the gateway's
            # freshness budget. The first Sync starts the cold index; searches answer from
            # the first rows written.
            t_index = time.perf_counter()
            _, reply, first_ms = search(client, workspace, "merge map operator", GATEWAY_BUDGET_MS)
            while not reply.results:
                _, reply, first_ms = search(client, workspace, "merge map operator", GATEWAY_BUDGET_MS)
            results["first_answer_s"] = time.perf_counter() - t_index
            results["first_search_ms"] = first_ms
            results["first_search_results"] = len(reply.results)
            # Statuses by the contract's names (INDEXING_STATUS_INDEXING), as results files record them.
            results["first_search_status"] = f"INDEXING_STATUS_{reply.metadata.indexing_status.name}"
            results["first_search_completeness"] = f"RESULT_COMPLETENESS_{reply.metadata.result_completeness.name}"
            results["cold_first_lexical_s"] = time.perf_counter() - t_start
            results["cold_first_lexical_after_serving_s"] = time.perf_counter() - t_serving
            # The stream joins the cold sync the first Search started; when each step is first
            # reported says when the one before it ended (the lexical-first pass writes every
            # file once, static vectors included, before the chunking step begins).
            phase_seen: dict[IndexPhase, float] = {}
            streamed: list = []

            def follow_index() -> None:
                for progress in client.index(str(workspace), False, 1800):
                    phase_seen.setdefault(progress.phase, time.perf_counter())
                    streamed.append(progress)

            follower = threading.Thread(target=follow_index, daemon=True)
            follower.start()
            # Meanwhile: when a question with no identifier in it is first answered by static vectors.
            while follower.is_alive() and "first_static_answer_s" not in results:
                _, probe, _ = search(client, workspace, SEMANTIC_PROBE, GATEWAY_BUDGET_MS)
                if static_hit(probe):
                    results["first_static_answer_s"] = time.perf_counter() - t_index
                    results["first_static_answer_channels"] = [
                        f"VECTOR_CHANNEL_{c.upper()}" for c in probe.metadata.vector_channels]
                else:
                    time.sleep(0.25)
            follower.join()
            last = streamed[-1] if streamed else None
            t_lexical = time.perf_counter()
            results["lexical_index_s"] = t_lexical - t_serving
            results["chunks_upserted"] = last.stats.chunks_upserted if last is not None and last.stats else 0
            if IndexPhase.CHUNKING in phase_seen and IndexPhase.LEXICAL in phase_seen:
                results["static_first_pass_s"] = phase_seen[IndexPhase.CHUNKING] - t_index

            status = client.status(str(workspace), 30)
            results["static_model_id"] = status.static_model_id
            results["static_vector_chunks_written"] = status.static_vector_chunks
            results["chunks_written"] = status.chunks
            results["index_bytes_written"] = status.index_bytes
            if status.static_model_id and status.static_vector_chunks >= status.chunks > 0:
                results["static_searchable_s"] = t_lexical - t_index
            # While the primary model embeds in the background: warm queries and an edit.
            texts = warm_query_texts()
            embedded_before = status.embedded_chunks
            background = warm_and_edit(client, workspace, texts, original_edit_text, "background_")
            status = client.status(str(workspace), 30)
            results.update(background)
            results["background_edit_sync_ms"] = background.get("background_edit_sync_ms_server", 0.0)
            results["background_embedded_chunks"] = [embedded_before, status.embedded_chunks, status.chunks]
            embed_started = time.perf_counter()
            embedded_at_start = status.embedded_chunks
            while status.indexing_status != IndexingStatus.READY:
                if status.indexing_status == IndexingStatus.FAILED:
                    results["embedding_error"] = status.error
                    break
                if time.perf_counter() - embed_started > args.max_embed_wait:
                    results["embedding_timed_out"] = True
                    break
                time.sleep(2.0)
                status = client.status(str(workspace), 30)
            t_ready = time.perf_counter()
            results["chunks"] = status.chunks
            results["embedded_chunks"] = status.embedded_chunks
            results["embedding_wait_s"] = t_ready - embed_started
            results["index_to_ready_s"] = t_ready - t_serving
            # Only what was embedded while we watched counts: a resumed index may start half embedded.
            embed_seconds = t_ready - embed_started
            embedded_now = status.embedded_chunks - embedded_at_start
            results["embed_chunks_per_s"] = (embedded_now / embed_seconds) if embed_seconds > 0 else 0.0
            results["embedded_before_poll"] = embedded_at_start
            results["index_bytes_reported"] = status.index_bytes
            results["state_dir_bytes"] = tree_bytes(state_dir)
            results["indexing_status"] = f"INDEXING_STATUS_{status.indexing_status.name}"

            results.update(warm_and_edit(client, workspace, texts, original_edit_text, ""))
            # Versions younger than the retention outlive the embedding run's last maintenance;
            # the service drops them (and the files only they used) once old enough. The size
            # that stays is measured after that.
            settle_at = t_ready + DEFAULT_VERSION_RETENTION.total_seconds() + SETTLE_S
            time.sleep(max(settle_at - time.perf_counter(), 0.0))
            results["state_dir_bytes_settled"] = tree_bytes(state_dir)
            results["index_bytes_settled"] = client.status(str(workspace), 30).index_bytes
        finally:
            client.close()
        results["rss_mib"] = {svc.name: svc.peak_rss_mib() for svc in services}
    except BaseException:
        # Whatever was measured before the failure is still worth seeing.
        results["rss_mib_at_failure"] = {svc.name: svc.peak_rss_mib() for svc in services}
        print(json.dumps(results, indent=2), flush=True)
        raise
    finally:
        if original_edit_text is not None:
            edit_path.write_text(original_edit_text, encoding="utf-8")
        for svc in reversed(services):
            svc.stop()

    payload = build_payload(results, workspace, fresh_state_dir, args.max_embed_wait)
    print(speed_table(payload))
    print("\n" + static_channel_lines(results))
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))
    path = write_results("speed", payload, results_dir=args.results_dir)
    print(f"\nwrote {path}; `make bench-report` puts it in the READMEs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
