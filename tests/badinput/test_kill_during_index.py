"""kill -9 of the analysis, embedding and retrieval services in the middle of `codecompass index`:
the command ends with one line naming the service that died, and after `codecompass up` the next
`index` leaves exactly the rows a clean index of the same files has (nothing lost, nothing
duplicated). tests/integration/test_retrieval_crash.py has the retrieval case at the gRPC level."""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.badinput.harness import CliRun, Stack, assert_clean, copy_workspace
from tests.fixtures.chain_workspace import write_chain_workspace

FILES = 200


def _counts(line: str) -> tuple[int, int]:
    """(chunks, embedded) of a progress line."""
    chunks = re.search(r"\bchunks (\d+)", line)
    embedded = re.search(r"\bembedded (\d+)/", line)
    return (int(chunks[1]) if chunks else 0, int(embedded[1]) if embedded else 0)


# When to kill each service: while it is doing its part of the index.
KILL_WHEN = {
    # As the sync starts: the analysis service streams a small workspace's chunks faster than the
    # retrieval service writes them, so a kill mid-write can land after the last one was sent.
    "analysis": lambda line: line.startswith("scanning"),
    "retrieval": lambda line: line.startswith("chunking") and _counts(line)[0] > 0,
    "embedding": lambda line: line.startswith("embedding") and _counts(line)[1] > 0,
}


@dataclass
class Crash:
    service: str
    killed_at: str  # the progress line seen just before the kill
    interrupted: CliRun
    recovered: CliRun
    rows: list[tuple]


def _index_and_kill(stack: Stack, root: Path, service: str) -> tuple[str, CliRun]:
    pid = stack.pid(service)
    process = subprocess.Popen(stack.command("index", str(root)), env=stack.env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=1)
    seen: list[str] = []
    killed_at = ""
    assert process.stderr is not None
    for line in process.stderr:
        seen.append(line)
        if KILL_WHEN[service](line):
            os.kill(pid, signal.SIGKILL)
            killed_at = line.strip()
            break
    out, err = process.communicate(timeout=180)
    run = Stack.record(CliRun(("index", str(root)), process.returncode, out, "".join(seen) + err))
    assert killed_at, f"the index ended before {service} could be killed:\n{run.err}"
    return killed_at, run


@pytest.fixture(scope="module")
def clean_rows(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> list[tuple]:
    root = write_chain_workspace(tmp_path_factory.mktemp("kill-clean") / "ws", FILES)
    run = stack.cli("index", str(root))
    assert run.code == 0, run.err
    return stack.rows(root)


def _crash(stack: Stack, base: Path, service: str) -> Crash:
    root = copy_workspace(write_chain_workspace(base / "source", FILES), base / "ws")
    stack.up()
    killed_at, interrupted = _index_and_kill(stack, root, service)
    stack.up()  # restarts the dead service alone, on the address it had
    recovered = stack.cli("index", str(root))
    return Crash(service, killed_at, interrupted, recovered, stack.rows(root))


@pytest.fixture(scope="module")
def crash_of(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Crash]:
    """One crash and recovery per service, shared by the tests that read it."""
    done: dict[str, Crash] = {}

    def crash(service: str) -> Crash:
        if service not in done:
            done[service] = _crash(stack, tmp_path_factory.mktemp(f"kill-{service}"), service)
        return done[service]

    return crash


def _one_line(run: CliRun) -> str:
    """The interrupted index's last stderr line: its error (progress lines come before it)."""
    lines = [line for line in run.err.splitlines() if line.startswith("codecompass")]
    assert len(lines) == 1, run.err
    return lines[0]


@pytest.mark.badinput(case="kill -9 of retrieval during index",
                      behaviour="exit 1: `retrieval service not running at ADDR; run codecompass up`")
def test_retrieval_killed_during_index_is_one_line(crash_of) -> None:
    crash = crash_of("retrieval")
    assert crash.interrupted.code == 1
    assert re.fullmatch(r"codecompass: retrieval service not running at 127\.0\.0\.1:\d+; run `codecompass up`",
                        _one_line(crash.interrupted))


@pytest.mark.badinput(case="kill -9 of retrieval during index: recovery",
                      behaviour="after `up`, the next `index` leaves exactly the rows of a clean index")
def test_retrieval_killed_during_index_recovers(crash_of, clean_rows) -> None:
    crash = crash_of("retrieval")
    assert crash.recovered.code == 0, crash.recovered.err
    assert_clean(crash.rows, clean_rows)


@pytest.mark.badinput(case="kill -9 of analysis during index",
                      behaviour="exit 1, one line naming the analysis service (not retrieval)")
def test_analysis_killed_during_index_names_it(crash_of) -> None:
    crash = crash_of("analysis")
    assert crash.interrupted.code == 1
    line = _one_line(crash.interrupted)
    assert line.startswith("codecompass: retrieval: analysis service unreachable at 127.0.0.1:"), line


@pytest.mark.badinput(case="kill -9 of analysis during index: recovery",
                      behaviour="after `up`, the next `index` leaves exactly the rows of a clean index")
def test_analysis_killed_during_index_recovers(crash_of, clean_rows) -> None:
    crash = crash_of("analysis")
    assert crash.recovered.code == 0, crash.recovered.err
    assert_clean(crash.rows, clean_rows)


@pytest.mark.badinput(case="kill -9 of embedding during index",
                      behaviour="exit 1, one line naming the embedding service (not retrieval)")
def test_embedding_killed_during_index_names_it(crash_of) -> None:
    crash = crash_of("embedding")
    assert crash.interrupted.code == 1
    line = _one_line(crash.interrupted)
    assert line.startswith("codecompass: retrieval: ") and "embedding service" in line, line
    assert "retrieval service not running" not in line, line


@pytest.mark.badinput(case="kill -9 of embedding during index: recovery",
                      behaviour="after `up`, the next `index` embeds the rest: exactly the rows of a clean index, "
                                "every one with its vector")
def test_embedding_killed_during_index_recovers(crash_of, clean_rows) -> None:
    crash = crash_of("embedding")
    assert crash.recovered.code == 0, crash.recovered.err
    assert_clean(crash.rows, clean_rows)
    assert all(row[-1] for row in crash.rows), "rows without a vector"
