"""The shard runner `job`: the workers are the pods of a Kubernetes Indexed Job, started by the
Job controller, not by the writer; the writer posts the plan on the index's board and waits for
their results (`PostedShards`)."""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from typing import Self

import lancedb

from codecompass.common.logging import get_logger
from codecompass.retrieval.index.shard.board import PlanBoard, PlanState
from codecompass.retrieval.index.shard.plan import ShardFailed, ShardPlan
from codecompass.retrieval.index.shard.results import STAGING_TABLE, ShardResult, collect, result_rows, staging_table

_log = get_logger(__name__)

# The worker's command in a Job's pods, for messages that say how to start them.
WORKER_COMMAND = "python -m codecompass.retrieval.index.shard work"
# How often the writer looks for the results of workers it did not start: each look reads a
# table, a request or two on object storage.
_RESULTS_POLL_S = 0.5


class ShardsMissing(ShardFailed):
    """Shard workers the writer did not start left no result in time; nothing was committed."""


class ShardsAbandoned(ShardFailed):
    """The writer stopped waiting for shard workers (its caller went away, it shuts down)."""


class PostedShards:
    """A plan run by workers the writer does not start (an Indexed Job's pods): posted on the
    index's board for them to find, waited for, and ended whatever happens: committed when the
    `with` block completes (the writer commits inside it), else timed out, cancelled or failed.
    Like `run_shards`, it drops the staging table at the end."""

    def __init__(self, plan: ShardPlan, workspace_id: str, *, db: lancedb.DBConnection, uri: str) -> None:
        self._plan = plan
        self._workspace_id = workspace_id
        self._db = db
        self._board = PlanBoard(db, uri)
        self._staging: lancedb.table.Table | None = None

    def __enter__(self) -> Self:
        # Where results arrive exists before any worker can find the plan.
        self._staging = staging_table(self._db)
        self._board.post(self._plan, self._workspace_id)
        return self

    def wait(self, *, deadline: Callable[[], float], stop: Callable[[], str | None],
             progress: Callable[[frozenset[int]], None]) -> list[ShardResult]:
        """Every shard's result, in shard order, once all are in. `deadline` (a monotonic time,
        asked at each look: a later caller may extend it) bounds the wait: ShardsMissing after
        it; `stop` gives a reason to stop now (ShardsAbandoned); `progress` hears of the shards
        that delivered, whenever that set grows."""
        assert self._staging is not None, "wait inside the with block"
        total = len(self._plan.shards)
        started = time.monotonic()
        reported: frozenset[int] | None = None
        while True:
            now = frozenset(row["shard"] for row in result_rows(self._staging, self._plan.plan_id, ["shard"]))
            if now != reported:
                reported = now
                progress(reported)
            if len(reported) == total:
                return collect(self._staging, self._plan)
            why = stop()
            if why:
                raise ShardsAbandoned(f"stopped waiting for shard workers ({why}) with {len(reported)} of {total} "
                                      "reported; nothing was committed")
            left = deadline() - time.monotonic()
            if left <= 0:
                raise self._missing(reported, time.monotonic() - started)
            time.sleep(min(_RESULTS_POLL_S, left))

    def _missing(self, reported: frozenset[int], waited: float) -> ShardsMissing:
        total = len(self._plan.shards)
        missing = ", ".join(str(i) for i in range(total) if i not in reported)
        return ShardsMissing(
            f"{len(reported)} of {total} shard workers reported in {waited:.0f} s (none from shard {missing}); "
            f"nothing was committed: start the Indexed Job, {total} completions, each pod running "
            f"`{WORKER_COMMAND} --workspace-id {shlex.quote(self._workspace_id)}` with this index root")

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, _tb: object) -> None:
        state = (PlanState.COMMITTED if exc is None else PlanState.TIMED_OUT if isinstance(exc, ShardsMissing)
                 else PlanState.CANCELLED if isinstance(exc, ShardsAbandoned) else PlanState.FAILED)
        try:
            self._board.end(self._plan.plan_id, state, "" if exc is None else str(exc) or type(exc).__name__)
        except Exception:  # noqa: BLE001 - the commit (or the failure being raised) is what counts;
            # a plan left open only lets late workers deliver results nobody reads.
            _log.exception("could not mark shard plan %s %s", self._plan.plan_id, state.value)
        finally:
            self._db.drop_table(STAGING_TABLE)
