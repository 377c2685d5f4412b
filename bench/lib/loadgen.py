"""Concurrent clients against a deployment (bench/lib/deployment.py), every call timed.

Two kinds of client, each in its own process so that neither's Python stalls the other's clock:
- MCP clients: the SDK's own client over streamable HTTP, one session each, sending the bearer
  token; each calls `semantic_search` and `search_code` in turn (the gateway's whole pipeline:
  sync through the writer, search on a searcher, selection);
- gRPC clients: `RetrievalClient.search` on the searchers' address list (the gateway's
  retrieve stage alone, as another service would call it), one channel each.

Clients are closed-loop: each sends its next call when the last one answered, after a pause of
`think_s` on average (0: none, so N clients keep N calls in flight and the load is the most they
can get through; else drawn from an exponential distribution, seeded per client, as an agent's
next tool call waits for its model's next turn). A
call is an error when it raises, runs past `call_timeout_s`, or is a tool result flagged
isError. All clients start together (a barrier, after every session and channel is open) and
stop sending at `duration_s`; calls in flight then finish and are counted, stamped with when
they started.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import random
import resource
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from codecompass_dev.evaluation.metrics import percentile

SEMANTIC_SEARCH, SEARCH_CODE, GRPC_SEARCH = "semantic_search", "search_code", "grpc_search"
MCP_TOOLS = (SEMANTIC_SEARCH, SEARCH_CODE)
# Setting up 75 sessions on two busy cores takes a while; past this the run is refused.
SETUP_TIMEOUT_S = 180.0
# Results are small tuples, but thousands of them: the child's answer may take a moment to arrive.
RESULT_TIMEOUT_S = 120.0
# Search metadata a call keeps (for the drills: which index version, which fallback).
META_KEYS = ("total_chunks", "indexing_status", "semantic_fallback", "semantic_skipped_reason",
             "primary_unavailable_reason", "vector_channels")
ERROR_TEXT_CHARS = 300


@dataclass(frozen=True)
class LoadPlan:
    """Who calls what, for how long. `queries` are drawn in turn, each client from its own offset."""

    workspace: str
    queries: tuple[str, ...]
    duration_s: float
    mcp_clients: int = 0
    grpc_clients: int = 0
    url: str = ""
    token: str = ""
    retrieval_addr: str = ""
    # The index a gRPC search names instead of a folder (a searcher needs no copy of the files).
    workspace_id: str = ""
    call_timeout_s: float = 30.0
    # Mean pause between a client's answer and its next call (exponential); 0: none.
    think_s: float = 0.0

    def pauses(self, client: int) -> Callable[[], float]:
        """The client's pauses, seeded by its number so two runs make the same ones. A paced client
        pauses before its first call too: agents do not all start at one instant, and 50 first
        calls sent together would measure a burst no team makes."""
        if self.think_s <= 0:
            return lambda: 0.0
        draw = random.Random(client).expovariate
        return lambda: draw(1.0 / self.think_s)


@dataclass(frozen=True)
class Call:
    kind: str
    client: int
    started_s: float  # since the clients were released
    ms: float
    error: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class LoadRun:
    plan: LoadPlan
    calls: list[Call]
    # CPU seconds the client processes used (they share the machine with the services).
    client_cpu_s: dict[str, float]
    wall_s: float

    def of(self, kind: str | None = None) -> list[Call]:
        return [c for c in self.calls if kind is None or c.kind == kind]


def run_load(plan: LoadPlan, during: Callable[[], None] | None = None) -> LoadRun:
    """Run the plan's clients; `during` runs in this process once they are released (a drill's
    fault), and the run ends when both it and the clients are done."""
    ctx = multiprocessing.get_context("spawn")
    drivers = [(name, target) for name, target, count in (("mcp", _mcp_driver, plan.mcp_clients),
                                                          ("grpc", _grpc_driver, plan.grpc_clients)) if count]
    barrier = ctx.Barrier(len(drivers) + 1)
    results = ctx.Queue()
    processes = [ctx.Process(target=target, args=(plan, barrier, results), name=f"load-{name}", daemon=True)
                 for name, target in drivers]
    for process in processes:
        process.start()
    try:
        try:
            barrier.wait(SETUP_TIMEOUT_S)
        except threading.BrokenBarrierError:
            raise RuntimeError("the load clients did not get ready: " + _drain_errors(results)) from None
        started = time.perf_counter()
        if during is not None:
            during()
        calls: list[Call] = []
        cpu: dict[str, float] = {}
        for _ in processes:
            name, rows, cpu_s, failure = results.get(
                timeout=plan.duration_s + plan.call_timeout_s + RESULT_TIMEOUT_S)
            if failure:
                raise RuntimeError(f"the {name} load clients failed: {failure}")
            calls += [Call(*row) for row in rows]
            cpu[name] = cpu_s
        wall = time.perf_counter() - started
    finally:
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
    calls.sort(key=lambda c: c.started_s)
    return LoadRun(plan, calls, cpu, wall)


def _drain_errors(results) -> str:
    found = []
    while not results.empty():
        name, _, _, failure = results.get_nowait()
        found.append(f"{name}: {failure}")
    return "; ".join(found) or "no answer"


def _query(plan: LoadPlan, client: int, n: int) -> str:
    # Spread the clients over the query list so that concurrent calls ask different things.
    return plan.queries[(client * 37 + n) % len(plan.queries)]


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line[:ERROR_TEXT_CHARS]


# --- gRPC clients -------------------------------------------------------------------------------


def _grpc_driver(plan: LoadPlan, barrier, results) -> None:
    from codecompass.clients.retrieval import RetrievalClient
    from codecompass.contracts.retrieval.model import SearchQuery

    clients = [RetrievalClient(plan.retrieval_addr) for _ in range(plan.grpc_clients)]
    rows: list[tuple] = []
    lock = threading.Lock()
    release = threading.Event()
    clock: dict[str, float] = {}

    def loop(i: int) -> None:
        release.wait()
        t0, end = clock["t0"], clock["t0"] + plan.duration_s
        pause = plan.pauses(plan.mcp_clients + i)
        time.sleep(min(pause(), plan.duration_s))
        n = 0
        while (now := time.perf_counter()) < end:
            query = SearchQuery(workspace_root="" if plan.workspace_id else plan.workspace,
                                workspace_id=plan.workspace_id, query=_query(plan, i, n), limit=10)
            error, meta = "", {}
            try:
                outcome = clients[i].search(query, plan.call_timeout_s)
                meta = {k: _plain(getattr(outcome.metadata, k, None)) for k in META_KEYS}
            except Exception as exc:  # noqa: BLE001 - every failure is a measured error
                error = _short(f"{type(exc).__name__}: {exc}")
            row = (GRPC_SEARCH, i, now - t0, (time.perf_counter() - now) * 1000, error, meta)
            with lock:
                rows.append(row)
            n += 1
            time.sleep(min(pause(), max(end - time.perf_counter(), 0.0)))

    try:
        threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(plan.grpc_clients)]
        for thread in threads:
            thread.start()
        before = _cpu_s()
        barrier.wait(SETUP_TIMEOUT_S)
        clock["t0"] = time.perf_counter()
        release.set()
        for thread in threads:
            thread.join()
        results.put(("grpc", rows, round(_cpu_s() - before, 2), ""))
    except Exception as exc:  # noqa: BLE001 - the parent reports it
        results.put(("grpc", [], 0.0, _short(f"{type(exc).__name__}: {exc}")))
    finally:
        for client in clients:
            client.close()


def _plain(value: Any) -> Any:
    """A metadata value as the MCP answer writes it: an enum by its value, a tuple as a list."""
    if isinstance(value, tuple):
        return list(value)
    return getattr(value, "value", value)


# --- MCP clients --------------------------------------------------------------------------------


def _mcp_driver(plan: LoadPlan, barrier, results) -> None:
    import anyio

    try:
        before = _cpu_s()
        rows = anyio.run(_mcp_clients, plan, barrier)
        results.put(("mcp", rows, round(_cpu_s() - before, 2), ""))
    except BaseException as exc:  # noqa: BLE001 - the parent reports it (an ExceptionGroup included)
        results.put(("mcp", [], 0.0, _short(f"{type(exc).__name__}: {exc}")))


async def _mcp_clients(plan: LoadPlan, barrier) -> list[tuple]:
    import anyio

    rows: list[tuple] = []
    ready = 0
    all_ready, release = anyio.Event(), anyio.Event()
    clock: dict[str, float] = {}

    async def client(i: int) -> None:
        nonlocal ready
        session = _Session(plan)
        await session.open()
        ready += 1
        if ready == plan.mcp_clients:
            all_ready.set()
        await release.wait()
        t0, end = clock["t0"], clock["t0"] + plan.duration_s
        pause = plan.pauses(i)
        n = 0
        try:
            await anyio.sleep(min(pause(), plan.duration_s))
            while (now := time.perf_counter()) < end:
                tool = MCP_TOOLS[(i + n) % len(MCP_TOOLS)]
                error, meta = await session.call(tool, _query(plan, i, n))
                rows.append((tool, i, now - t0, (time.perf_counter() - now) * 1000, error, meta))
                n += 1
                await anyio.sleep(min(pause(), max(end - time.perf_counter(), 0.0)))
        finally:
            await session.close()

    async with anyio.create_task_group() as group:
        for i in range(plan.mcp_clients):
            group.start_soon(client, i)
        with anyio.fail_after(SETUP_TIMEOUT_S):
            await all_ready.wait()
        await anyio.to_thread.run_sync(barrier.wait, SETUP_TIMEOUT_S)
        clock["t0"] = time.perf_counter()
        release.set()
    return rows


class _Session:
    """One MCP client session; a call that breaks the session (a transport failure) counts as an
    error and the next call opens a new session, as a client would reconnect."""

    def __init__(self, plan: LoadPlan) -> None:
        self._plan = plan
        self._stack = None
        self._client = None

    async def open(self) -> None:
        from contextlib import AsyncExitStack

        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        stack = AsyncExitStack()
        http = await stack.enter_async_context(
            create_mcp_http_client(headers={"Authorization": f"Bearer {self._plan.token}"}))
        self._client = await stack.enter_async_context(
            Client(streamable_http_client(self._plan.url, http_client=http),
                   read_timeout_seconds=self._plan.call_timeout_s))
        self._stack = stack

    async def close(self) -> None:
        stack, self._stack, self._client = self._stack, None, None
        if stack is not None:
            # A broken session may fail to close; it is gone either way.
            with contextlib.suppress(Exception):
                await stack.aclose()

    async def call(self, tool: str, query: str) -> tuple[str, dict[str, Any]]:
        import anyio

        try:
            if self._client is None:
                await self.open()
            with anyio.fail_after(self._plan.call_timeout_s):
                result = await self._client.call_tool(tool, {"query": query})
        except Exception as exc:  # noqa: BLE001 - every failure is a measured error
            await self.close()
            return _short(f"{type(exc).__name__}: {exc}"), {}
        if result.is_error:
            return _short(" ".join(getattr(b, "text", "") for b in result.content)), {}
        metadata = (result.structured_content or {}).get("metadata", {})
        return "", {k: metadata[k] for k in META_KEYS if k in metadata}


# --- summaries ----------------------------------------------------------------------------------


def summarize(calls: Sequence[Call], duration_s: float) -> dict[str, Any]:
    """Calls, errors, throughput (answered calls started within the run, per second) and latency
    percentiles (every call, errors included: a fast failure is still a call)."""
    inside = [c for c in calls if c.started_s < duration_s]
    ms = [c.ms for c in calls]
    errors = [c for c in calls if c.error]
    return {
        "calls": len(calls), "errors": len(errors),
        "throughput_per_s": round(sum(1 for c in inside if not c.error) / duration_s, 2) if duration_s else 0.0,
        **{f"p{q}_ms": round(percentile(ms, q), 1) if ms else None for q in (50, 95, 99)},
        "max_ms": round(max(ms), 1) if ms else None,
        "error_samples": sorted({c.error for c in errors})[:5],
    }


def summarize_run(run: LoadRun) -> dict[str, Any]:
    """The run as a whole, and per client kind (MCP tools together, each tool, gRPC)."""
    duration = run.plan.duration_s
    mcp = [c for c in run.calls if c.kind in MCP_TOOLS]
    kinds = {"all": run.calls, "mcp": mcp, **{k: run.of(k) for k in (*MCP_TOOLS, GRPC_SEARCH)}}
    return {name: summarize(calls, duration) for name, calls in kinds.items() if calls}


