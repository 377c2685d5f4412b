"""`make traces`: one `semantic_search` as a trace you can open in a browser.

Starts Arize Phoenix from its own venv (.venv-traces: its many dependencies never touch the
services' pins) on 127.0.0.1, starts the CodeCompass services exporting their spans to it over
OTLP/gRPC, indexes a workspace, calls `semantic_search` through the real MCP gateway (the MCP
SDK's stdio client starting `codecompass mcp`, as an agent does), waits until Phoenix holds the
whole trace, and prints its URL. Phoenix and the services then run until Ctrl-C;
`run.py down` stops them from another terminal (or after `--detach`).

Everything it writes is under `<state_dir>/traces/` (see `codecompass config`), never in the
checkout: Phoenix's database (`phoenix/`), the services' own state dir (`codecompass/`: a set of
their own, so they export spans even while a `codecompass up` set without an endpoint runs),
`phoenix.log`, `phoenix.pid` and `last_trace.json` (what `screenshot.py` opens).

Nothing leaves the machine: Phoenix's usage pixels and web fonts are off, the services keep
their privacy gates closed. The rerank hop is shown by asking for the `llm` reranker, whose
gate is closed: the rerank service answers with the first-stage order and says why
(`external_provider_blocked`); the default `local` reranker is retrieval's own ranking and
makes no hop (`--rerank-provider local` shows that trace).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
PHOENIX_PYTHON = REPO / ".venv-traces" / "bin" / "python"
PHOENIX_SERVE = Path(__file__).with_name("phoenix_serve.py")
SCREENSHOT = Path(__file__).with_name("screenshot.py")
SCREENSHOT_DIR = REPO / "docs" / "traces"
# The spans the README's screenshots select: the gateway's summary of the answer, then the two
# stages whose numbers explain most answers (what the first stage found, what selection kept).
SHOTS = (("pipeline", "semantic-search-pipeline.png"), ("retrieval.search", "semantic-search-retrieval.png"),
         ("selection.select", "semantic-search-selection.png"))
DEFAULT_WORKSPACE = REPO / "tests" / "fixtures" / "sample_workspace"
DEFAULT_QUERY = "how are tokens validated"
HOST = "127.0.0.1"
# Phoenix's own defaults: the UI and OTLP/HTTP on one port, OTLP/gRPC on the standard one.
DEFAULT_PORT = 6006
DEFAULT_GRPC_PORT = 4317
# Phoenix files spans by the resource's `openinference.project.name`; every process of the
# trace must carry the same one, or Phoenix splits the trace across projects.
PROJECT = "codecompass"
# The process playing the agent: its MCP client span is the trace's root.
AGENT = "agent"
# Phoenix migrates its database on a first start: ~10 s on 2 cores, more when they are busy.
PHOENIX_START_S = 180.0
# Exporters batch every 200 ms here (OTEL_BSP_SCHEDULE_DELAY); the rest is Phoenix's insert queue.
TRACE_ARRIVAL_S = 60.0
CALL_TIMEOUT_S = 300.0
# The spans a semantic_search makes in each service: the trace is complete when all have arrived.
EXPECTED_SPANS = (
    "MCP send tools/call semantic_search",  # agent
    "tool semantic_search", "pipeline",  # gateway
    "retrieval.sync", "retrieval.search",  # retrieval
    "embedding.embed",  # embedding, the query's vector
    "rerank.rerank",  # rerank (only when a model reranker is asked for)
    "selection.select",  # selection
    "codecompass.v1.CodeAnalysisService/ScanWorkspace",  # analysis, under the sync
    "codecompass.v1.CodeAnalysisService/RenderSymbols",  # analysis, under selection
)


@dataclass(frozen=True)
class Paths:
    root: Path  # <state_dir>/traces

    @property
    def phoenix_dir(self) -> Path:
        return self.root / "phoenix"

    @property
    def services_state(self) -> Path:
        return self.root / "codecompass"

    @property
    def pid_file(self) -> Path:
        return self.root / "phoenix.pid"

    @property
    def log(self) -> Path:
        return self.root / "phoenix.log"

    @property
    def last_trace(self) -> Path:
        return self.root / "last_trace.json"


def state_paths() -> Paths:
    from codecompass.common.config import load_settings

    return Paths(load_settings().state_dir / "traces")


def say(message: str) -> None:
    print(message, flush=True)


# --- Phoenix ----------------------------------------------------------------


def phoenix_env(paths: Paths, port: int, grpc_port: int) -> dict[str, str]:
    # No OTEL_* of the caller's: Phoenix would trace itself into whatever they name.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PHOENIX_"))}
    env.update({
        "PHOENIX_HOST": HOST,
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc_port),
        "PHOENIX_WORKING_DIR": str(paths.phoenix_dir),
        # No FullStory / Scarf pixels, no web fonts or sandbox download, no assistant calling out.
        "PHOENIX_TELEMETRY_ENABLED": "false",
        "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
        "PHOENIX_DISABLE_AGENT_ASSISTANT": "true",
        "PHOENIX_ENABLE_MCP_SERVER": "false",
        "DO_NOT_TRACK": "1",
    })
    return env


def healthy(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://{HOST}:{port}/healthz", timeout=2) as response:
            return response.status == 200
    except (OSError, urllib.error.URLError):
        return False


def phoenix_pid(paths: Paths) -> int | None:
    """The pid of the Phoenix this script started, if it still runs (a recycled pid is not it)."""
    try:
        pid = int(paths.pid_file.read_text())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except (OSError, ValueError):
        return None
    return pid if PHOENIX_SERVE.name.encode() in cmdline else None


def listeners(port: int) -> list[str]:
    """Local addresses listening on TCP `port` (hex, as /proc/net/tcp{,6} write them)."""
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            local, state = row.split()[1], row.split()[3]
            address, _, hex_port = local.rpartition(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.append(address)
    return found


def is_loopback(hex_address: str) -> bool:
    if len(hex_address) == 8:  # IPv4, little-endian: 127.x.x.x ends in 7F
        return hex_address.endswith("7F")
    if hex_address == "0" * 24 + "01000000":  # ::1
        return True
    # ::ffff:127.x.x.x, an IPv4-mapped loopback
    return hex_address.startswith("0000000000000000FFFF0000") and hex_address.endswith("7F")


def start_phoenix(paths: Paths, port: int, grpc_port: int) -> subprocess.Popen | None:
    """Phoenix listening on HOST; None when one this script started already runs there."""
    if phoenix_pid(paths) is not None and healthy(port):
        say(f"== Phoenix already running (pid {phoenix_pid(paths)}), http://{HOST}:{port}")
        return None
    if not PHOENIX_PYTHON.exists():
        sys.exit(f"Phoenix is not installed: {PHOENIX_PYTHON} is missing; run `make traces`")
    for taken in (port, grpc_port):
        if listeners(taken):
            sys.exit(f"port {taken} is in use by another program; choose another with --port / --grpc-port")
    paths.phoenix_dir.mkdir(parents=True, exist_ok=True)
    say(f"== starting Phoenix on http://{HOST}:{port} (OTLP/gRPC {HOST}:{grpc_port}), log {paths.log}")
    with paths.log.open("ab") as log:
        process = subprocess.Popen([str(PHOENIX_PYTHON), str(PHOENIX_SERVE), "serve"],
                                   env=phoenix_env(paths, port, grpc_port), stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=log, start_new_session=True)
    paths.pid_file.write_text(str(process.pid))
    deadline = time.monotonic() + PHOENIX_START_S
    while not (healthy(port) and listeners(grpc_port)):
        if process.poll() is not None:
            sys.exit(f"Phoenix exited with status {process.returncode}; see {paths.log}")
        if time.monotonic() > deadline:
            stop_phoenix(paths)
            sys.exit(f"Phoenix did not answer within {PHOENIX_START_S:.0f} s; see {paths.log}")
        time.sleep(0.5)
    exposed = [a for p in (port, grpc_port) for a in listeners(p) if not is_loopback(a)]
    if exposed:
        stop_phoenix(paths)
        sys.exit(f"Phoenix listened beyond the loopback interface ({exposed}); stopped it")
    return process


def stop_phoenix(paths: Paths) -> None:
    pid = phoenix_pid(paths)
    if pid is not None:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 15
        while phoenix_pid(paths) is not None and time.monotonic() < deadline:
            time.sleep(0.2)
        if phoenix_pid(paths) is not None:
            os.kill(pid, signal.SIGKILL)
        say(f"== Phoenix stopped (pid {pid})")
    paths.pid_file.unlink(missing_ok=True)


# --- the services and the call ----------------------------------------------


def services_env(paths: Paths, grpc_port: int, rerank_provider: str) -> dict[str, str]:
    resource = ",".join(filter(None, (os.environ.get("OTEL_RESOURCE_ATTRIBUTES", ""),
                                      f"openinference.project.name={PROJECT}")))
    return {
        **os.environ,
        "CODECOMPASS_STATE_DIR": str(paths.services_state),
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://{HOST}:{grpc_port}",
        "OTEL_RESOURCE_ATTRIBUTES": resource,
        # Batches every 200 ms instead of 5 s: the trace is whole moments after the answer.
        "OTEL_BSP_SCHEDULE_DELAY": "200",
        "CODECOMPASS_RERANK_PROVIDER": rerank_provider,
        "PYTHONUNBUFFERED": "1",
    }


def codecompass(env: dict[str, str], *args: str) -> None:
    command = [sys.executable, "-m", "codecompass_cli", *args]
    if subprocess.run(command, env=env, check=False).returncode != 0:
        sys.exit(f"`codecompass {' '.join(args)}` failed")


def call_semantic_search(env: dict[str, str], workspace: Path, query: str) -> dict[str, Any]:
    """One semantic_search from an MCP client in this process, traced like an agent's call."""
    import anyio
    from mcp import Client, StdioServerParameters

    from codecompass.common.telemetry import flush_telemetry, init_telemetry

    os.environ.update({k: env[k] for k in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_RESOURCE_ATTRIBUTES",
                                           "OTEL_BSP_SCHEDULE_DELAY")})
    init_telemetry(AGENT)
    params = StdioServerParameters(command=sys.executable, env=env,
                                   args=["-m", "codecompass_cli", "mcp", "--workspace", str(workspace)])

    async def session() -> dict[str, Any]:
        async with Client(params, read_timeout_seconds=CALL_TIMEOUT_S) as client:
            result = await client.call_tool("semantic_search", {"query": query})
            if result.is_error:
                sys.exit("semantic_search failed: " + " ".join(getattr(b, "text", "") for b in result.content))
            return result.structured_content or {}

    answer = anyio.run(session)
    flush_telemetry()
    return answer


def trace_spans(port: int, trace_id: str) -> list[dict[str, Any]]:
    query = urllib.parse.urlencode({"trace_id": trace_id, "limit": 1000})
    url = f"http://{HOST}:{port}/v1/projects/{PROJECT}/spans?{query}"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return json.load(response).get("data", [])
    except urllib.error.HTTPError as exc:
        if exc.code == 404:  # the project appears with its first span
            return []
        raise


def missing_spans(spans: list[dict[str, Any]], expected: tuple[str, ...]) -> list[str]:
    """Expected span names not yet in the trace, and spans whose parent has not arrived."""
    names = {s["name"] for s in spans}
    ids = {s["context"]["span_id"] for s in spans}
    orphans = [f"parent of {s['name']}" for s in spans if s.get("parent_id") and s["parent_id"] not in ids]
    return [name for name in expected if name not in names] + orphans


def wait_for_trace(port: int, trace_id: str, expected: tuple[str, ...]) -> list[dict[str, Any]]:
    deadline = time.monotonic() + TRACE_ARRIVAL_S
    while True:
        spans = trace_spans(port, trace_id)
        missing = missing_spans(spans, expected)
        if not missing:
            return spans
        if time.monotonic() > deadline:
            sys.exit(f"trace {trace_id} is incomplete in Phoenix after {TRACE_ARRIVAL_S:.0f} s: missing {missing}")
        time.sleep(0.5)


# --- commands ---------------------------------------------------------------


def cmd_up(args: argparse.Namespace) -> int:
    paths = state_paths()
    workspace = Path(args.workspace).resolve()
    process = start_phoenix(paths, args.port, args.grpc_port)
    env = services_env(paths, args.grpc_port, args.rerank_provider)
    say(f"== starting the CodeCompass services (state in {paths.services_state})")
    codecompass(env, "up", "--workspace", str(workspace))
    say(f"== indexing {workspace}")
    codecompass(env, "index", str(workspace))
    say(f"== semantic_search \"{args.query}\" through the MCP gateway")
    answer = call_semantic_search(env, workspace, args.query)
    meta = answer.get("metadata", {})
    trace_id = meta.get("trace_id", "")
    if not trace_id:
        sys.exit("the answer names no trace_id")
    for result in answer.get("results", [])[:5]:
        say(f"   {result.get('path', '')} > {result.get('qualified_name', result.get('symbol', ''))}")
    expected = EXPECTED_SPANS if args.rerank_provider != "local" else tuple(
        s for s in EXPECTED_SPANS if s != "rerank.rerank")
    spans = wait_for_trace(args.port, trace_id, expected)
    url = f"http://{HOST}:{args.port}/redirects/traces/{trace_id}"
    paths.last_trace.write_text(json.dumps({"trace_id": trace_id, "url": url, "port": args.port,
                                            "project": PROJECT, "query": args.query, "spans": len(spans)}, indent=2))
    say(f"== trace {trace_id}: {len(spans)} spans in Phoenix")
    say(f"   open {url}")
    if args.detach:
        say(f"== Phoenix and the services keep running; stop them with: {stop_hint()}")
        return 0
    say("== Phoenix runs until Ctrl-C")
    try:
        while phoenix_pid(paths) is not None:
            if process is not None and process.poll() is not None:
                break
            time.sleep(1)
        say(f"Phoenix exited; see {paths.log}")
    except KeyboardInterrupt:
        pass
    stop_all(paths)
    return 0


def stop_hint() -> str:
    return f"{sys.executable} {Path(__file__).relative_to(REPO)} down   (or `make traces-down`)"


def stop_all(paths: Paths) -> None:
    if paths.services_state.exists():
        codecompass({**os.environ, "CODECOMPASS_STATE_DIR": str(paths.services_state)}, "down")
    stop_phoenix(paths)


def cmd_screenshot(args: argparse.Namespace) -> int:
    """PNGs of the last trace in Phoenix (`up --detach` first when Phoenix is not running; then
    stopped again, so the command leaves things as it found them)."""
    paths = state_paths()
    started_here = phoenix_pid(paths) is None or not paths.last_trace.exists()
    if started_here:
        cmd_up(argparse.Namespace(**{**vars(args), "detach": True}))
    try:
        last = json.loads(paths.last_trace.read_text())
        ids = {s["name"]: s["context"]["span_id"] for s in trace_spans(last["port"], last["trace_id"])}
        out_dir = Path(args.out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        shots = [f"{name}={ids[name]}={out_dir / png}" for name, png in SHOTS]
        command = [str(PHOENIX_PYTHON), str(SCREENSHOT), "--base-url", f"http://{HOST}:{last['port']}"]
        if subprocess.run(command + [arg for shot in shots for arg in ("--shot", shot)], check=False).returncode:
            sys.exit("the screenshots failed")
    finally:
        if started_here:
            stop_all(paths)
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    stop_all(state_paths())
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="deploy/traces/run.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", nargs="?", choices=("up", "down", "screenshot"), default="up",
                        help="up (the default): start Phoenix and the services and trace one semantic_search; "
                             "down: stop what up started; screenshot: PNGs of the last trace (--out-dir)")
    parser.add_argument("--workspace", default=str(DEFAULT_WORKSPACE), help="the workspace to index and search")
    parser.add_argument("--query", default=DEFAULT_QUERY)
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help="Phoenix's UI and OTLP/HTTP port")
    parser.add_argument("--grpc-port", type=int, default=DEFAULT_GRPC_PORT, help="Phoenix's OTLP/gRPC port")
    parser.add_argument("--rerank-provider", default="llm",
                        help="the reranker the search asks for: llm (the default) shows the rerank hop; "
                             "local is retrieval's own ranking and makes none")
    parser.add_argument("--detach", action="store_true", help="return once the trace is in Phoenix")
    parser.add_argument("--out-dir", default=str(SCREENSHOT_DIR), help="where screenshot writes its PNGs")
    args = parser.parse_args(argv)
    return {"up": cmd_up, "down": cmd_down, "screenshot": cmd_screenshot}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
