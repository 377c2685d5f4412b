"""Start the real CodeCompass service processes for a benchmark and measure them.

Benchmarks talk to the services only over gRPC, exactly as production clients do;
this module starts each one on port 0, learns its address from its output, waits
for the standard health service to say SERVING, and reads its peak RSS from /proc.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from codecompass.clients import health

REPO_ROOT = Path(__file__).resolve().parents[2]
PY_SERVICES = REPO_ROOT / "py_services"
# The other half of the `codecompass` namespace (clients/python/pyproject.toml).
CLIENT_SOURCES = REPO_ROOT / "clients" / "python" / "src"
NODE_MAIN = REPO_ROOT / "node_ts_service" / "dist" / "src" / "main.js"

# Large files (typescript.js) produce single ChunkFiles messages far above gRPC's 4 MB default.
MAX_MESSAGE_BYTES = 1 << 30
CHANNEL_OPTIONS = (
    ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
    ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
)

# Every service announces its bound address; the analysis service prints
# "LISTENING host:port", the Python services log the port in a JSON line.
_ADDR_PATTERNS = (
    re.compile(r"LISTENING\s+(?P<addr>[\w.\-\[\]:]+:\d+)"),
    re.compile(r'"(?:address|addr|listen_addr|bound_addr)"\s*:\s*"(?P<addr>[\w.\-\[\]:]+:\d+)"'),
    re.compile(r'"port"\s*:\s*(?P<port>\d+)'),
)


def find_address(line: str) -> str | None:
    """The host:port a service line announces, or None."""
    for pattern in _ADDR_PATTERNS:
        match = pattern.search(line)
        if match:
            groups = match.groupdict()
            if groups.get("addr"):
                return groups["addr"]
            port = int(groups["port"])
            if port:
                return f"127.0.0.1:{port}"
    return None


def read_vm_hwm_kib(pid: int) -> int | None:
    """Peak resident set size (VmHWM) of a live process in KiB, None when unreadable."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def read_vm_rss_kib(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


@dataclass
class ServiceProcess:
    """One running service: its process, address and captured output."""

    name: str
    proc: subprocess.Popen
    address: str
    started_s: float
    log_lines: list[str] = field(default_factory=list)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def peak_rss_mib(self) -> float | None:
        kib = read_vm_hwm_kib(self.pid)
        return None if kib is None else kib / 1024.0

    def cpu_seconds(self) -> float | None:
        """User + system CPU time the process has used so far (from /proc/<pid>/stat)."""
        try:
            with open(f"/proc/{self.pid}/stat", encoding="ascii") as fh:
                fields = fh.read().rsplit(")", 1)[1].split()
        except OSError:
            return None
        # Fields after the command name start at field 3 (state); utime and stime are fields 14 and 15.
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def channel(self) -> grpc.Channel:
        return grpc.insecure_channel(self.address, options=CHANNEL_OPTIONS)

    def stop(self, grace_s: float = 10.0) -> None:
        if self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)


def _pump(stream, sink: list[str], found: threading.Event, holder: dict, echo_prefix: str | None) -> None:
    for raw in iter(stream.readline, ""):
        line = raw.rstrip("\n")
        sink.append(line)
        if len(sink) > 2000:
            del sink[:1000]
        if echo_prefix is not None:
            print(f"{echo_prefix}{line}", file=sys.stderr)
        if not found.is_set():
            addr = find_address(line)
            if addr:
                holder["addr"] = addr
                found.set()
    stream.close()


def start_service(
    name: str,
    argv: list[str],
    port_env: str,
    extra_env: Mapping[str, str] | None = None,
    timeout_s: float = 120.0,
    echo: bool = False,
) -> ServiceProcess:
    """Start a service on port 0 and wait until its health service says SERVING."""
    env = dict(os.environ)
    env[port_env] = "0"
    env.setdefault("PYTHONPATH", os.pathsep.join((str(CLIENT_SOURCES), str(PY_SERVICES))))
    if extra_env:
        env.update(extra_env)
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
    )
    lines: list[str] = []
    found = threading.Event()
    holder: dict = {}
    prefix = f"[{name}] " if echo else None
    for stream in (proc.stdout, proc.stderr):
        threading.Thread(target=_pump, args=(stream, lines, found, holder, prefix), daemon=True).start()
    deadline = started + timeout_s
    while not found.wait(timeout=0.05):
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode} before listening:\n" + "\n".join(lines[-30:]))
        if time.perf_counter() > deadline:
            proc.kill()
            raise RuntimeError(f"{name} did not announce its address in {timeout_s}s:\n" + "\n".join(lines[-30:]))
    service = ServiceProcess(name, proc, holder["addr"], started, lines)
    wait_serving(service, deadline)
    return service


def wait_serving(service: ServiceProcess, deadline: float) -> float:
    """Block until grpc.health.v1 reports SERVING; returns seconds since start."""
    while True:
        if service.proc.poll() is not None:
            raise RuntimeError(f"{service.name} exited with {service.proc.returncode}")
        if health.check(service.address, timeout_s=2.0).serving:
            return time.perf_counter() - service.started_s
        if time.perf_counter() > deadline:
            raise RuntimeError(f"{service.name} never became SERVING:\n" + "\n".join(service.log_lines[-30:]))
        time.sleep(0.05)


# The corpus's lib/typescript.js (9 MB) is above the service's default 5 MB file limit,
# and it is exactly the huge-nested-functions case the benchmark exists to measure.
BENCH_ANALYSIS_ENV = {"ANALYSIS_MAX_FILE_BYTES": str(16 * 1024 * 1024)}


def start_analysis(extra_env: Mapping[str, str] | None = None, echo: bool = False) -> ServiceProcess:
    if not NODE_MAIN.exists():
        raise SystemExit(f"{NODE_MAIN} is missing: build the analysis service (npx tsc -p node_ts_service)")
    env = {**BENCH_ANALYSIS_ENV, **(extra_env or {})}
    return start_service("analysis", ["node", str(NODE_MAIN)], "ANALYSIS_PORT", env, echo=echo)


def start_embedding(extra_env: Mapping[str, str] | None = None, echo: bool = False) -> ServiceProcess:
    return start_service(
        "embedding", [sys.executable, "-m", "codecompass.embedding"], "EMBEDDING_PORT", extra_env, echo=echo
    )


def start_retrieval(
    analysis_addr: str, embedding_addr: str, extra_env: Mapping[str, str] | None = None, echo: bool = False
) -> ServiceProcess:
    env = {"ANALYSIS_ADDR": analysis_addr, "EMBEDDING_ADDR": embedding_addr}
    if extra_env:
        env.update(extra_env)
    return start_service("retrieval", [sys.executable, "-m", "codecompass.retrieval"], "RETRIEVAL_PORT", env, echo=echo)




@dataclass
class ServiceStack:
    """Analysis, embedding and retrieval over one state dir, as a benchmark runs them."""

    analysis: ServiceProcess
    embedding: ServiceProcess
    retrieval: ServiceProcess

    def stop(self) -> None:
        # Retrieval first: it is the client of the other two.
        for service in (self.retrieval, self.embedding, self.analysis):
            service.stop()

    def peak_rss_mib(self) -> dict[str, float | None]:
        return {s.name: s.peak_rss_mib() for s in (self.analysis, self.embedding, self.retrieval)}


def start_stack(extra_env: Mapping[str, str] | None = None, echo: bool = False) -> ServiceStack:
    """Start the three services (retrieval last, pointed at the other two); stops what started on failure."""
    started: list[ServiceProcess] = []
    try:
        started.append(start_analysis(extra_env, echo=echo))
        started.append(start_embedding(extra_env, echo=echo))
        started.append(start_retrieval(started[0].address, started[1].address, extra_env, echo=echo))
    except BaseException:
        for service in reversed(started):
            service.stop()
        raise
    return ServiceStack(*started)
