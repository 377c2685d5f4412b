"""A CodeCompass deployment on loopback, shaped as the deploy contract runs one: every service
its own process, the retrieval roles apart (one index writer, `writer`; searchers behind one
RETRIEVAL_ADDR list, balanced round_robin by every client), and the MCP gateway over streamable
HTTP behind a bearer token. Every process gets its own state dir; the index root
(CODECOMPASS_RETRIEVAL_DB_URI: a local folder, or s3:// with its storage options) is all the
writer and the searchers share. The load bench (bench/load.py) and the failure drills
(bench/drills.py, tests/e2e/test_failure_drills.py) run on it.

The gateway binds 0.0.0.0 with `CODECOMPASS_GATEWAY_ALLOWED_HOSTS=127.0.0.1:<port>`, reached
through 127.0.0.1: a loopback bind (all of 127.0.0.0/8) keeps the SDK's loopback checks and
ignores the token (gateway_mcp/codecompass_gateway/remote.py), while any other bind requires
`Authorization: Bearer` on every request, as a cluster's gateway (contract: `--host 0.0.0.0`)
does. `start` checks that a request without the token gets 401 before it returns.

Services start on port 0 through codecompass_dev/evaluation/services.py; `restart` brings one back on the port it
had, so the addresses the others were given stay right.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from codecompass_dev.evaluation.services import (
    BENCH_ANALYSIS_ENV,
    NODE_MAIN,
    REPO_ROOT,
    ServiceProcess,
    start_service,
)

WRITER, EMBEDDING, ANALYSIS, RERANK, SELECTION, GATEWAY = (
    "writer", "embedding", "analysis", "rerank", "selection", "gateway")
SEARCHER_PREFIX = "retrieval-"
GATEWAY_START_TIMEOUT_S = 120.0
KILL_WAIT_S = 30.0
# What a client sends first: the probe that the gateway is up and refuses a request without the token.
_INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                          "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                     "clientInfo": {"name": "deployment-probe", "version": "0"}}})
_MCP_HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@dataclass(frozen=True)
class _Spec:
    """How a service was started, to start it again on the same port."""

    argv: tuple[str, ...]
    port_env: str
    env: Mapping[str, str]


@dataclass
class Deployment:
    """The running processes by name (`writer`, `retrieval-1`…, `embedding`, `analysis`, `rerank`,
    `selection`, `gateway`) and how to reach them."""

    scratch: Path
    index_uri: str
    token: str
    services: dict[str, ServiceProcess] = field(default_factory=dict)
    _specs: dict[str, _Spec] = field(default_factory=dict)
    gateway_port: int | None = None

    @property
    def searchers(self) -> list[str]:
        return [name for name in self.services if name.startswith(SEARCHER_PREFIX)]

    @property
    def retrieval_addr(self) -> str:
        """Every searcher in one address, as a headless Service's name resolves in Kubernetes."""
        return "ipv4:" + ",".join(self.services[name].address for name in self.searchers)

    @property
    def writer_addr(self) -> str:
        return self.services[WRITER].address

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.gateway_port}/mcp"

    @property
    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def kill(self, name: str) -> None:
        """SIGKILL: no drain, no goodbye, as a node or the OOM killer ends a process."""
        service = self.services[name]
        service.proc.send_signal(signal.SIGKILL)
        service.proc.wait(timeout=KILL_WAIT_S)

    def restart(self, name: str) -> ServiceProcess:
        """Start `name` again on the port it had (it must have exited), and wait until it serves."""
        old, spec = self.services[name], self._specs[name]
        port = old.address.rsplit(":", 1)[1]
        service = start_service(name, list(spec.argv), spec.port_env, {**spec.env, spec.port_env: port})
        self.services[name] = service
        return service

    def cpu_seconds(self) -> dict[str, float]:
        """CPU each live process has used so far (user + system)."""
        return {name: cpu for name, s in self.services.items() if (cpu := s.cpu_seconds()) is not None}

    def stop(self) -> None:
        # Clients before servers: the gateway, then the searchers and the writer, then what they call.
        order = [GATEWAY, *self.searchers, WRITER, SELECTION, RERANK, EMBEDDING, ANALYSIS]
        for name in order:
            if name in self.services:
                self.services[name].stop()


def _python(module: str) -> tuple[str, ...]:
    return (sys.executable, "-m", module)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _start(deployment: Deployment, name: str, argv: tuple[str, ...], port_env: str, env: Mapping[str, str]
           ) -> ServiceProcess:
    deployment._specs[name] = _Spec(argv, port_env, dict(env))
    return start_service(name, list(argv), port_env, env)


def start(scratch: Path, index_uri: str, *, workspaces: tuple[Path, ...] = (), searchers: int = 2,
          env: Mapping[str, str] | None = None, pipeline: bool = True, token: str | None = None) -> Deployment:
    """Start a deployment whose writer and searchers share `index_uri`; `env` goes to every
    process (a profile, storage options). `pipeline`: also rerank, selection and, given
    `workspaces` (the first is the default), the gateway. Stops what started when a part fails."""
    scratch.mkdir(parents=True, exist_ok=True)
    common = dict(env or {})
    deployment = Deployment(scratch=scratch, index_uri=index_uri, token=token or secrets.token_urlsafe(24))
    # Independent services start side by side: each mostly waits on its imports and model load.
    pool = ThreadPoolExecutor(max_workers=4)
    try:
        if not NODE_MAIN.exists():
            raise SystemExit(f"{NODE_MAIN} is missing: build the analysis service (make setup)")
        first = {
            ANALYSIS: pool.submit(_start, deployment, ANALYSIS, ("node", str(NODE_MAIN)), "ANALYSIS_PORT",
                                  {**common, **BENCH_ANALYSIS_ENV}),
            EMBEDDING: pool.submit(_start, deployment, EMBEDDING, _python("codecompass.embedding"),
                                   "EMBEDDING_PORT", common),
        }
        if pipeline:
            first[RERANK] = pool.submit(_start, deployment, RERANK, _python("codecompass.rerank"), "RERANK_PORT",
                                        {**common, "CODECOMPASS_STATE_DIR": str(scratch / RERANK)})
        _collect(deployment, first)
        retrieval = {**common, "ANALYSIS_ADDR": deployment.services[ANALYSIS].address,
                     "EMBEDDING_ADDR": deployment.services[EMBEDDING].address,
                     "CODECOMPASS_RETRIEVAL_DB_URI": index_uri}
        second = {WRITER: pool.submit(_start, deployment, WRITER, _python("codecompass.retrieval"), "RETRIEVAL_PORT",
                                      {**retrieval, "CODECOMPASS_RETRIEVAL_ROLE": "writer",
                                       "CODECOMPASS_STATE_DIR": str(scratch / WRITER)})}
        for i in range(1, searchers + 1):
            name = f"{SEARCHER_PREFIX}{i}"
            second[name] = pool.submit(_start, deployment, name, _python("codecompass.retrieval"), "RETRIEVAL_PORT",
                                       {**retrieval, "CODECOMPASS_RETRIEVAL_ROLE": "searcher",
                                        "CODECOMPASS_STATE_DIR": str(scratch / name)})
        if pipeline:
            second[SELECTION] = pool.submit(
                _start, deployment, SELECTION, _python("codecompass.selection"), "SELECTION_PORT",
                {**common, "ANALYSIS_ADDR": deployment.services[ANALYSIS].address,
                 "CODECOMPASS_STATE_DIR": str(scratch / SELECTION)})
        _collect(deployment, second)
        if pipeline and workspaces:
            _start_gateway(deployment, workspaces, common)
    except BaseException:
        deployment.stop()
        raise
    finally:
        pool.shutdown(wait=True)
    return deployment


@contextmanager
def running(scratch: Path, index_uri: str, **options) -> Iterator[Deployment]:
    deployment = start(scratch, index_uri, **options)
    try:
        yield deployment
    finally:
        deployment.stop()


def _collect(deployment: Deployment, futures: dict) -> None:
    """Record every service that started; the first failure is raised once all have settled."""
    failure: BaseException | None = None
    for name, future in futures.items():
        try:
            deployment.services[name] = future.result()
        except BaseException as exc:  # noqa: BLE001 - re-raised below, after the others are recorded
            failure = failure or exc
    if failure is not None:
        raise failure


def _start_gateway(deployment: Deployment, workspaces: tuple[Path, ...], common: Mapping[str, str]) -> None:
    port = _free_port()
    services = deployment.services
    env = {
        **common,
        "RETRIEVAL_ADDR": deployment.retrieval_addr, "WRITER_ADDR": deployment.writer_addr,
        "ANALYSIS_ADDR": services[ANALYSIS].address, "EMBEDDING_ADDR": services[EMBEDDING].address,
        "RERANK_ADDR": services[RERANK].address, "SELECTION_ADDR": services[SELECTION].address,
        "CODECOMPASS_STATE_DIR": str(deployment.scratch / GATEWAY),
        "CODECOMPASS_GATEWAY_AUTH_TOKEN": deployment.token,
        "CODECOMPASS_GATEWAY_ALLOWED_HOSTS": f"127.0.0.1:{port}",
        "PYTHONUNBUFFERED": "1",
    }
    argv = [*_python("codecompass_gateway"), "--transport", "streamable-http", "--host", "0.0.0.0",
            "--port", str(port)]
    for workspace in workspaces:
        argv += ["--workspace", str(workspace)]
    log = deployment.scratch / "gateway.log"
    started = time.perf_counter()
    with log.open("ab") as out:
        proc = subprocess.Popen(argv, cwd=REPO_ROOT, env=_environ(env), stdout=out, stderr=subprocess.STDOUT)
    services[GATEWAY] = ServiceProcess(GATEWAY, proc, f"127.0.0.1:{port}", started)
    deployment.gateway_port = port
    _wait_token_required(deployment, log)


def _environ(extra: Mapping[str, str]) -> dict[str, str]:
    sources = os.pathsep.join(str(REPO_ROOT / root) for root in ("clients/python/src", "py_services"))
    return {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", sources), **extra}


def _wait_token_required(deployment: Deployment, log: Path) -> None:
    """Until the gateway answers: a request without the token must get 401, one with it 200."""
    proc = deployment.services[GATEWAY].proc
    deadline = time.monotonic() + GATEWAY_START_TIMEOUT_S
    while True:
        if proc.poll() is not None:
            raise RuntimeError(f"the gateway exited with {proc.returncode}:\n{log.read_text(errors='replace')[-3000:]}")
        try:
            refused = httpx.post(deployment.url, content=_INITIALIZE, headers=_MCP_HEADERS, timeout=5)
            break
        except httpx.TransportError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"the gateway did not answer in {GATEWAY_START_TIMEOUT_S:.0f} s:\n"
                                   f"{log.read_text(errors='replace')[-3000:]}") from None
            time.sleep(0.2)
    allowed = httpx.post(deployment.url, content=_INITIALIZE, headers={**_MCP_HEADERS, **deployment.auth_headers},
                         timeout=30)
    if refused.status_code != 401 or allowed.status_code != 200:
        raise RuntimeError(f"the gateway must require its token: without it {refused.status_code}, "
                           f"with it {allowed.status_code}")
