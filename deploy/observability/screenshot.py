"""docs/metrics/*.png: the dashboard's queries and the alert rules in a real Prometheus, over a real
run, taken by headless Chromium (`make metrics-screenshot`).

No Grafana can be installed from the registries this project uses, so the screenshots show
Prometheus's own UI (Debian's `prometheus` package): each picture graphs some of the dashboard's
panels, their queries read from deploy/observability/grafana-dashboard.json as written (Grafana's
`$__rate_interval` as 1m), and one shows the alert rules of alert-rules.yaml loaded and evaluated.
The run: every service started by `codecompass up` in a state dir of its own with a metrics port
each, the sample workspace indexed, and an agent's MCP session (stdio, SDK client) calling the
tools for LOAD_S, a few calls refused; Prometheus scrapes every endpoint every 2 s meanwhile.

    .venv/bin/python deploy/observability/screenshot.py [--out docs/metrics]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client

from codecompass.common import names

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = ROOT / "deploy" / "observability" / "grafana-dashboard.json"
RULES = ROOT / "deploy" / "observability" / "alert-rules.yaml"
SAMPLE = ROOT / "tests" / "fixtures" / "sample_workspace"
LOAD_S = 75.0
SCRAPE_S = 2
# Which panels each picture graphs, by the dashboard's titles (each query of a panel is a graph;
# three graphs at most, or the page outgrows what Chromium draws at once).
PICTURES = {
    "rpcs": ("Requests per second", "Server errors (ratio)", "p95 latency"),
    "tools": ("Tool calls per second", "Tool errors per second, by code", "Tool p95 latency"),
    "index-and-caches": ("Index size", "Cache hit ratio"),
    "sync-and-queue": ("Sync lag and pending files", "Embedding queue depth"),
}
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--virtual-time-budget=20000")
# Pixels of Prometheus's page per graph (query box, controls, plot, legend) and above the first:
# the window holds every graph, or the page scrolls to the last query's box before the picture.
GRAPH_PX, HEADER_PX, WIDTH_PX = 560, 200, 1600
QUERIES = ["how are auth tokens validated", "TokenService", "where is the request user checked",
           "error handling middleware", "validateToken", "how does the router dispatch requests"]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def panels() -> dict[str, list[str]]:
    """The dashboard's query expressions by panel title, as Prometheus takes them."""
    found: dict[str, list[str]] = {}
    for panel in json.loads(DASHBOARD.read_text())["panels"]:
        exprs = [t["expr"].replace("$__rate_interval", "1m") for t in panel.get("targets", []) if t.get("expr")]
        if exprs:
            found[panel["title"]] = exprs
    return found


def cli(env: dict[str, str], *args: str) -> None:
    subprocess.run([sys.executable, "-m", "codecompass_cli", *args], env=env, check=True, capture_output=True,
                   text=True, timeout=600)


def run_load(env: dict[str, str], workspace: Path) -> None:
    """An agent's session for LOAD_S: both searches, a trace, a read, index status, a refusal."""
    params = StdioServerParameters(command=sys.executable,
                                   args=["-m", "codecompass_cli", "mcp", "--workspace", str(workspace)], env=env)

    async def session() -> None:
        with open(os.devnull, "w") as quiet:
            async with Client(stdio_client(params, errlog=quiet), read_timeout_seconds=120) as client:
                end = time.monotonic() + LOAD_S
                turn = 0
                while time.monotonic() < end:
                    query = QUERIES[turn % len(QUERIES)]
                    await client.call_tool("semantic_search", {"query": query})
                    await client.call_tool("search_code", {"query": query})
                    if turn % 3 == 0:
                        await client.call_tool("codebase_trace", {"symbol": "TokenService.validateToken",
                                                                  "direction": "callers"})
                        await client.call_tool("read_symbol", {"symbol": "TokenService"})
                        await client.call_tool("index_status", {})
                    if turn % 4 == 0:  # refused: an error series to show
                        await client.call_tool("read_symbol", {"symbol": "a\x00b"})
                    turn += 1

    anyio.run(session)


def prometheus(ports: dict[str, int], scratch: Path) -> tuple[subprocess.Popen[bytes], str]:
    web = free_port()
    config = scratch / "prometheus.yml"
    config.write_text(json.dumps({
        "global": {"scrape_interval": f"{SCRAPE_S}s", "evaluation_interval": f"{SCRAPE_S}s"},
        "rule_files": [str(RULES)],
        "scrape_configs": [{"job_name": "codecompass", "static_configs": [
            {"targets": [f"127.0.0.1:{port}"], "labels": {"service": service}} for service, port in ports.items()]}],
    }))
    process = subprocess.Popen(["prometheus", f"--config.file={config}", f"--storage.tsdb.path={scratch / 'tsdb'}",
                                f"--web.listen-address=127.0.0.1:{web}"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{web}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(f"{url}/-/ready", timeout=2)
            return process, url
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit("prometheus did not start") from None
            time.sleep(0.5)


def query(url: str, expr: str) -> list[Any]:
    with urllib.request.urlopen(f"{url}/api/v1/query?" + urllib.parse.urlencode({"query": expr}), timeout=10) as r:
        return json.load(r)["data"]["result"]


def screenshot(page: str, out: Path, height: int) -> None:
    profile = tempfile.mkdtemp(prefix="cc-chromium-")
    try:
        subprocess.run(["chromium", *CHROMIUM_FLAGS, f"--window-size={WIDTH_PX},{height}", f"--user-data-dir={profile}",
                        f"--screenshot={out}", page],
                       check=True, capture_output=True, timeout=120)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def graph_page(url: str, exprs: list[str]) -> str:
    params: dict[str, str] = {}
    for i, expr in enumerate(exprs):
        params.update({f"g{i}.expr": expr, f"g{i}.tab": "0", f"g{i}.range_input": "5m", f"g{i}.stacked": "0",
                       f"g{i}.show_exemplars": "0"})
    return f"{url}/graph?" + urllib.parse.urlencode(params)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "metrics")
    args = parser.parse_args()
    for tool in ("prometheus", "chromium"):
        if shutil.which(tool) is None:
            raise SystemExit(f"{tool} is missing: `make metrics-screenshot` installs it (Debian's package)")
    check = subprocess.run(["promtool", "check", "rules", str(RULES)], capture_output=True, text=True)
    print(check.stdout.strip())
    if check.returncode != 0:
        raise SystemExit(check.stderr)
    scratch = Path(tempfile.mkdtemp(prefix="cc-metrics-"))
    services = (*names.BACKENDS, names.GATEWAY)
    ports = {service: free_port() for service in services}
    workspace = scratch / "ws"
    shutil.copytree(SAMPLE, workspace)
    env = {**os.environ, "CODECOMPASS_STATE_DIR": str(scratch / "state"), "CODECOMPASS_CONFIG": str(scratch / "c.yaml"),
           **{names.metrics_port_env(service): str(port) for service, port in ports.items()}}
    (scratch / "c.yaml").write_text("")
    server: subprocess.Popen[bytes] | None = None
    try:
        cli(env, "up")
        server, url = prometheus(ports, scratch)
        cli(env, "index", str(workspace))
        run_load(env, workspace)
        args.out.mkdir(parents=True, exist_ok=True)
        found = panels()
        for name, titles in PICTURES.items():
            exprs = [expr for title in titles for expr in found[title]]
            empty = [expr for expr in exprs if not query(url, expr)]
            print(f"{name}: {len(exprs)} queries, {len(exprs) - len(empty)} with data")
            screenshot(graph_page(url, exprs), args.out / f"{name}.png", HEADER_PX + GRAPH_PX * len(exprs))
        # Debian's build serves Prometheus's classic UI (its /graph redirects there).
        screenshot(f"{url}/classic/alerts", args.out / "alerts.png", 2 * GRAPH_PX)
        print(f"wrote {', '.join(sorted(p.name for p in args.out.glob('*.png')))} in {args.out}")
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
        subprocess.run([sys.executable, "-m", "codecompass_cli", "down"], env=env, capture_output=True, timeout=120)
        shutil.rmtree(scratch, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
