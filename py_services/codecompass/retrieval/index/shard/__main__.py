"""`python -m codecompass.retrieval.index.shard work`: index one shard of a plan for the index writer,
the plan from a file (the writer's own worker processes) or from the index's board (an Indexed
Job's pods). Exit codes, for the Job's retries: 0 delivered, or nothing to do; 1 failed, worth a
retry; 2 not worth one (see the package's docstring)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

import lancedb

from codecompass.common import names
from codecompass.common.config import ConfigError, Settings, load_settings
from codecompass.common.logging import configure_logging, get_logger
from codecompass.common.telemetry import init_telemetry
from codecompass.contracts.retrieval.errors import RetrievalError
from codecompass.retrieval.index.shard.board import NoOpenPlan, PlanBoard, PlanState, wait_for_plan
from codecompass.retrieval.index.shard.plan import InvalidPlan, ShardPlan
from codecompass.retrieval.index.shard.worker import work
from codecompass.retrieval.location import InvalidWorkspaceId, index_key, index_uri, validated_id

_log = get_logger(__name__)

# How long a worker waits for a plan by default: the writer scans the workspace before it posts
# one, and a Job created alongside the index call (a CronJob) may start first.
DEFAULT_PLAN_WAIT_S = 600.0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codecompass.retrieval.index.shard",
                                     description="Index one shard of a workspace for the index writer.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("work", help="chunk, embed and stage one shard of a plan")
    source = run.add_mutually_exclusive_group(required=True)
    source.add_argument("--plan", type=Path, help="the plan file the writer made (its own worker processes)")
    source.add_argument("--workspace-id", help="find the plan the writer posted in this workspace's index, under "
                                               "CODECOMPASS_RETRIEVAL_DB_URI (an Indexed Job's pods)")
    # In a Kubernetes Indexed Job every pod gets its index in JOB_COMPLETION_INDEX.
    run.add_argument("--shard", type=int, default=_int_env("JOB_COMPLETION_INDEX"),
                     help="which shard (default: $JOB_COMPLETION_INDEX)")
    run.add_argument("--plan-wait-s", type=float, default=None, metavar="SECONDS",
                     help=f"with --workspace-id: how long to wait for the writer to post a plan "
                          f"(default {DEFAULT_PLAN_WAIT_S:g})")
    args = parser.parse_args(argv)
    if args.shard is None:
        parser.error("--shard is required (or JOB_COMPLETION_INDEX)")
    if args.plan_wait_s is not None and (args.plan is not None or args.plan_wait_s < 0):
        run.error("--plan-wait-s takes a number of seconds, with --workspace-id")
    init_telemetry(names.RETRIEVAL)
    board = None
    try:
        configure_logging(names.RETRIEVAL)
        settings = load_settings()
        if args.plan is not None:
            plan = ShardPlan.from_json(json.loads(args.plan.read_text(encoding="utf-8")))
        else:
            board = _board_of(args.workspace_id, settings)
    except (ConfigError, InvalidPlan, InvalidWorkspaceId, OSError, ValueError) as exc:
        print(f"error: shard {args.shard}: {exc}", file=sys.stderr, flush=True)
        return 2
    try:
        if board is not None:
            plan = wait_for_plan(board, DEFAULT_PLAN_WAIT_S if args.plan_wait_s is None else args.plan_wait_s)
            _log.info("shard plan found", extra={"shard": args.shard, "plan_id": plan.plan_id})
        plan.check_shard(args.shard)
    except InvalidPlan as exc:
        print(f"error: shard {args.shard}: {exc}", file=sys.stderr, flush=True)
        return 2
    except NoOpenPlan as exc:
        return _no_open_plan(args.shard, exc)
    except (RetrievalError, OSError) as exc:
        print(f"error: shard {args.shard}: {exc}", file=sys.stderr, flush=True)
        return 1
    try:
        result = work(plan, args.shard, settings, board=board)
    except NoOpenPlan as exc:
        return _no_open_plan(args.shard, exc)
    except (RetrievalError, OSError) as exc:
        print(f"error: shard {args.shard}: {exc}", file=sys.stderr, flush=True)
        return 1
    except Exception as exc:  # noqa: BLE001 - one line for the driver; the log has the rest
        _log.exception("shard %d failed", args.shard)
        print(f"error: shard {args.shard}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return 1
    stats = result.stats
    _log.info("shard indexed", extra={"shard": args.shard, "files": stats.files, "chunks": stats.chunks,
                                      **{f"{k}_s": round(v, 2) for k, v in stats.seconds.items()}})
    return 0


def _board_of(workspace_id: str, settings: Settings) -> PlanBoard:
    """The plan board of the workspace's index, under the index root this process is configured with."""
    uri = index_uri(settings, index_key(validated_id(workspace_id)))
    return PlanBoard(lancedb.connect(uri, storage_options=dict(settings.retrieval.storage_options) or None), uri)


def _no_open_plan(shard: int, exc: NoOpenPlan) -> int:
    """Nothing to do once the plan was committed without this worker (another try of its shard
    delivered): success, or the Job would retry it for nothing; otherwise a failure."""
    if exc.last is PlanState.COMMITTED:
        print(f"shard {shard}: nothing to do: {exc}", file=sys.stderr, flush=True)
        return 0
    print(f"error: shard {shard}: {exc}", file=sys.stderr, flush=True)
    return 1


def _int_env(name: str) -> int | None:
    value = os.environ.get(name, "").strip()
    return int(value) if value.isdigit() else None


if __name__ == "__main__":
    sys.exit(main())
