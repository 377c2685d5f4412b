"""Processes you can trust, across real processes: concurrent `up`, orphans, startup failures.

Which processes belong to a state dir is read straight from /proc here, independently of the
CLI's own bookkeeping: the environment marker every service `up` starts carries.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
from codecompass_cli.processes import spawn, wait_for_listening

# What `up` runs with the default settings (the rerank service only for a model reranker).
SERVICES = {"analysis", "embedding", "retrieval", "selection"}


def _cli_env(state_dir: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    return {**os.environ, "CODECOMPASS_STATE_DIR": str(state_dir), **(extra or {})}


def _cli(state_dir: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 120
         ) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "codecompass_cli", *args], env=_cli_env(state_dir, env),
                          capture_output=True, text=True, timeout=timeout, check=False)


def _processes_of(state_dir: Path) -> dict[int, str]:
    """{pid: service} of every live process whose environment names ``state_dir``."""
    wanted = f"CODECOMPASS_RUNTIME_DIR={state_dir}".encode()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if wanted in environ and stat.rpartition(")")[2].split()[0] != "Z":
            service = next(item.split(b"=", 1)[1].decode() for item in environ
                           if item.startswith(b"CODECOMPASS_RUNTIME_SERVICE="))
            found[int(entry)] = service
    return found


def _runtime_pids(state_dir: Path) -> dict[int, str]:
    services = json.loads((state_dir / "runtime.json").read_text())["services"]
    return {svc["pid"]: name for name, svc in services.items()}


@pytest.fixture
def state_dir(tmp_path: Path):
    state = (tmp_path / "state").resolve()
    yield state
    # Whatever the test did, leave no process of this state dir behind.
    if _processes_of(state):
        _cli(state, "down")


def _start_orphan(state_dir: Path, service: str, module: str) -> subprocess.Popen:
    """A service of this state dir that runtime.json does not name: what a killed or raced `up` leaves."""
    env = _cli_env(state_dir, {"CODECOMPASS_RUNTIME_DIR": str(state_dir), "CODECOMPASS_RUNTIME_SERVICE": service,
                               f"{service.upper()}_PORT": "0"})
    log = state_dir.parent / f"orphan-{service}.log"
    process = spawn(service, [sys.executable, "-m", module], env, log)
    wait_for_listening(service, process, log, 0, 60)
    return process


@pytest.mark.badinput(case="three concurrent `up`",
                      behaviour="one set of services; the others reuse it; `down` leaves no process")
def test_three_concurrent_ups_leave_one_set_and_down_leaves_none(state_dir: Path) -> None:
    ups = [subprocess.Popen([sys.executable, "-m", "codecompass_cli", "up"], env=_cli_env(state_dir),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outputs = [up.communicate(timeout=180) for up in ups]
    assert [up.returncode for up in ups] == [0, 0, 0], outputs
    started = [out for out, _ in outputs if "already running" not in out]
    assert len(started) == 1, outputs
    assert sum("codecompass is already running (since " in out for out, _ in outputs) == 2

    live = _processes_of(state_dir)
    assert sorted(live.values()) == sorted(SERVICES)
    # runtime.json names exactly that one set.
    assert _runtime_pids(state_dir) == live

    status = _cli(state_dir, "status", "--json")
    assert status.returncode == 0, status.stdout + status.stderr
    shown = json.loads(status.stdout)
    assert shown["orphans"] == [] and shown["state_dir"] == str(state_dir)

    down = _cli(state_dir, "down")
    assert down.returncode == 0, down.stdout + down.stderr
    assert "codecompass is down (" in down.stdout
    assert _processes_of(state_dir) == {}
    assert not (state_dir / "runtime.json").exists()


@pytest.mark.badinput(case="an orphan service runtime.json does not name",
                      behaviour="`status` shows it; `down` stops it")
def test_down_finds_and_stops_an_orphan_that_runtime_json_does_not_name(state_dir: Path) -> None:
    assert _cli(state_dir, "up").returncode == 0
    orphan = _start_orphan(state_dir, "rerank", "codecompass.rerank")
    assert orphan.pid not in _runtime_pids(state_dir)

    status = _cli(state_dir, "status", "--json")
    assert [(row["name"], row["pid"], row["state"]) for row in json.loads(status.stdout)["orphans"]] == [
        ("rerank", orphan.pid, "orphan")]
    text = _cli(state_dir, "status")
    assert f"rerank     orphan       -            {orphan.pid}" in text.stdout

    down = _cli(state_dir, "down")
    assert down.returncode == 0, down.stdout + down.stderr
    # Under load a service can outlive the grace period; either way the line names the orphan.
    assert re.search(rf"^rerank     (stopped|killed after the grace period) \(pid {orphan.pid}, an orphan "
                     r"runtime\.json did not name\)$", down.stdout, re.MULTILINE), down.stdout
    assert orphan.wait(timeout=5) is not None
    assert _processes_of(state_dir) == {}


@pytest.mark.badinput(case="orphans of a killed `up`", behaviour="the next `up` stops them and starts one set")
def test_up_stops_the_orphans_of_a_killed_up_before_starting_one_set(state_dir: Path) -> None:
    orphan = _start_orphan(state_dir, "selection", "codecompass.selection")
    up = _cli(state_dir, "up")
    assert up.returncode == 0, up.stdout + up.stderr
    assert f"selection  stopped (pid {orphan.pid}, an orphan runtime.json did not name)" in up.stdout
    assert orphan.wait(timeout=5) is not None
    live = _processes_of(state_dir)
    assert sorted(live.values()) == sorted(SERVICES) and _runtime_pids(state_dir) == live
    assert _cli(state_dir, "down").returncode == 0
    assert _processes_of(state_dir) == {}


@pytest.mark.badinput(case="a service that fails to start",
                      behaviour="exit 1, no traceback; only this start's log lines")
def test_a_failed_start_shows_only_this_starts_log_lines(state_dir: Path) -> None:
    log = state_dir / "logs" / "analysis.log"
    log.parent.mkdir(parents=True)
    log.write_text("".join(f"old line {n} from an earlier run\n" for n in range(40)))
    up = _cli(state_dir, "up", env={"ANALYSIS_MAX_FILE_BYTES": "lots"})
    assert up.returncode == 1
    assert "Traceback" not in up.stderr and "old line" not in up.stderr
    assert up.stderr.splitlines() == [
        f"codecompass: analysis failed to start: exited with code 2 before listening (log: {log})",
        'analysis: invalid ANALYSIS_MAX_FILE_BYTES: expected a whole number, got "lots"',
    ]
    assert _processes_of(state_dir) == {}


def test_status_names_the_checkout_and_the_state_dir(state_dir: Path) -> None:
    from codecompass.common.config import CHECKOUT_ROOT

    status = _cli(state_dir, "status")
    assert status.returncode == 1
    assert status.stdout.splitlines()[:2] == [f"checkout: {CHECKOUT_ROOT}", f"state:    {state_dir}"]


def test_a_waiting_up_says_so_and_reuses_the_set(state_dir: Path) -> None:
    import fcntl

    state_dir.mkdir(parents=True)
    with open(state_dir / "runtime.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        waiting = subprocess.Popen([sys.executable, "-m", "codecompass_cli", "up"], env=_cli_env(state_dir),
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(3)
        assert waiting.poll() is None and _processes_of(state_dir) == {}
    out, err = waiting.communicate(timeout=180)
    assert waiting.returncode == 0, out + err
    assert out.splitlines()[0] == f"waiting for another codecompass up/down/gc on {state_dir} to finish"
    assert sorted(_processes_of(state_dir).values()) == sorted(SERVICES)
