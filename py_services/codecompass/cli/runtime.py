"""`codecompass up / down / status / gc`: the local services as background processes, and
the state dir they keep.

State lives in ``<state_dir>/runtime.json`` (addresses, pids, argv, log
paths); logs in ``<state_dir>/logs/<service>.log``. The state file is written
after every start wave, so an interrupted `up` can still be cleaned by `down`.

`up`, `down` and `gc` of one state dir hold ``<state_dir>/runtime.lock`` (flock) for their
whole run, so concurrent ones take turns: the second `up` finds the first one's services
and reuses them, and runtime.json always describes exactly one set. The kernel drops the
lock when its holder dies, so a killed `up` never leaves the state dir locked. Processes
that runtime.json does not name (orphans) are found by their environment marker
(see ``processes``): `status` shows them, `up` and `down` stop them.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codecompass.cli.errors import EXIT_USAGE, CliError
from codecompass.cli.indexes import human_size, list_indexes, remove_all_indexes, remove_index
from codecompass.cli.processes import (
    RUNTIME_DIR_ENV,
    RUNTIME_SERVICE_ENV,
    StartError,
    health_status,
    marked_processes,
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
LOCK_FILE = "runtime.lock"
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


@contextmanager
def state_lock(settings: Settings, say: Say) -> Iterator[None]:
    """Hold the state dir's lock; waits (saying so) while another up/down/gc holds it."""
    path = settings.state_dir / LOCK_FILE
    try:
        settings.state_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    except OSError as exc:
        raise CliError(f"cannot use {exc.filename or path}: {exc.strerror}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"waiting for another codecompass up/down/gc on {settings.state_dir} to finish")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def state_locked(settings: Settings) -> bool:
    """True while an up/down/gc holds the state dir (status then sees a set being changed)."""
    try:
        fd = os.open(settings.state_dir / LOCK_FILE, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


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


def orphans(settings: Settings, state: RuntimeState | None) -> dict[int, str]:
    """{pid: service} of live processes started for this state dir that runtime.json does not name."""
    recorded = {svc.pid for svc in state.services.values()} if state is not None else set()
    return {pid: name for pid, name in marked_processes(settings.state_dir).items() if pid not in recorded}


def orphan_rows(settings: Settings) -> list[dict[str, Any]]:
    """Status rows of the orphans, in the shape of `service_rows`."""
    return [{"name": name, "state": "orphan", "pid": pid, "address": None, "health": None, "log": None}
            for pid, name in sorted(orphans(settings, read_state(settings)).items())]


def _healthy(rows: list[dict[str, Any]]) -> bool:
    started = [row for row in rows if row["state"] != "not started"]
    return bool(started) and all(row["health"] == "SERVING" for row in started)


def _child_env(settings: Settings, svc: ServiceDef, addresses: dict[str, str]) -> dict[str, str]:
    env = dict(os.environ)
    # One OTEL_SERVICE_NAME for every child would merge their traces into one service.
    env.pop("OTEL_SERVICE_NAME", None)
    env[svc.port_env] = "0"
    env["CODECOMPASS_STATE_DIR"] = str(settings.state_dir)
    env[RUNTIME_DIR_ENV] = str(settings.state_dir)
    env[RUNTIME_SERVICE_ENV] = svc.name
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
    with state_lock(settings, say):
        existing = read_state(settings)
        if existing is not None:
            complete = set(existing.services) == {svc.name for svc in SERVICES}
            if complete and _healthy(service_rows(settings)):
                _stop(settings, orphans(settings, existing), say)
                say(f"codecompass is already running (since {existing.started_at})")
                return existing
            say("found a stale, partial or unhealthy runtime; restarting it")
        _stop_all(settings, say)
        return _start(settings, workspace, say)


def _start(settings: Settings, workspace: str | None, say: Say) -> RuntimeState:
    state = RuntimeState(started_at=_now(), workspace=workspace)
    log_dir = settings.state_dir / "logs"
    addresses: dict[str, str] = {}
    # A service needs only its dependencies' addresses to start, not their readiness: the next
    # wave starts as soon as the previous one listens, and warm-ups (the embedding model, the
    # TypeScript parser, Python imports) overlap. Readiness is awaited once all are started.
    started = []
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
            started += pending
        for svc, process, log_path, offset, spawned_at in started:
            wait_until_serving(svc.name, process, addresses[svc.name], svc.health_service, log_path,
                               settings.startup_timeout_s, offset)
            say(f"{svc.name:<10} SERVING at {addresses[svc.name]}  "
                f"(pid {process.pid}, ready {time.monotonic() - spawned_at:.1f}s after start)")
    except StartError as exc:
        stop_pids([svc.pid for svc in state.services.values()], settings.shutdown_grace_s + KILL_MARGIN_S)
        remove_state(settings)
        raise CliError(
            f"{exc.service} failed to start: {exc.reason} (log: {exc.log_path})",
            detail=exc.log_tail() or f"({exc.service} wrote nothing to its log this time)",
        ) from None
    except BaseException:
        # Ctrl-C or a crash mid-start must not leave orphans behind.
        stop_pids([svc.pid for svc in state.services.values()], settings.shutdown_grace_s + KILL_MARGIN_S)
        remove_state(settings)
        raise
    return state


def _indexes(count: int) -> str:
    return f"{count} index" if count == 1 else f"{count} indexes"


def down(settings: Settings, say: Say, purge: bool = False) -> None:
    """Stop every process started for this state dir; with ``purge`` delete its indexes too."""
    started = time.monotonic()
    with state_lock(settings, say):
        stopped = _stop_all(settings, say)
        removed = remove_all_indexes(settings) if purge else None
    if stopped:
        say(f"codecompass is down ({time.monotonic() - started:.1f}s)")
    else:
        say("codecompass is not running")
    if removed is not None:
        say(f"removed {_indexes(removed.count)} ({removed.size_text}) from {settings.state_dir}")
    else:
        # `down` once claimed to remove the state; it keeps the indexes, and says where they are.
        say(f"indexes kept in {settings.state_dir} (`codecompass gc` removes those of deleted "
            "workspaces, `codecompass down --purge` all of them)")


def _stop_all(settings: Settings, say: Say) -> int:
    """Stop the recorded services and every orphan; removes runtime.json. Returns how many stopped."""
    state = read_state(settings)
    targets = {svc.pid: name for name, svc in (state.services.items() if state else ())
               if pid_runs(svc.pid, svc.argv)}
    targets.update(orphans(settings, state))
    _stop(settings, targets, say, recorded=state)
    remove_state(settings)
    return len(targets)


def _stop(settings: Settings, targets: dict[int, str], say: Say, recorded: RuntimeState | None = None) -> None:
    """SIGTERM ``{pid: service}``, SIGKILL what outlives the grace; one line per process."""
    if not targets:
        return
    recorded_pids = {svc.pid for svc in recorded.services.values()} if recorded else set()
    killed = stop_pids(list(targets), settings.shutdown_grace_s + KILL_MARGIN_S)
    for pid, name in targets.items():
        how = "killed after the grace period" if pid in killed else "stopped"
        origin = "" if pid in recorded_pids else ", an orphan runtime.json did not name"
        say(f"{name:<10} {how} (pid {pid}{origin})")
    leftovers = [pid for pid in targets if pid_alive(pid)]
    if leftovers:
        raise CliError(f"processes still alive after SIGKILL: {leftovers}")


def gc(settings: Settings, dry_run: bool, say: Say) -> None:
    """List every index with its size and workspace; remove those whose workspace is gone."""
    with state_lock(settings, say):
        entries = list_indexes(settings)
        if not entries:
            say(f"no indexes in {settings.state_dir}")
            return
        missing = [entry for entry in entries if entry.workspace_exists is False]
        if missing and not dry_run and any(row["state"] == "running" for row in service_rows(settings)):
            # The retrieval service may hold a removed index open and keep writing to it.
            raise CliError("the services are running and may hold these indexes open; stop them with "
                           "`codecompass down` first, or list only with `codecompass gc --dry-run`")
        for entry in entries:
            if entry.workspace is None:
                verdict, where = "kept", f"(workspace not recorded; index {entry.key[:12]})"
            elif entry.workspace_exists:
                verdict, where = "kept", str(entry.workspace)
            else:
                verdict = "missing" if dry_run else "removed"
                where = f"{entry.workspace} (workspace no longer exists)"
                if not dry_run:
                    remove_index(entry)
            say(f"{verdict:<8} {human_size(entry.size_bytes):>9}  {where}")
        freed = human_size(sum(entry.size_bytes for entry in missing))
        total = human_size(sum(entry.size_bytes for entry in entries))
        action = "would remove" if dry_run else "removed"
        say(f"{_indexes(len(entries))} ({total}) in {settings.state_dir}; {action} {len(missing)} of deleted "
            f"workspaces ({freed})")
        if settings.retrieval.db_uri and missing and not dry_run:
            say(f"their tables under {settings.retrieval.db_uri} are not removed")
