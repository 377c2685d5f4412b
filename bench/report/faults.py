"""Fault sections: failure drills under load (bench/drills.py) and bad input (bench/badinput.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from bench.report.tables import md_table, provenance


def _cell(text: str) -> str:
    """Table-safe text: a `|` would start a new column, even inside backticks."""
    return text.replace("|", "\\|").replace("\n", " ")


# --- Failure drills (bench/drills.py) ------------------------------------------------------------


def _errors(phases: dict[str, Any], names: Sequence[str]) -> str:
    return " / ".join(f"{phases[n]['errors']} of {phases[n]['calls']}" for n in names)


def _tracebacks(r: dict[str, Any]) -> str:
    logged = r.get("log_tracebacks") or {}
    return ("; tracebacks in logs: " + ", ".join(f"{k} {v}" for k, v in logged.items())) if logged else ""


def _drill_searcher(r: dict[str, Any]) -> tuple[str, str, str]:
    flying = r["in_flight_at_kill"]
    return ("searcher SIGKILLed under load",
            (f"1 of 2 searchers killed at {r['kill_at_s']:g} s of {r['seconds']:g} s, {r['clients']['mcp']} MCP + "
             f"{r['clients']['grpc']} gRPC clients"),
            (f"errors before / after: {_errors(r, ('before', 'after'))}; calls in flight at the kill: "
             f"{flying['calls']}, {flying['errors']} errors, slowest {flying['slowest_ms']:,.0f} ms; p95 over the run "
             f"{r['summary']['p95_ms']:,.0f} ms{_tracebacks(r)}"))


def _drill_embedding(r: dict[str, Any]) -> tuple[str, str, str]:
    kinds = "; ".join(f"`{kind}` {k['flagged']} of {k['answered']} flagged"
                      + (f" ({k['flags'].get('semantic_skipped_reason=lexical_short_circuit', 0)} name-shaped, "
                         "never embedded)" if k["flags"].get("semantic_skipped_reason=lexical_short_circuit") else "")
                      for kind, k in r["down"]["by_kind"].items())
    recovered = "never" if r["recovered_after_s"] is None else f"{r['recovered_after_s']:g} s"
    return ("embedding SIGKILLed under load, then restarted",
            (f"killed at {r['kill_at_s']:g} s, restarted at {r['restart_at_s']:g} s (serving at "
             f"{r['serving_again_s']:g} s), {r['clients']['mcp']} MCP + {r['clients']['grpc']} gRPC clients"),
            (f"errors before / down / after: {_errors(r, ('before', 'down', 'after'))}; while down: {kinds}; "
             f"answers unflagged {recovered} after the restart{_tracebacks(r)}"))


def _drill_writer(r: dict[str, Any]) -> tuple[str, str, str]:
    rows = r["rows"]
    totals = " and ".join(f"{t:,}" for t in r["searches"]["totals_seen"])
    return ("writer SIGKILLed mid-sync",
            (f"edit of {r['modules']} generated modules synced; writer killed at its first report past the scan "
             f"({r['killed_in_phase']}), restarted, edit indexed again; "
             f"{r['clients']['grpc']} gRPC clients throughout"),
            (f"searches: {r['searches']['errors']} errors of {r['searches']['calls']}, chunk counts seen {totals} "
             f"(old {rows['old']:,}, new {rows['clean']:,}); rows after the kill {rows['after_kill']:,}; the restarted "
             f"writer finished in {r['restarted_writer_finished_s']:g} s: {rows['after_restart']:,} rows, "
             f"{'identical to' if rows['equal_to_clean'] else '**different from**'} a clean index's "
             f"{rows['clean']:,}, {rows['duplicate_ids']} duplicate ids{_tracebacks(r)}"))


def _sync_text(sync: dict[str, Any]) -> str:
    said = f": `{_cell(sync['error'])}`" if sync["error"] else ""
    return f"{sync['status']} after {sync['seconds']:g} s{said}"


def _drill_store(r: dict[str, Any]) -> tuple[str, str, str]:
    rows, searches = r["rows"], r["searches"]
    how = ("refusing connections (a relay in front of moto closed)" if r["mode"] == "refused"
           else "hung (moto frozen by SIGSTOP)")
    return (f"object store {r['mode']}",
            (f"the S3 endpoint {how} for {r['outage_s']:g} s under the writer, 2 searchers and "
             f"{r['clients']['grpc']} gRPC clients; a file changed meanwhile"),
            (f"searches, errors before / down / after: {_errors(searches, ('before', 'down', 'after'))}; a sync as the "
             f"gateway sends it (300 ms budget): {_sync_text(r['gateway_sync_while_down'])}; with no budget and a "
             f"{r['sync_deadline_s']:g} s deadline: {_sync_text(r['sync_while_down'])}; back up, the writer synced "
             f"again after {r['writer_recovered_after_s']:g} s, no restart; rows {rows['before']:,} → "
             f"{rows['after_recovery']:,} (old rows {'intact' if rows['old_rows_intact'] else '**changed**'}, "
             f"+{rows['added_by_the_outage_sync']} = the changed file), next sync → {rows['after_next_sync']:,}, "
             f"{rows['duplicate_ids']} duplicate ids{_tracebacks(r)}"))


DRILL_ROWS: dict[str, Callable[[dict[str, Any]], tuple[str, str, str]]] = {
    "searcher_killed": _drill_searcher, "embedding_killed": _drill_embedding, "writer_killed": _drill_writer,
    "store_refused": _drill_store, "store_hung": _drill_store,
}


def render_drills(doc: dict[str, Any]) -> str:
    rows = []
    for name, r in doc["drills"].items():
        drill, fault, measured = DRILL_ROWS[name](r)
        rows.append((drill, fault, measured, _cell(r["expect"]), "met" if r["met"] else "**missed**"))
    return "\n".join([
        provenance(doc), "",
        (f"Each drill starts its own deployment (every service its own process, one writer, two searchers, "
         f"{doc['profile']}; the embedding drill {doc['embedding_drill_profile']}) over the sample workspace plus "
         "generated modules, puts closed-loop clients on it and breaks one part; times are seconds since the clients "
         "started:"), "",
        md_table(("Drill", "Fault", "Measured", "Expected", "Result"), rows),
    ])


# --- Bad input (bench/badinput.py) ---------------------------------------------------------------

BADINPUT_RESULTS = {"passed": "pass", "xpassed": "pass (marked xfail)", "failed": "**FAIL**", "error": "**ERROR**",
                    "skipped": "not run", "not run": "not run"}


def render_badinput(doc: dict[str, Any]) -> str:
    counts = doc["counts"]
    summary = (f"**{counts['cases']} cases**: {counts['passed']} pass, {counts['xfailed']} known gaps (xfail, "
               f"the reason names the missing part), {counts['failed']} fail; **{counts['tracebacks']} tracebacks** in "
               f"any output. `{doc['command']}`, {doc['duration_s']:.0f} s.")
    rows = []
    for case in doc["cases"]:
        result = BADINPUT_RESULTS.get(case["result"], case["result"])
        if case["result"] == "xfailed":
            result = f"xfail: {case['xfail_reason']}"
        rows.append((_cell(case["case"]), _cell(case["behaviour"]), _cell(result)))
    return "\n".join([provenance(doc), "", summary, "", md_table(("Case", "Behaviour", "Result"), rows)])
