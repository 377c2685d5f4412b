"""`codecompass up / down / status`: the local services as background processes.

State lives in ``<state_dir>/runtime.json`` (addresses, pids, argv, log
paths); logs in ``<state_dir>/logs/<service>.log``. The state file is written
after every start wave, so an interrupted `up` can still be cleaned by `down`.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codecompass.cli.errors import EXIT_USAGE, CliError
from codecompass.cli.processes import (
    StartError,
    health_status,
    pid_alive,
    pid_runs,
    spawn,
    stop_pids,
    wait_for_listening,
    wait_until_serving,
)
from codecompass.cli.services import (
    SERVICES,
    ServiceDef,
    ServiceUnavailable,
    start_waves,
)
from codecompass.common.config import Settings

STATE_FILE = "runtime.json"
HEALTH_DEADLINE_S = 1.0
# Seconds past the services' own drain period before `down` uses SIGKILL.
KILL_MARGIN_S = 5.0

Say = Callable[[str], None]


@dataclass
class ServiceState:
    name: str
    pid: int
    address: str
    log_path: str
    argv: list[str]
    started_at: str


@dataclass
class RuntimeState:
    started_at: str
    workspace: str | None
    services: dict[str, ServiceState] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "started_at": self.started_at,
            "workspace": self.workspace,
            "services": {name: asdict(svc) for name, svc in self.services.items()},
        }


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def state_path(settings: Settings) -> Path:
    return settings.state_dir / STATE_FILE


def read_state(settings: Settings) -> RuntimeState | None:
    """The recorded runtime, or None; an unreadable file counts as none (down removes it)."""
    path = state_path(settings)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        services = {name: ServiceState(**svc) for name, svc in data["services"].items()}
        return RuntimeState(started_at=data["started_at"], workspace=data.get("workspace"), services=services)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError):
        return RuntimeState(started_at="", workspace=None, services={})


def write_state(settings: Settings, state: RuntimeState) -> None:
    path = state_path(settings)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(state.to_json(), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def remove_state(settings: Settings) -> None:
    state_path(settings).unlink(missing_ok=True)


def service_address(settings: Settings, name: str) -> str:
    """Where clients reach a service: the running local one, else <SVC>_ADDR."""
    state = read_state(settings)
    if state is not None and name in state.services:
        return state.services[name].address
    return getattr(settings, f"{name}_addr")


def service_rows(settings: Settings) -> list[dict[str, Any]]:
    """One status row per known service (for `status` and `up`)."""
    state = read_state(settings) or RuntimeState(started_at="", workspace=None)
    rows = []
    for svc in SERVICES:
        recorded = state.services.get(svc.name)
        if recorded is None:
            rows.append({"name": svc.name, "state": "not started", "pid": None, "address": None,
                         "health": None, "log": None})
            continue
        alive = pid_runs(recorded.pid, recorded.argv)
        health = health_status(recorded.address, svc.health_service, HEALTH_DEADLINE_S) if alive else None
        rows.append({
            "name": svc.name,
            "state": "running" if alive else "dead",
            "pid": recorded.pid,
            "address": recorded.address,
            "health": health,
            "log": recorded.log_path,
        })
    return rows


def _healthy(rows: list[dict[str, Any]]) -> bool:
    started = [row for row in rows if row["state"] != "not started"]
    return bool(started) and all(row["health"] == "SERVING" for row in started)


def _child_env(settings: Settings, svc: ServiceDef, addresses: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    # One OTEL_SERVICE_NAME for every child would merge their traces into one service.
    env.pop("OTEL_SERVICE_NAME", None)
    env[svc.port_env] = "0"
    env["CODECOMPASS_STATE_DIR"] = str(settings.state_dir)
    for need in svc.needs:
        env[f"{need.upper()}_ADDR"] = addresses[need]
    return env


def _check_buildable() -> None:
    """Fail before starting anything when a service cannot run from this checkout."""
    for svc in SERVICES:
        try:
            svc.argv()
        except ServiceUnavailable as exc:
            raise CliError(str(exc), EXIT_USAGE) from None


def up(settings: Settings, workspace: str | None, say: Say) -> RuntimeState:
    """Start every available service, or confirm that they already run."""
    _check_buildable()
    existing = read_state(settings)
    if existing is not None:
        complete = set(existing.services) == {svc.name for svc in SERVICES}
        if complete and _healthy(service_rows(settings)):
            say("codecompass is already up")
            return existing
        say("found a stale, partial or unhealthy runtime; restarting it")
        down(settings, say=lambda _msg: None)

    state = RuntimeState(started_at=_now(), workspace=workspace)
    log_dir = settings.state_dir / "logs"
    addresses: dict[str, str] = {}
    try:
        for wave in start_waves(SERVICES):
            pending = []
            for svc in wave:
                log_path = log_dir / f"{svc.name}.log"
                offset = log_path.stat().st_size if log_path.exists() else 0
                argv = svc.argv()
                spawned_at = time.monotonic()
                process = spawn(svc.name, argv, _child_env(settings, svc, addresses), log_path)
                pending.append((svc, process, log_path, offset, spawned_at))
                state.services[svc.name] = ServiceState(
                    name=svc.name, pid=process.pid, address="", log_path=str(log_path), argv=argv,
                    started_at=_now(),
                )
            write_state(settings, state)
            for svc, process, log_path, offset, _spawned_at in pending:
                address = wait_for_listening(svc.name, process, log_path, offset, settings.startup_timeout_s)
                state.services[svc.name].address = address
                addresses[svc.name] = address
            write_state(settings, state)
            for svc, process, log_path, _offset, spawned_at in pending:
                wait_until_serving(svc.name, process, addresses[svc.name], svc.health_service, log_path,
                                   settings.startup_timeout_s)
                say(f"{svc.name:<10} SERVING at {addresses[svc.name]}  "
                    f"(pid {process.pid}, ready {time.monotonic() - spawned_at:.1f}s after start)")
    except StartError as exc:
        stop_pids([svc.pid for svc in state.services.values()], settings.shutdown_grace_s + KILL_MARGIN_S)
        remove_state(settings)
        raise CliError(
            f"{exc.service} failed to start: {exc.reason} (log: {exc.log_path})",
            detail=exc.log_tail(),
        ) from None
    except BaseException:
        # Ctrl-C or a crash mid-start must not leave orphans behind.
        stop_pids([svc.pid for svc in state.services.values()], settings.shutdown_grace_s + KILL_MARGIN_S)
        remove_state(settings)
        raise
    return state


def down(settings: Settings, say: Say) -> None:
    state = read_state(settings)
    if state is None:
        say("codecompass is not running")
        return
    running = {name: svc for name, svc in state.services.items() if pid_runs(svc.pid, svc.argv)}
    started = time.monotonic()
    killed = stop_pids([svc.pid for svc in running.values()], settings.shutdown_grace_s + KILL_MARGIN_S)
    for name, svc in running.items():
        how = "killed after the grace period" if svc.pid in killed else "stopped"
        say(f"{name:<10} {how} (pid {svc.pid})")
    leftovers = [svc.pid for svc in running.values() if pid_alive(svc.pid)]
    if leftovers:
        raise CliError(f"processes still alive after SIGKILL: {leftovers}")
    remove_state(settings)
    say(f"codecompass is down ({time.monotonic() - started:.1f}s)")
