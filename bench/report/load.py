"""The load section (bench/load.py): a sweep of closed-loop clients, the knee, and the target run."""

from __future__ import annotations

from typing import Any

from bench.report.tables import md_table, provenance


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:,.0f}"


def _latency(summary: dict[str, Any] | None) -> str:
    if not summary:
        return "–"
    return f"{_ms(summary['p50_ms'])} / {_ms(summary['p95_ms'])} / {_ms(summary['p99_ms'])}"


def _cpu_shares(cpu: dict[str, float], top: int = 4) -> str:
    """The services that took the most CPU during a level, as shares of what all of them took."""
    total = sum(cpu.values()) or 1.0
    ranked = sorted(cpu.items(), key=lambda kv: -kv[1])[:top]
    return ", ".join(f"{name} {seconds / total:.0%}" for name, seconds in ranked)


def _load_row(label: str, row: dict[str, Any]) -> tuple[str, ...]:
    s = row["summary"]
    everything = s["all"]
    errors = " / ".join(str(s[k]["errors"]) for k in ("mcp", "grpc_search") if k in s)
    return (label, f"{row['mcp_clients']} + {row['grpc_clients']}", f"{everything['calls']:,}",
            f"{everything['errors']} ({errors})", f"{everything['throughput_per_s']:.1f}", _latency(everything),
            _latency(s.get("mcp")), _latency(s.get("grpc_search")),
            f"{sum(row['cpu_s'].values()) / row['wall_s']:.2f}", _cpu_shares(row["cpu_s"]),
            "/".join(f"{x:g}" for x in row["load_avg_after"]))


def render_load(doc: dict[str, Any]) -> str:
    ws, dep, settings = doc["workspace"], doc["deployment"], doc["settings"]
    header = ("Clients", "MCP + gRPC", "Calls", "Errors (MCP / gRPC)", "Answers/s", "All ms p50 / p95 / p99",
              "MCP ms p50 / p95 / p99", "gRPC ms p50 / p95 / p99", "Cores busy", "CPU by service", "Load after")
    rows = [_load_row(str(r["clients"]), r) for r in doc["sweep"]]
    parts = [provenance(doc), "",
             (f"`{ws['name']}` ({ws['files']:,} files, {ws['lines']:,} lines, {ws['chunks']:,} chunks, "
              f"{ws['embedding_model']}) on {settings['cores']} cores: {', '.join(dep['processes'])}, each its own "
              f"process on loopback over one index root; gRPC servers {dep['grpc_server_threads']} threads each. "
              f"Closed-loop clients (no pause between calls), {settings['grpc_share']:.0%} of each level on gRPC "
              f"(`RetrievalClient.search` over the searchers' address list), the rest MCP over streamable HTTP "
              f"with the bearer token (`semantic_search` and `search_code` in turn); {settings['queries']} queries; "
              f"load average {'/'.join(f'{x:g}' for x in doc['load_avg_at_start'])} at the start. Latency counts "
              "every call; answers/s counts calls answered without error.")]
    if rows:
        parts += ["", f"Sweep, {settings['level_s']:.0f} s per level:", "", md_table(header, rows)]
    if doc.get("knee"):
        k = doc["knee"]
        parts += ["", (f"Knee: **{k['clients']} clients**, the fewest at which the services keep "
                       f"{settings['knee_share']:.0%} of the {k['cores']} cores busy ({k['cores_busy']:.2f}; "
                       f"{k['throughput_per_s']:.1f} answers/s, p95 {_ms(k['p95_ms'])} ms); past it throughput grows "
                       f"little (the sweep's best: {k['best_throughput_per_s']:.1f}/s) and clients queue.")]
    target = doc.get("target")
    if target:
        runs = [target, *doc.get("paced", [])]
        parts += ["", (f"Target, {target['clients']} clients for {target['seconds']:.0f} s (goal: 0 errors, p95 ≤ "
                       f"{target['goal']['p95_ms']:,.0f} ms), closed-loop and agent-paced (each client pausing "
                       "between an answer and its next call, exponential with the mean shown): "
                       + "; ".join(f"{_pacing(r)} p95 **{_ms(r['summary']['all']['p95_ms'])} ms**, "
                                   f"{r['summary']['all']['errors']} errors: {'met' if r['met'] else '**missed**'}"
                                   for r in runs) + "."), "",
                  md_table(header, [_load_row(f"{r['clients']}, {_pacing(r)}", r) for r in runs])]
    return "\n".join(parts)


def _pacing(row: dict[str, Any]) -> str:
    think = row.get("think_s") or 0
    return f"pause {think:g} s" if think else "no pause"
