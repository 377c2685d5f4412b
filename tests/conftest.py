"""Shared fixtures: isolated settings, and real service processes on 127.0.0.1:0."""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from codecompass_cli.cli import main as cli_main
from codecompass_cli.processes import (
    spawn,
    stop_pids,
    wait_for_listening,
    wait_until_serving,
)
from codecompass_cli.services import NODE_ENTRY
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from codecompass.common.config import GRPC_REFLECTION_ENV, documented_settings, load_settings
from codecompass.common.telemetry import init_telemetry

# The local S3 server (moto) and its per-test buckets: tests/fixtures/s3.py.
pytest_plugins = ["tests.fixtures.s3"]

REPO_ROOT = Path(__file__).resolve().parents[1]
FIXTURES = REPO_ROOT / "tests" / "fixtures"
SAMPLE_WORKSPACE = FIXTURES / "sample_workspace"
START_TIMEOUT_S = 60.0
STOP_GRACE_S = 15.0

StartService = Callable[..., tuple[subprocess.Popen, str]]


@pytest.fixture(scope="session", autouse=True)
def _isolated_settings(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Keep tests away from the user's ~/.config and ~/.local/state."""
    base = tmp_path_factory.mktemp("codecompass-home")
    empty_config = base / "config.yaml"
    empty_config.write_text("")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CODECOMPASS_STATE_DIR", str(base / "state"))
        patch.setenv("CODECOMPASS_CONFIG", str(empty_config))
        for name in ("ANALYSIS_ADDR", "EMBEDDING_ADDR", "RETRIEVAL_ADDR", "RERANK_ADDR", "SELECTION_ADDR",
                     # The writer's address, and the name it had before (still read, with a warning).
                     "WRITER_ADDR", "INDEXER_ADDR", "OTEL_EXPORTER_OTLP_ENDPOINT",
                     "CODECOMPASS_TRACE_FILE", "CODECOMPASS_BIND_HOST",
                     # The service token and TLS (the grpc settings): a developer's own must not leak in.
                     *(env for env, _, _ in documented_settings()
                       if env.startswith("CODECOMPASS_GRPC_") and env != GRPC_REFLECTION_ENV)):
            patch.delenv(name, raising=False)
        yield


@pytest.fixture(scope="session", autouse=True)
def span_exporter(_isolated_settings: None) -> InMemorySpanExporter:
    """Every span the test process ends; telemetry is set up once per process, before any test."""
    exporter = InMemorySpanExporter()
    init_telemetry("codecompass-tests", extra_processors=[SimpleSpanProcessor(exporter)])
    return exporter


@pytest.fixture(autouse=True)
def _per_test_reset(span_exporter: InMemorySpanExporter) -> Iterator[None]:
    """Settings are cached per process; each test sees the environment it set up, and its own spans."""
    load_settings.cache_clear()
    span_exporter.clear()
    yield
    load_settings.cache_clear()


@pytest.fixture(scope="session")
def sample_workspace() -> Path:
    return SAMPLE_WORKSPACE


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json_lines(self) -> list[dict]:
        return [json.loads(line) for line in self.out.splitlines() if line.strip()]


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Iterator[Callable[..., CliResult]]:
    """Run `codecompass ARGS` in this process; returns its exit code and output."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)

    def run(*argv: str) -> CliResult:
        capsys.readouterr()
        # As a new process would: the environment as it is now, not as a client made earlier read it.
        load_settings.cache_clear()
        code = cli_main(list(argv))
        captured = capsys.readouterr()
        load_settings.cache_clear()
        return CliResult(code, captured.out, captured.err)

    yield run
    # main() points the root logger at the captured stderr, which pytest closes.
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])


class _Services:
    """Starts service processes and stops every one of them at teardown."""

    def __init__(self, log_dir: Path) -> None:
        self._log_dir = log_dir
        self._processes: list[subprocess.Popen] = []

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None, *,
              wait_serving: bool = True) -> tuple[subprocess.Popen, str]:
        full_env = dict(os.environ)
        full_env[f"{name.upper()}_PORT"] = "0"
        full_env.update(env or {})
        log_path = self._log_dir / f"{name}-{len(self._processes)}.log"
        process = spawn(name, argv, full_env, log_path)
        self._processes.append(process)
        address = wait_for_listening(name, process, log_path, 0, START_TIMEOUT_S)
        if wait_serving:
            wait_until_serving(name, process, address, "", log_path, START_TIMEOUT_S)
        return process, address

    def stop_all(self) -> None:
        stop_pids([p.pid for p in self._processes if p.poll() is None], STOP_GRACE_S)
        for process in self._processes:
            process.wait(timeout=STOP_GRACE_S)


def _python_starter(services: _Services) -> StartService:
    def start_python_service(module: str, env: dict[str, str] | None = None, *,
                             wait_serving: bool = True) -> tuple[subprocess.Popen, str]:
        """Run ``python -m <module>`` as a real process; returns (process, "127.0.0.1:port")."""
        name = module.rsplit(".", 1)[-1]
        return services.start(name, [sys.executable, "-m", module], env,
                              wait_serving=wait_serving)

    return start_python_service


@pytest.fixture
def start_python_service(tmp_path: Path) -> Iterator[StartService]:
    services = _Services(tmp_path)
    yield _python_starter(services)
    services.stop_all()


@pytest.fixture(scope="session")
def start_python_service_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StartService]:
    services = _Services(tmp_path_factory.mktemp("service-logs"))
    yield _python_starter(services)
    services.stop_all()


def require_node_build() -> None:
    if not NODE_ENTRY.is_file():
        pytest.fail(f"{NODE_ENTRY} is missing: run `make setup` (make test builds it first)", pytrace=False)


@pytest.fixture
def start_analysis_service(tmp_path: Path) -> Iterator[StartService]:
    """Factory for a dedicated Node analysis process with extra env (e.g. a trace file)."""
    require_node_build()
    services = _Services(tmp_path)

    def start(env: dict[str, str] | None = None, *, wait_serving: bool = True) -> tuple[subprocess.Popen, str]:
        return services.start("analysis", ["node", str(NODE_ENTRY)], env, wait_serving=wait_serving)

    yield start
    services.stop_all()


@pytest.fixture(scope="session")
def analysis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Address of a real Node analysis service, shared by the session."""
    require_node_build()
    services = _Services(tmp_path_factory.mktemp("analysis-logs"))
    _, address = services.start("analysis", ["node", str(NODE_ENTRY)])
    yield address
    services.stop_all()


@pytest.fixture
def free_port() -> int:
    """A loopback port nothing listens on (bound, read, released): for "service is down" cases."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def index_fully(retrieval: str, root: Path) -> None:
    """Index `root` through the retrieval service at `retrieval`, every chunk embedded."""
    from codecompass.clients.retrieval import RetrievalClient

    client = RetrievalClient(retrieval)
    try:
        for _ in client.index(str(root), wait_for_embeddings=True, timeout_s=300):
            pass
    finally:
        client.close()


@pytest.fixture(scope="session")
def shared_services(start_python_service_session, analysis_server: str) -> dict[str, str]:
    """The services that keep no state of a workspace (embedding, rerank, selection), started
    once and shared by every `indexed_stack`; each service's <SVC>_ADDR."""
    _, embedding = start_python_service_session("codecompass.embedding", {"CODECOMPASS_EMBEDDING_PROFILE": "minilm"})
    _, rerank = start_python_service_session("codecompass.rerank")
    _, selection = start_python_service_session("codecompass.selection", {"ANALYSIS_ADDR": analysis_server})
    return {"EMBEDDING_ADDR": embedding, "RERANK_ADDR": rerank, "SELECTION_ADDR": selection}


@pytest.fixture(scope="module")
def indexed_stack(shared_services: dict[str, str], analysis_server: str, tmp_path_factory: pytest.TempPathFactory
                  ) -> Iterator[dict[str, str]]:
    """Every service over a copy of the sample workspace, indexed with embeddings: one per test
    module (its own workspace copy, retrieval service and state), sharing the session's other
    services. Keys: root, state, and each service's <SVC>_ADDR."""
    root = tmp_path_factory.mktemp("stack") / "ws"
    shutil.copytree(SAMPLE_WORKSPACE, root)
    state = root.parent / "state"
    services = _Services(root.parent)
    try:
        _, retrieval = _python_starter(services)("codecompass.retrieval", {
            "ANALYSIS_ADDR": analysis_server, "EMBEDDING_ADDR": shared_services["EMBEDDING_ADDR"],
            "CODECOMPASS_STATE_DIR": str(state)})
        index_fully(retrieval, root)
        yield {"root": str(root), "state": str(state), "RETRIEVAL_ADDR": retrieval, "ANALYSIS_ADDR": analysis_server,
               **shared_services}
    finally:
        services.stop_all()
