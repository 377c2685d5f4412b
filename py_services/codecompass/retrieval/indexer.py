"""The retrieval service's domain core: one `WorkspaceIndex` per workspace (its catalog, its
chunk table, its sync queue and its background embedder) and the `RetrievalEngine` that
answers IndexWorkspace / Sync / Search / GetIndexStatus over them.

Concurrency model, per workspace:
- the index has one writer: syncs run one at a time on a single-thread executor; a sync
  requested while another runs is queued once and shared by every caller that asks meanwhile
  (so a burst of Sync calls after an edit costs one sync, and it starts after the running one,
  so it sees the edit);
- a Sync call waits for its sync at most its budget, then reports which files are not written
  yet; the sync goes on in the background;
- a search is a read: it never syncs and never starts indexing, it answers from the index as
  it stands (the caller, the gateway, decides when to sync and within which budget);
- `write_lock` serialises table writes + catalog commits of the sync with the vector writes
  of the background embedder; reads never take it (LanceDB reads a consistent version).
"""

from __future__ import annotations

import contextvars
import dataclasses
import queue
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from codecompass.common.config import Settings
from codecompass.common.logging import get_logger
from codecompass.policy.learned import load_ranker
from codecompass.policy.ranking import (
    DEFAULT_HUB_POLICY,
    DEFAULT_POLICY,
    FUSION_ONLY,
    PRIMARY_VECTORS,
    STATIC_VECTORS,
    STRUCTURE,
    RankedResult,
    hub_eligible,
    hub_scores,
)
from codecompass.policy.shape import length_problem as query_length_problem
from codecompass.retrieval.analysis_client import AnalysisClient
from codecompass.retrieval.catalog import Catalog, IndexIdentity
from codecompass.retrieval.embed_client import EmbeddingClient, EmbeddingFailed
from codecompass.retrieval.filters import FilterError, Filters, relative_patterns
from codecompass.retrieval.guards import folder_refusal, size_refusal
from codecompass.retrieval.hybrid import (
    SKIP_DIMENSION_MISMATCH,
    SKIP_EMBEDDING_UNAVAILABLE,
    SKIP_NO_VECTORS,
    hybrid_search,
)
from codecompass.retrieval.schema import INDEX_FORMAT_VERSION, EmbeddingModel
from codecompass.retrieval.state import (
    DependencyUnavailable,
    EmbeddingUnavailable,
    FreshnessStatus,
    HubOutcome,
    HubQuery,
    HubResult,
    IndexingStatus,
    IndexPhase,
    IndexProgress,
    IndexRefused,
    IndexStatusReport,
    InvalidWorkspace,
    ResultCompleteness,
    RetrievalError,
    SearchMetadata,
    SearchOutcome,
    SearchQuery,
    SkippedFile,
    SyncOutcome,
    SyncStats,
    WorkspaceNotFound,
    index_uri,
    record_workspace_root,
    workspace_state_dir,
)
from codecompass.retrieval.static_channel import StaticChannel
from codecompass.retrieval.store import DEFAULT_VERSION_RETENTION, ChunkStore, VectorCounts
from codecompass.retrieval.sync import Syncer, SyncTuning, rebase_on_empty_catalog

_log = get_logger(__name__)

# Most pending paths a Sync answer lists (it counts them all): enough for any edit-sized
# change, while a branch switch of 100k files does not make a multi-megabyte answer.
PENDING_PATHS_CAP = 1000
# A query embedding slower than this is not worth waiting for: lexical answers alone.
QUERY_EMBED_TIMEOUT_S = 2.0
# Reason reported when the embedding service now runs another model than the index's.
SKIP_MODEL_CHANGED = "embedding_model_changed"
_FALLBACK_REASONS = {SKIP_EMBEDDING_UNAVAILABLE, SKIP_NO_VECTORS, SKIP_DIMENSION_MISMATCH, SKIP_MODEL_CHANGED}
CATALOG_FILE = "catalog.sqlite3"
# Progress messages of an IndexWorkspace stream are throttled to this interval.
_PROGRESS_INTERVAL_S = 0.2


class InvalidQuery(RetrievalError):
    """A search request that cannot be answered as asked (empty query, bad ratio...)."""


class _SyncJob:
    """One queued or running sync, shared by every caller that asked for it."""

    def __init__(self) -> None:
        self.future: Future[SyncStats] = Future()
        self.started = False
        # Set once the sync knows what it will write (its scan is diffed and the files are
        # marked pending in the catalog).
        self.planned = threading.Event()
        # Whether any caller that shares this sync forced it past the guards (see `guards`).
        self.force = False
        # The requester's context (its trace span): the sync's outbound RPCs join that trace.
        self.context = contextvars.copy_context()
        self._listeners: list[Callable[[IndexProgress], None]] = []
        self._lock = threading.Lock()

    def add_listener(self, listener: Callable[[IndexProgress], None]) -> None:
        with self._lock:
            self._listeners.append(listener)

    def notify(self, progress: IndexProgress) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener(progress)


class InteractiveWork:
    """Searches and syncs in flight, so background embedding steps aside for them.

    On two cores the embedding service's model run and a search compete for the same CPU: with
    the primary model embedding a cold workspace, warm searches measured p95 593 ms instead of
    178 ms. The background embedder therefore starts a request only when no interactive call is
    in flight and none ended within QUIET_S, and waits at most MAX_WAIT_S for that, so a steady
    stream of searches slows the background pass but never stops it.
    """

    QUIET_S = 0.25
    MAX_WAIT_S = 3.0

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._active = 0
        self._last_end = 0.0

    @contextmanager
    def running(self) -> Iterator[None]:
        with self._cond:
            self._active += 1
        try:
            yield
        finally:
            with self._cond:
                self._active -= 1
                self._last_end = time.monotonic()
                self._cond.notify_all()

    def wait_quiet(self, stop: threading.Event) -> None:
        """Return once interactive work has been quiet for QUIET_S, after MAX_WAIT_S, or on `stop`."""
        deadline = time.monotonic() + self.MAX_WAIT_S
        with self._cond:
            while not stop.is_set():
                now = time.monotonic()
                if now >= deadline:
                    return
                if self._active == 0:
                    quiet_left = self._last_end + self.QUIET_S - now
                    if quiet_left <= 0:
                        return
                    self._cond.wait(min(quiet_left, deadline - now))
                else:
                    self._cond.wait(deadline - now)


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

    def __init__(self, workspace: WorkspaceIndex, client: EmbeddingClient, interactive: InteractiveWork) -> None:
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
                    return
                self._again = False

    def _fill(self) -> None:
        store = self._ws.store
        if store is None:
            return
        total, embedded = store.counts()
        self.total = self.done + (total - embedded)
        failures = 0
        fruitless = 0
        wrote = False
        last_maintained = time.monotonic()
        while not self._stop.is_set():
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
                current = {c.id: c for c in store.get_chunks([c.id for c in batch])}
                fresh: dict[str, np.ndarray] = {}
                for chunk, vector in zip(batch, result.vectors, strict=True):
                    now = current.get(chunk.id)
                    if now is not None and (now.snippet_hash, now.embedding_text) == (
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
            wrote = True
            self.done += len(fresh)
            self.total = max(self.total, self.done)
            # Each vector commit rewrites rows the full-text index no longer covers, and
            # searches scan uncovered rows one by one (measured: warm queries at 1.2 s
            # instead of 60 ms during a long embedding run). Re-index now and then.
            now = time.monotonic()
            if now - last_maintained >= self.MAINTAIN_INTERVAL_S and store.needs_maintenance():
                self._ws.maintain()
                last_maintained = time.monotonic()
        if wrote and not self._stop.is_set():
            # Hundreds of small vector commits leave many versions and fragments behind.
            self._ws.maintain()

    def _embed(self, texts: list[str]):
        """`texts` embedded in requests of EMBED_REQUEST, each started once interactive work is quiet."""
        return self._client.embed_documents(texts, batch_size=self.EMBED_REQUEST,
                                            before_each=lambda: self._interactive.wait_quiet(self._stop))


class WorkspaceIndex:
    def __init__(
        self,
        root: Path,
        settings: Settings,
        analysis: AnalysisClient,
        embedding: EmbeddingClient,
        tuning: SyncTuning,
        static: StaticChannel,
        interactive: InteractiveWork,
    ) -> None:
        self.root = root
        self.key = workspace_state_dir(settings.state_dir, root).name
        self._settings = settings
        self._analysis = analysis
        self._embedding = embedding
        self._tuning = tuning
        self.static = static
        self._uri = index_uri(settings.state_dir, settings.retrieval.db_uri, root)
        record_workspace_root(settings.state_dir, root)
        self.catalog = Catalog.open(workspace_state_dir(settings.state_dir, root) / CATALOG_FILE)
        self.write_lock = threading.Lock()
        self._store: ChunkStore | None = None
        self._model_stale = False
        self._external_blocked = False
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"sync-{self.key[:8]}")
        self._jobs_lock = threading.Lock()
        self._queued: _SyncJob | None = None
        self._running: _SyncJob | None = None
        self._syncing = False
        self._sync_error = ""
        # The running sync's last progress report (None between syncs).
        self._progress: IndexProgress | None = None
        # The last scan's skips (ignored, excluded, minified ...), for the final IndexWorkspace report.
        self._scan_skipped: tuple[SkippedFile, ...] = ()
        # When this process last finished a sync (a no-op sync writes nothing to the catalog).
        self._synced_at: float | None = None
        self._syncs_since_maintain = 0
        self._closing = threading.Event()
        self._maintainer: threading.Thread | None = None
        # Armed while the store holds versions (or source texts) that maintenance may drop
        # once they are past the retention; see `_schedule_cleanup`.
        self._cleanup_timer: threading.Timer | None = None
        # Serialises switching to another table (model or chunker change) with dropping the
        # tables no longer in use.
        self._identity_lock = threading.Lock()
        self.embedder = BackgroundEmbedder(self, embedding, interactive)
        if self.catalog.identity is not None:
            # Resume what a previous process left: vectors still missing after a restart.
            self._open_store(self.catalog.identity)
            self.embedder.ensure_running()
            # Versions a previous process left behind (it may have been killed mid-run).
            self._schedule_cleanup()

    @property
    def store(self) -> ChunkStore | None:
        return self._store

    @property
    def model(self) -> EmbeddingModel | None:
        return self._store.model if self._store is not None else None

    @property
    def last_sync_at(self) -> float | None:
        """Epoch seconds when a sync last finished: in this process, else as the catalog recorded."""
        times = [t for t in (self._synced_at, self.catalog.synced_at) if t is not None]
        return max(times, default=None)

    def mark_model_stale(self) -> None:
        self._model_stale = True

    def close(self, timeout: float) -> None:
        self._closing.set()
        with self._jobs_lock:
            if self._cleanup_timer is not None:
                self._cleanup_timer.cancel()
        self.embedder.stop(timeout)
        self._executor.shutdown(wait=True, cancel_futures=True)
        if self._maintainer is not None:
            self._maintainer.join(timeout)
        self.catalog.close()

    # --- syncing ---

    def request_sync(
        self, listener: Callable[[IndexProgress], None] | None = None, *, force: bool = False
    ) -> _SyncJob:
        with self._jobs_lock:
            job = self._queued
            if job is None or job.started:
                job = _SyncJob()
                self._queued = job
                self._executor.submit(self._run_job, job)
            job.force = job.force or force
            if listener is not None:
                job.add_listener(listener)
            return job

    def join_sync(
        self, listener: Callable[[IndexProgress], None], *, force: bool = False
    ) -> tuple[_SyncJob | None, _SyncJob]:
        """(the sync running now, the one queued after it) for a caller that reports what
        indexing did: an `index` that arrives while another caller's sync writes the workspace
        (the MCP server's background index, a search's sync) follows that one too, so it can say
        what was written rather than "0 added" from the queued sync that found it all done."""
        with self._jobs_lock:
            running = self._running
            if running is not None and not running.future.done():
                running.add_listener(listener)
            else:
                running = None
        return running, self.request_sync(listener, force=force)

    def _run_job(self, job: _SyncJob) -> None:
        with self._jobs_lock:
            job.started = True
            self._syncing = True
            self._running = job
            if self._queued is job:
                self._queued = None
        try:
            job.future.set_result(job.context.run(self._sync, job))
        # Whatever ends the sync, waiters must learn of it rather than wait forever; they map
        # it to a status code.
        except BaseException as exc:  # noqa: BLE001
            job.future.set_exception(exc)

    def _sync(self, job: _SyncJob) -> SyncStats:
        def notify(progress: IndexProgress) -> None:
            # What a Sync call that cannot wait says of the sync it joined: how far it is.
            self._progress = progress
            job.notify(progress)

        try:
            notify(IndexProgress(phase=IndexPhase.SCANNING))
            had_files = len(self.catalog) > 0
            was_complete = self.catalog.complete
            scan_started = time.perf_counter()
            scan = self._analysis.scan(
                str(self.root), self.catalog.previous_files, version=(id(self.catalog), self.catalog.generation)
            )
            scan_rpc_ms = (time.perf_counter() - scan_started) * 1000
            self._scan_skipped = scan.skipped
            if not job.force and self.catalog.identity is None:
                retrieval = self._settings.retrieval
                refusal = size_refusal(self.root, scan.files, retrieval.large_index_files, retrieval.large_index_mb)
                if refusal is not None:
                    raise IndexRefused(refusal)
            self._ensure_identity(scan.chunker_version)
            if had_files and len(self.catalog) == 0:
                scan = rebase_on_empty_catalog(scan)
            assert self._store is not None
            # While the background pass runs, an edit's chunks would wait behind it in the
            # embedding service (measured: a one-file sync at 1.4 s instead of 0.17 s). With a
            # static channel they are searchable by static vectors at once, and the background
            # pass gives them primary vectors.
            inline = not (self.embedder.running and self._store.static is not None)
            syncer = Syncer(
                root=str(self.root),
                catalog=self.catalog,
                store=self._store,
                analysis=self._analysis,
                embedder=self._embedding if inline else None,
                model=self._store.model,
                write_lock=self.write_lock,
                tuning=self._tuning,
                progress=notify,
                cancel=self._closing,
                planned=job.planned.set,
                static=self.static,
            )
            stats = syncer.run(scan)
            stats.duration_ms = (time.perf_counter() - scan_started) * 1000
            self._synced_at = time.time()
            self._sync_error = ""
            if stats.chunks_upserted or stats.chunks_deleted:
                _log.info(
                    "sync wrote changes",
                    extra={
                        "workspace": str(self.root),
                        "scan_ms": round(scan.duration_ms, 1),
                        "scan_rpc_ms": round(scan_rpc_ms, 1),
                        "sync_ms": round(stats.duration_ms, 1),
                        **{f"{step}_ms": round(ms, 1) for step, ms in syncer.timings.items()},
                        "files_added": stats.files_added,
                        "files_changed": stats.files_changed,
                        "files_removed": stats.files_removed,
                        "chunks_upserted": stats.chunks_upserted,
                        "chunks_deleted": stats.chunks_deleted,
                        "chunks_embedded": stats.chunks_embedded,
                    },
                )
        except RetrievalError as exc:
            self._sync_error = str(exc)
            # An expected failure (a dependency down, a refused workspace): one line, no traceback.
            _log.warning("sync failed", extra={"workspace": str(self.root), "error": str(exc)})
            raise
        except Exception as exc:
            self._sync_error = f"sync failed: {exc}"
            _log.exception("sync of %s failed", self.root)
            raise
        finally:
            self._syncing = False
            self._progress = None
        if stats.chunks_upserted or stats.chunks_deleted:
            self._syncs_since_maintain += 1
            # A fresh table has no full-text index yet and every query would scan it,
            # so indexes are built as soon as the store asks, not only every N syncs.
            store = self._store
            due = self._syncs_since_maintain >= self._settings.retrieval.compact_every_n_syncs
            # A finished cold index leaves one version per flush and the files they wrote.
            cold_done = not was_complete and self.catalog.complete
            if due or cold_done or (store is not None and store.needs_maintenance()):
                self._maintain_in_background()
            if stats.chunks_upserted > stats.embeddings_reused + stats.chunks_embedded:
                self.embedder.ensure_running()
        return stats

    def _ensure_identity(self, chunker_version: str) -> None:
        """Open the table for the current model and chunker; a change of either starts a new
        (empty) table and a full re-index, because vectors and chunks of different identities
        must never be mixed."""
        if self._store is None or self._model_stale:
            try:
                model, blocked = self._embedding.model_info()
                self._external_blocked = blocked
                self._model_stale = False
            except EmbeddingUnavailable:
                known = self.catalog.identity
                if known is None:
                    raise
                # Keep indexing lexically under the last known model; vectors come later.
                model = known.model
        else:
            model = self._store.model
        static = self.static.model()
        if static == model:
            # The primary model is the static one (the code-static profile): its column holds
            # these very vectors, computed in process (see `sync`); a second would repeat them.
            static = None
        identity = IndexIdentity(model=model, chunker_version=chunker_version, static=static)
        with self._identity_lock:
            if self.catalog.identity != identity:
                _log.info("index identity of %s is now %s / static %s / chunker %s", self.root, model.identity(),
                          static.identity() if static is not None else "none", chunker_version)
                self.catalog.reset(identity)
                self._store = None
            if self._store is None:
                self._open_store(identity)

    def _open_store(self, identity: IndexIdentity) -> None:
        store = ChunkStore.open(
            self._uri,
            model=identity.model,
            chunker_version=identity.chunker_version,
            static=identity.static,
            storage_options=dict(self._settings.retrieval.storage_options),
        )
        if store.rebuilt:
            _log.warning("the index of %s was written in another index format; it is rebuilt in format %s",
                         self.root, INDEX_FORMAT_VERSION)
        if (store.created or store.rebuilt) and len(self.catalog) > 0:
            # The table is new but the catalog remembers files: the index was deleted or
            # rebuilt, so the catalog no longer describes it.
            self.catalog.reset(identity)
        self._store = store

    def maintain(self) -> None:
        store = self._store
        if store is None:
            return
        self._syncs_since_maintain = 0
        with self.write_lock:
            store.maintain(retention=self.VERSION_RETENTION)
        self._retire_old_tables(store)
        self._schedule_cleanup()

    # How long superseded versions (and unused source texts) are kept for searches still
    # reading them.
    VERSION_RETENTION = DEFAULT_VERSION_RETENTION
    # Past the moment `cleanup_due_at` names, so the versions it counted are old enough.
    CLEANUP_SLACK_S = 1.0

    def _schedule_cleanup(self) -> None:
        """Run maintenance again when the versions it had to keep (younger than the retention:
        a search may still read them) can go. Without this, the versions written by the last
        minute of a cold index or an embedding run, and the data files they reference, stay
        until some later sync happens to trigger maintenance."""
        store = self._store
        if store is None or self._closing.is_set():
            return
        due = store.cleanup_due_at(self.VERSION_RETENTION)
        if due is None:
            return
        with self._jobs_lock:
            if self._cleanup_timer is not None:
                return
            timer = threading.Timer(max(due - time.time(), 0.0) + self.CLEANUP_SLACK_S, self._on_cleanup_timer)
            timer.name = f"cleanup-{self.key[:8]}"
            timer.daemon = True
            self._cleanup_timer = timer
        timer.start()

    def _on_cleanup_timer(self) -> None:
        with self._jobs_lock:
            self._cleanup_timer = None
        if not self._closing.is_set():
            self._maintain_in_background()

    def _retire_old_tables(self, store: ChunkStore) -> None:
        """Once this index is complete (every file synced, every chunk embedded), the tables
        of models or chunker versions no longer in use are dropped. Not before: until then a
        switch back to the previous model finds its vectors there to reuse."""
        with self._identity_lock:
            # Held so that no identity change creates the next table meanwhile.
            if store is not self._store or not self.catalog.complete or self._model_stale:
                return
            total, embedded = store.counts()
            if embedded < total:
                return
            dropped = store.drop_retired_tables()
        if dropped:
            _log.info("dropped retired index tables of %s: %s", self.root, ", ".join(dropped))

    def _maintain_in_background(self) -> None:
        """Compaction can take a while on a big table; the search whose sync triggered it
        should not wait for it (later syncs only wait for the write lock)."""
        with self._jobs_lock:
            if self._maintainer is not None and self._maintainer.is_alive():
                return
            self._maintainer = threading.Thread(target=self._maintain_logged, name=f"maintain-{self.key[:8]}")
            self._maintainer.start()

    def _maintain_logged(self) -> None:
        try:
            self.maintain()
        except Exception:  # noqa: BLE001 - compaction is an optimisation; a failure must not
            # take the workspace down, and the next scheduled run retries it.
            _log.exception("maintenance of %s failed", self.root)

    def skipped(self) -> tuple[SkippedFile, ...]:
        """What the last sync left out of the index: the scan's skips, and the files chunking
        skipped (the catalog keeps those so that an unchanged one is not chunked again)."""
        chunking = [SkippedFile(path, entry.skip_reason, entry.skip_detail)
                    for path, entry in self.catalog.entries().items() if entry.skip_reason]
        return tuple(sorted([*self._scan_skipped, *chunking], key=lambda s: s.relative_path))

    def sync(self, budget_s: float | None, *, force: bool = False) -> SyncOutcome:
        """Bring the index up to date, waiting at most `budget_s` (None: until done); past
        the budget the sync goes on in the background and the answer says what it has not
        written yet."""
        started = time.perf_counter()
        job = self.request_sync(force=force)
        try:
            stats = job.future.result(timeout=budget_s)
        except FutureTimeout:
            pass
        except IndexRefused:
            # Not a state of the index but an answer to the request: the caller must change it.
            raise
        except Exception as exc:  # noqa: BLE001 - a failed sync is a state of the index, reported
            # as such: the index is still readable as the last successful sync left it.
            return SyncOutcome(finished=True, freshness_status=FreshnessStatus.FAILED,
                               error=str(exc) or type(exc).__name__, duration_ms=_ms_since(started))
        else:
            return SyncOutcome(finished=True, freshness_status=FreshnessStatus.FRESH, stats=stats,
                               duration_ms=_ms_since(started))
        stale, new = self.pending()
        store = self._store
        written = store.counts()[0] if store is not None else 0
        nothing_yet = store is None or (not self.catalog.complete and written == 0)
        progress = self._progress
        return SyncOutcome(
            finished=False,
            freshness_status=FreshnessStatus.NOT_INDEXED if nothing_yet else FreshnessStatus.SYNCING,
            pending_paths=tuple(stale[:PENDING_PATHS_CAP]),
            pending_count=len(stale),
            pending_new_files=new,
            scanning=not job.planned.is_set(),
            duration_ms=_ms_since(started),
            phase=progress.phase if progress is not None else None,
            phase_files_done=progress.files_done if progress is not None else 0,
            phase_files_total=progress.files_total if progress is not None else 0,
            chunks_written=written,
        )

    def pending(self) -> tuple[list[str], int]:
        """(stale paths, new files) a sync has marked pending and not written yet.

        Stale paths are the files the index holds an older version of (changed or removed
        since indexed): what a search finds of them is out of date. New files (never indexed)
        are only counted: whatever the index holds of them was written by this sync from their
        current content (the lexical-first pass), so a search may miss them but never shows
        them stale."""
        stale: list[str] = []
        new = 0
        for path in self.catalog.pending():
            if self.catalog.get(path) is not None:
                stale.append(path)
            else:
                new += 1
        return sorted(stale), new

    # --- status ---

    def indexing_status(self, counts: tuple[int, int] | None = None) -> tuple[IndexingStatus, str]:
        """The index's state, and the last error. A failed sync of a complete index (say, the
        analysis service is down) leaves that index as it was and searchable: its status stays
        what its rows say, with the error; only a first index that could not finish is FAILED."""
        if self._sync_error and not self.catalog.complete:
            return IndexingStatus.FAILED, self._sync_error
        status, error = self._rows_status(counts)
        return status, error or self._sync_error

    def _rows_status(self, counts: tuple[int, int] | None) -> tuple[IndexingStatus, str]:
        busy = self._syncing or self._queued is not None
        if not self.catalog.complete or self._store is None:
            return (IndexingStatus.INDEXING if busy else IndexingStatus.NOT_INDEXED), ""
        if busy:
            return IndexingStatus.INDEXING, ""
        total, embedded = counts if counts is not None else self._store.counts()
        if embedded < total:
            if self.embedder.error and not self.embedder.running:
                return IndexingStatus.FAILED, self.embedder.error
            return IndexingStatus.INDEXING, ""
        return IndexingStatus.READY, ""

    @property
    def external_provider_blocked(self) -> bool:
        return self._external_blocked

    def note_external_blocked(self, blocked: bool) -> None:
        self._external_blocked = blocked


class RetrievalEngine:
    """What the servicer calls: validated workspace roots in, domain results out."""

    def __init__(
        self,
        settings: Settings,
        analysis: AnalysisClient,
        embedding: EmbeddingClient,
        tuning: SyncTuning | None = None,
        query_embed_timeout_s: float = QUERY_EMBED_TIMEOUT_S,
    ) -> None:
        self._settings = settings
        self._analysis = analysis
        self._embedding = embedding
        self._tuning = tuning or SyncTuning()
        self._query_embed_timeout_s = query_embed_timeout_s
        retrieval = settings.retrieval
        # One static model per process, shared by every workspace (see `static_channel`).
        self._static = StaticChannel(enabled=retrieval.static_channel, model_dir=retrieval.static_model_dir,
                                     max_tokens=settings.embedding.max_tokens)
        # One learned ranker per process (None: the hand-set stack ranks alone).
        self._ranker = load_ranker(retrieval.ranker_model) if retrieval.learned_ranking else None
        self._workspaces: dict[Path, WorkspaceIndex] = {}
        self._lock = threading.Lock()
        self._query_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="query-embed")
        # Shared by every workspace: they share the embedding service and the CPU.
        self._interactive = InteractiveWork()

    def warmup(self) -> None:
        """The state dir must be writable, and the static model is loaded now (0.6 s) rather
        than by the first sync; a model that cannot load only turns its channel off."""
        self.check_state_dir()
        self._static.model()

    def check_state_dir(self) -> None:
        """The state dir must be writable, or nothing can be indexed."""
        workspaces = self._settings.state_dir / "workspaces"
        workspaces.mkdir(parents=True, exist_ok=True)
        probe = workspaces / f".probe-{threading.get_ident()}"
        probe.write_text("ok", encoding="utf-8")
        probe.unlink()

    def close(self, timeout: float = 5.0) -> None:
        with self._lock:
            workspaces = list(self._workspaces.values())
            self._workspaces.clear()
        for ws in workspaces:
            ws.close(timeout)
        self._query_pool.shutdown(wait=False, cancel_futures=True)

    def workspace(self, root_text: str) -> WorkspaceIndex:
        root = _validated_root(root_text)
        with self._lock:
            ws = self._workspaces.get(root)
            if ws is None:
                ws = WorkspaceIndex(root, self._settings, self._analysis, self._embedding, self._tuning, self._static,
                                    self._interactive)
                self._workspaces[root] = ws
            return ws

    # --- IndexWorkspace ---

    def _workspace_to_sync(self, root_text: str, force: bool) -> WorkspaceIndex:
        """The workspace, unless it is a folder never indexed without force and has no index
        yet (one made with force stays in sync without it)."""
        root = _validated_root(root_text)
        if not force:
            refusal = folder_refusal(root, _home())
            if refusal is not None and not self._indexed_before(root):
                raise IndexRefused(refusal)
        return self.workspace(root_text)

    def _indexed_before(self, root: Path) -> bool:
        with self._lock:
            known = self._workspaces.get(root)
        if known is None and not (workspace_state_dir(self._settings.state_dir, root) / CATALOG_FILE).exists():
            # Checked first so that a refused folder gets no state of its own.
            return False
        return (known or self.workspace(str(root))).catalog.identity is not None

    def index(self, root_text: str, *, wait_for_embeddings: bool, force: bool = False) -> Iterator[IndexProgress]:
        ws = self._workspace_to_sync(root_text, force)
        updates: queue.Queue[IndexProgress] = queue.Queue()
        running, job = ws.join_sync(updates.put, force=force)
        last_sent = 0.0
        last_phase: IndexPhase | None = None
        # The newest report not sent (throttled): sent before the next step's first, so each
        # step's last word (files 9/9, chunks written) is never dropped.
        unsent: IndexProgress | None = None
        while True:
            try:
                update = updates.get(timeout=0.1)
            except queue.Empty:
                if job.future.done():
                    break
                continue
            now = time.monotonic()
            if update.phase != last_phase or now - last_sent >= _PROGRESS_INTERVAL_S:
                if unsent is not None and unsent.phase == last_phase and update.phase != last_phase:
                    yield unsent
                last_phase, last_sent, unsent = update.phase, now, None
                yield update
            else:
                unsent = update
        if unsent is not None:
            yield unsent
        stats = job.future.result()
        if running is not None and running.future.done() and running.future.exception() is None:
            stats = _added(running.future.result(), stats)
        if wait_for_embeddings:
            yield from self._wait_for_embeddings(ws)
            # The sync only counts what it embedded inline; a caller that waited also
            # wants the chunks the background run embedded for this index.
            stats = dataclasses.replace(stats, chunks_embedded=stats.chunks_embedded + ws.embedder.done)
        store = ws.store
        total = store.counts()[0] if store is not None else 0
        yield IndexProgress(
            phase=IndexPhase.DONE,
            files_done=len(ws.catalog),
            files_total=len(ws.catalog),
            chunks_done=total,
            embeddings_done=ws.embedder.done,
            embeddings_total=ws.embedder.total,
            embeddings_per_second=ws.embedder.rate(),
            eta_seconds=0.0,
            stats=stats,
            skipped=ws.skipped(),
        )

    def _wait_for_embeddings(self, ws: WorkspaceIndex) -> Iterator[IndexProgress]:
        store = ws.store
        if store is None:
            return
        total, embedded = store.counts()
        if embedded < total:
            ws.embedder.ensure_running()
        while True:
            running = ws.embedder.running
            done, planned, rate = ws.embedder.done, ws.embedder.total, ws.embedder.rate()
            eta = (planned - done) / rate if rate > 0 else -1.0
            yield IndexProgress(
                phase=IndexPhase.EMBEDDING,
                chunks_done=total,
                embeddings_done=done,
                embeddings_total=planned,
                embeddings_per_second=rate,
                eta_seconds=eta,
            )
            if not running:
                break
            time.sleep(0.5)
        total, embedded = store.counts()
        if embedded < total and ws.embedder.error:
            raise DependencyUnavailable(ws.embedder.error)

    # --- Search ---

    def search(self, request: SearchQuery) -> SearchOutcome:
        with self._interactive.running():
            return self._search(request)

    def _search(self, request: SearchQuery) -> SearchOutcome:
        ws = self.workspace(request.workspace_root)
        if not request.query.strip():
            raise InvalidQuery("query must not be empty")
        if (too_long := query_length_problem(request.query)) is not None:
            raise InvalidQuery(too_long)
        retrieval = self._settings.retrieval
        ratio = retrieval.semantic_ratio if request.semantic_ratio is None else request.semantic_ratio
        if not 0.0 <= ratio <= 1.0:
            raise InvalidQuery(f"semantic_ratio must be within [0, 1], got {ratio}")
        limit = request.limit or retrieval.default_limit
        try:
            filters = relative_patterns(request.filters, ws.root)
        except FilterError as exc:
            raise InvalidQuery(f"invalid filter: {exc}") from None

        started = time.perf_counter()
        query_future = (
            self._query_pool.submit(contextvars.copy_context().run, self._embed_query, request.query)
            if ratio > 0
            else None
        )
        # A read: the index as it stands. Syncing is the Sync call's job, never a search's.
        store = ws.store
        if store is None:
            if query_future is not None:
                query_future.cancel()
            status, _ = ws.indexing_status()
            return SearchOutcome(
                results=(),
                metadata=self._metadata(ws, status, ResultCompleteness.PARTIAL, started),
            )

        # Sub-millisecond and in process: embedded while the primary embedding is under way.
        static_query = self._static_query(store, request.query) if query_future is not None else None
        query_vector, unavailable_reason, blocked = None, SKIP_EMBEDDING_UNAVAILABLE, ws.external_provider_blocked
        if query_future is not None:
            try:
                embedded_query = query_future.result(timeout=self._query_embed_timeout_s)
            except (EmbeddingUnavailable, EmbeddingFailed, FutureTimeout) as exc:
                _log.info("query embedding unavailable, answering %s: %s",
                          "by static vectors" if static_query is not None else "lexically", exc)
            else:
                blocked = embedded_query.external_provider_blocked
                ws.note_external_blocked(blocked)
                if embedded_query.model != store.model:
                    ws.mark_model_stale()
                    unavailable_reason = SKIP_MODEL_CHANGED
                else:
                    query_vector = embedded_query.vectors[0]
        if static_query is not None and store.static is None:
            # The primary model is the static model: its in-process query vector stands in for
            # the embedding service's (same model) when that one is missing.
            if query_vector is None:
                query_vector = static_query
            static_query = None
        counts = store.vector_counts()
        # Every chunk with a static vector has a primary one: the primary channel answers alone, and
        # the static vectors only give the learned ranker its second cosine.
        static_search = query_vector is None or counts.static_only > 0
        outcome = hybrid_search(
            store,
            request.query,
            query_vector=query_vector,
            filters=filters,
            limit=limit,
            semantic_ratio=ratio,
            candidate_pool=request.candidate_pool or retrieval.candidate_pool,
            policy=DEFAULT_POLICY if request.ranked else FUSION_ONLY,
            unavailable_reason=unavailable_reason,
            static_query_vector=static_query,
            static_search=static_search,
            model=self._ranker if request.ranked else None,
            shape=request.shape,
        )
        status, _ = ws.indexing_status((counts.total, counts.primary))
        channels = outcome.vector_channels
        # Chunks some channel of this search could find by vector.
        if STATIC_VECTORS in channels and PRIMARY_VECTORS not in channels:
            vector_searchable = counts.static
        elif query_vector is not None and store.static is not None and store.static == self._static.model():
            vector_searchable = counts.primary + counts.static_only
        else:
            vector_searchable = counts.primary
        if not (ws.catalog.complete and vector_searchable >= counts.total):
            completeness = ResultCompleteness.PARTIAL
        elif outcome.truncated:
            completeness = ResultCompleteness.TRUNCATED
        else:
            completeness = ResultCompleteness.COMPLETE
        reason = outcome.semantic_skipped_reason or ""
        metadata = self._metadata(
            ws,
            status,
            completeness,
            started,
            counts=(counts.total, counts.primary),
            fallback=reason in _FALLBACK_REASONS,
            reason=reason,
            ratio_used=outcome.semantic_ratio_used,
            blocked=blocked,
            total_candidates=outcome.total_candidates,
            confidence=outcome.confidence,
            missing_names=outcome.missing_names,
            nearest_names=outcome.nearest_names,
            # Counted only under a filter: an empty answer then may mean the filter, not the query.
            filtered_chunks=store.count_matching(filters) if filters != Filters() else counts.total,
            channels=_channel_coverage(channels, counts),
            primary_unavailable_reason=(
                unavailable_reason if STATIC_VECTORS in channels and PRIMARY_VECTORS not in channels else ""
            ),
        )
        return SearchOutcome(results=tuple(outcome.results), metadata=metadata)

    def _static_query(self, store: ChunkStore, text: str):
        """The static model's embedding of the query, when this index has a channel of that
        model (its static column, or its primary column under the code-static profile)."""
        model = self._static.model()
        if model is None or (store.static != model and store.model != model):
            return None
        return self._static.embed_query(text)

    def _embed_query(self, text: str):
        return self._embedding.embed_query(text, timeout_s=self._query_embed_timeout_s)

    def _metadata(
        self,
        ws: WorkspaceIndex,
        status: IndexingStatus,
        completeness: ResultCompleteness,
        started: float,
        *,
        counts: tuple[int, int] = (0, 0),
        fallback: bool = False,
        reason: str = "",
        ratio_used: float = 0.0,
        blocked: bool = False,
        total_candidates: int = 0,
        confidence: float = 0.0,
        missing_names: tuple[str, ...] = (),
        nearest_names: tuple[str, ...] = (),
        filtered_chunks: int = 0,
        channels: tuple[tuple[str, int], ...] = (),
        primary_unavailable_reason: str = "",
    ) -> SearchMetadata:
        model = ws.model
        static = ws.store.static if ws.store is not None else None
        coverage = dict(channels)
        return SearchMetadata(
            indexing_status=status,
            result_completeness=completeness,
            semantic_fallback=fallback,
            semantic_skipped_reason=reason,
            semantic_ratio_used=ratio_used,
            external_provider_blocked=blocked,
            embedding_model_id=model.model_id if model else "",
            embedding_model_version=model.model_version if model else "",
            search_ms=_ms_since(started),
            total_chunks=counts[0],
            embedded_chunks=counts[1],
            total_candidates=total_candidates,
            confidence=confidence,
            missing_names=missing_names,
            nearest_names=nearest_names,
            filtered_chunks=filtered_chunks,
            vector_channels=tuple(name for name, _ in channels),
            primary_vector_chunks=coverage.get(PRIMARY_VECTORS, 0),
            static_vector_chunks=coverage.get(STATIC_VECTORS, 0),
            static_model_id=static.model_id if static else "",
            static_model_version=static.model_version if static else "",
            primary_unavailable_reason=primary_unavailable_reason,
        )

    # --- Sync ---

    def sync(self, root_text: str, budget_s: float | None, *, force: bool = False) -> SyncOutcome:
        """Sync a workspace within a budget (None: until done); see `WorkspaceIndex.sync`."""
        if budget_s is not None and budget_s < 0:
            raise InvalidQuery(f"sync budget must not be negative, got {budget_s}")
        with self._interactive.running():
            return self._workspace_to_sync(root_text, force).sync(budget_s, force=force)

    # --- FindHubs ---

    def find_hubs(self, request: HubQuery) -> HubOutcome:
        """The structure stage: symbols connected to several seeds by index-time references.
        A read like search: never syncs."""
        started = time.perf_counter()
        ws = self.workspace(request.workspace_root)
        store = ws.store
        policy = DEFAULT_HUB_POLICY
        seeds = list(request.seeds[: policy.seeds])
        if store is None or len(seeds) < policy.min_connections:
            return HubOutcome(hubs=(), duration_ms=(time.perf_counter() - started) * 1000)
        seed_ids = [sid for sid, _ in seeds]
        outgoing = store.references_of(seed_ids)
        incoming: dict[str, list[str]] = {}
        for source, targets in store.references_into(seed_ids).items():
            for target in targets:
                incoming.setdefault(target, []).append(source)
        max_hubs = request.max_hubs or policy.max_hubs
        # Ineligible neighbours (tests, module wiring) are dropped after scoring, so ask for spares.
        scored = hub_scores(seeds, outgoing, incoming, dataclasses.replace(policy, max_hubs=max_hubs * 4))
        chunks = {c.id: c for c in store.get_chunks([h.chunk_id for h in scored])}
        hubs: list[HubResult] = []
        for hub in scored:
            chunk = chunks.get(hub.chunk_id)
            if chunk is None or not hub_eligible(chunk):
                continue
            result = RankedResult(
                chunk=chunk, score=hub.score, lexical_score=0.0, vector_similarity=0.0, provenance=STRUCTURE,
                lexical_rank=0, semantic_rank=0, signals={"hub": float(len(hub.connected))},
            )
            hubs.append(HubResult(result=result, connected_seed_ids=hub.connected, outgoing=hub.outgoing,
                                  incoming=hub.incoming))
            if len(hubs) >= max_hubs:
                break
        return HubOutcome(hubs=tuple(hubs), duration_ms=(time.perf_counter() - started) * 1000)

    # --- GetIndexStatus ---

    def status(self, root_text: str) -> IndexStatusReport:
        # A folder that is refused (and was never indexed with force) has no index to report on:
        # its status is the refusal, and asking for it creates no state for it.
        ws = self._workspace_to_sync(root_text, force=False)
        store = ws.store
        vectors = store.vector_counts() if store is not None else VectorCounts(0, 0, 0, 0)
        counts = (vectors.total, vectors.primary)
        status, error = ws.indexing_status(counts)
        model = ws.model
        static = store.static if store is not None else None
        identity = ws.catalog.identity
        return IndexStatusReport(
            indexing_status=status,
            files=len(ws.catalog),
            chunks=counts[0],
            embedded_chunks=counts[1],
            embedding_model_id=model.model_id if model else "",
            embedding_model_version=model.model_version if model else "",
            index_format_version=(
                f"format={INDEX_FORMAT_VERSION};chunker={identity.chunker_version}" if identity else ""
            ),
            error=error,
            index_bytes=store.size_bytes() if store is not None else 0,
            last_sync_at=ws.last_sync_at,
            skipped=ws.skipped(),
            static_vector_chunks=vectors.static,
            static_model_id=static.model_id if static else "",
            static_model_version=static.model_version if static else "",
        )


def _channel_coverage(channels: tuple[str, ...], counts: VectorCounts) -> tuple[tuple[str, int], ...]:
    """(channel, chunks it searched) for each vector channel a search ran on: the primary one
    its embedded rows; the static one the rest, or every row it has when it answered alone."""
    alone = PRIMARY_VECTORS not in channels
    return tuple(
        (name, counts.primary if name == PRIMARY_VECTORS else (counts.static if alone else counts.static_only))
        for name in channels
    )


def _added(first: SyncStats, then: SyncStats) -> SyncStats:
    """What two syncs in a row did together; skips are the later scan's (each scan counts all)."""
    summed = SyncStats(**{f.name: getattr(first, f.name) + getattr(then, f.name)
                          for f in dataclasses.fields(SyncStats)})
    return dataclasses.replace(summed, files_skipped=then.files_skipped)


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000


def _home() -> Path | None:
    try:
        return Path.home().resolve()
    except (RuntimeError, OSError):  # no HOME and no passwd entry: no home folder to protect
        return None


def _validated_root(root_text: str) -> Path:
    if not root_text or not root_text.strip():
        raise InvalidWorkspace("workspace_root is required")
    path = Path(root_text)
    if not path.is_absolute():
        raise InvalidWorkspace(f"workspace_root must be an absolute path, got {root_text!r}")
    if not path.exists():
        raise WorkspaceNotFound(f"workspace root {root_text} does not exist")
    if not path.is_dir():
        raise WorkspaceNotFound(f"workspace root {root_text} is not a directory")
    # One index per directory, however it is reached (symlinks, "..").
    return path.resolve()
