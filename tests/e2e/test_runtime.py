"""The local runtime across real processes: up -> status -> chunks -> down."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from codecompass_cli.processes import pid_alive


def _cli(state_dir: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 90
         ) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "CODECOMPASS_STATE_DIR": str(state_dir), **(env or {})}
    return subprocess.run([sys.executable, "-m", "codecompass_cli", *args], env=full_env, capture_output=True,
                          check=False, text=True, timeout=timeout)


@pytest.fixture
def state_dir(tmp_path: Path):
    state = tmp_path / "state"
    yield state
    # Whatever the test did, leave no service behind.
    if (state / "runtime.json").exists():
        _cli(state, "down")


def test_up_status_chunks_down(state_dir: Path, sample_workspace: Path) -> None:
    up = _cli(state_dir, "up")
    assert up.returncode == 0, up.stdout + up.stderr
    assert "analysis   SERVING at 127.0.0.1:" in up.stdout
    runtime = json.loads((state_dir / "runtime.json").read_text())
    pids = [svc["pid"] for svc in runtime["services"].values()]
    assert all(pid_alive(pid) for pid in pids)
    assert (state_dir / "logs" / "analysis.log").exists()

    status = _cli(state_dir, "status", "--json")
    assert status.returncode == 0, status.stdout + status.stderr
    rows = {row["name"]: row for row in json.loads(status.stdout)["services"]}
    assert rows["analysis"]["health"] == "SERVING"
    for name in runtime["services"]:
        assert rows[name]["state"] == "running" and rows[name]["health"] == "SERVING"

    again = _cli(state_dir, "up")
    assert again.returncode == 0 and "already running" in again.stdout

    chunks = _cli(state_dir, "chunks", str(sample_workspace), "--json")
    assert chunks.returncode == 0, chunks.stderr
    records = [json.loads(line) for line in chunks.stdout.splitlines()]
    assert len(records) > 50
    assert {"TokenService.validateToken", "Router.handle", "LoginForm", "loadConfig"} <= {
        r["qualified_name"] for r in records}

    down = _cli(state_dir, "down")
    assert down.returncode == 0, down.stdout + down.stderr
    assert not (state_dir / "runtime.json").exists()
    assert not any(pid_alive(pid) for pid in pids)
    assert _cli(state_dir, "status").returncode == 1


def test_a_service_that_fails_to_start_is_reported_and_nothing_is_left_running(state_dir: Path) -> None:
    up = _cli(state_dir, "up", env={"ANALYSIS_MAX_FILE_BYTES": "lots"})
    assert up.returncode == 1
    assert "analysis failed to start: exited with code 2 before listening" in up.stderr
    # The tail of the service's own log explains why.
    assert "ANALYSIS_MAX_FILE_BYTES" in up.stderr
    assert not (state_dir / "runtime.json").exists()


def test_down_when_nothing_runs_is_fine(state_dir: Path) -> None:
    down = _cli(state_dir, "down")
    assert down.returncode == 0 and "not running" in down.stdout


def _in_process_settings(state_dir: Path):
    from codecompass.common.config import settings_from

    return settings_from({"CODECOMPASS_STATE_DIR": str(state_dir)})


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def test_a_fresh_up_starts_every_service_before_any_listens(state_dir: Path, monkeypatch) -> None:
    from codecompass_cli import runtime

    events: list[str] = []
    launch, listening = runtime._launch, runtime.wait_for_listening
    monkeypatch.setattr(runtime, "_launch", lambda settings, svc, *a: events.append(f"start {svc.name}")
                        or launch(settings, svc, *a))
    monkeypatch.setattr(runtime, "wait_for_listening", lambda name, *a: events.append(f"listen {name}")
                        or listening(name, *a))
    said: list[str] = []
    settings = _in_process_settings(state_dir)
    state = runtime.up(settings, None, said.append)
    try:
        starts = [i for i, e in enumerate(events) if e.startswith("start")]
        # Four: the rerank service runs only for a model reranker.
        assert len(starts) == 4 and max(starts) < events.index(next(e for e in events if e.startswith("listen")))
        # Each was handed the address its dependencies listen at.
        env = _environ(state.services["retrieval"].pid)
        assert env["ANALYSIS_ADDR"] == state.services["analysis"].address
        assert env["EMBEDDING_ADDR"] == state.services["embedding"].address
        assert _environ(state.services["selection"].pid)["ANALYSIS_ADDR"] == state.services["analysis"].address
    finally:
        runtime.down(settings, said.append)


def test_a_reserved_port_taken_before_the_bind_moves_the_service_and_restarts_those_that_need_it(
        state_dir: Path, monkeypatch) -> None:
    import socket

    from codecompass_cli import runtime

    squatter = socket.socket()
    squatter.bind(("127.0.0.1", 0))
    squatter.listen()
    taken = squatter.getsockname()[1]
    reserve = runtime._reserve_port
    handed: list[int] = []

    def taken_first(host: str, port: int) -> int:
        # The first reservation (the analysis service's) is a port another program binds meanwhile.
        handed.append(taken if not handed else reserve(host, port))
        return handed[-1]

    monkeypatch.setattr(runtime, "_reserve_port", taken_first)
    said: list[str] = []
    settings = _in_process_settings(state_dir)
    try:
        state = runtime.up(settings, None, said.append)
        try:
            text = "\n".join(said)
            assert f"analysis   its port ({taken}) was taken while it started; it gets a new one" in text
            assert "retrieval  restarting it: it was started with the reserved address of analysis" in text
            analysis = state.services["analysis"].address
            assert not analysis.endswith(f":{taken}")
            assert _environ(state.services["retrieval"].pid)["ANALYSIS_ADDR"] == analysis
            assert _environ(state.services["selection"].pid)["ANALYSIS_ADDR"] == analysis
            assert "SERVING" in text
        finally:
            runtime.down(settings, said.append)
    finally:
        squatter.close()
