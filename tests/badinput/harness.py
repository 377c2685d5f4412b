"""What the bad-input tests share: the CLI run as a subprocess against a private state dir, and
the index read back from its tables."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import lancedb
from codecompass_cli.processes import pid_alive
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.types import CallToolResult

from codecompass.retrieval.location import index_key, workspace_id_of

TRACEBACK = "Traceback (most recent call last)"
CLI_TIMEOUT_S = 180.0
# Columns that make a row what it is: a lost, duplicated or stale row shows in these.
ROW_COLUMNS = ("id", "relative_path", "qualified_name", "start_line", "end_line", "snippet_hash", "has_vector")


@dataclass
class CliRun:
    argv: tuple[str, ...]
    code: int
    out: str
    err: str

    @property
    def err_lines(self) -> list[str]:
        return [line for line in self.err.splitlines() if line.strip()]

    def json(self) -> dict:
        return json.loads(self.out)


class Stack:
    """The services of one private state dir, and the CLI pointed at them."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.state = base / "state"
        config = base / "config.yaml"
        config.write_text("")
        self.env = {**os.environ, "CODECOMPASS_STATE_DIR": str(self.state), "CODECOMPASS_CONFIG": str(config),
                    "CODECOMPASS_EMBEDDING_PROFILE": "minilm", "PYTHONUNBUFFERED": "1"}
        for name in ("ANALYSIS_ADDR", "EMBEDDING_ADDR", "RETRIEVAL_ADDR", "RERANK_ADDR", "SELECTION_ADDR"):
            self.env.pop(name, None)

    def command(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "codecompass_cli", *args]

    def cli(self, *args: str, timeout: float = CLI_TIMEOUT_S) -> CliRun:
        """`codecompass ARGS`: its exit code and output, echoed into the test's captured output
        (where `make bench-badinput` counts tracebacks). No output of any command may hold a
        traceback."""
        done = subprocess.run(self.command(*args), env=self.env, capture_output=True, text=True,
                              timeout=timeout, check=False)
        return self.record(CliRun(args, done.returncode, done.stdout, done.stderr))

    @staticmethod
    def record(run: CliRun) -> CliRun:
        shown = " ".join(a if len(a) < 80 else f"<{len(a):,} characters>" for a in run.argv)
        print(f"$ codecompass {shown}\n[exit {run.code}]\n{run.out[-4000:]}\n{run.err[-4000:]}")
        assert TRACEBACK not in run.out and TRACEBACK not in run.err, f"traceback from codecompass {shown}"
        return run

    def up(self) -> None:
        run = self.cli("up")
        assert run.code == 0, run.out + run.err

    def runtime(self) -> dict:
        return json.loads((self.state / "runtime.json").read_text())["services"]

    def pid(self, service: str) -> int:
        return self.runtime()[service]["pid"]

    def address(self, service: str) -> str:
        return self.runtime()[service]["address"]

    def kill(self, service: str) -> int:
        """kill -9 of ``service``; returns its pid once the process is gone."""
        pid = self.pid(service)
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while pid_alive(pid):
            assert time.monotonic() < deadline, f"{service} (pid {pid}) outlived SIGKILL"
            time.sleep(0.05)
        return pid

    def mcp_call(self, root: Path, tool: str, arguments: dict[str, Any]) -> CallToolResult:
        """One tool call through the SDK's stdio client to a gateway on ``root`` over these services."""
        env = {**self.env, **{f"{name.upper()}_ADDR": svc["address"] for name, svc in self.runtime().items()}}
        params = StdioServerParameters(command=sys.executable,
                                       args=["-m", "codecompass_gateway", "--workspace", str(root)], env=env)

        async def run() -> CallToolResult:
            async with Client(params, read_timeout_seconds=60) as client:
                return await client.call_tool(tool, arguments)

        return anyio.run(run)

    def rows(self, root: Path) -> list[tuple]:
        """Every chunk row of ``root``'s index, sorted (duplicates kept: they must show)."""
        folder = self.state / "index" / index_key(workspace_id_of(root.resolve()))
        db = lancedb.connect(str(folder))
        (name,) = [n for n in db.list_tables().tables if n.startswith("chunks_")]
        table = db.open_table(name).to_arrow().select(list(ROW_COLUMNS)).to_pylist()
        return sorted(tuple(row[c] for c in ROW_COLUMNS) for row in table)


def skipped_line(run: CliRun, path: str) -> str:
    """The `index --show-skipped` line of ``path``, its columns joined by single spaces."""
    (line,) = [" ".join(line.split()) for line in run.out.splitlines() if line.strip().split(" ")[0] == path]
    return line


def up_lines(run: CliRun) -> list[str]:
    """`codecompass up`'s lines without the readiness times, which vary."""
    return [line.split("  (pid")[0] for line in run.out.splitlines()]


def assert_clean(rows: list[tuple], clean: list[tuple]) -> None:
    """``rows`` are exactly ``clean``'s: nothing lost, nothing extra, nothing duplicated."""
    ids = [row[0] for row in rows]
    assert len(ids) == len(set(ids)), "duplicated rows"
    lost, extra = sorted(set(clean) - set(rows)), sorted(set(rows) - set(clean))
    assert (lost[:5], extra[:5]) == ([], []), f"{len(lost)} lost, {len(extra)} extra rows"
    assert len(rows) == len(clean)


def copy_workspace(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, symlinks=True)
    return target
