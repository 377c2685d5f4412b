"""The plan board: the index's `shard_plans` table, where the writer posts a plan for workers it
does not start (an Indexed Job's pods) and where they find it, by the index alone."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from enum import Enum

import lancedb
import pyarrow as pa

from codecompass.contracts.retrieval.errors import RetrievalError
from codecompass.retrieval import filter_sql as sqlf
from codecompass.retrieval.index.chunk_writer import DEFAULT_VERSION_RETENTION
from codecompass.retrieval.index.shard.plan import ShardPlan

# The table inside the index where the writer posts the plan for workers it does not start.
PLANS_TABLE = "shard_plans"
_PLANS_SCHEMA = pa.schema(
    [
        pa.field("plan_id", pa.string(), nullable=False),
        pa.field("workspace_id", pa.string(), nullable=False),
        pa.field("state", pa.string(), nullable=False),
        # Why a plan ended uncommitted (one line); empty while open or once committed.
        pa.field("reason", pa.string(), nullable=False),
        pa.field("opened_at", pa.float64(), nullable=False),
        pa.field("ended_at", pa.float64(), nullable=True),
        pa.field("plan", pa.string(), nullable=False, metadata={"lance-encoding:compression": "zstd"}),
    ]
)
# How often a worker looks for a plan: each look reads a table, a request or two on object storage.
_PLAN_POLL_S = 1.0


class PlanState(str, Enum):
    OPEN = "open"
    COMMITTED = "committed"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"
    FAILED = "failed"


class NoOpenPlan(RetrievalError):
    """A worker found no open plan to deliver to; `last` is the state of the last plan it saw
    ended (None: there was none, or a newer one replaced it)."""

    def __init__(self, message: str, last: PlanState | None) -> None:
        super().__init__(message)
        self.last = last


@dataclass(frozen=True)
class PlanStatus:
    """A posted plan's row on the board, without the plan itself (which may be megabytes)."""

    plan_id: str
    workspace_id: str
    state: PlanState
    reason: str
    opened_at: float
    ended_at: float | None


class PlanBoard:
    """The index's `shard_plans` table: the plan of a sharded index for workers that find it by
    the index alone (an Indexed Job's pods). It holds one plan, the newest: posting one replaces
    the last, so an index has at most one open plan, and an ended one stays for late workers."""

    def __init__(self, db: lancedb.DBConnection, uri: str) -> None:
        self.db = db
        self.uri = uri

    def post(self, plan: ShardPlan, workspace_id: str) -> None:
        row = pa.table({"plan_id": [plan.plan_id], "workspace_id": [workspace_id], "state": [PlanState.OPEN.value],
                        "reason": [""], "opened_at": [time.time()], "ended_at": [None],
                        "plan": [json.dumps(plan.to_json())]}, schema=_PLANS_SCHEMA)
        table = self.db.create_table(PLANS_TABLE, row, mode="overwrite")
        # Every post and end is a version of this one-row table; a reader holds one only for
        # the moment it reads, so older ones go at each post rather than pile up run after run.
        table.optimize(cleanup_older_than=DEFAULT_VERSION_RETENTION)

    def status(self) -> PlanStatus | None:
        """The posted plan's row; None when no plan was ever posted in this index."""
        table = self._table()
        if table is None:
            return None
        rows = table.search().select([f.name for f in _PLANS_SCHEMA if f.name != "plan"]).limit(1).to_list()
        if not rows:
            return None
        row = rows[0]
        return PlanStatus(plan_id=row["plan_id"], workspace_id=row["workspace_id"], state=PlanState(row["state"]),
                          reason=row["reason"], opened_at=row["opened_at"], ended_at=row["ended_at"])

    def plan(self, plan_id: str) -> ShardPlan:
        table = self._table()
        rows = ([] if table is None else
                table.search().where(f"plan_id = {sqlf.sql_string(plan_id)}").select(["plan"]).limit(1).to_list())
        if not rows:
            raise NoOpenPlan(f"plan {plan_id} was replaced by a newer one", None)
        return ShardPlan.from_json(json.loads(rows[0]["plan"]))

    def end(self, plan_id: str, state: PlanState, reason: str = "") -> None:
        """Mark the plan ended, if it is still the open one."""
        table = self._table()
        if table is not None:
            table.update(where=f"plan_id = {sqlf.sql_string(plan_id)} "
                               f"AND state = {sqlf.sql_string(PlanState.OPEN.value)}",
                         values={"state": state.value, "reason": reason, "ended_at": time.time()})

    def check_open(self, plan_id: str) -> None:
        """NoOpenPlan unless `plan_id` is the open plan: a worker's last look before it delivers."""
        status = self.status()
        if status is None or status.plan_id != plan_id:
            raise NoOpenPlan(f"plan {plan_id} was replaced by a newer one: nothing written", None)
        if status.state is not PlanState.OPEN:
            raise NoOpenPlan(f"plan {plan_id} ended ({_ended(status)}) before this shard's result: nothing written",
                             status.state)

    def _table(self) -> lancedb.table.Table | None:
        try:
            return self.db.open_table(PLANS_TABLE)
        except (ValueError, FileNotFoundError):
            return None


def _ended(status: PlanStatus) -> str:
    return status.state.value + (f" {time.time() - status.ended_at:.0f} s ago" if status.ended_at is not None else "")


def wait_for_plan(board: PlanBoard, wait_s: float) -> ShardPlan:
    """The open plan on the board, waiting up to `wait_s` for one (a Job may start before its
    writer has scanned the workspace); NoOpenPlan when none is open by then."""
    deadline = time.monotonic() + wait_s
    while True:
        status = board.status()
        if status is not None and status.state is PlanState.OPEN:
            return board.plan(status.plan_id)
        if time.monotonic() >= deadline:
            break
        time.sleep(min(_PLAN_POLL_S, max(deadline - time.monotonic(), 0.0)))
    if status is None:
        raise NoOpenPlan(f"no plan was posted in this index in {wait_s:g} s: the writer posts one when asked to "
                         "index with workers under retrieval.shard_runner = job (`codecompass index --workers N`)",
                         None)
    raise NoOpenPlan(f"no open plan in {wait_s:g} s; the last one, {status.plan_id}, ended ({_ended(status)})",
                     status.state)
