"""The `codecompass` subcommands. Each returns the process exit code."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import threading
import time
from pathlib import Path

# The CLI answers through the gateway's pipeline so a person and an agent get the same answer.
from typing import TYPE_CHECKING

from codecompass_gateway import skips

from codecompass.common import names
from codecompass.common.chunks import NodeKind
from codecompass.common.config import CHECKOUT_ROOT, Settings, documented_settings, redacted
from codecompass.contracts.retrieval.filters import Filters
from codecompass.policy.relevance import QueryFocus
from codecompass_cli.errors import EXIT_FAILURE, EXIT_USAGE, CliError, service_errors
from codecompass_cli.indexes import list_indexes
from codecompass_cli.progress import ProgressReporter
from codecompass_cli.runtime import (
    STATE_FILE,
    Locator,
    down,
    gc,
    orphan_rows,
    read_state,
    service_address,
    service_rows,
    state_locked,
    state_path,
    up,
)
from codecompass_cli.workspace import resolve_target, workspace_dir

if TYPE_CHECKING:
    from codecompass_gateway.pipeline import PipelineAnswer, PipelineRequest

# The gateway's pipeline and answer, the CLI's rendering (which imports the answer) and its
# clients are imported by the commands that use them: `codecompass mcp` starts the services before
# it loads the gateway, and they start sooner for each import it is spared (these: 0.06–0.1 s of
# the CLI's 0.35 s import).


def _out(line: str = "") -> None:
    print(line, flush=True)


def _err(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def cmd_up(args: argparse.Namespace, settings: Settings) -> int:
    workspace = str(workspace_dir(args.workspace)) if args.workspace else None
    up(settings, workspace, say=_out)
    _out(f"state: {state_path(settings)}; stop with `codecompass down`")
    return 0


def cmd_down(args: argparse.Namespace, settings: Settings) -> int:
    down(settings, say=_out, purge=args.purge)
    return 0


def cmd_gc(args: argparse.Namespace, settings: Settings) -> int:
    gc(settings, dry_run=args.dry_run, say=_out)
    return 0


def cmd_status(args: argparse.Namespace, settings: Settings) -> int:
    from codecompass_cli import render

    rows = service_rows(settings)
    orphans = orphan_rows(settings)
    state = read_state(settings)
    workspace = state.workspace if state is not None else None
    busy = state_locked(settings)
    indexes, indexes_error = _indexes(settings, rows)
    if args.json:
        _out(json.dumps({"checkout": str(CHECKOUT_ROOT), "state_dir": str(settings.state_dir),
                         "state_file": str(state_path(settings)), "workspace": workspace,
                         "changing": busy, "services": rows, "orphans": orphans,
                         "indexes": [render.index_row(ix) for ix in indexes] if indexes is not None else None,
                         "indexes_error": indexes_error}))
    else:
        # Which tool and which services: another checkout has its own state dir and services.
        _out(f"checkout: {CHECKOUT_ROOT}")
        _out(f"state:    {settings.state_dir}")
        for line in render.status_lines(rows + orphans):
            _out(line)
        if workspace:
            _out(f"workspace: {workspace}")
        if indexes is not None:
            _out(f"indexes: {len(indexes)}")
            for index in indexes:
                _out("  " + render.index_line(index))
        elif indexes_error:
            _out(f"indexes: not listed ({indexes_error})")
        if orphans:
            _out(f"orphans (processes of this state dir that runtime.json does not name): {len(orphans)}; "
                 "`codecompass down` stops them")
        unwell = [row["name"] for row in rows if row["state"] == "dead"
                  or (row["state"] == "running" and row["health"] != "SERVING")]
        if unwell and not busy:
            _out(f"`codecompass up` restarts {', '.join(unwell)}; the others keep running")
        if busy:
            _out("a codecompass up/down/gc is running on this state dir; the services may be changing")
        # Versions before the per-checkout default kept one state dir per user: the parent of ours.
        legacy = settings.state_dir.parent / STATE_FILE
        if legacy.is_file():
            _out(f"note: {legacy} is an older shared runtime; "
                 f"`CODECOMPASS_STATE_DIR={legacy.parent} codecompass down` stops its services")
    started = [row for row in rows if row["state"] not in ("not started", "not needed")]
    return 0 if started and all(row["health"] == "SERVING" for row in started) else EXIT_FAILURE


def _indexes(settings: Settings, rows: list[dict]):
    """(the indexes the retrieval service lists, None when it cannot be asked; why not)."""
    configured = names.RETRIEVAL in settings.configured_addrs
    running = any(row["name"] == names.RETRIEVAL and row["health"] == "SERVING" for row in rows)
    if not (configured or running):
        return None, ""
    try:
        return list_indexes(service_address(settings, names.RETRIEVAL), settings.rpc_timeout_s), ""
    except CliError as exc:
        return None, str(exc)


# `codecompass backup|restore|doctor`: python -m codecompass.retrieval.admin in this environment.
ADMIN_MODULE = "codecompass.retrieval.admin"
ADMIN_COMMANDS = {
    "backup": "copy the indexes (each a committed, consistent version) to an empty folder or s3:// prefix",
    "restore": "copy a backup into the index root, which must hold none of its indexes",
    "doctor": "say in one line each why an index writer would not start, and what it would do to each index",
}


def cmd_admin(args: argparse.Namespace, settings: Settings) -> int:
    """Runs the command in the retrieval package, with this process's environment (its settings):
    the CLI and the gateway never load LanceDB (tests/unit/test_layering.py)."""
    return subprocess.run([sys.executable, "-m", ADMIN_MODULE, args.command, *args.admin_args],
                          check=False).returncode


def cmd_config(args: argparse.Namespace, settings: Settings) -> int:
    if args.variables:
        for env, yaml_key, doc in documented_settings():
            _out(f"{env:<52} {yaml_key or '(env only)':<40} {doc}")
        return 0
    _out(json.dumps(redacted(settings), indent=2))
    return 0


def cmd_chunks(args: argparse.Namespace, settings: Settings) -> int:
    from codecompass_cli import clients, render

    root, relative = resolve_target(args.path, args.workspace)
    address = service_address(settings, names.ANALYSIS)
    files = chunks = 0
    for result in clients.chunk_files(address, str(root), [relative], args.references,
                                      settings.long_rpc_timeout_s):
        files += 1
        chunks += len(result.chunks)
        if args.json:
            if result.status == "skipped":
                _err(render.file_header(result))
            for chunk in result.chunks:
                _out(json.dumps(chunk.to_json(), ensure_ascii=False))
        else:
            for line in render.file_block(result):
                _out(line)
    summary = f"{files} files, {chunks} chunks (workspace {root})"
    if files == 0:
        summary = f"no source files under {args.path} (workspace {root})"
    (_err if args.json else _out)(summary)
    return 0


def _run_index(settings: Settings, workspace: Path, wait_for_embeddings: bool, *, force: bool = False,
               show_skipped: bool = False, workers: int = 0) -> None:
    from codecompass_cli import clients, render

    address = settings.writer_addr or service_address(settings, names.RETRIEVAL)
    reporter = ProgressReporter(sys.stderr)
    started = time.monotonic()
    final = None
    try:
        for progress in clients.index_workspace(address, str(workspace), wait_for_embeddings,
                                                settings.long_rpc_timeout_s, force, workers):
            reporter.update(progress)
            if progress.stats is not None:
                final = progress
    finally:
        reporter.close()
    stats, skipped = (final.stats, final.skipped) if final is not None else (None, ())
    for line in render.index_summary_lines(str(workspace), stats, time.monotonic() - started, skipped):
        _out(line)
    if show_skipped and skipped:
        _out("skipped:")
        for line in skips.listing(skipped):
            _out(line)


def cmd_index(args: argparse.Namespace, settings: Settings) -> int:
    _run_index(settings, workspace_dir(args.path), wait_for_embeddings=not args.no_wait, force=args.force,
               show_skipped=args.show_skipped, workers=args.workers)
    return 0


def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    from codecompass_gateway.answer import answer_to_dict, search_answer
    from codecompass_gateway.pipeline import PipelineRequest

    from codecompass_cli import render

    workspace = workspace_dir(args.path)
    try:
        filters = Filters(
            path_patterns=tuple(args.path_glob or ()),
            node_kinds=tuple(NodeKind(k) for k in args.kind or ()),
            exclude_tests=args.no_tests,
        )
    except ValueError as exc:
        raise CliError(f"invalid filter: {exc}", EXIT_USAGE) from None
    request = PipelineRequest(
        workspace_root=str(workspace), query=args.query, filters=filters, semantic_ratio=args.semantic_ratio,
        sync=not args.no_sync, rerank=not args.no_rerank, rerank_provider=args.rerank_provider, hubs=args.hubs,
        select=not args.no_select, max_tokens=args.max_tokens, min_relevance=args.min_relevance,
        focus=QueryFocus(args.focus), limit=args.limit,
    )
    answer = _answer(settings, request)
    if args.json:
        _out(json.dumps(answer_to_dict(answer, args.max_lines), ensure_ascii=False))
    else:
        for line in render.answer_lines(search_answer(answer, args.max_lines), args.query):
            _out(line)
    return 0


def _answer(settings: Settings, request: PipelineRequest) -> PipelineAnswer:
    """Runs the gateway's pipeline against the local services (the same answer an agent gets);
    a service `up` restarts meanwhile is found where runtime.json says it is now."""
    from codecompass_gateway.pipeline import Pipeline

    pipeline = Pipeline(settings, Locator(settings))
    try:
        with service_errors():
            return pipeline.run(request)
    finally:
        pipeline.close()


def cmd_mcp(args: argparse.Namespace, settings: Settings) -> int:
    """Serve the MCP tools over the local services: reused when they run, else started behind the
    server, so the client's handshake never waits for them (a tool call does, a bounded time).
    Everything but the protocol goes to stderr (stdout is the protocol in stdio mode)."""
    from codecompass_gateway.__main__ import run as run_gateway
    from codecompass_gateway.__main__ import server_plan
    from codecompass_gateway.handshake import Front
    from codecompass_gateway.readiness import Readiness

    try:  # refused (a remote bind without a token, a missing folder) before anything starts
        plan = server_plan(args, settings)
    except ValueError as exc:
        raise CliError(str(exc), EXIT_USAGE) from None
    workspace = plan.workspaces[0]
    # Taken by the entry point already when the command line said so at a glance (`__main__`).
    front = Front.take_stdio() if plan.transport == "stdio" else None
    ready = Readiness()

    def start_services() -> None:
        try:
            up(settings, str(workspace), say=_err)
        except CliError as exc:
            _err(f"codecompass: {exc}")
            ready.failed(str(exc))
        except Exception as exc:  # noqa: BLE001 - the thread's boundary: the server stays up and says why
            _err(f"codecompass: the services did not start: {type(exc).__name__}: {exc}")
            ready.failed(f"{type(exc).__name__}; the MCP server's stderr has details")
        else:
            ready.succeeded()

    threading.Thread(target=start_services, name="start services", daemon=True).start()
    # The server outlives any one set of services: `up` may restart one on a new port, so every
    # call finds its service through runtime.json.
    return run_gateway(args, settings, Locator(settings), ready, front)


def _invocation() -> str:
    """How the user ran us, so the printed hints can be pasted as they are."""
    program = Path(sys.argv[0])
    if program.name == "codecompass" and program.parent != Path("."):
        try:
            return str(program.resolve().relative_to(Path.cwd()))
        except ValueError:
            return str(program)
    return "codecompass"


def cmd_run(args: argparse.Namespace, settings: Settings) -> int:
    from codecompass_gateway.answer import search_answer
    from codecompass_gateway.pipeline import PipelineRequest

    from codecompass_cli import clients, render

    workspace = workspace_dir(args.workspace)
    _out(f"== starting services (state in {settings.state_dir})")
    up(settings, str(workspace), say=_out)
    _out(f"== indexing {workspace}")
    _run_index(settings, workspace, wait_for_embeddings=True)

    _out(f"== chunk summary of {workspace}")
    summary = render.ChunkSummary()
    started = time.monotonic()
    for result in clients.chunk_files(service_address(settings, names.ANALYSIS), str(workspace), ["."], False,
                                      settings.long_rpc_timeout_s):
        summary.add(result)
    for line in summary.lines_out(time.monotonic() - started):
        _out(f"  {line}")

    query, source = render.sample_query(summary.chunks)
    origin = f" (the purpose of {source.qualified_name})" if source is not None else ""
    _out(f"== sample query: \"{query}\"{origin}")
    answer = _answer(settings, PipelineRequest(workspace_root=str(workspace), query=query, max_tokens=2000))
    for line in render.answer_lines(search_answer(answer, 20), query):
        _out(f"  {line}")

    command = _invocation()
    quoted = shlex.quote(str(workspace))
    _out("")
    _out(f"search: {command} search {quoted} \"your question\"")
    _out(f"chunks: {command} chunks {quoted}")
    _out(f"status: {command} status")
    _out(f"stop:   {command} down   (the services keep running until then)")
    return 0


def dispatch(args: argparse.Namespace, settings: Settings) -> int:
    try:
        return args.handler(args, settings)
    except BrokenPipeError:
        # `codecompass chunks ... | head` closed our stdout; that is not an error.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
