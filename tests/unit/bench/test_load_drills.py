"""The load bench's and the drills' pure parts: summaries, the knee, the drills' phases and
verdicts, and their README sections."""

from __future__ import annotations

from bench import drills, load
from bench.lib import loadgen
from bench.lib.loadgen import GRPC_SEARCH, SEARCH_CODE, Call, summarize
from bench.report.faults import render_drills
from bench.report.load import render_load


def call(started_s: float, ms: float, error: str = "", kind: str = GRPC_SEARCH, **meta) -> Call:
    return Call(kind=kind, client=0, started_s=started_s, ms=ms, error=error, meta=meta)


def test_a_summary_counts_every_call_in_latency_and_only_answers_in_throughput():
    calls = [call(0.1, 100.0), call(0.2, 200.0), call(0.3, 300.0, error="boom"), call(9.9, 400.0),
             call(10.5, 500.0)]  # started after the run: latency yes, throughput no
    s = summarize(calls, 10.0)
    assert (s["calls"], s["errors"], s["throughput_per_s"]) == (5, 1, 0.3)
    assert (s["p50_ms"], s["p95_ms"], s["max_ms"]) == (300.0, 500.0, 500.0)
    assert s["error_samples"] == ["boom"]


def test_levels_split_a_fifth_to_grpc_and_the_knee_is_where_the_cores_fill():
    assert [load.split(n, 0.2) for n in (1, 5, 10, 50)] == [(1, 0), (4, 1), (8, 2), (40, 10)]

    def level(clients: int, throughput: float, busy: float) -> dict:
        return {"clients": clients, "wall_s": 10.0, "cpu_s": {"retrieval-1": busy * 6, "gateway": busy * 4},
                "summary": {"all": {"throughput_per_s": throughput, "p95_ms": clients * 100.0}}}

    sweep = [level(1, 4.0, 1.1), level(5, 12.0, 1.85), level(10, 12.5, 1.9), level(50, 14.0, 1.92)]
    assert load.knee(sweep, 2) == {"clients": 5, "throughput_per_s": 12.0, "p95_ms": 500.0, "cores_busy": 1.85,
                                   "cores": 2, "best_throughput_per_s": 14.0}
    # Never saturated: the busiest level.
    assert load.knee(sweep[:1], 4)["clients"] == 1
    assert load.knee([], 2) is None


def test_phases_and_calls_in_flight_go_by_start_time():
    calls = [call(0.5, 100.0), call(2.9, 400.0, error="UNAVAILABLE"), call(3.5, 100.0)]
    assert drills.phase_counts(calls, 0.0, 3.0) == {"calls": 2, "errors": 1, "error_samples": ["UNAVAILABLE"]}
    assert drills.phase_counts(calls, 3.0)["calls"] == 1
    assert drills.in_flight(calls, 3.0) == [calls[1]]


def test_an_answer_is_degraded_when_it_says_the_primary_model_was_missing():
    assert drills.degraded({"primary_unavailable_reason": "embedding_unavailable"})
    assert drills.degraded({"semantic_fallback": True})
    assert not drills.degraded({"semantic_skipped_reason": "lexical_short_circuit", "semantic_fallback": False})
    down = [call(5.0, 50.0, primary_unavailable_reason="embedding_unavailable"),
            call(5.1, 50.0, semantic_skipped_reason="lexical_short_circuit"),
            call(5.2, 50.0, kind=SEARCH_CODE), call(5.3, 50.0, error="x", kind=SEARCH_CODE)]
    assert drills.flags_by_kind(down) == {
        GRPC_SEARCH: {"answered": 2, "flagged": 1, "flags": {"primary_unavailable_reason=embedding_unavailable": 1,
                                                             drills.LEXICAL_ONLY: 1}},
        SEARCH_CODE: {"answered": 1, "flagged": 0, "flags": {}}}


WRITER = {"modules": 40, "clients": {"grpc": 3}, "killed_in_phase": "chunking", "restarted_writer_finished_s": 0.42,
          "rows": {"old": 584, "after_kill": 584, "after_restart": 560, "clean": 560, "duplicate_ids": 0,
                   "equal_to_clean": True},
          "searches": {"calls": 564, "errors": 0, "error_samples": [], "totals_seen": [560, 584]}}


def test_the_writer_drill_fails_on_a_partial_version_a_lost_row_or_a_kill_after_the_end():
    assert drills.verdict("writer_killed", WRITER)[1]
    partial = {**WRITER, "searches": {**WRITER["searches"], "totals_seen": [560, 572, 584]}}
    lost = {**WRITER, "rows": {**WRITER["rows"], "equal_to_clean": False}}
    late = {**WRITER, "killed_in_phase": "no report before the end"}
    assert not any(drills.verdict("writer_killed", r)[1] for r in (partial, lost, late))


STORE = {"mode": "hung", "clients": {"grpc": 2}, "outage_s": 8.0, "sync_deadline_s": 5.0,
         "writer_recovered_after_s": 0.71, "module_rows": 12,
         "gateway_sync_while_down": {"ok": False, "status": "syncing", "error": "", "seconds": 0.31,
                                     "error_lines": 0, "traceback": False},
         "sync_while_down": {"ok": False, "status": "deadline_exceeded", "seconds": 5.0, "error_lines": 1,
                             "traceback": False,
                             "error": "retrieval service at 127.0.0.1:1 did not answer in time (Deadline Exceeded)"},
         "searches": {p: {"calls": 50, "errors": 0, "error_samples": []} for p in ("before", "down", "after")},
         "rows": {"before": 224, "after_recovery": 236, "old_rows_intact": True, "added_by_the_outage_sync": 12,
                  "after_next_sync": 248, "duplicate_ids": 0, "searchers_see_last_sync": True},
         "sync_after_recovery": {"ok": True}}


def test_the_store_drill_needs_the_deadline_kept_and_the_rows_intact():
    assert drills.verdict("store_hung", STORE)[1]
    hung_past = {**STORE, "sync_while_down": {**STORE["sync_while_down"], "seconds": 30.0}}
    changed = {**STORE, "rows": {**STORE["rows"], "old_rows_intact": False}}
    assert not drills.verdict("store_hung", hung_past)[1] and not drills.verdict("store_hung", changed)[1]


def level_row(clients: int) -> dict:
    kind = {"calls": 100, "errors": 0, "throughput_per_s": 5.0, "p50_ms": 200.0, "p95_ms": 900.0, "p99_ms": 1500.0,
            "max_ms": 1600.0, "error_samples": []}
    return {"clients": clients, "mcp_clients": clients - clients // 5, "grpc_clients": clients // 5, "seconds": 20.0,
            "wall_s": 20.0, "summary": {"all": {**kind, "calls": 200}, "mcp": kind, "grpc_search": kind},
            "cpu_s": {"retrieval-1": 15.0, "retrieval-2": 15.0, "analysis": 6.0, "gateway": 4.0},
            "load_avg_after": [3.5, 2.0, 1.0]}


def test_the_load_section_shows_the_sweep_the_knee_and_the_target():
    target = {**level_row(50), "seconds": 60.0, "goal": {"errors": 0, "p95_ms": 1000.0}, "met": True}
    doc = {"kind": "load", "run": {"machine": {"nproc": 2}}, "load_avg_at_start": [1.0, 1.5, 2.0],
           "workspace": {"name": "ws-300k", "files": 972, "lines": 339758, "chunks": 22066,
                         "embedding_model": "code-small x"},
           "deployment": {"processes": ["analysis", "gateway"], "grpc_server_threads": 16},
           "settings": {"cores": 2, "grpc_share": 0.2, "queries": 200, "level_s": 20.0, "knee_share": 0.9},
           "sweep": [level_row(5), level_row(50)],
           "knee": {"clients": 5, "throughput_per_s": 5.0, "best_throughput_per_s": 5.0, "p95_ms": 900.0,
                    "cores_busy": 1.9, "cores": 2},
           "target": target,
           "paced": [{**target, "think_s": 10.0, "met": False,
                      "summary": {**target["summary"], "all": {**target["summary"]["all"], "p95_ms": 1200.0}}}]}
    text = render_load(doc)
    assert ("| 5 | 4 + 1 | 200 | 0 (0 / 0) | 5.0 | 200 / 900 / 1,500 | 200 / 900 / 1,500 | 200 / 900 / 1,500 | 2.00 "
            "| retrieval-1 38%, retrieval-2 38%, analysis 15%, gateway 10% | 3.5/2/1 |") in text
    assert "Knee: **5 clients**, the fewest at which the services keep 90% of the 2 cores busy (1.90;" in text
    assert "Target, 50 clients for 60 s (goal: 0 errors, p95 ≤ 1,000 ms)" in text
    assert "no pause p95 **900 ms**, 0 errors: met; pause 10 s p95 **1,200 ms**, 0 errors: **missed**." in text
    assert "| 50, pause 10 s |" in text


def test_paced_clients_pause_as_drawn_and_closed_loop_ones_never():
    plan = loadgen.LoadPlan(workspace="/ws", queries=("q",), duration_s=1.0, think_s=4.0)
    first, again = plan.pauses(3), plan.pauses(3)
    drawn = [first() for _ in range(2000)]
    assert drawn[:5] == [again() for _ in range(5)]  # seeded per client: runs repeat
    assert 3.6 < sum(drawn) / len(drawn) < 4.4 and min(drawn) >= 0
    closed = loadgen.LoadPlan(workspace="/ws", queries=("q",), duration_s=1.0).pauses(3)
    assert {closed() for _ in range(10)} == {0.0}


def test_the_drills_section_has_a_row_per_drill_with_its_verdict():
    writer = {**WRITER, "expect": "the old or the new", "met": True}
    store = {**STORE, "expect": "deadline kept", "met": False}
    doc = {"kind": "drills", "run": {"machine": {"nproc": 2}}, "profile": "code-static",
           "embedding_drill_profile": "code-small", "drills": {"writer_killed": writer, "store_hung": store}}
    text = render_drills(doc)
    assert "| writer SIGKILLed mid-sync |" in text and "chunk counts seen 560 and 584 (old 584, new 560)" in text
    assert "identical to a clean index's 560, 0 duplicate ids | the old or the new | met |" in text
    assert ("with no budget and a 5 s deadline: deadline_exceeded after 5 s: `retrieval service at 127.0.0.1:1 did "
            "not answer in time (Deadline Exceeded)`") in text
    assert text.rstrip().endswith("| deadline kept | **missed** |")
