"""Speed sections, one per bench/speed/ script: a workspace cold to warm (run_speed.py), the query
pipeline on the 300k-line workspace, indexing spread over workers, the index stores, MCP tool
calls, and health during a cold index.

The tables a bench prints are these functions over the payload it writes, so what a run prints and
what `make bench-report` puts in the READMEs cannot drift apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.report.tables import md_table, mib, provenance

# --- A workspace cold to warm (bench/speed/run_speed.py) ----------------------------------


def _rss(rss: dict[str, float | None]) -> str:
    return ", ".join(f"{name} {mib(v)}" for name, v in rss.items())


def speed_workspace(doc: dict[str, Any]) -> str:
    ws = doc["workspace"]
    return (
        f"{ws['name']}: {ws['files']:,} files, {ws['lines']:,} lines, {ws['source_bytes'] / 2**20:,.1f} MiB of source"
    )


def speed_goal_labels(goals: dict[str, float]) -> dict[str, str]:
    return {
        "cold": f"< {goals['cold_first_lexical_s']:g} s",
        "ready": f"≤ {goals['index_to_ready_s'] / 60:g} min",
        "warm": f"≤ {goals['warm_p50_ms']:g} / {goals['warm_p95_ms']:g} ms",
        "edit": f"≤ {goals['edit_overhead_ms']:g} ms overhead",
    }


def _embedding_outcome(m: dict[str, Any]) -> str:
    return (" — stopped waiting" if m.get("embedding_timed_out") else "") + (
        f" — failed: {m['embedding_error']}" if m.get("embedding_error") else ""
    )


def _settled_size(doc: dict[str, Any]) -> tuple[float, float, float]:
    """(state dir bytes, service-reported bytes, × source) once old versions are cleaned."""
    m = doc["measures"]
    settled = m.get("state_dir_bytes_settled", m["state_dir_bytes"])
    reported = m.get("index_bytes_settled", m["index_bytes_reported"])
    return settled, reported, settled / max(doc["workspace"]["source_bytes"], 1)


def _static_channel_rows(m: dict[str, Any], goals: dict[str, float]) -> list[tuple[str, str]]:
    """The two-channel index (issue 16): how soon static vectors answer, and interactive work
    while the primary model fills its column in the background. Empty for a run without them."""
    if "first_answer_s" not in m:
        return []

    def seconds(key: str) -> str:
        return f"{m[key]:.2f} s" if m.get(key) is not None else "not reached"

    rows = [
        (f"**First answer with results** (`index` starts → results; goal ≤ {goals['first_answer_s']:g} s)",
         f"**{seconds('first_answer_s')}**; first answer found by static vectors {seconds('first_static_answer_s')}"),
        (f"**Every chunk searchable with static vectors** (goal ≤ {goals['static_searchable_s']:g} s)",
         (f"**{seconds('static_searchable_s')}** ({m.get('static_vector_chunks_written', 0):,} chunks, "
         f"every file written once after {seconds('static_first_pass_s')})")),
    ]
    if "background_warm_p95_ms" in m:
        embedded = m.get("background_embedded_chunks") or [0, 0, 0]
        rows += [
            (f"**During the background pass**: warm p50 / p95 (goal p95 ≤ {goals['background_warm_p95_ms']:g} ms)",
             (f"**{m['background_warm_p50_ms']:.0f} / {m['background_warm_p95_ms']:.0f} ms** "
             f"(primary vectors {embedded[0]:,} → {embedded[1]:,} of {embedded[2]:,} meanwhile)")),
            ("**During the background pass**: one-file edit, server sync "
             f"(goal ≤ {goals['background_edit_sync_ms']:g} ms)",
             (f"**{m['background_edit_sync_ms']:.0f} ms** (next Search +{m['background_edit_overhead_ms']:.0f} ms; "
             f"{m['background_edit_sync_chunks_embedded']} chunks embedded inline)")),
        ]
    return rows


def speed_table(doc: dict[str, Any]) -> str:
    """Every number of one run_speed run (what the bench prints)."""
    m = doc["measures"]
    goal = speed_goal_labels(doc["goals"])
    rows = [
        ("Workspace", speed_workspace(doc)),
        ("Services start (3 processes, to SERVING)", f"{m['services_start_s']:.2f} s"),
        (
            "Every chunk written, from serving (IndexWorkspace, no wait for embeddings)",
            f"{m['lexical_index_s']:.2f} s, {m.get('chunks_upserted', 0):,} chunks",
        ),
        (
            f"**Cold time to first lexical answer** (start → results; goal {goal['cold']})",
            (
                f"**{m['cold_first_lexical_s']:.2f} s** (first Search {m['first_search_ms']:.0f} ms, "
                f"{m['first_search_results']} results, {m['first_search_status']}, {m['first_search_completeness']})"
            ),
        ),
        (
            f"**Full embedding** (index start → READY; goal {goal['ready']})",
            f"**{m['index_to_ready_s']:.0f} s** for {m['embedded_chunks']:,} / {m['chunks']:,} chunks "
            f"({m['embedded_before_poll']:,} already embedded when polling began; "
            f"{m['embed_chunks_per_s']:.1f} chunks/s while polled) ({m['indexing_status']})" + _embedding_outcome(m),
        ),
        (
            f"**Warm query** p50 / p95 (Search incl. its sync; goal {goal['warm']})",
            (
                f"**{m['warm_p50_ms']:.0f} / {m['warm_p95_ms']:.0f} ms** over {m['warm_queries']} queries "
                f"(server p50: sync {m['warm_server_sync_p50_ms']:.0f} ms, "
                f"search {m['warm_server_search_p50_ms']:.0f} ms)"
            ),
        ),
    ]
    if "edit_search_ms" in m:
        rows.append(
            (
                f"**One-file edit**: next Search vs no-change Search (goal {goal['edit']})",
                (
                    f"**+{m['edit_overhead_ms']:.0f} ms** "
                    f"({m['edit_search_ms']:.0f} vs {m['nochange_search_ms']:.0f} ms; "
                    f"server sync {m['edit_sync_ms_server']:.0f} ms, {m['edit_sync_files_changed']} file changed, "
                    f"{m['edit_sync_chunks_embedded']} chunks embedded)"
                ),
            )
        )
    rows += _static_channel_rows(m, doc["goals"])
    settled, reported, ratio = _settled_size(doc)
    rows += [
        (
            "Index size on disk vs source",
            (
                f"{settled / 2**20:,.1f} MiB state dir (service reports {reported / 2**20:,.1f} MiB) "
                f"= {ratio:.1f}× source;"
                f" {m['state_dir_bytes'] / 2**20:,.1f} MiB at READY, before old versions pass the retention"
            ),
        ),
        ("Peak RSS (VmHWM)", _rss(m["rss_mib"])),
    ]
    return md_table(("Measure", "Value"), rows)


def speed_caption(doc: dict[str, Any]) -> str:
    settings = doc.get("settings", {})
    if settings.get("fresh_state_dir", True):
        state = "a fresh state dir (a true cold start)"
    else:
        state = "the state dir of an earlier run, so the cold rows measure a restart over an existing index"
    caption = f"`{doc['workspace']['name']}` on {state}"
    if doc["measures"].get("indexing_status") != "INDEXING_STATUS_READY":
        caption += "; the index was not READY, so warm queries and the edit ran while background embedding went on"
    return caption + "."


def render_speed_summary(doc: dict[str, Any]) -> str:
    """README: the issue-3 goals, one row each."""
    m = doc["measures"]
    ws = doc["workspace"]
    goal = speed_goal_labels(doc["goals"])
    settled, _, ratio = _settled_size(doc)
    rows = [
        (
            "Cold: process start → first lexical answer (search first; it starts the sync)",
            (
                f"**{m['cold_first_lexical_s']:.1f} s** "
                f"({m['cold_first_lexical_after_serving_s']:.1f} s after SERVING; "
                f"starting the 3 processes took {m['services_start_s']:.1f} s)"
            ),
            goal["cold"],
        ),
        (
            "Every chunk written with references (lexical index complete), from SERVING",
            f"{m['lexical_index_s']:.1f} s",
            "",
        ),
        (
            "Full embedding: index start → READY",
            (
                f"**{m['index_to_ready_s']:.0f} s**, {m['embedded_chunks']:,} / {m['chunks']:,} chunks embedded, "
                f"{m['embed_chunks_per_s']:.1f} chunks/s while polled "
                f"({m['indexing_status'].removeprefix('INDEXING_STATUS_')})"
                + _embedding_outcome(m)
            ),
            goal["ready"],
        ),
        (
            f"Warm query p50 / p95 over {m['warm_queries']} queries (Search incl. its sync)",
            f"**{m['warm_p50_ms']:.0f} / {m['warm_p95_ms']:.0f} ms**",
            goal["warm"].removesuffix(" overhead"),
        ),
    ]
    if "edit_search_ms" in m:
        rows.append(
            (
                "One-file edit: extra time of the next search",
                (
                    f"**+{m['edit_overhead_ms']:.0f} ms** "
                    f"({m['edit_search_ms']:.0f} vs {m['nochange_search_ms']:.0f} ms; "
                    f"server sync {m['edit_sync_ms_server']:.0f} ms)"
                ),
                goal["edit"].removesuffix(" overhead"),
            )
        )
    rows += [
        (
            "Index on disk vs source",
            f"{ratio:.1f}× ({settled / 2**20:,.1f} MiB for {ws['source_bytes'] / 2**20:,.1f} MiB of source)",
            "",
        ),
        ("Peak RSS (VmHWM)", _rss(m["rss_mib"]), ""),
    ]
    header = (f"Measure ({ws['name']}, {ws['lines']:,} lines, {m['chunks']:,} chunks)", "Result", "Goal")
    return "\n\n".join((provenance(doc), speed_caption(doc), md_table(header, rows)))


def render_speed_full(doc: dict[str, Any]) -> str:
    """bench/README: the table run_speed prints."""
    return "\n\n".join((provenance(doc), speed_caption(doc), speed_table(doc)))


# --- Pipeline speed on the 300k-line workspace -------------------------------------------------


def render_pipeline_speed(doc: dict[str, Any]) -> str:
    ws, settings = doc["workspace"], doc["settings"]
    rows = []
    for config, by_stage in doc["latency_ms"].items():
        stages = ", ".join(f"{name} {v['p50']:.0f} / {v['p95']:.0f}" for name, v in by_stage.items() if name != "total")
        total = by_stage["total"]
        rows.append((f"`{config}`", stages, f"{total['p50']:.0f} / {total['p90']:.0f} / **{total['p95']:.0f}**"))
    targets = [(t["target"], f"{t['measured_ms']:.0f} ms",
                f"≤ {t['goal_ms']:.0f} ms: {'met' if t['met'] else '**missed**'}")
               for t in doc.get("targets", [])]
    caption = (f"Warm, `{ws['name']}` ({ws['lines']:,} lines, {ws['chunks']:,} chunks, all embedded), "
               f"{settings['queries']} queries × {settings['passes']} passes after {settings['warm_up_passes']} "
               "warm-up pass, no sync; the LLM reranker talks to a local OpenAI-compatible stub that answers at "
               "once, so its row is our own overhead (prompt, HTTP, parsing, blend):")
    return "\n".join([
        provenance(doc), "", caption, "",
        md_table(("Configuration", "Per stage, ms p50 / p95", "Whole pipeline, ms p50 / p90 / p95"), rows), "",
        md_table(("Target", "Measured", "Goal"), targets),
    ])


def render_render_speed(doc: dict[str, Any]) -> str:
    """bench/speed/run_render_speed.py: the select stage with every rendering asked of the analysis
    service (as before) and with renderings from the index, and where the rest of an answer's time goes."""
    ws, settings, answers = doc["workspace"], doc["settings"], doc["answers"]
    latency = doc["latency_ms"]
    stages = [s for s in ("sync", "retrieve", "select", "select engine", "gateway", "total")
              if any(s in by_stage for by_stage in latency.values())]
    rows = [(f"`{config}`", *(f"{by_stage[s]['p50']:.1f} / {by_stage[s]['p95']:.1f}" if s in by_stage else "—"
                              for s in stages))
            for config, by_stage in latency.items()]
    n = answers["identical"] + answers["differing"]
    caption = (f"Warm, `{ws['name']}` ({ws['lines']:,} lines, {ws['chunks']:,} chunks, {ws['embedding_model']}), "
               f"{len(settings['questions'])} questions × {settings['passes']} passes after "
               f"{settings['warm_up_passes']} warm-up pass, through the gateway's pipeline with its sync, the two "
               "configurations in turn; ms p50 / p95. `select engine` is the selection service's own time inside "
               "the select stage (RenderSymbols included), `gateway` the pipeline's own time around the stages "
               "(the sync and the search run at once).")
    verdict = (f"Answers identical in both configurations: **{answers['identical']} of {n}**"
               + (f" (differing: {', '.join(answers['differing_questions'][:5])})" if answers["differing"] else "")
               + f"; answers without a fresh sync: {sum(doc.get('answers_without_a_fresh_sync', {}).values())}.")
    return "\n".join([provenance(doc), "", caption, "", md_table(("Configuration", *stages), rows), "", verdict])


# --- Indexing spread over workers ------------------------------------------------------------


SHARD_PREDICT_CORES = 16


def shard_prediction(runs: list[dict[str, Any]], cores: int) -> dict[str, Any] | None:
    """Wall time with `cores` workers on as many cores, from a least-squares line through the
    runs' CPU seconds against their worker count: the slope is what every worker adds, the rest
    is divided among them; the writer's own steps come from the 1-worker run."""
    points = [(r["workers"], sum(r["cpu_seconds"].values())) for r in runs]
    one = next((r for r in runs if r["workers"] == 1), None)
    if one is None or len({n for n, _ in points}) < 2:
        return None
    mean_n = sum(n for n, _ in points) / len(points)
    mean_c = sum(c for _, c in points) / len(points)
    slope = (sum((n - mean_n) * (c - mean_c) for n, c in points) / sum((n - mean_n) ** 2 for n, _ in points))
    divisible = mean_c - slope * mean_n
    writer = one["seconds"]["scan"] + one["seconds"]["open_and_plan"] + one["seconds"]["commit"]
    seconds = slope + divisible / cores + writer
    return {"cores": cores, "seconds": seconds, "speedup": one["seconds"]["total"] / seconds,
            "per_worker_cpu_s": slope, "divisible_cpu_s": divisible, "writer_s": writer,
            "analysis_rss_mib": max(max(r["analysis_peak_rss_mib"]) for r in runs)}


def render_shard_speed(doc: dict[str, Any]) -> str:
    ws = doc["workspace"]
    rows = []
    for storage, runs in doc["runs"].items():
        base = runs[0]["seconds"]["total"]
        for run in runs:
            s, cpu = run["seconds"], run["cpu_seconds"]
            shards = run["shards"]
            rows.append((storage, run["workers"], f"**{s['total']:.1f}**", f"{s['scan']:.1f}", f"{s['workers']:.1f}",
                         f"{s['commit']:.1f}", f"{base / s['total']:.2f}x",
                         f"{max(r['seconds'].get('first_answer', 0.0) for r in shards):.1f}",
                         f"{cpu['workers']:.0f} / {cpu['analysis']:.0f}" + (f" / {cpu['s3_server']:.0f}"
                                                                            if "s3_server" in cpu else ""),
                         f"{run['chunks']:,}",
                         "/".join(f"{x:g}" for x in run["load_avg_after"]) if "load_avg_after" in run else "–"))
    parts = [provenance(doc), "",
             (f"`{ws['name']}` ({ws['files']:,} files, {ws['lines']:,} lines) from an empty index, "
              f"{doc['settings']['profile']}; analysis services: {doc['settings']['analysis_services']}:"), "",
             md_table(("Storage", "Workers", "Total s", "Scan s", "Workers s", "Commit s", "Speed-up",
                       "First answer s", "CPU s workers / analysis (/ S3)", "Chunks", "Load after"), rows)]
    if "baseline" in doc:
        b = doc["baseline"]
        parts += ["", (f"Today's single-process sync (`Syncer`, lexical-first pass included), local disk, same "
                      f"profile: **{b['seconds']:.1f} s** for {b['chunks']:,} chunks.")]
    for storage, runs in doc["runs"].items():
        p = shard_prediction(runs, SHARD_PREDICT_CORES)
        if p is not None:
            parts += ["", (f"Predicted for {p['cores']} cores and as many workers ({storage}): "
                           f"**{p['seconds']:.1f} s**, "
                           f"{p['speedup']:.1f}x the 1-worker run. Fitted on the runs' CPU seconds: each worker adds "
                           f"{p['per_worker_cpu_s']:.1f} s that no split divides (its process and model, and its "
                           f"analysis service re-deriving the types every shard's references resolve through), "
                           f"{p['divisible_cpu_s']:.1f} s divide among the workers, and the writer's scan, plan and "
                           f"commit take {p['writer_s']:.1f} s; a core per worker, and memory for each analysis "
                           f"service (peak {p['analysis_rss_mib']:,} MiB here).")]
    return "\n".join(parts)


def render_store_speed(doc: dict[str, Any]) -> str:
    ws = doc["workspace"]
    rows = []
    for store in doc["stores"]:
        for refresh, stats in store["search"].items():
            rows.append((store["store"], f"{store['index_s']:.1f}", refresh, f"{stats['p50_ms']:.1f}",
                         f"**{stats['p95_ms']:.1f}**", str(stats["queries"])))
    return "\n".join([
        provenance(doc), "",
        (f"`{ws['name']}` ({ws['files']:,} files, {ws['lines']:,} lines), {doc['profile']}: the writer indexes it from "
         f"empty (every vector written); then a separate searcher process, sharing nothing with the writer but the "
         f"index URI, answers {doc['queries']} warm queries by workspace id (one warm-up pass first), search only:"),
        "",
        md_table(("Store", "Index s", "Searcher reads", "Search p50 ms", "Search p95 ms", "Queries"), rows),
    ])


# --- MCP tool calls ------------------------------------------------------------------------------


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def render_mcp_speed(doc: dict[str, Any]) -> str:
    ws, calls = doc["workspace"], doc["calls"]
    rows = [(f"`{tool}`", v["n"], v["errors"], f"{v['p50']:.0f} / {v['p95']:.0f}", f"{v['first_call_ms']:,.0f}")
            for tool, v in doc["latency_ms"].items()]
    answers = []
    for label, a in doc["semantic_search_answer"].items():
        tokens = a["text_tokens_all_answers"]
        answers.append((f"`{label}`", f"{a['with_results']} / {a['answers']}", f"{a['results']['median']:.0f}",
                        f"{tokens['mean']:,.0f} / {tokens['median']:,.0f} / {tokens['max']:,.0f}",
                        f"{a['response_tokens']['max']:,.0f}", f"{a['chars']['max']:,.0f}",
                        f"{a['over_25000_tokens']} / {a['over_50000_chars']}"))
    cold = doc["cold_start"]
    verdict = "met" if cold["met"] else "**missed**"
    after = cold["index_status_after"]
    written = f", {after['chunks']:,} chunks written" if "chunks" in after else ""
    listed = (f", tools listed after **{cold['tools_listed_s'] * 1000:.0f} ms** (goal ≤ "
              f"{cold['handshake_goal_s'] * 1000:.0f} ms: {'met' if cold['handshake_met'] else '**missed**'})"
              if "tools_listed_s" in cold else "")
    cold_line = (f"Cold start on a fresh state dir (`codecompass mcp` starts every service behind the handshake, then "
                 f"the workspace indexes in the background): handshake after {cold['handshake_s'] * 1000:.0f} ms"
                 f"{listed}, first answer with "
                 f"results after **{cold['first_answer_s']:.1f} s** (the {_ordinal(cold['tries'])} call; the "
                 f"index was still {after['indexing_status']}{written}); goal < {cold['goal_s']:.0f} s: "
                 f"{verdict}.")
    return "\n".join([
        provenance(doc), "",
        (f"Through the SDK's stdio client ({doc['client']['protocol_version']}), warm, `{ws['name']}` "
         f"({ws['lines']:,} lines), {calls['queries']} calls per tool, client-side:"), "",
        md_table(("Tool", "Calls", "Errors", "ms p50 / p95", "First call ms"), rows), "",
        "`semantic_search` answers (text tokens are the code items, cl100k_base):", "",
        md_table(("Call", "With results", "Results median", "Text tokens mean / median / max",
                  "Whole response tokens max", "Characters max", "Over 25k tokens / 50k chars"), answers), "",
        cold_line,
    ])


def render_cold_start(doc: dict[str, Any]) -> str:
    ws, summary = doc["workspace"], doc["summary"]
    first = summary["first_answer_s"]
    rows = []
    for i, run in enumerate(doc["per_run"], start=1):
        ready = run.get("services_ready_s") or {}
        stages = (run.get("try_log") or [{}])[-1].get("stage_ms") or {}
        rows.append((i, f"{run['tools_listed_s'] * 1000:.0f}", f"{max(ready.values()):.1f}" if ready else "—",
                     "—" if run.get("first_answer_s") is None else f"{run['first_answer_s']:.2f}",
                     " / ".join(f"{stages[k]:.0f}" if k in stages else "—" for k in ("sync", "retrieve", "select"))))
    verdict = "met" if summary["met"] else "**missed**"
    return "\n".join([
        provenance(doc), "",
        (f"From services down and a fresh state dir, `codecompass mcp --workspace {ws['name']}` "
         f"({ws['lines']:,} lines, never indexed) through the SDK's stdio client, `semantic_search` "
         f"\"{doc['query']}\" until an answer has results, {summary['runs']} runs:"), "",
        md_table(("Run", "Tools listed ms", "Services SERVING s (slowest)", "First answer s",
                  "Its sync / retrieve / select ms"), rows), "",
        (f"First answer with results: median **{first['median']:.2f} s** ({first['min']:.2f}–{first['max']:.2f}); "
         f"goal ≤ {summary['goal_s']:.0f} s: {verdict}."),
    ])


# --- Where a cold index's seconds go (bench/speed/index_stages.py) ------------------------------


def _secs(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"


def index_stages_table(doc: dict[str, Any]) -> list[str]:
    """The stages' wall seconds and share of the time to READY, then what the sync, the analysis
    and embedding services and maintenance spent inside them."""
    ready = doc["ready_s"]
    stages = doc["stages_s"]
    rows = [(name, _secs(secs), f"{secs / ready:.0%}" if ready else "—") for name, secs in stages.items()]
    rows.append(("**to READY**", f"**{ready:.1f}**", "100%"))
    sync, analysis, embedding, maint = doc["sync_ms"], doc["analysis"], doc["embedding"], doc["maintenance"]
    inside = [
        ("sync: waiting on the analysis stream (reference pass)", _secs(sync.get("chunk", 0) / 1000)),
        ("sync: lexical pass rows written", _secs(sync.get("lexical_first", 0) / 1000)),
        ("sync: static vectors", _secs(sync.get("static_vectors", 0) / 1000)),
        ("sync: signature cascade", _secs(sync.get("cascade", 0) / 1000)),
        ("sync: rows written (reference pass)", _secs(sync.get("write", 0) / 1000)),
        ("analysis: ChunkFiles, lexical pass (syntax only)",
         f"{_secs(analysis['lexical_chunk_s'])} ({analysis['lexical_calls']} streams)"),
        ("analysis: ChunkFiles, reference pass (Programs, references)",
         f"{_secs(analysis['reference_chunk_s'])} ({analysis['reference_calls']} streams)"),
        ("embedding service: embedding.embed",
         f"{_secs(embedding['service_s'])} ({embedding['calls']} calls"
         + (f", {embedding['chunks_per_s']:.1f} chunks/s over the stage)" if embedding.get("chunks_per_s") else ")")),
        ("maintenance: compaction, index segments, cleanup",
         f"{_secs(maint['total_s'])} ({maint['count']} runs, longest {maint['longest_s']:.1f} s)"),
    ]
    cpu = ", ".join(f"{name} {secs:.0f}" for name, secs in doc["cpu_s"].items() if secs is not None)
    ws = doc["workspace"]
    return [
        (f"Cold index of `{ws['name']}` ({ws['files']:,} files, {ws['lines']:,} lines), {doc['chunks']:,} chunks, "
         f"until READY" + (f" (primary model: {doc['embedding_model']})" if doc.get("embedding_model") else "") + ":"),
        "",
        md_table(("Stage", "Wall s", "Share"), rows), "",
        md_table(("Inside the stages", "s"), inside), "",
        f"CPU seconds per service: {cpu}; peak RSS: {_rss(doc['peak_rss_mib'])}; "
        f"state dir at READY {doc['index_bytes_at_ready'] / 2**20:.1f} MiB.",
    ]


def render_index_stages(doc: dict[str, Any]) -> str:
    return "\n".join([provenance(doc), "", *index_stages_table(doc)])


# --- Health during a cold index ---------------------------------------------------------------


def render_health(doc: dict[str, Any]) -> str:
    m = doc["measures"]
    health, render = m["health"], m["render"]
    goal = doc.get("goals", {}).get("health_max_ms", 1000.0)
    verdict = "met" if health["max_ms"] <= goal and not m.get("health_errors") else "missed"
    rows = [
        ("`grpc.health.v1` Check, every 100 ms", health["count"],
         f"{health['p50_ms']:.0f} / {health['p95_ms']:.0f} / **{health['max_ms']:.0f}**",
         (f"answers within {goal / 1000:g} s: {verdict} ({m.get('health_over_1s', 0)} over, "
         f"{m.get('health_errors', 0)} errors)")),
        ("`RenderSymbols`, every second", render["count"],
         f"{render['p50_ms']:.0f} / {render['p95_ms']:.0f} / {render['max_ms']:.0f}",
         f"{m.get('render_errors', 0)} errors"),
    ]
    caption = (f"While `ChunkFiles` with references ran cold over `{Path(doc['workspace']).name}` "
               f"({m['chunk_files']:,} files, {m['chunk_references']:,} references, {m['chunk_s']:.0f} s; "
               f"analysis peak RSS {m['peak_rss_mib']:,.0f} MiB):")
    return "\n".join([provenance(doc), "", caption, "",
                      md_table(("Call", "Calls", "ms p50 / p95 / max", "Result"), rows)])


# --- Where the bytes of an index go (bench/index_size.py) -------------------------------------


def _mib1(n: float) -> str:
    return f"{n / 2**20:.1f} MiB"


def render_index_size(doc: dict[str, Any]) -> str:
    ws, goals = doc["workspace"], doc["goals"]
    settled, peak, source = doc["state_dir_bytes"], doc["state_dir_peak_bytes"], ws["bytes"]

    def verdict(value: float, goal: float) -> str:
        return "met" if value <= goal else "**missed**"

    # Parts under 10 KiB (manifests, transactions) are left out of the table; they are in the file.
    parts = [(name, f"{size / 2**20:.2f}") for name, size in sorted(doc["parts"].items(), key=lambda kv: -kv[1])
             if size >= 10 * 1024]
    return "\n".join([
        provenance(doc), "",
        (f"`{ws['name']}` ({ws['files']:,} files, {ws['lines']:,} lines, {_mib1(source)} of source) indexed from "
         f"nothing through the real services until READY ({doc['chunks']:,} chunks, {doc['embedded_chunks']:,} "
         f"embedded, {doc['indexed_s']:.0f} s), then left until its size stopped changing (old "
         "versions dropped, the settled table merged into large fragments):"), "",
        md_table(("Measure", "Result", "Goal"), [
            ("Settled state dir vs source", f"**{doc['ratio']:.2f}×** ({_mib1(settled)})",
             f"≤ {goals['settled_over_source']}×: {verdict(doc['ratio'], goals['settled_over_source'])}"),
            ("Peak while indexing vs settled", f"**{doc['peak_over_settled']:.2f}×** ({_mib1(peak)})",
             f"≤ {goals['peak_over_settled']}×: {verdict(doc['peak_over_settled'], goals['peak_over_settled'])}"),
            ("At READY, before the retention", _mib1(doc["state_dir_bytes_at_ready"]), ""),
        ]), "",
        md_table(("Part of the state dir", "MiB"), parts),
    ])


# --- What fewer bits a vector cost (bench/vector_fidelity.py) ---------------------------------


def render_vector_fidelity(doc: dict[str, Any]) -> str:
    agreement = [
        (form, str(doc["bytes_per_row"][form]),
         f"{r['row_cosine_mean']:.4f} / {r['row_cosine_p1']:.4f} / {r['row_cosine_min']:.4f}",
         f"{r['top10_kept']:.1%}", f"{r['top1_same']:.1%}", f"{r['top10_largest_score_change']:.3f}")
        for form, r in doc["agreement"].items()
    ]
    quality = doc["bench_quality"]
    forms = list(quality)
    keys = [k for k in quality[forms[0]] if k.endswith(" all") or k.split(" ")[1] in ("nl", "concept")]
    mrr = [(key, str(quality[forms[0]][key]["queries"]), *(f"{quality[f][key]['mrr10']:.3f}" for f in forms))
           for key in keys]
    return "\n".join([
        provenance(doc), "",
        (f"The static channel of `{Path(doc['workspace']).name}` ({doc['rows']:,} chunks, {doc['dimensions']} "
         f"dimensions, `{doc['static_model']}`), each stored form against the float vectors, over "
         f"{doc['questions']:,} mined questions (seed {doc['seed']}):"), "",
        md_table(("Stored as", "Bytes a row", "Row cosine mean / p1 / min", "Float top ten kept",
                  "Same first result", "Largest top-ten score change"), agreement), "",
        "The static vectors alone, MRR@10 on the quality benchmark's questions about the packages ws-300k holds:",
        "",
        md_table(("Split, type", "Questions", *forms), mrr),
    ])


# --- A one-file edit made visible (bench/speed/edit_visible.py) -------------------------------


def render_edit_visible(doc: dict[str, Any]) -> str:
    ws, s = doc["workspace"], doc["summary"]
    first = s["first_edit"]
    steady = s["edits"] - 1
    rows = [
        (label, f"{s[key]['p50']:.0f}", f"{s[key]['p95']:.0f}")
        for label, key in (("Sync (client)", "sync_ms"), ("Sync (server's own duration)", "server_sync_ms"),
                           ("Search (client)", "search_ms"),
                           (f"**Visible: sync + search** (goal ≤ {s['goal_ms']:.0f} ms: "
                            f"{'met' if s['met'] else '**missed**'})", "visible_ms"))
    ]
    return "\n".join([
        provenance(doc), "",
        (f"`{ws['name']}` ({ws['files']:,} files, {ws['lines']:,} lines), READY with {doc['index']['chunks']:,} "
         f"chunks: {s['edits']} edits of `{ws['target']}` {doc['think_s']:g} s apart, each a new exported "
         f"function, then a search for it in words. Times over the {steady} edits after the first, in ms:"), "",
        md_table(("Edit → search", "p50", "p95"), rows), "",
        *([("Inside the server's sync, p50 ms per step: "
            + ", ".join(f"{step} {ms:.1f}" for step, ms in sorted(steps.items(), key=lambda kv: -kv[1])) + "."), ""]
          if (steps := s.get("server_steps_p50_ms")) else []),
        (f"The new function was in the top ten after {s['found_in_top10']} of {s['edits']} edits; "
         f"{s['chunks_embedded_inline']} chunks were embedded inside a sync (the background embedder writes "
         f"their primary vectors). The first edit after a restart: sync {first['sync_ms']:.0f} ms, "
         f"visible {first['visible_ms']:.0f} ms."),
    ])
