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
