"""The shard runner `processes` (the default): the writer runs every shard of a plan as a worker
process of its own machine (`run_shards`), handing it the plan as a file."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path

import lancedb

from codecompass.retrieval.index.shard.plan import ShardFailed, ShardPlan
from codecompass.retrieval.index.shard.results import STAGING_TABLE, ShardResult, collect, staging_table

# How often the driver looks at its worker processes.
_POLL_S = 0.05


def run_shards(
    plan: ShardPlan,
    workers: int,
    *,
    db: lancedb.DBConnection,
    env: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
) -> list[ShardResult]:
    """Run every shard of `plan` as a worker process, at most `workers` at a time (a local
    Indexed Job: `completions` = the plan's shards, `parallelism` = `workers`), and return their
    results, in shard order. `db` is the index's connection (where the results arrive); `env`
    is added to this process's environment for the workers (addresses, storage options).

    The first worker to fail stops the others and raises ShardFailed naming its shard: nothing
    is committed, and the results already delivered are discarded."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    staging = staging_table(db)
    full_env = {**os.environ, **(env or {})}
    deadline = time.monotonic() + timeout_s if timeout_s is not None else None
    total = len(plan.shards)
    try:
        with tempfile.TemporaryDirectory(prefix="codecompass-shards-") as folder:
            plan_file = Path(folder) / "plan.json"
            plan_file.write_text(json.dumps(plan.to_json()), encoding="utf-8")
            _run_workers(plan_file, total, workers, full_env, Path(folder), deadline)
        return collect(staging, plan)
    finally:
        # One plan runs at a time (the index has one writer): its results, read or not, go with
        # the table, whose versions would otherwise pile up run after run.
        db.drop_table(STAGING_TABLE)


def _run_workers(plan_file: Path, total: int, workers: int, env: dict[str, str], folder: Path,
                 deadline: float | None) -> None:
    waiting = list(range(total))
    running: dict[int, tuple[subprocess.Popen, Path]] = {}
    try:
        while waiting or running:
            while waiting and len(running) < workers:
                shard = waiting.pop(0)
                log = folder / f"shard-{shard}.log"
                with open(log, "wb") as out:
                    process = subprocess.Popen(
                        [sys.executable, "-m", "codecompass.retrieval.index.shard", "work", "--plan", str(plan_file),
                         "--shard", str(shard)],
                        stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                        start_new_session=True)
                running[shard] = (process, log)
            for shard, (process, log) in list(running.items()):
                code = process.poll()
                if code is None:
                    continue
                del running[shard]
                if code != 0:
                    raise ShardFailed(f"indexing shard {shard} of {total} failed: {_failure(code, log)}")
            if deadline is not None and time.monotonic() > deadline:
                raise ShardFailed(f"indexing shards {sorted(running)} of {total} did not finish in time")
            time.sleep(_POLL_S)
    finally:
        for process, _ in running.values():
            _kill(process)


def _failure(code: int, log: Path) -> str:
    """The worker's own error line, else how it ended."""
    if code < 0:
        return f"the worker was killed by {signal.Signals(-code).name}"
    lines = [line.strip() for line in log.read_text(encoding="utf-8", errors="replace").splitlines()]
    errors = [line for line in lines if line.startswith("error: ")]
    if errors:
        return errors[-1].removeprefix("error: ").split(": ", 1)[-1]
    return f"the worker exited with code {code}" + (f" ({lines[-1][:300]})" if lines and lines[-1] else "")


def _kill(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
