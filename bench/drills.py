"""Failure drills on a deployment of every service apart (issue 19 §4), with numbers.

Each drill starts its own deployment (bench/lib/deployment.py) over a copy of the sample
workspace plus generated modules, indexes it through the writer, puts clients on it
(bench/lib/loadgen.py: closed-loop MCP clients through the gateway and gRPC clients on the
searchers) and breaks one part while they run:

  searcher_killed   one of two searchers SIGKILLed under load: the other answers (round_robin, and
                    the client's one retry on a fresh channel for a call the dead one dropped);
  embedding_killed  the embedding service SIGKILLed under load, then started again: searches go on
                    by the static vectors, each answer saying the primary model was unavailable;
                    the flag goes once the service is back;
  writer_killed     the index writer SIGKILLed mid-sync of an edit (while it chunks the changed
                    files), then started again and the edit indexed: searchers answer throughout,
                    only ever the old or the new version; the index then holds exactly the rows a
                    clean index of the same files holds, none lost or duplicated;
  store_refused     an index on S3 (moto, a real server process), its endpoint refusing every
  store_hung        connection / answering nothing for a while (a relay in front of moto closed,
                    or moto frozen with SIGSTOP), under a writer and searchers: a sync during the
                    outage ends within its deadline with one line; once the store is back, with no
                    service restarted, syncs work again, and the rows and their ids are intact.
                    moto's own stop/start is not used: moto keeps objects in memory, so a stopped
                    moto comes back empty (tests/fixtures/s3.py), which is a lost bucket, not an
                    outage.

tests/e2e/test_failure_drills.py runs the same functions and asserts what they measure.
Writes bench/results/drills-<UTC>.json (+ -latest) and prints its README section (bench/report/).

Run: .venv/bin/python -m bench.drills [--only searcher_killed,writer_killed,...]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import socket
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lancedb

from bench.lib import deployment, loadgen
from bench.report.faults import render_drills
from codecompass.clients.errors import ServiceError
from codecompass.clients.retrieval import RetrievalClient
from codecompass.contracts.retrieval.model import FreshnessStatus, IndexPhase
from codecompass.retrieval.location import index_key, list_tables, workspace_id_of
from codecompass_dev.evaluation.results import load_latest, write_results
from codecompass_dev.evaluation.services import REPO_ROOT, start_service

SAMPLE_WORKSPACE = REPO_ROOT / "tests" / "fixtures" / "sample_workspace"
# Fast to start and to embed: the drills are about processes, not models. The embedding drill
# runs the default profile, whose index has a static channel to fall back on.
DRILL_PROFILE = "code-static"
EMBEDDING_DRILL_PROFILE = "code-small"
QUERIES = ("validate token", "how are tokens checked", "requireAuth middleware", "hash a password",
           "step value multiply", "session store", "parse config", "rotate signing keys")
ROW_COLUMNS = ("id", "relative_path", "qualified_name", "snippet_hash", "start_line", "end_line", "has_vector")
FUNCTIONS_PER_MODULE = 12
INDEX_TIMEOUT_S = 300.0
SYNC_DEADLINE_S = 5.0
# What the gateway gives a sync before a search (gateway.freshness_budget_ms, and its hop).
GATEWAY_SYNC_BUDGET_MS, GATEWAY_SYNC_DEADLINE_S = 300, 2.3
# A searcher checks an index on S3 for a newer version this often (default 1 s): short, so a drill
# sees a sync's result quickly.
S3_REFRESH_S = "0.2"
BUCKET = "drills"
EMBEDDING_UNAVAILABLE = "embedding_unavailable"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# --- workspaces and indexes ---------------------------------------------------------------------


def drill_workspace(root: Path, modules: int) -> Path:
    """The sample workspace plus `modules` generated modules of FUNCTIONS_PER_MODULE functions."""
    shutil.copytree(SAMPLE_WORKSPACE, root)
    for i in range(modules):
        write_module(root, i, variant=0)
    return root


def write_module(root: Path, i: int, variant: int) -> None:
    body = "\n".join(f"export function step{i}_{j}(value: number): number {{\n"
                     f"  return value * {j} + {i + variant};\n}}\n"
                     for j in range(FUNCTIONS_PER_MODULE))
    path = root / "src" / "gen" / f"module{i}.ts"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")


def index(address: str, workspace: Path) -> None:
    client = RetrievalClient(address)
    try:
        for _ in client.index(str(workspace), wait_for_embeddings=True, timeout_s=INDEX_TIMEOUT_S):
            pass
    finally:
        client.close()


def index_rows(index_uri: str, workspace: Path, storage_options: dict[str, str] | None = None) -> list[tuple]:
    """Every chunk row of the workspace's index, as sorted tuples of ROW_COLUMNS."""
    db = lancedb.connect(f"{index_uri}/{index_key(workspace_id_of(workspace.resolve()))}",
                         storage_options=storage_options)
    (name,) = [n for n in list_tables(db) if n.startswith("chunks_")]
    table = db.open_table(name).to_arrow().select(list(ROW_COLUMNS))
    return sorted(tuple(row[c] for c in ROW_COLUMNS) for row in table.to_pylist())


def searched_total(address: str, workspace: Path) -> int:
    """The chunk count a search on `address` answers from."""
    from codecompass.contracts.retrieval.model import SearchQuery

    client = RetrievalClient(address)
    try:
        return client.search(
            SearchQuery(workspace_root=str(workspace), query="step", limit=1), 30).metadata.total_chunks
    finally:
        client.close()


def plan(deployed: deployment.Deployment, workspace: Path, seconds: float, mcp: int, grpc: int) -> loadgen.LoadPlan:
    return loadgen.LoadPlan(workspace=str(workspace), queries=QUERIES, duration_s=seconds, mcp_clients=mcp,
                            grpc_clients=grpc, url=deployed.url if deployed.gateway_port else "",
                            token=deployed.token, retrieval_addr=deployed.retrieval_addr)


@dataclass
class Clock:
    """Seconds since the clients were released, as the calls are stamped (the fault runs in this
    process; the clients' clocks start within milliseconds of it)."""

    t0: float = 0.0

    def start(self) -> None:
        self.t0 = time.perf_counter()

    def now(self) -> float:
        return time.perf_counter() - self.t0

    def sleep_until(self, at_s: float) -> None:
        time.sleep(max(0.0, at_s - self.now()))


def phase_counts(calls: list[loadgen.Call], start_s: float, end_s: float | None = None) -> dict[str, Any]:
    """Calls started in [start_s, end_s), their errors and a sample of the errors."""
    inside = [c for c in calls if c.started_s >= start_s and (end_s is None or c.started_s < end_s)]
    errors = [c for c in inside if c.error]
    return {"calls": len(inside), "errors": len(errors), "error_samples": sorted({c.error for c in errors})[:3]}


def tracebacks(up: deployment.Deployment) -> dict[str, int]:
    """Per service, the lines of its output holding a Python traceback (the gateway's go to a file)."""
    lines = {name: service.log_lines for name, service in up.services.items()}
    gateway_log = up.scratch / "gateway.log"
    if gateway_log.exists():
        lines[deployment.GATEWAY] = gateway_log.read_text(errors="replace").splitlines()
    return {name: n for name, text in lines.items() if (n := sum(1 for line in text if "Traceback" in line))}


def in_flight(calls: list[loadgen.Call], at_s: float) -> list[loadgen.Call]:
    return [c for c in calls if c.started_s < at_s < c.started_s + c.ms / 1000]


@contextmanager
def drill_deployment(scratch: Path, index_uri: str, workspace: Path, *, profile: str = DRILL_PROFILE,
                     gateway: bool = True, env: dict[str, str] | None = None) -> Iterator[deployment.Deployment]:
    with deployment.running(scratch / "deployment", index_uri, workspaces=(workspace,) if gateway else (),
                            pipeline=gateway, env={"CODECOMPASS_EMBEDDING_PROFILE": profile, **(env or {})}) as up:
        index(up.writer_addr, workspace)
        # Each searcher opens (and, on object storage, copies) the index on its first search; a
        # searcher in service has done that long before a fault, so the drill's clock starts after.
        for name in up.searchers:
            searched_total(up.services[name].address, workspace)
        yield up


# --- a. a searcher killed under load ------------------------------------------------------------


def searcher_killed(scratch: Path, *, seconds: float = 12.0, kill_at_s: float = 4.0, mcp: int = 4,
                    grpc: int = 2, modules: int = 20) -> dict[str, Any]:
    workspace = drill_workspace(scratch / "ws", modules)
    clock = Clock()
    with drill_deployment(scratch, str(scratch / "index"), workspace) as up:
        def fault() -> None:
            clock.start()
            clock.sleep_until(kill_at_s)
            up.kill("retrieval-1")

        run = loadgen.run_load(plan(up, workspace, seconds, mcp, grpc), fault)
        logged = tracebacks(up)
    flying = in_flight(run.calls, kill_at_s)
    return {
        "clients": {"mcp": mcp, "grpc": grpc}, "seconds": seconds, "kill_at_s": kill_at_s,
        "before": phase_counts(run.calls, 0.0, kill_at_s), "after": phase_counts(run.calls, kill_at_s),
        "in_flight_at_kill": {"calls": len(flying), "errors": sum(1 for c in flying if c.error),
                              "slowest_ms": round(max((c.ms for c in flying), default=0.0), 1)},
        "log_tracebacks": logged,
        "summary": loadgen.summarize_run(run)["all"],
    }


# --- b. the embedding service killed under load -------------------------------------------------


def degraded(meta: dict[str, Any]) -> bool:
    """The answer says the query was not embedded by the primary model."""
    return bool(meta.get("semantic_fallback") or meta.get("primary_unavailable_reason")
                or meta.get("semantic_skipped_reason") == EMBEDDING_UNAVAILABLE)


def embedding_killed(scratch: Path, *, seconds: float = 18.0, kill_at_s: float = 4.0, restart_at_s: float = 10.0,
                     mcp: int = 3, grpc: int = 2, modules: int = 10) -> dict[str, Any]:
    workspace = drill_workspace(scratch / "ws", modules)
    clock = Clock()
    marks: dict[str, float] = {}
    with drill_deployment(scratch, str(scratch / "index"), workspace, profile=EMBEDDING_DRILL_PROFILE) as up:
        def fault() -> None:
            clock.start()
            clock.sleep_until(kill_at_s)
            up.kill(deployment.EMBEDDING)
            clock.sleep_until(restart_at_s)
            up.restart(deployment.EMBEDDING)
            marks["serving_again_s"] = clock.now()

        run = loadgen.run_load(plan(up, workspace, seconds, mcp, grpc), fault)
        logged = tracebacks(up)
    back = marks["serving_again_s"]
    ended_before = [c for c in run.calls if c.started_s + c.ms / 1000 < kill_at_s]
    # Down: from half a second after the kill (calls in flight at the kill may have embedded) to
    # the restart.
    down = [c for c in run.calls if kill_at_s + 0.5 <= c.started_s < restart_at_s]
    after = [c for c in run.calls if c.started_s >= back]
    # Recovered: from the first call that started after the restart, every answer is unflagged.
    last_flagged = max((i for i, c in enumerate(after) if degraded(c.meta)), default=-1)
    first_clean = after[last_flagged + 1] if last_flagged + 1 < len(after) else None
    return {
        "clients": {"mcp": mcp, "grpc": grpc}, "seconds": seconds, "kill_at_s": kill_at_s,
        "restart_at_s": restart_at_s, "serving_again_s": round(back, 2),
        "before": {**phase_counts(ended_before, 0.0), "flagged": sum(1 for c in ended_before if degraded(c.meta))},
        "down": {**phase_counts(down, 0.0), "by_kind": flags_by_kind(down)},
        "after": {**phase_counts(after, 0.0), "flagged": sum(1 for c in after if degraded(c.meta))},
        "recovered_after_s": None if first_clean is None else round(max(first_clean.started_s - back, 0.0), 2),
        "log_tracebacks": logged,
        "summary": loadgen.summarize_run(run)["all"],
    }


def flags_by_kind(calls: list[loadgen.Call]) -> dict[str, dict[str, Any]]:
    """Per client kind: calls answered, how many say the primary model was missing, and how."""
    out: dict[str, dict[str, Any]] = {}
    for c in calls:
        row = out.setdefault(c.kind, {"answered": 0, "flagged": 0, "flags": {}})
        if c.error:
            continue
        row["answered"] += 1
        row["flagged"] += degraded(c.meta)
        for key in ("semantic_fallback", "primary_unavailable_reason", "semantic_skipped_reason"):
            if c.meta.get(key):
                label = f"{key}={c.meta[key]}"
                row["flags"][label] = row["flags"].get(label, 0) + 1
    return out


# --- c. the writer killed mid-sync --------------------------------------------------------------


def edit(workspace: Path, modules: int) -> None:
    """An edit-sized change (one flush, one commit): half the modules rewritten, three removed and one
    added, so the new version's chunk count differs from the old one's."""
    for i in range(0, modules, 2):
        write_module(workspace, i, variant=1000)
    for i in (1, 3, 5):
        (workspace / "src" / "gen" / f"module{i}.ts").unlink()
    write_module(workspace, modules, variant=0)


def writer_killed(scratch: Path, *, modules: int = 40, grpc: int = 3, seconds: float = 25.0) -> dict[str, Any]:
    workspace = drill_workspace(scratch / "ws", modules)
    index_uri = str(scratch / "index")
    clock = Clock()
    marks: dict[str, Any] = {}
    with drill_deployment(scratch, index_uri, workspace, gateway=False) as up:
        old_rows = len(index_rows(index_uri, workspace))
        edit(workspace, modules)

        def fault() -> None:
            clock.start()
            time.sleep(1.0)
            marks["sync_started_s"] = clock.now()
            marks["killed_in_phase"] = kill_writer_mid_sync(up, workspace)
            marks["killed_s"] = clock.now()
            marks["rows_after_kill"] = len(index_rows(index_uri, workspace))
            time.sleep(1.0)
            up.restart(deployment.WRITER)
            marks["restarted_s"] = clock.now()
            index(up.writer_addr, workspace)
            marks["synced_s"] = clock.now()

        run = loadgen.run_load(plan(up, workspace, seconds, 0, grpc), fault)
        rows = index_rows(index_uri, workspace)
        clean_rows = clean_index_rows(up, workspace, scratch / "clean-index")
        logged = tracebacks(up)
    totals = sorted({c.meta["total_chunks"] for c in run.calls if "total_chunks" in c.meta})
    return {
        "clients": {"grpc": grpc}, "seconds": seconds, "modules": modules,
        **{k: round(v, 2) if isinstance(v, float) else v for k, v in marks.items()},
        "rows": {"old": old_rows, "after_kill": marks["rows_after_kill"], "after_restart": len(rows),
                 "clean": len(clean_rows), "duplicate_ids": len(rows) - len({r[0] for r in rows}),
                 "equal_to_clean": rows == clean_rows},
        "searches": {**phase_counts(run.calls, 0.0), "totals_seen": totals},
        "restarted_writer_finished_s": round(marks["synced_s"] - marks["restarted_s"], 2),
        "log_tracebacks": logged,
    }


def kill_writer_mid_sync(up: deployment.Deployment, workspace: Path) -> str:
    """Start the sync of the edit and SIGKILL the writer at its first report past the scan (it is
    chunking the changed files: nothing of the edit is committed yet); the phase it was in."""
    client = RetrievalClient(up.writer_addr)
    phase = "no report before the end"
    try:
        for progress in client.index(str(workspace), wait_for_embeddings=True, timeout_s=INDEX_TIMEOUT_S):
            if progress.phase is not IndexPhase.SCANNING:
                phase = progress.phase.value
                up.kill(deployment.WRITER)
                break
    except ServiceError:
        pass  # the stream ends with the writer
    finally:
        client.close()
    return phase


def clean_index_rows(up: deployment.Deployment, workspace: Path, index_uri: Path) -> list[tuple]:
    """The rows a writer that was never killed writes for the same files, in an index of its own."""
    services = up.services
    writer = start_service("clean-writer", [sys.executable, "-m", "codecompass.retrieval"], "RETRIEVAL_PORT", {
        "ANALYSIS_ADDR": services[deployment.ANALYSIS].address,
        "EMBEDDING_ADDR": services[deployment.EMBEDDING].address,
        "CODECOMPASS_EMBEDDING_PROFILE": DRILL_PROFILE, "CODECOMPASS_RETRIEVAL_ROLE": "writer",
        "CODECOMPASS_RETRIEVAL_DB_URI": str(index_uri),
        "CODECOMPASS_STATE_DIR": str(index_uri.parent / "clean-writer")})
    try:
        index(writer.address, workspace)
    finally:
        writer.stop()
    return index_rows(str(index_uri), workspace)


# --- d. the object store down -------------------------------------------------------------------


class Relay:
    """A TCP relay on a fixed loopback port in front of the object store: `stop()` closes its
    listener and every connection through it, so the store refuses connections as a stopped one
    does, while the store behind (moto) keeps its objects; `start()` listens again, same port."""

    def __init__(self, target_port: int) -> None:
        self._target = target_port
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._listener: socket.socket | None = None
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()

    def start(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(128)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def stop(self) -> None:
        listener, self._listener = self._listener, None
        with self._lock:
            sockets, self._open = [*self._open, *([listener] if listener else [])], set()
        for sock in sockets:
            _close(sock)

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # stopped
            try:
                upstream = socket.create_connection(("127.0.0.1", self._target), timeout=5)
                upstream.settimeout(None)
            except OSError:
                _close(client)
                continue
            with self._lock:
                if self._listener is not listener:
                    _close(client)
                    _close(upstream)
                    return
                self._open |= {client, upstream}
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass  # the other side, or stop(), closed it
        finally:
            for sock in (source, sink):
                with self._lock:
                    self._open.discard(sock)
                _close(sock)


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)  # wakes a thread blocked on it, where close() alone would not
    sock.close()


def store_down(scratch: Path, mode: str, *, outage_at_s: float = 3.0, outage_s: float = 8.0, grpc: int = 2,
               seconds: float = 22.0, modules: int = 10) -> dict[str, Any]:
    """`mode` "refused" (the relay closed) or "hung" (moto frozen)."""
    from tests.fixtures.s3 import MotoS3Server, S3Bucket

    workspace = drill_workspace(scratch / "ws", modules)
    moto = MotoS3Server(scratch)
    moto.start()
    relay = Relay(moto.port)
    relay.start()
    try:
        moto.client().create_bucket(Bucket=BUCKET)
        bucket = S3Bucket(moto, BUCKET)
        options = {**bucket.storage_options, "aws_endpoint": relay.endpoint}
        index_uri = bucket.uri("indexes")
        env = {"CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS": json.dumps(options),
               "CODECOMPASS_RETRIEVAL_SEARCHER_REFRESH_S": S3_REFRESH_S}
        down, up_again = (relay.stop, relay.start) if mode == "refused" else (moto.pause, moto.resume)
        clock = Clock()
        marks: dict[str, Any] = {}
        with drill_deployment(scratch, index_uri, workspace, gateway=False, env=env) as up:
            before = index_rows(index_uri, workspace, options)

            def fault() -> None:
                clock.start()
                clock.sleep_until(outage_at_s)
                down()
                marks["down_s"] = clock.now()
                # A change to write while the store is down: the writer must reach it.
                write_module(workspace, modules, variant=0)
                # As the gateway syncs before a search (its freshness budget), then with no budget.
                marks["gateway_sync_while_down"] = timed_sync(up.writer_addr, workspace, GATEWAY_SYNC_BUDGET_MS,
                                                              GATEWAY_SYNC_DEADLINE_S)
                marks["sync_while_down"] = timed_sync(up.writer_addr, workspace)
                clock.sleep_until(outage_at_s + outage_s)
                up_again()
                marks["up_s"] = clock.now()
                marks["writer_recovered_after_s"] = round(wait_for_sync(up.writer_addr, workspace) - clock.t0
                                                          - marks["up_s"], 2)

            run = loadgen.run_load(plan(up, workspace, seconds, 0, grpc), fault)
            recovered = index_rows(index_uri, workspace, options)
            # A sync after recovery works: one more module, seen by the searchers.
            write_module(workspace, modules + 1, variant=0)
            after_edit = timed_sync(up.writer_addr, workspace, 0, 60.0)
            final = index_rows(index_uri, workspace, options)
            seen = wait_for_total(up.retrieval_addr, workspace, len(final))
            logged = tracebacks(up)
    finally:
        relay.stop()
        moto.stop()
    back = marks["up_s"]
    after = [c for c in run.calls if c.started_s >= back]
    failing_after = [c for c in after if c.error]
    kept = set(before) <= set(recovered)
    return {
        "mode": mode, "clients": {"grpc": grpc}, "seconds": seconds, "outage_s": outage_s,
        "down_s": round(marks["down_s"], 2), "up_s": round(back, 2),
        "gateway_sync_while_down": marks["gateway_sync_while_down"],
        "sync_while_down": marks["sync_while_down"], "sync_deadline_s": SYNC_DEADLINE_S,
        "log_tracebacks": logged,
        "writer_recovered_after_s": marks["writer_recovered_after_s"],
        "searches": {"before": phase_counts(run.calls, 0.0, marks["down_s"]),
                     "down": phase_counts(run.calls, marks["down_s"], back), "after": phase_counts(run.calls, back),
                     "last_error_after_up_s": round(max(c.started_s for c in failing_after) - back, 2)
                     if failing_after else None},
        # Every row from before the outage is still there, unchanged; the change made during the
        # outage is written once; nothing is duplicated.
        "rows": {"before": len(before), "after_recovery": len(recovered), "old_rows_intact": kept,
                 "added_by_the_outage_sync": len(recovered) - len(before), "after_next_sync": len(final),
                 "duplicate_ids": len(final) - len({r[0] for r in final}), "searchers_see_last_sync": seen},
        # A module's rows: its functions and its file card.
        "module_rows": FUNCTIONS_PER_MODULE + 1,
        "sync_after_recovery": after_edit,
    }


def timed_sync(writer_addr: str, workspace: Path, budget_ms: int = 0, deadline_s: float = SYNC_DEADLINE_S
               ) -> dict[str, Any]:
    """A Sync with its budget (0: until done) and deadline: how long it took and how it ended (a
    failure as the gateway words it for the user)."""
    client = RetrievalClient(writer_addr)
    started = time.perf_counter()
    try:
        outcome = client.sync(str(workspace), budget_ms, deadline_s)
        result = {"ok": outcome.freshness_status is FreshnessStatus.FRESH,
                  "status": outcome.freshness_status.value, "error": outcome.error}
    except ServiceError as exc:
        result = {"ok": False, "status": exc.kind, "error": exc.user_message()}
    finally:
        client.close()
    error = result["error"]
    return {**result, "seconds": round(time.perf_counter() - started, 2), "error_lines": len(error.splitlines()),
            "traceback": "Traceback" in error}


def wait_for_sync(writer_addr: str, workspace: Path, timeout_s: float = 120.0) -> float:
    """Sync until one succeeds; the perf_counter time it ended."""
    deadline = time.perf_counter() + timeout_s
    while not timed_sync(writer_addr, workspace)["ok"]:
        if time.perf_counter() > deadline:
            raise RuntimeError(f"the writer did not sync again within {timeout_s:.0f} s of the store coming back")
        time.sleep(0.25)
    return time.perf_counter()


def wait_for_total(retrieval_addr: str, workspace: Path, total: int, timeout_s: float = 30.0) -> bool:
    deadline = time.perf_counter() + timeout_s
    while time.perf_counter() < deadline:
        if searched_total(retrieval_addr, workspace) == total:
            return True
        time.sleep(0.2)
    return False


# --- verdicts -----------------------------------------------------------------------------------

LEXICAL_ONLY = "semantic_skipped_reason=lexical_short_circuit"
FLAG_CARRIERS = (loadgen.GRPC_SEARCH, loadgen.SEMANTIC_SEARCH)


def verdict(name: str, r: dict[str, Any]) -> tuple[str, bool]:
    """What the drill expects, and whether the run met it."""
    if name == "searcher_killed":
        return ("no error before, during or after the kill; the other searcher answers",
                r["summary"]["errors"] == 0 and r["after"]["calls"] > 0)
    if name == "embedding_killed":
        down = r["down"]["by_kind"]
        # Every answer that needed the model says it was missing (a name-shaped query never embeds).
        flagged = all(k["flagged"] + k["flags"].get(LEXICAL_ONLY, 0) == k["answered"] > 0
                      for kind, k in down.items() if kind in FLAG_CARRIERS)
        errors = r["before"]["errors"] + r["down"]["errors"] + r["after"]["errors"]
        return (("no error; while down, every semantic_search and gRPC answer that needed the model is flagged "
                "`primary_unavailable_reason`; unflagged once it is back"),
                errors == 0 and flagged and r["recovered_after_s"] is not None and r["before"]["flagged"] == 0)
    if name == "writer_killed":
        rows = r["rows"]
        return (("killed mid-sync; searches never fail and see only the old or the new version; the restarted writer "
                "leaves exactly a clean index's rows"),
                r["killed_in_phase"] in {p.value for p in IndexPhase} - {"done"} and rows["after_kill"] == rows["old"]
                and r["searches"]["errors"] == 0 and set(r["searches"]["totals_seen"]) <= {rows["old"], rows["clean"]}
                and rows["equal_to_clean"] and rows["duplicate_ids"] == 0)
    if name.startswith("store_"):
        down, rows = r["sync_while_down"], r["rows"]
        searches = r["searches"]
        return (("a sync while the store is down ends by its deadline with one line, no traceback; back up, the "
                "writer syncs again with no restart; old rows intact, the change written once, nothing duplicated"),
                not down["ok"] and down["seconds"] <= r["sync_deadline_s"] + 1.0 and down["error_lines"] == 1
                and not down["traceback"] and r["gateway_sync_while_down"]["seconds"] <= GATEWAY_SYNC_DEADLINE_S + 1.0
                and rows["old_rows_intact"] and rows["added_by_the_outage_sync"] == r["module_rows"]
                and rows["duplicate_ids"] == 0 and rows["searchers_see_last_sync"] and r["sync_after_recovery"]["ok"]
                and searches["after"]["errors"] == 0)
    raise ValueError(f"no verdict for drill {name!r}")


# --- the bench ----------------------------------------------------------------------------------

DRILLS: dict[str, Callable[[Path], dict[str, Any]]] = {
    "searcher_killed": searcher_killed,
    "embedding_killed": embedding_killed,
    "writer_killed": writer_killed,
    "store_refused": lambda scratch: store_down(scratch, "refused"),
    "store_hung": lambda scratch: store_down(scratch, "hung"),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help=f"comma-separated, of {', '.join(DRILLS)}")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    names = [n.strip() for n in args.only.split(",")] if args.only else list(DRILLS)
    if unknown := [n for n in names if n not in DRILLS]:
        parser.error(f"unknown drill(s) {unknown}")
    results: dict[str, Any] = {}
    started = time.perf_counter()
    for name in names:
        log(f"drill {name} ...")
        t0 = time.perf_counter()
        with tempfile.TemporaryDirectory(prefix=f"drill-{name}-") as scratch:
            results[name] = DRILLS[name](Path(scratch))
        results[name]["wall_s"] = round(time.perf_counter() - t0, 1)
        results[name]["expect"], results[name]["met"] = verdict(name, results[name])
        log(f"  {json.dumps(results[name])}")
    if args.no_write:
        return 0
    path = write_results("drills", {"profile": DRILL_PROFILE, "embedding_drill_profile": EMBEDDING_DRILL_PROFILE,
                                    "seconds": round(time.perf_counter() - started, 1), "drills": results})
    print(render_drills(load_latest("drills")))
    log(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
