"""Indexing a workspace the gateway is asked about, in the background: the handshake never waits on
it, and a search waits a bounded time for the first rows (issue 9: useful within 5 s on a cold
workspace, lexically first, embeddings after)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from codecompass.clients.errors import ServiceError
from codecompass.clients.retrieval import RetrievalClient
from codecompass.common.logging import get_logger
from codecompass.contracts.retrieval.model import IndexingStatus
from codecompass_gateway.readiness import Readiness, ServicesNotReady

# The server's logger, as before the indexer had a module of its own: log readers filter on it.
log = get_logger("codecompass.gateway.server")

# Status and resolution calls are small; a trace on a large workspace first builds its Program.
STATUS_TIMEOUT_S = 5.0
# How long a search on a workspace this gateway is indexing waits for its lexical index: the
# first answer on a cold workspace is lexical, not empty (issue 9's goal: useful within 5 s).
LEXICAL_WAIT_S = 10.0
# How often a search on a workspace being indexed checks whether rows have landed.
ROWS_POLL_S = 0.25
# How long indexing started with the server waits for services that are starting with it.
STARTUP_WAIT_S = 300.0
# How long a stopping server waits for the streams it followed to see their cut and say so: the
# threads are daemons, and a process that exits first loses their last line.
STOP_WAIT_S = 2.0


class BackgroundIndexer:
    """Starts indexing a workspace that is not indexed, once per workspace, without waiting on it:
    `IndexWorkspace(wait_for_embeddings=False)` writes the lexical index first and returns, while
    embeddings continue in the retrieval service. A search may wait a bounded time for that
    lexical index (`wait_lexical`); the handshake never waits for anything.

    Where the retrieval roles run apart (WRITER_ADDR), the status is read from `retrieval` (a
    searcher: the writer refuses reads) and IndexWorkspace goes to `writer`."""

    def __init__(self, retrieval: RetrievalClient, timeout_s: float, writer: RetrievalClient | None = None,
                 ready: Readiness | None = None) -> None:
        self._retrieval = retrieval
        self._ready = ready or Readiness.already()
        self._writer = writer or retrieval
        self._timeout_s = timeout_s
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._state: dict[str, str] = {}
        self._lexical: dict[str, threading.Event] = {}
        # Set when the indexing stream reports its first rows written (or when it ends).
        self._rows: dict[str, threading.Event] = {}
        self._threads: list[threading.Thread] = []

    def ensure(self, workspace: Path) -> None:
        key = str(workspace)
        with self._lock:
            if key in self._lexical:
                return
            self._lexical[key] = threading.Event()
            self._rows[key] = threading.Event()
            # Said at once: a status asked before the thread has looked must not read "not indexed,
            # nobody is on it".
            self._state[key] = "checking whether it needs indexing"
        thread = threading.Thread(target=self._run, args=(key,), name=f"index {key}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def wait_lexical(self, workspace: Path, timeout_s: float) -> bool:
        """Waits, at most `timeout_s`, until the workspace's index has rows to search: the lexical
        pass writes them in growing batches long before it ends, and a partial answer (flagged) now
        beats a complete one in half a minute. True when the lexical index is complete."""
        key = str(workspace)
        with self._lock:
            event, rows = self._lexical.get(key), self._rows.get(key)
        if event is None or rows is None:
            return True
        deadline = time.monotonic() + timeout_s
        while True:
            # Woken as the stream this gateway follows reports the first rows written: a cold
            # start's first search starts then, not at the next poll (up to ROWS_POLL_S later).
            # Polled still, since a searcher apart from the writer shows the rows a little later.
            (event if rows.is_set() else rows).wait(min(ROWS_POLL_S, max(deadline - time.monotonic(), 0.0)))
            if event.is_set():
                return True
            if time.monotonic() >= deadline or self._has_rows(key):
                return False

    def _has_rows(self, key: str) -> bool:
        try:
            return self._retrieval.status(key, STATUS_TIMEOUT_S).chunks > 0
        except ServiceError:
            return False

    def describe(self, workspace: Path) -> str | None:
        """What this gateway did about the workspace's index, when it started indexing it."""
        with self._lock:
            return self._state.get(str(workspace)) or None

    def close(self) -> None:
        """The server is stopping (its session closed): a stream it follows is cut, but the retrieval
        service goes on indexing. That is no failure, and must not be logged as one."""
        self._closed.set()

    def wait_stopped(self, timeout_s: float = STOP_WAIT_S) -> None:
        """After the clients' channels are closed: lets each followed stream see its cut and log it,
        at most `timeout_s` in all."""
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(deadline - time.monotonic(), 0.0))

    def _set(self, key: str, state: str) -> None:
        with self._lock:
            self._state[key] = state

    def _run(self, key: str) -> None:
        with self._lock:
            lexical, rows = self._lexical[key], self._rows[key]
        try:
            self._ready.wait(STARTUP_WAIT_S)
            status = self._retrieval.status(key, STATUS_TIMEOUT_S).indexing_status
            if status in (IndexingStatus.READY, IndexingStatus.INDEXING):
                with self._lock:
                    self._state.pop(key, None)  # indexed, or being indexed, by someone else
                return
            started = time.monotonic()
            self._set(key, "indexing (started by this gateway)")
            for progress in self._writer.index(key, wait_for_embeddings=False, timeout_s=self._timeout_s):
                if progress.chunks_done > 0:
                    rows.set()
            self._set(key, f"lexical index written in {time.monotonic() - started:.1f}s; "
                           "embeddings continue in the retrieval service")
        except (ServiceError, ServicesNotReady) as exc:
            # Forget the attempt so the next call on this workspace tries again.
            with self._lock:
                self._state.pop(key, None)
                self._lexical.pop(key, None)
                self._rows.pop(key, None)
            if isinstance(exc, ServicesNotReady):
                log.warning("background indexing not started", extra={"workspace": key, "detail": str(exc)})
            elif self._closed.is_set():
                log.info("stopped following indexing: the server is stopping; the retrieval service goes on",
                         extra={"workspace": key})
            else:
                log.warning("background indexing failed", extra={"workspace": key, "detail": exc.user_message()})
        finally:
            lexical.set()
            rows.set()
