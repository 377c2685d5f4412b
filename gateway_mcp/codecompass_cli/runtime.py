"""`codecompass up / down / status / gc`: the local services as background processes, and
the state dir they keep.

State lives in ``<state_dir>/runtime.json`` (addresses, pids, argv, log
paths); logs in ``<state_dir>/logs/<service>.log``. The state file is written
after every start wave, so an interrupted `up` can still be cleaned by `down`.

`up` heals a set in place: it restarts only the services that are dead or do not answer, and
keeps the others (and their pids) running, so a running `index`, search or MCP server that uses
them is not cut off. A restarted service binds the port it had, so every client finds it where
it was; when another program took that port it gets a new one, the services started with the old
address (retrieval and selection reach analysis, retrieval reaches embedding, by <SVC>_ADDR) are
restarted too, and clients that resolve addresses per call (``Locator``) follow runtime.json.

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
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from codecompass.clients.health import UNREACHABLE
from codecompass.clients.health import check as check_health
from codecompass.common import names
from codecompass.common.config import BIND_HOST_ENV, GRPC_REFLECTION_ENV, Settings, documented_settings
from codecompass.common.hosts import dialable, host_port
from codecompass_cli.errors import EXIT_USAGE, CliError
from codecompass_cli.indexes import (
    base_unused,
    drop_index,
    human_size,
    list_indexes,
    remove_all_indexes,
    workspace_gone,
)
from codecompass_cli.processes import (
    RUNTIME_DIR_ENV,
    RUNTIME_SERVICE_ENV,
    StartError,
    marked_processes,
    pid_alive,
    pid_runs,
    spawn,
    stop_pids,
    wait_for_listening,
    wait_until_serving,
)
from codecompass_cli.services import (
    SERVICES,
    ServiceDef,
    ServiceUnavailable,
    needed,
    start_waves,
)

STATE_FILE = "runtime.json"
LOCK_FILE = "runtime.lock"
HEALTH_DEADLINE_S = 1.0
# A running service that missed the quick check gets this long to answer before `up` restarts it:
# one busy with an index can be slow to answer, and restarting it would cut the index off.
RECHECK_DEADLINE_S = 5.0
# How long `up` waits for a dead service's port before giving it a new one: a killed Node
# process's listening socket outlives it by tens of milliseconds (libuv's io_uring lets go of
# it after the exit), and a new port makes the services that reach it restart too.
PORT_RELEASE_S = 2.0
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
    """Where clients reach a service: its configured address (<SVC>_ADDR or the config file's
    <svc>_addr) when one is set, else the local one `up` started, else the default address."""
    return _address_in(read_state(settings), settings, name)


def _address_in(state: RuntimeState | None, settings: Settings, name: str) -> str:
    # Configuration first: a service run elsewhere (another host, a cluster) is found wherever the
    # client runs from, whatever state dir, and whatever runtime, its checkout has.
    if name in settings.configured_addrs:
        return getattr(settings, f"{name}_addr")
    recorded = state.services.get(name) if state is not None else None
    # An empty address: a start that never reached LISTENING.
    if recorded is not None and recorded.address:
        return recorded.address
    return getattr(settings, f"{name}_addr")


class Locator:
    """`service_address` for clients that live across `up`s (an MCP server, a long CLI call):
    asked before every call, it reads runtime.json again only when the file changed."""

    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._lock = threading.Lock()
        self._seen: tuple[int, int, int] | None = None
        self._state: RuntimeState | None = None

    def __call__(self, name: str) -> str:
        try:
            stat = os.stat(state_path(self._settings))
            # write_state replaces the file, so a new state is a new inode.
            seen = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        except OSError:
            seen = None
        with self._lock:
            if seen != self._seen:
                self._state = read_state(self._settings) if seen is not None else None
                self._seen = seen
            state = self._state
        return _address_in(state, self._settings, name)


def service_rows(settings: Settings) -> list[dict[str, Any]]:
    """One status row per known service (for `status` and `up`)."""
    state = read_state(settings) or RuntimeState(started_at="", workspace=None)
    rows: list[dict[str, Any]] = []
    for svc in SERVICES:
        recorded = state.services.get(svc.name)
        if recorded is None:
            why = svc.unneeded(settings)
            rows.append({"name": svc.name, "state": "not needed" if why else "not started", "pid": None,
                         "address": None, "health": None, "log": None, **({"reason": why} if why else {})})
            continue
        alive = pid_runs(recorded.pid, recorded.argv)
        health = check_health(recorded.address, svc.health_service, HEALTH_DEADLINE_S).status if alive else None
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


def _child_env(settings: Settings, svc: ServiceDef, addresses: dict[str, str], port: int) -> dict[str, str]:
    env = dict(os.environ)
    env[svc.port_env] = str(port)
    # The Node service reads its settings from the environment only: the config file's bind_host
    # and metrics port reach it this way.
    env[BIND_HOST_ENV] = settings.bind_host
    env[GRPC_REFLECTION_ENV] = "true" if settings.grpc_reflection else "false"
    # And the service token's file and the TLS files, wherever they were set (the token itself is
    # env only, in os.environ already).
    for variable, key, _ in documented_settings():
        value = getattr(settings.grpc, key.partition(".")[2]) if key and key.startswith("grpc.") else None
        if value is not None:
            env[variable] = str(value)
    metrics_port = settings.metrics_port(svc.name)
    if metrics_port is not None:
        env[names.metrics_port_env(svc.name)] = str(metrics_port)
    env["CODECOMPASS_STATE_DIR"] = str(settings.state_dir)
    env[RUNTIME_DIR_ENV] = str(settings.state_dir)
    env[RUNTIME_SERVICE_ENV] = svc.name
    for need in svc.needs:
        env[names.addr_env(need)] = addresses[need]
    return env


def _check_buildable(settings: Settings) -> None:
    """Fail before starting anything when a service cannot run from this checkout."""
    for svc in needed(settings):
        try:
            svc.argv()
        except ServiceUnavailable as exc:
            raise CliError(str(exc), EXIT_USAGE) from None


@dataclass
class _Plan:
    """What `up` does with each service of a state dir."""

    keep: dict[str, ServiceState]  # running and SERVING: left alone
    start: dict[str, str]  # service -> why it starts (not started, dead, not answering)
    stop: dict[int, str]  # {pid: service} of those that run but do not answer


def _plan(existing: RuntimeState | None, settings: Settings) -> _Plan:
    plan = _Plan(keep={}, start={}, stop={})
    recorded_services = existing.services if existing is not None else {}
    for svc in SERVICES:
        recorded = recorded_services.get(svc.name)
        unneeded = svc.unneeded(settings) is not None
        if recorded is None:
            if not unneeded:
                plan.start[svc.name] = "not started"
        elif not pid_runs(recorded.pid, recorded.argv):
            if not unneeded:
                plan.start[svc.name] = f"dead (pid {recorded.pid})"
        else:
            health = _health(recorded, svc)
            if health == "SERVING":
                plan.keep[svc.name] = recorded
            else:
                plan.start[svc.name] = f"running but {health} (pid {recorded.pid})"
                plan.stop[recorded.pid] = svc.name
    return plan


def _health(recorded: ServiceState, svc: ServiceDef) -> str:
    if not recorded.address:
        return "not listening"
    health = check_health(recorded.address, svc.health_service, HEALTH_DEADLINE_S)
    if health.status == UNREACHABLE:
        health = check_health(recorded.address, svc.health_service, RECHECK_DEADLINE_S)
    return health.status


def _port_free(address: str) -> bool:
    """True when ``host:port`` can be bound now (as the services bind: SO_REUSEADDR, so the
    closed connections of a dead service do not hold its port)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host.strip("[]"), int(port)))
    except (OSError, ValueError):
        return False
    return True


def _released(address: str) -> bool:
    """True once ``address`` can be bound, within PORT_RELEASE_S."""
    deadline = time.monotonic() + PORT_RELEASE_S
    while not _port_free(address):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@dataclass
class _Launch:
    svc: ServiceDef
    process: subprocess.Popen
    log_path: Path
    offset: int
    spawned_at: float
    port: int
    # The command it was started with, as spawn got it (Popen.args is typed as any command form).
    argv: list[str]


def up(settings: Settings, workspace: str | None, say: Say) -> RuntimeState:
    """Start the services that are not running and answering; the others keep running as they are."""
    _check_buildable(settings)
    with state_lock(settings, say):
        existing = read_state(settings)
        _stop(settings, orphans(settings, existing), say)
        plan = _plan(existing, settings)
        if existing is not None and not plan.start:
            say(f"codecompass is already running (since {existing.started_at})")
            return existing
        return _start(settings, existing, plan, workspace, say)


def _start(settings: Settings, existing: RuntimeState | None, plan: _Plan, workspace: str | None,
           say: Say) -> RuntimeState:
    previous = dict(existing.services) if existing is not None else {}
    state = RuntimeState(
        started_at=existing.started_at if existing is not None and plan.keep else _now(),
        workspace=workspace or (existing.workspace if existing is not None else None),
        services=dict(plan.keep),
    )
    if previous:
        for name, why in plan.start.items():
            say(f"{name:<10} {why}; {'restarting' if name in previous else 'starting'} it")
    _stop(settings, plan.stop, say, recorded=existing)
    addresses = {name: svc.address for name, svc in plan.keep.items()}
    # Services whose address changed: those started with the old one must restart too.
    moved: set[str] = set()
    launched: list[_Launch] = []
    changed: set[str] = set()
    # A service needs only its dependencies' addresses to start, not their readiness. When every
    # service starts (nothing kept), each gets its port now rather than when it binds: every
    # address is known before anything starts, so all start at once (waves, each waiting for the
    # one before to listen, made retrieval, the slowest to start, wait ~1 s on two cores). A
    # service that listens elsewhere than reserved (its port taken in between, or no IPv6 behind
    # `::`) costs a restart of those started with the address it did not get. With services kept,
    # the waves: a kept one that needs a restarted one restarts once that one's address is known.
    # Readiness is awaited once all are started.
    reserved = {} if plan.keep else {
        name: _reserve_port(settings.bind_host, _port_for(name, previous.get(name), say)) for name in plan.start}
    addresses.update({name: dialable(host_port(settings.bind_host, port)) for name, port in reserved.items() if port})
    try:
        for wave in start_waves(needed(settings), known=set(addresses)):
            pending = []
            for svc in wave:
                kept = plan.keep.get(svc.name)
                if kept is not None:
                    stale = [need for need in svc.needs if need in moved]
                    if not stale:
                        continue
                    say(f"{svc.name:<10} restarting it too: it was started with the old address of "
                        f"{' and '.join(stale)}")
                    _stop(settings, {kept.pid: svc.name}, say, recorded=existing)
                changed.add(svc.name)
                recorded = previous.get(svc.name)
                launch = _launch(settings, svc, addresses, reserved.get(svc.name) or
                                 _port_for(svc.name, recorded, say))
                pending.append(launch)
                state.services[svc.name] = ServiceState(
                    name=svc.name, pid=launch.process.pid, address=recorded.address if recorded else "",
                    log_path=str(launch.log_path), argv=launch.argv, started_at=_now(),
                )
            write_state(settings, state)
            expected = dict(addresses)
            for index, launch in enumerate(pending):
                address = _listening(settings, state, pending, index, addresses, say)
                state.services[launch.svc.name].address = address
                addresses[launch.svc.name] = address
                before = previous.get(launch.svc.name)
                if before is None or before.address != address:
                    moved.add(launch.svc.name)
            elsewhere = {name for name in expected if name in addresses and addresses[name] != expected[name]}
            for index, launch in enumerate(pending):
                wrong = [need for need in launch.svc.needs if need in elsewhere]
                if not wrong:
                    continue
                say(f"{launch.svc.name:<10} restarting it: it was started with the reserved address of "
                    f"{' and '.join(wrong)}, which listens at {', '.join(addresses[n] for n in wrong)}")
                stop_pids([launch.process.pid], settings.shutdown_grace_s + KILL_MARGIN_S)
                port = int(addresses[launch.svc.name].rpartition(":")[2])
                pending[index] = _launch(settings, launch.svc, addresses, port if _released(
                    addresses[launch.svc.name]) else 0)
                state.services[launch.svc.name].pid = pending[index].process.pid
                write_state(settings, state)
                addresses[launch.svc.name] = _listening(settings, state, pending, index, addresses, say)
                state.services[launch.svc.name].address = addresses[launch.svc.name]
            write_state(settings, state)
            launched += pending
        for launch in launched:
            name = launch.svc.name
            wait_until_serving(name, launch.process, addresses[name], launch.svc.health_service, launch.log_path,
                               settings.startup_timeout_s, launch.offset)
            say(f"{name:<10} SERVING at {addresses[name]}  "
                f"(pid {launch.process.pid}, ready {time.monotonic() - launch.spawned_at:.1f}s after start)")
    except BaseException as exc:
        # Stop what this run started; what it kept keeps running, and runtime.json names the
        # others as they were (dead), so `status` shows them and the next `up` tries their ports.
        stop_pids([state.services[name].pid for name in changed if name in state.services],
                  settings.shutdown_grace_s + KILL_MARGIN_S)
        for name in changed:
            state.services.pop(name, None)
            if name in previous:
                state.services[name] = previous[name]
        if previous:
            write_state(settings, state)
        else:
            remove_state(settings)
        if isinstance(exc, StartError):
            raise CliError(
                f"{exc.service} failed to start: {exc.reason} (log: {exc.log_path})",
                detail=exc.log_tail() or f"({exc.service} logged no error during this start)",
            ) from None
        # Ctrl-C or a crash mid-start must not leave orphans behind.
        raise
    # Said on a fresh start, not on every heal.
    for svc in SERVICES if not plan.keep else ():
        unneeded = svc.unneeded(settings)
        if unneeded is not None and svc.name not in state.services:
            say(f"{svc.name:<10} not needed: {unneeded}")
    kept_names = [name for name in plan.keep if name not in changed]
    if kept_names:
        say(f"kept running (same pids): {', '.join(kept_names)}")
    return state


def _port_for(name: str, recorded: ServiceState | None, say: Say) -> int:
    """The port a service had, once it is free again; 0 (any free port) when it had none or another
    program took it."""
    if recorded is None or not recorded.address:
        return 0
    if not _released(recorded.address):
        say(f"{name:<10} its port ({recorded.address}) is taken by another program; it gets a new one")
        return 0
    return int(recorded.address.rpartition(":")[2])


def _launch(settings: Settings, svc: ServiceDef, addresses: dict[str, str], port: int) -> _Launch:
    log_path = settings.state_dir / "logs" / f"{svc.name}.log"
    offset = log_path.stat().st_size if log_path.exists() else 0
    spawned_at = time.monotonic()
    argv = svc.argv()
    process = spawn(svc.name, argv, _child_env(settings, svc, addresses, port), log_path)
    return _Launch(svc, process, log_path, offset, spawned_at, port, argv)


def _reserve_port(host: str, port: int) -> int:
    """`port` (a service's previous one), or a free port the system picks now for the service to
    bind; a service that finds it taken by then is started again on any free port (`_listening`)."""
    if port:
        return port
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    try:
        with socket.socket(family, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind((host.strip("[]"), 0))
            return int(sock.getsockname()[1])
    except OSError:
        return 0  # the service picks one itself (`::` on a machine without IPv6 falls back so)


def _listening(settings: Settings, state: RuntimeState, pending: list[_Launch], index: int,
               addresses: dict[str, str], say: Say) -> str:
    """Where `pending[index]` listens, once it does. A service whose port another program bound
    between its reservation and its bind is started again on any free port."""
    launch = pending[index]
    try:
        return wait_for_listening(launch.svc.name, launch.process, launch.log_path, launch.offset,
                                  settings.startup_timeout_s)
    except StartError:
        if not launch.port or _port_free(host_port(settings.bind_host, launch.port)):
            raise
    say(f"{launch.svc.name:<10} its port ({launch.port}) was taken while it started; it gets a new one")
    launch = pending[index] = _launch(settings, launch.svc, addresses, 0)
    state.services[launch.svc.name].pid = launch.process.pid
    write_state(settings, state)
    return wait_for_listening(launch.svc.name, launch.process, launch.log_path, launch.offset,
                              settings.startup_timeout_s)


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
    """List every index the retrieval service knows with its size and workspace; drop (through
    DropIndex) those whose workspace folder is gone from this machine. An index synced from
    another machine (a shared one) is never dropped here: this machine cannot tell. A base goes
    when no checkout's index of its repository is left (the writer collects a repository's older
    bases itself, when it writes a newer one)."""
    address = service_address(settings, names.RETRIEVAL)
    entries = list_indexes(address, settings.rpc_timeout_s)
    if not entries:
        say(f"no indexes at {address}")
        return
    freed = 0
    missing = 0
    removed: set[str] = set()
    # Checkouts first: a base may go with the last checkout of its repository.
    for entry in sorted(entries, key=lambda e: e.kind == "base"):
        if entry.kind == "base":
            gone: bool | None = base_unused(entry, entries, removed)
            why = "no checkout of its repository is left"
        else:
            gone, why = workspace_gone(entry), "workspace no longer exists"
        size = human_size(entry.status.index_bytes)
        if gone is None:
            verdict, where = "kept", f"{entry.workspace_id} (synced on {entry.host or 'an unknown host'})"
        elif not gone:
            verdict, where = "kept", (f"{entry.workspace_id} (used by {len(entry.used_by)})" if entry.kind == "base"
                                      else entry.root)
        else:
            missing += 1
            removed.add(entry.workspace_id)
            verdict = "missing" if dry_run else "removed"
            where = f"{entry.workspace_id if entry.kind == 'base' else entry.root} ({why})"
            freed += entry.status.index_bytes if dry_run else drop_index(settings.writer_addr or address,
                                                                          entry.workspace_id, settings.rpc_timeout_s)
        say(f"{verdict:<8} {size:>9}  {where}")
    total = human_size(sum(entry.status.index_bytes for entry in entries))
    action = "would remove" if dry_run else "removed"
    say(f"{_indexes(len(entries))} ({total}); {action} {missing} of deleted workspaces ({human_size(freed)})")
