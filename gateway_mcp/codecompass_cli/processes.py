"""Start, probe and stop service processes.

A service writes ``LISTENING host:port`` on stdout once bound; stdout and
stderr both go to its log file (a pipe would break the service with EPIPE
once `codecompass up` exits), so the launcher finds the line by reading the
log file.

Every service `codecompass up` starts carries two environment variables naming the state dir
and the service it belongs to. The kernel keeps a process's initial environment readable in
/proc/<pid>/environ, so `down` and `status` find every process of a state dir, including
one whose pid never reached runtime.json (an `up` killed between spawn and write).
"""

from __future__ import annotations

import errno
import json
import os
import re
import signal
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from codecompass.clients import health
from codecompass.common.hosts import dialable

_LISTENING = re.compile(r"^LISTENING (\S+:\d+)\s*$", re.MULTILINE)
RUNTIME_DIR_ENV = "CODECOMPASS_RUNTIME_DIR"
RUNTIME_SERVICE_ENV = "CODECOMPASS_RUNTIME_SERVICE"


class StartError(Exception):
    """A service did not come up; carries where this start's part of its log begins."""

    def __init__(self, service: str, reason: str, log_path: Path | None, log_offset: int = 0) -> None:
        self.service = service
        self.reason = reason
        self.log_path = log_path
        # Earlier runs' lines explain earlier failures; only what this start appended counts.
        self.log_offset = log_offset
        super().__init__(f"{service}: {reason}")

    def log_tail(self, lines: int = 20) -> str:
        """Why it failed, in the words of this start's log, for a person: never a traceback."""
        if self.log_path is None:
            return ""
        return "\n".join(readable(tail(self.log_path, 200, self.log_offset).splitlines())[-lines:])


_TRACEBACK = "Traceback (most recent call last):"
_CHAINED = ("The above exception was the direct cause", "During handling of the above exception")
_EXCEPTION_NAME = re.compile(r"^[A-Za-z_][\w.]*: ")


def readable(lines: list[str]) -> list[str]:
    """A service's log lines as a person reads them. A service writes its reason for a person
    (a bad setting) as a plain line, and everything else as JSON records: the plain lines when
    there are any, else the error records as their message and exception. Tracebacks stay in the
    log file: of one, only its last line (the exception) is kept."""
    plain: list[str] = []
    errors: list[str] = []
    in_traceback = False
    for line in lines:
        if in_traceback and line[:1].isspace():
            continue
        in_traceback = line == _TRACEBACK
        if in_traceback or not line.strip() or line.startswith(_CHAINED) or _LISTENING.match(line):
            continue
        record = _json_record(line)
        if record is None:
            plain.append(line)
        elif str(record.get("level", "")).upper() in ("ERROR", "CRITICAL", "FATAL"):
            reason = record.get("error") or (str(record.get("exc") or "").strip().splitlines() or [""])[-1]
            reason = _EXCEPTION_NAME.sub("", str(reason))
            errors.append(f"{record.get('msg', '')}: {reason}" if reason else str(record.get("msg", "")))
    return plain or errors


def _json_record(line: str) -> dict | None:
    if not line.startswith("{"):
        return None
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def tail(path: Path, lines: int = 30, offset: int = 0) -> str:
    """The last lines of a file, from ``offset`` on."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(offset, size - 64 * 1024))
            data = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return "\n".join(data.splitlines()[-lines:])


def spawn(name: str, argv: Sequence[str], env: Mapping[str, str], log_path: Path) -> subprocess.Popen:
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with open(log_path, "ab") as log:
        # A new session keeps the service alive when the terminal that ran
        # `codecompass up` closes or gets Ctrl-C.
        return subprocess.Popen(
            list(argv), stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=dict(env),
            start_new_session=True,
        )


def wait_for_listening(name: str, process: subprocess.Popen, log_path: Path, offset: int,
                       timeout: float) -> str:
    """Where to reach the service, from its ``LISTENING`` line written after ``offset`` in its log
    (a service listening on every interface, 0.0.0.0 or ::, is reached on loopback)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(log_path, "rb") as handle:
                handle.seek(offset)
                text = handle.read().decode("utf-8", "replace")
        except OSError:
            text = ""
        match = _LISTENING.search(text)
        if match:
            return dialable(match.group(1))
        code = process.poll()
        if code is not None:
            raise StartError(name, f"exited with code {code} before listening", log_path, offset)
        if time.monotonic() > deadline:
            raise StartError(name, f"did not print LISTENING within {timeout:.0f}s", log_path, offset)
        time.sleep(0.05)


def wait_until_serving(name: str, process: subprocess.Popen, address: str, health_service: str,
                       log_path: Path, timeout: float, log_offset: int = 0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        last = health.check(address, health_service, timeout_s=1.0).status
        if last == health.SERVING:
            return
        code = process.poll()
        if code is not None:
            raise StartError(name, f"exited with code {code} while warming up", log_path, log_offset)
        if time.monotonic() > deadline:
            raise StartError(name, f"not SERVING after {timeout:.0f}s (health: {last})", log_path, log_offset)
        time.sleep(0.1)


def pid_alive(pid: int) -> bool:
    try:
        # Reap it if it is our own child (tests run `up` in-process); a zombie
        # still answers kill(0) but is gone for every purpose that matters here.
        reaped, _ = os.waitpid(pid, os.WNOHANG)
        if reaped == pid:
            return False
    except ChildProcessError:
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _is_zombie(pid)


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] == ["Z"]


def pid_runs(pid: int, argv: Sequence[str]) -> bool:
    """True when pid is alive and still runs argv (guards against pid reuse)."""
    if not pid_alive(pid):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return True  # no /proc (macOS): liveness is the best available check
    # The script or module name is enough: a recycled pid running it is not plausible.
    return argv[-1] in [part.decode("utf-8", "replace") for part in cmdline]


def marked_processes(state_dir: Path) -> dict[int, str]:
    """{pid: service} of every live process started for ``state_dir`` (empty without /proc).

    Processes of other users cannot be read and are not ours to stop, so they are passed over.
    """
    wanted = f"{RUNTIME_DIR_ENV}={state_dir}".encode()
    prefix = f"{RUNTIME_SERVICE_ENV}=".encode()
    found: dict[int, str] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if wanted not in environ:
            continue
        service = next((item[len(prefix):].decode("utf-8", "replace") for item in environ
                        if item.startswith(prefix)), "?")
        if pid_alive(int(entry)):
            found[int(entry)] = service
    return found


def signal_pid(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except OSError as exc:
        if exc.errno != errno.ESRCH:
            raise


def stop_pids(pids: Sequence[int], grace_s: float) -> list[int]:
    """SIGTERM, wait up to grace_s for exit, SIGKILL the rest; returns the killed pids."""
    for pid in pids:
        signal_pid(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    remaining = [pid for pid in pids if pid_alive(pid)]
    while remaining and time.monotonic() < deadline:
        time.sleep(0.05)
        remaining = [pid for pid in remaining if pid_alive(pid)]
    for pid in remaining:
        signal_pid(pid, signal.SIGKILL)
    kill_deadline = time.monotonic() + 5
    while any(pid_alive(pid) for pid in remaining) and time.monotonic() < kill_deadline:
        time.sleep(0.05)
    return remaining
