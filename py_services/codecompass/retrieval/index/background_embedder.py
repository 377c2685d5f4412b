"""The background embedder of a workspace's index: fills in the primary vectors of chunks a
sync wrote without one, implementation files first, stepping aside for interactive work."""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

import numpy as np

from codecompass.clients.embedding import EmbeddingClient
from codecompass.common.logging import get_logger
from codecompass.contracts.retrieval.errors import EmbeddingFailed, EmbeddingUnavailable
from codecompass.retrieval.interactive import InteractiveWork

if TYPE_CHECKING:
    from codecompass.retrieval.index.workspace_writer import WorkspaceWriter

_log = get_logger(__name__)


class BackgroundEmbedder:
    """Fills in vectors of chunks written without one, implementation files first, stepping
    aside for interactive work (`InteractiveWork`) before each embedding request.

    Embeds outside the write lock (the slow part); writes under it, and only for chunks whose
    text is still the text that was embedded (a sync may have rewritten them meanwhile).
    """

    # Chunks per table write: larger means fewer table versions, smaller means vectors show
    # up in searches sooner.
    WRITE_BATCH = 256
    # Chunks per embedding request: small enough (~0.5 s of model time on two cores) that a
    # search arriving while one runs waits little, and that stepping aside between requests
    # is prompt.
    EMBED_REQUEST = 32
    # Consecutive failures tolerated (with exponential backoff) before giving up until the
    # next sync asks again.
    MAX_FAILURES = 4
    # Re-indexing holds the write lock for about a second on a large table; at most this
    # often keeps that a small share of an embedding run.
    MAINTAIN_INTERVAL_S = 20.0

    def __init__(self, workspace: WorkspaceWriter, client: EmbeddingClient, interactive: InteractiveWork) -> None:
        self._ws = workspace
        self._client = client
        self._interactive = interactive
        self._lock = threading.Lock()
        # Set and cleared under _lock, together with _again, so a request that arrives while
        # the worker is finishing is never lost.
        self._active = False
        self._again = False
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.error = ""
        self.done = 0
        self.total = 0
        self._started_at = 0.0

    @property
    def running(self) -> bool:
        return self._active

    def ensure_running(self) -> None:
        with self._lock:
            if self._active:
                self._again = True
                return
            self._active = True
            self._again = False
            self.error = ""
            self._thread = threading.Thread(target=self._run, name=f"embed-{self._ws.key[:8]}", daemon=True)
            self._thread.start()

    def stop(self, timeout: float) -> None:
        self._stop.set()
        with self._lock:
            thread = self._thread if self._active else None
        if thread is not None:
            thread.join(timeout)

    def rate(self) -> float:
        elapsed = time.monotonic() - self._started_at
        return self.done / elapsed if self.done and elapsed > 0 else 0.0

    def _run(self) -> None:
        self.done, self._started_at = 0, time.monotonic()
        while True:
            try:
                self._fill()
            except Exception as exc:  # noqa: BLE001 - reported through the index status instead
                self.error = f"background embedding failed: {exc}"
                _log.exception("background embedding of %s failed", self._ws.root)
            with self._lock:
                if not self._again or self.error or self._stop.is_set():
                    self._active = False
                    finished = not (self.error or self._stop.is_set())
                    break
                self._again = False
        if finished:
            self._ws.settled()

    def _fill(self) -> None:
        store = self._ws.store
        if store is None:
            return
        total, embedded = store.counts()
        self.total = self.done + (total - embedded)
        failures = 0
        fruitless = 0
        written = 0
        last_maintained = time.monotonic()
        while not self._stop.is_set():
            # The rows are found by a scan of the table, which a search started meanwhile would
            # share the cores (and the interpreter) with: the search right after an edit's sync,
            # which started this run, measured 95 ms instead of 61 on ws-300k.
            self._interactive.wait_quiet(self._stop)
            batch = store.chunks_missing_vectors(self.WRITE_BATCH)
            if not batch:
                break
            try:
                result = self._embed([c.embedding_text for c in batch])
            except (EmbeddingUnavailable, EmbeddingFailed) as exc:
                failures += 1
                if failures >= self.MAX_FAILURES:
                    self.error = f"background embedding stopped: {exc}"
                    _log.warning(self.error)
                    break
                self._stop.wait(2.0**failures)
                continue
            failures = 0
            if result.model != store.model:
                self._ws.mark_model_stale()
                self.error = f"embedding model changed to {result.model.identity()}; the next sync re-indexes"
                break
            with self._ws.write_lock:
                # Read as they stand, by a scan: the search side's row cache would have this writer
                # read a snapshot of every table version its batches make.
                current = {s.chunk.id: s.chunk for s in store.get_stored([c.id for c in batch])}
                fresh: dict[str, np.ndarray] = {}
                for chunk, vector in zip(batch, result.vectors, strict=True):
                    stored = current.get(chunk.id)
                    if stored is not None and (stored.snippet_hash, stored.embedding_text) == (
                        chunk.snippet_hash,
                        chunk.embedding_text,
                    ):
                        fresh[chunk.id] = vector
                store.set_vectors(fresh)
            # Every vector of a batch can be stale when syncs keep rewriting those chunks;
            # the next batch then has their new text. Never-matching rows would loop forever.
            fruitless = 0 if fresh else fruitless + 1
            if fruitless >= self.MAX_FAILURES:
                self.error = "background embedding stopped: chunks keep changing while being embedded"
                break
            written += len(fresh)
            self.done += len(fresh)
            self.total = max(self.total, self.done)
            # Each vector commit rewrites rows the full-text index no longer covers, and
            # searches scan uncovered rows one by one (measured: warm queries at 1.2 s
            # instead of 60 ms during a long embedding run). Re-index now and then.
            now = time.monotonic()
            if now - last_maintained >= self.MAINTAIN_INTERVAL_S and store.needs_maintenance():
                self._ws.maintain()
                last_maintained = time.monotonic()
        if self._stop.is_set() or not written:
            return
        if written > self.EMBED_REQUEST:
            # Hundreds of small vector commits leave many versions, fragments and index
            # segments behind.
            self._ws.maintain(settle=True)
        else:
            # An edit's few chunks: the rows they rewrote are matched exhaustively until the
            # syncs' own maintenance indexes them (~0.1 ms a row per query), and settling would
            # merge every index segment under the write lock, about a second on ws-300k, which
            # the next edit's sync would wait for.
            self._ws.retire_old_tables()

    def _embed(self, texts: list[str]):
        """`texts` embedded in requests of EMBED_REQUEST, each started once interactive work is quiet."""
        return self._client.embed_documents(texts, batch_size=self.EMBED_REQUEST,
                                            before_each=lambda: self._interactive.wait_quiet(self._stop))
