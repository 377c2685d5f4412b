"""Tool-call latency through MCP, as an agent sees it, on the 300k-line workspace; and the cold start.

Warm part. Starts the five services as bench/speed/run_pipeline_speed.py does (over its state
dir, kept between runs, so nothing is re-embedded; a rerun only syncs), waits for the index
with every embedding, then spawns `python -m codecompass_gateway --workspace ws-300k` over
stdio with the official SDK client (`mcp.Client` on `stdio_client`, the transport VS Code and
Claude Code use) and times each `call_tool` on the client side, so a figure includes the JSON-RPC
round trip, argument validation and the rendering of the answer:

  semantic_search  run_speed's warm queries (the same seeded sample of bench/quality/queries.jsonl);
  semantic_search, questions not asked before: as many further queries of that sample, each
                   asked once, in the measured pass only, THINK_S after the calls before it: an
                   agent's questions are mostly new, a new question's candidates are not yet in
                   the services' caches (chunks, their words, token counts, parsed files), and an
                   agent asks while its model has read the last answer, seconds later, which the
                   searcher spends reading ahead;
  codebase_trace   callers of the top result of each of those queries (qualified name + its file);
  read_symbol      the same symbols (collapsed view);
  index_status     the default workspace.

One warm-up pass calls every tool once per query (the first trace builds the analysis
service's TypeScript Program: its time is reported apart), then the measured passes call the
four tools in turn, query by query, so that drift in machine load hits every tool alike.
Per tool: p50/p95 over the successful calls, and the calls that came back as tool errors.
Per semantic_search answer: the tokens of its text content (cl100k_base, `count_tokens`, what
lands in the model's context), the whole response's tokens as the gateway counts them (text +
structured content), its characters, and its number of results.

Cold part. A fresh, empty state dir and `codecompass mcp --workspace ws-300k` through the same
stdio client: the CLI starts the services itself (CODECOMPASS_STATE_DIR = the temp dir, so
nothing else runs on it), then serves. Measured from the spawn: the handshake done, and the first
semantic_search answer with at least one result (the call is retried until one comes; the tries
are counted), plus where the time to the handshake went (each service's time to SERVING and the
moment the gateway serves, from the CLI's stderr). The query is the first of the warm queries
that the warm index answers with results at the default relevance gate. Goal (issue 9 §7): the
first useful answer within 5 s. Afterwards `codecompass down` on that state dir, and the dir is
removed.

Prints a markdown table and writes bench/results/mcp-speed-<UTC>.json (+ -latest).

Run: .venv/bin/python -m bench.speed.run_mcp_speed [--queries 50] [--passes 1] [--no-cold]
     [--state-dir bench/.work/pipeline-speed-state] [--workspace bench/.work/ws-300k]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult

from bench.quality.run_pipeline import start_pipeline_services
from bench.quality.run_quality import log
from bench.speed.run_pipeline_speed import DEFAULT_STATE_DIR, index_progress, query_texts
from bench.speed.run_speed import DEFAULT_WORKSPACE, assembled_workspace, source_stats
from codecompass.common.tokens import count_tokens
from codecompass_dev.evaluation.metrics import percentile
from codecompass_dev.evaluation.results import run_metadata, write_results
from codecompass_dev.evaluation.services import REPO_ROOT, ServiceProcess
from codecompass_dev.evaluation.workspaces import index_workspace

DEFAULT_QUERIES = 50
SEARCH, TRACE, READ, STATUS = "semantic_search", "codebase_trace", "read_symbol", "index_status"
# The same search with the relevance gate off: an answer that fills its token budget.
SEARCH_UNGATED = "semantic_search min_relevance=0"
# The same search for questions this session has not asked before (see the module docstring),
# each asked this long after the call before it: the least an agent's model takes to read an
# answer and write its next call.
SEARCH_NEW = "semantic_search, questions not asked before"
THINK_S = 2.0
TOOLS = (SEARCH, SEARCH_UNGATED, SEARCH_NEW, TRACE, READ, STATUS)
SEARCHES = (SEARCH, SEARCH_UNGATED)
# The searches whose answers' sizes are reported.
ANSWERED = (*SEARCHES, SEARCH_NEW)
PERCENTILES = (50, 95)
# A call on a warm stack answers in well under a second; the first trace builds a Program.
CALL_TIMEOUT_S = 120.0
COLD_GOAL_S = 5.0
# Issue 27: `initialize` and `tools/list` answered at once while the services start behind them.
HANDSHAKE_GOAL_S = 0.3
# How long the cold start may take to its first non-empty answer before we stop retrying.
COLD_GIVE_UP_S = 300.0
COLD_RETRY_PAUSE_S = 0.25
CODECOMPASS = Path(sys.executable).parent / "codecompass"
SLOWEST = 5
COLD_FALLBACK_QUERY = "how does the Observable pipe operators"


def texts(result: CallToolResult) -> list[str]:
    return [getattr(block, "text", "") for block in result.content]


def error_line(result: CallToolResult) -> str:
    return " ".join(texts(result))[:200]


def stats(values: list[float]) -> dict[str, float | int | None]:
    if not values:
        return {"n": 0}
    return {"n": len(values), "mean": round(statistics.fmean(values), 1),
            "median": round(statistics.median(values), 1), "min": round(min(values), 1),
            "max": round(max(values), 1)}


@dataclass
class Symbol:
    """A symbol from a search answer, as an agent would pass it on: its name and the file declaring it."""

    qualified_name: str
    path: str


@dataclass
class Measured:
    ms: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    errors: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    first_call_ms: dict[str, float] = field(default_factory=dict)
    # Per semantic_search answer, per search variant.
    text_tokens: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    response_tokens: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    chars: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    results: dict[str, list[int]] = field(default_factory=lambda: defaultdict(list))
    # The queries whose default answer had results (the cold start asks the first of them).
    answered: list[str] = field(default_factory=list)
    trace_found: list[int] = field(default_factory=list)
    read_tokens: list[int] = field(default_factory=list)
    slowest: dict[str, list[tuple[float, str]]] = field(default_factory=lambda: defaultdict(list))


async def timed_call(client: Client, name: str, arguments: dict[str, Any]) -> tuple[CallToolResult, float]:
    t0 = time.perf_counter()
    result = await client.call_tool(name, arguments)
    return result, (time.perf_counter() - t0) * 1000


def top_symbol(result: CallToolResult) -> Symbol | None:
    for row in (result.structured_content or {}).get("results", []):
        if row.get("qualified_name"):
            return Symbol(row["qualified_name"], row["path"])
    return None


def tool_calls(text: str, symbol: Symbol | None) -> list[tuple[str, dict[str, Any], str]]:
    """The calls made for one query: (tool, arguments, label for the logs); the tool of the
    ungated search is semantic_search."""
    calls = [(SEARCH, {"query": text}, text), (SEARCH_UNGATED, {"query": text, "min_relevance": 0}, text)]
    if symbol is not None:
        calls += [(TRACE, {"symbol": symbol.qualified_name, "direction": "callers", "path": symbol.path},
                   symbol.qualified_name),
                  (READ, {"symbol": symbol.qualified_name, "path": symbol.path}, symbol.qualified_name)]
    calls.append((STATUS, {}, ""))
    return calls


def record(measured: Measured, name: str, label: str, result: CallToolResult, ms: float) -> None:
    if result.is_error:
        measured.errors[name].append(f"{label[:80]!r}: {error_line(result)}")
        return
    measured.ms[name].append(ms)
    measured.slowest[name].append((round(ms, 1), label))
    structured = result.structured_content or {}
    if name in ANSWERED:
        body = texts(result)
        n_results = len(structured.get("results", []))
        measured.text_tokens[name].append(sum(count_tokens(t) for t in body))
        measured.response_tokens[name].append(int(structured.get("metadata", {}).get("response_tokens", 0)))
        measured.chars[name].append(sum(len(t) for t in body))
        measured.results[name].append(n_results)
        if name == SEARCH and n_results and label not in measured.answered:
            measured.answered.append(label)
    elif name == TRACE:
        measured.trace_found.append(int(structured.get("total_found", 0)))
    elif name == READ:
        measured.read_tokens.append(sum(count_tokens(t) for t in texts(result)))


async def measure_warm(params: StdioServerParameters, errlog: TextIO, queries: list[str], new_queries: list[str],
                       passes: int, measured: Measured) -> dict[str, Any]:
    async with Client(stdio_client(params, errlog=errlog), read_timeout_seconds=CALL_TIMEOUT_S) as client:
        protocol = client.protocol_version
        log(f"connected ({protocol}); warm-up: every tool once per query ...")
        symbols: dict[str, Symbol | None] = {}
        for text in queries:
            symbol = None
            for name in SEARCHES:  # the symbol of the gated answer, else of the ungated one
                arguments = next(a for n, a, _ in tool_calls(text, None) if n == name)
                result, ms = await timed_call(client, SEARCH, arguments)
                measured.first_call_ms.setdefault(name, round(ms, 1))
                symbol = symbol or (None if result.is_error else top_symbol(result))
            symbols[text] = symbol
            for name, arguments, _label in tool_calls(text, symbol)[len(SEARCHES):]:
                _result, ms = await timed_call(client, name, arguments)
                measured.first_call_ms.setdefault(name, round(ms, 1))
        log(f"  first calls (ms): {measured.first_call_ms}")
        missing = sum(s is None for s in symbols.values())
        log(f"measuring: {len(queries)} queries x {passes} pass(es); {missing} queries gave no symbol to trace")
        started = time.perf_counter()
        unasked = iter(new_queries)
        for done, text in enumerate(queries * passes, 1):
            for name, arguments, label in tool_calls(text, symbols[text]):
                result, ms = await timed_call(client, SEARCH if name in SEARCHES else name, arguments)
                record(measured, name, label, result, ms)
            # Beside the asked ones, so that drift in machine load hits both alike.
            if (new := next(unasked, None)) is not None:
                await anyio.sleep(THINK_S)
                result, ms = await timed_call(client, SEARCH, {"query": new})
                measured.first_call_ms.setdefault(SEARCH_NEW, round(ms, 1))
                record(measured, SEARCH_NEW, new, result, ms)
            if done % 10 == 0:
                log(f"  {done} / {len(queries) * passes} queries, {time.perf_counter() - started:.0f} s")
    return {"protocol_version": protocol, "queries_without_symbol": missing,
            "symbols": sorted({f"{s.path}:{s.qualified_name}" for s in symbols.values() if s is not None})}


def summarize(measured: Measured) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for name in TOOLS:
        values = measured.ms.get(name, [])
        out[name] = {"n": len(values), "errors": len(measured.errors.get(name, [])),
                     **{f"p{p}": round(percentile(values, p), 1) if values else None for p in PERCENTILES},
                     "mean": round(statistics.fmean(values), 1) if values else None,
                     "max": round(max(values), 1) if values else None,
                     "first_call_ms": measured.first_call_ms.get(name)}
    return out


# --- cold start -------------------------------------------------------------------------------


def cli_env(state_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    # The CLI starts and finds its services through the state dir; a service address inherited
    # from the environment must not point it at another stack.
    for name in ("ANALYSIS", "EMBEDDING", "RETRIEVAL", "RERANK", "SELECTION"):
        env.pop(f"{name}_ADDR", None)
    env["CODECOMPASS_STATE_DIR"] = str(state_dir)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def codecompass_down(state_dir: Path) -> str:
    done = subprocess.run([str(CODECOMPASS), "down"], env=cli_env(state_dir), capture_output=True, text=True,
                          timeout=120, check=False)
    return (done.stdout + done.stderr).strip()


async def measure_cold(workspace: Path, query: str, errlog: TextIO, state_dir: Path) -> dict[str, Any]:
    params = StdioServerParameters(command=str(CODECOMPASS), args=["mcp", "--workspace", str(workspace)],
                                   env=cli_env(state_dir))
    tries: list[dict[str, Any]] = []
    out: dict[str, Any] = {"query": query, "goal_s": COLD_GOAL_S}
    async with AsyncExitStack() as stack:
        out["spawned_at_unix"] = time.time()
        t0 = time.perf_counter()
        client = await stack.enter_async_context(
            Client(stdio_client(params, errlog=errlog), read_timeout_seconds=CALL_TIMEOUT_S))
        out["handshake_s"] = round(time.perf_counter() - t0, 3)
        out["protocol_version"] = client.protocol_version
        await client.list_tools()
        out["tools_listed_s"] = round(time.perf_counter() - t0, 3)
        out["handshake_goal_s"] = HANDSHAKE_GOAL_S
        out["handshake_met"] = out["tools_listed_s"] <= HANDSHAKE_GOAL_S
        log(f"  handshake after {out['handshake_s']:.3f} s, tools listed after {out['tools_listed_s']:.3f} s; "
            "searching until an answer has results ...")
        while True:
            started = time.perf_counter() - t0
            result = await client.call_tool(SEARCH, {"query": query})
            ended = time.perf_counter() - t0
            structured = result.structured_content or {}
            meta = structured.get("metadata", {})
            n = 0 if result.is_error else len(structured.get("results", []))
            tries.append({"started_s": round(started, 2), "answered_s": round(ended, 2), "results": n,
                          "is_error": bool(result.is_error),
                          "indexing_status": meta.get("indexing_status"),
                          "lexical_index_ready": meta.get("lexical_index_ready"),
                          "stage_ms": meta.get("stage_ms"),
                          **({"error": error_line(result)} if result.is_error else {})})
            log(f"  try {len(tries)}: {n} results at {ended:.2f} s "
                f"({meta.get('indexing_status')}, lexical ready {meta.get('lexical_index_ready')})")
            if n > 0:
                out["first_answer_s"] = round(ended, 2)
                out["first_answer_tokens"] = sum(count_tokens(t) for t in texts(result))
                break
            if ended > COLD_GIVE_UP_S:
                out["first_answer_s"] = None
                break
            await anyio.sleep(COLD_RETRY_PAUSE_S)
        status, _ms = await timed_call(client, STATUS, {})
        out["index_status_after"] = {k: v for k, v in (status.structured_content or {}).items()
                                     if k in ("indexing_status", "files", "chunks", "embedded_chunks",
                                              "embedded_share")}
        # Exiting the client closes the server's stdin: `codecompass mcp` exits, its services stay up.
    out["tries"] = len(tries)
    out["try_log"] = tries
    first = out.get("first_answer_s")
    out["met"] = first is not None and first <= COLD_GOAL_S
    return out


def cold_start(workspace: Path, query: str, work: Path) -> dict[str, Any]:
    state_dir = Path(tempfile.mkdtemp(prefix="mcp-cold-state-"))
    if any(state_dir.iterdir()):  # a fresh mkdtemp: nothing can run on it yet
        raise SystemExit(f"{state_dir} is not empty")
    log(f"cold start: `codecompass mcp --workspace {workspace.name}` on a fresh state dir {state_dir}")
    errlog_path = work / "cold-gateway.stderr.log"
    try:
        with errlog_path.open("w", encoding="utf-8") as errlog:
            result = anyio.run(measure_cold, workspace, query, errlog, state_dir)
    except Exception as exc:
        tail = errlog_path.read_text(encoding="utf-8", errors="replace").splitlines()[-20:]
        raise SystemExit(f"cold start failed: {exc!r}\n" + "\n".join(tail)) from exc
    finally:
        log(f"  codecompass down: {codecompass_down(state_dir).splitlines()[-1:]}")
        shutil.rmtree(state_dir, ignore_errors=True)
    result.update(startup_breakdown(errlog_path.read_text(encoding="utf-8", errors="replace"),
                                    result.pop("spawned_at_unix")))
    return result


_SERVICE_READY = re.compile(r"^(?P<name>\w+)\s+SERVING at \S+\s+\(pid \d+, ready (?P<s>[\d.]+)s after start\)")


def startup_breakdown(stderr: str, spawned_at_unix: float) -> dict[str, Any]:
    """Where the time to the handshake went, from what `codecompass mcp` wrote on stderr: each
    service's time to SERVING (from its own spawn; `up` starts them in waves) and when the
    gateway logged that it serves (seconds from our spawn of the CLI)."""
    ready: dict[str, float] = {}
    serving_s = None
    for line in stderr.splitlines():
        if match := _SERVICE_READY.match(line):
            ready[match["name"]] = float(match["s"])
        elif line.startswith("{") and serving_s is None:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if entry.get("msg") == "serving" and entry.get("ts"):
                stamp = dt.datetime.fromisoformat(entry["ts"]).timestamp()
                serving_s = round(stamp - spawned_at_unix, 2)
    return {"services_ready_s": ready, "gateway_serving_s": serving_s}


# --- report -----------------------------------------------------------------------------------


def answer_stats(measured: Measured, name: str) -> dict[str, Any]:
    """Sizes of one search variant's answers. Token and character figures are over the answers
    with results: an empty answer is a one-line notice, and averaging it in hides an answer's size."""
    rows = list(zip(measured.results[name], measured.text_tokens[name], measured.response_tokens[name],
                    measured.chars[name], strict=True))
    useful = [r for r in rows if r[0] > 0]
    return {
        "answers": len(rows), "with_results": len(useful),
        "results": stats([float(r[0]) for r in rows]),
        "text_tokens": stats([float(r[1]) for r in useful]),
        "response_tokens": stats([float(r[2]) for r in useful]),
        "chars": stats([float(r[3]) for r in useful]),
        "text_tokens_all_answers": stats([float(r[1]) for r in rows]),
        "over_25000_tokens": sum(1 for r in rows if r[2] > 25_000),
        "over_50000_chars": sum(1 for r in rows if r[3] >= 50_000),
    }


def markdown(latency: dict[str, dict[str, Any]], answer: dict[str, dict[str, Any]],
             cold: dict[str, Any] | None) -> str:
    def ms(value: float | None, digits: int = 1) -> str:
        return "—" if value is None else f"{value:.{digits}f}"

    def sizes(row: dict[str, Any]) -> str:
        return f"{row['mean']:,.0f} / {row['median']:,.0f} / {row['max']:,.0f}" if row.get("n") else "—"

    lines = ["| tool (MCP stdio, warm) | calls | p50 ms | p95 ms | tool errors |", "|---|---:|---:|---:|---:|"]
    lines += [f"| {name} | {row['n']} | {ms(row['p50'])} | {ms(row['p95'])} | {row['errors']} |"
              for name, row in latency.items()]
    lines += ["", ("| answer (mean / median / max over answers with results) | with results | tokens, text "
              "content | tokens, text + structured | characters, text content |"), "|---|---:|---:|---:|---:|"]
    lines += [f"| {name} | {row['with_results']} of {row['answers']} | {sizes(row['text_tokens'])} | "
              f"{sizes(row['response_tokens'])} | {sizes(row['chars'])} |" for name, row in answer.items()]
    if cold is not None:
        first = cold.get("first_answer_s")
        lines += ["", "| cold start (`codecompass mcp`, fresh state dir) | seconds | goal |", "|---|---:|---|",
                  f"| process start → gateway serving (services started) | {ms(cold['gateway_serving_s'], 2)} | |",
                  f"| process start → handshake | {cold['handshake_s']:.3f} | |",
                  (f"| process start → tools listed | {cold['tools_listed_s']:.3f} | ≤ {HANDSHAKE_GOAL_S} s: "
                   f"{'met' if cold['handshake_met'] else 'MISSED'} |"),
                  (f"| process start → first answer with results "
                   f"({cold['tries']} {'try' if cold['tries'] == 1 else 'tries'}) | "
                   f"{'—' if first is None else f'{first:.2f}'} | ≤ {COLD_GOAL_S:.0f} s: "
                   f"{'met' if cold['met'] else 'MISSED'} |")]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspace", type=Path, default=DEFAULT_WORKSPACE)
    parser.add_argument("--state-dir", type=Path, default=DEFAULT_STATE_DIR,
                        help="index location of the warm part, kept between runs (a rerun only syncs)")
    parser.add_argument("--queries", type=int, default=DEFAULT_QUERIES, help="queries per pass")
    parser.add_argument("--passes", type=int, default=1, help="measured passes (after one warm-up pass)")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold start")
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--echo-logs", action="store_true")
    args = parser.parse_args(argv)
    workspace = assembled_workspace(args.workspace)
    if not CODECOMPASS.exists():
        raise SystemExit(f"{CODECOMPASS} is missing: install py_services into this environment")
    state_dir = args.state_dir.resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    work = REPO_ROOT / "bench" / ".work"
    queries = query_texts(args.queries)
    # Further queries of the same seeded sample: none of them is among `queries`.
    new_queries = [q for q in query_texts(2 * args.queries)[args.queries:] if q not in set(queries)]

    started = time.perf_counter()
    metadata = run_metadata()
    n_files, n_lines, _bytes = source_stats(workspace)
    log(f"mcp speed: {workspace.name} ({n_files:,} files, {n_lines:,} lines), {len(queries)} queries x "
        f"{args.passes} pass(es), state dir {state_dir}")
    measured = Measured()
    services: list[ServiceProcess] = []
    stack = None
    errlog_path = work / "mcp-speed-gateway.stderr.log"
    try:
        extra, stack = start_pipeline_services(state_dir, args.echo_logs)
        services += extra
        log(f"index {workspace.name} (wait for embeddings; the first time embeds every chunk) ...")
        with index_progress(stack.retrieval, workspace):
            index = index_workspace(stack.retrieval, workspace)
        log(f"index: {index}")
        if index["status"] != "INDEXING_STATUS_READY":
            raise SystemExit(f"index of {workspace.name} is not ready: {index}")
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "CODECOMPASS_STATE_DIR": str(state_dir),
               "RETRIEVAL_ADDR": stack.retrieval.address, "ANALYSIS_ADDR": stack.analysis.address,
               "EMBEDDING_ADDR": stack.embedding.address, "RERANK_ADDR": extra[0].address,
               "SELECTION_ADDR": extra[1].address}
        params = StdioServerParameters(command=sys.executable,
                                       args=["-m", "codecompass_gateway", "--workspace", str(workspace)], env=env)
        load_before = [round(x, 2) for x in os.getloadavg()]
        try:
            with errlog_path.open("w", encoding="utf-8") as errlog:
                session = anyio.run(measure_warm, params, errlog, queries, new_queries, args.passes, measured)
        except Exception as exc:
            tail = errlog_path.read_text(encoding="utf-8", errors="replace").splitlines()[-20:]
            raise SystemExit(f"the gateway session failed: {exc!r}\n" + "\n".join(tail)) from exc
        load_after = [round(x, 2) for x in os.getloadavg()]
    finally:
        for service in services:
            service.stop()
        if stack is not None:
            stack.stop()

    # The cold start asks a query that the warm index answers with results at the default gate.
    cold_query = measured.answered[0] if measured.answered else COLD_FALLBACK_QUERY
    cold = None if args.no_cold else cold_start(workspace, cold_query, work)

    latency = summarize(measured)
    answer = {name: answer_stats(measured, name) for name in ANSWERED}
    payload = {
        "run": {**metadata, "seconds": round(time.perf_counter() - started, 1),
                "load_avg_before_measuring": load_before, "load_avg_after_measuring": load_after},
        "workspace": {"name": workspace.name, "path": str(workspace.relative_to(REPO_ROOT))
                      if workspace.is_relative_to(REPO_ROOT) else str(workspace),
                      "files": n_files, "lines": n_lines},
        "index": index,
        "client": {"sdk": "mcp", "transport": "stdio", "protocol_version": session["protocol_version"],
                   "timed": "client-side, around Client.call_tool"},
        "calls": {"queries": len(queries), "passes": args.passes,
                  "queries_without_symbol": session["queries_without_symbol"]},
        "latency_ms": latency,
        "semantic_search_answer": answer,
        "trace_callers_found": stats([float(v) for v in measured.trace_found]),
        "read_symbol_tokens": stats([float(v) for v in measured.read_tokens]),
        "cold_start": cold,
        "errors": {name: rows[:20] for name, rows in measured.errors.items()},
        "slowest": {name: [{"ms": ms, "argument": label} for ms, label in sorted(rows, key=lambda r: -r[0])[:SLOWEST]]
                    for name, rows in measured.slowest.items()},
        "per_call_ms": {name: [round(v, 1) for v in values] for name, values in measured.ms.items()},
    }
    print(markdown(latency, answer, cold))
    for name, rows in measured.errors.items():
        log(f"{len(rows)} {name} tool errors, e.g. {rows[:2]}")
    if args.no_write:
        return 0
    path = write_results("mcp-speed", payload)
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
