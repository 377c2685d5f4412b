"""The writer of one workspace's index: keeps it in sync with its files (through the analysis
and embedding services), fills in vectors in the background (`background_embedder.py`), and
maintains the tables. `writer.IndexWriter` holds one per workspace it writes.

Concurrency model, per workspace:
- syncs run one at a time on a single-thread executor; a sync requested while another runs is
  queued once and shared by every caller that asks meanwhile (so a burst of Sync calls after an
  edit costs one sync, and it starts after the running one, so it sees the edit);
- a Sync call waits for its sync at most its budget, then reports which files are not written
  yet; the sync goes on in the background;
- `write_lock` serialises table writes + catalog commits of the sync with the vector writes of
  the background embedder; readers never take it (LanceDB reads a consistent version);
- across processes, every table write is a conditional commit of a new version: a second
  writer of the same index is serialised by LanceDB, never interleaved (README, "Index on object
  storage"), but one writer per index is how it is meant to run.
"""

from __future__ import annotations

import contextvars
import json
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from pathlib import Path

import lancedb

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.embedding import EmbeddingClient
from codecompass.common import names
from codecompass.common.config import Settings
from codecompass.common.logging import get_logger
from codecompass.common.telemetry import IndexReading
from codecompass.contracts.analysis.model import ScanResult, SkippedFile
from codecompass.contracts.embedding.model import EmbeddingModel
from codecompass.contracts.retrieval.errors import EmbeddingUnavailable, IndexRefused, RetrievalError
from codecompass.contracts.retrieval.model import FreshnessStatus, IndexPhase, IndexProgress, SyncOutcome, SyncStats
from codecompass.retrieval import guards
from codecompass.retrieval.catalog import CATALOG_TABLE, Catalog, IndexIdentity, skips_to_json
from codecompass.retrieval.index import layers
from codecompass.retrieval.index.background_embedder import BackgroundEmbedder
from codecompass.retrieval.index.chunk_writer import DEFAULT_VERSION_RETENTION, ChunkWriter
from codecompass.retrieval.index.shard.job import PostedShards
from codecompass.retrieval.index.shard.plan import ShardPlan, make_plan
from codecompass.retrieval.index.shard.processes import run_shards
from codecompass.retrieval.index.shard.results import ShardResult, commit_shards
from codecompass.retrieval.index.sync import Syncer, SyncTuning, rebase_on_empty_catalog
from codecompass.retrieval.interactive import InteractiveWork
from codecompass.retrieval.location import IndexRegistry, index_key, index_root, index_uri
from codecompass.retrieval.schema import INDEX_FORMAT_VERSION, sources_table_name
from codecompass.retrieval.static_channel import StaticChannel

_log = get_logger(__name__)

# Most pending paths a Sync answer lists (it counts them all): enough for any edit-sized
# change, while a branch switch of 100k files does not make a multi-megabyte answer.
PENDING_PATHS_CAP = 1000
# Where indexes made before the catalog moved into the index kept it (imported once).
LEGACY_CATALOG_FILE = "catalog.sqlite3"


@dataclass(frozen=True)
class IndexCaller:
    """An IndexWorkspace caller, as far as a wait for shard workers started elsewhere (an
    Indexed Job's pods) is concerned: how long it waits, and whether it is still there."""

    deadline: float  # time.monotonic()
    gone: threading.Event


@dataclass(frozen=True)
class WriterState:
    """What a writer knows of an index that its tables do not say: a co-located searcher
    reads it (a remote one reads the catalog's pending marks and last error instead)."""

    busy: bool  # a sync runs or is queued
    # A sync is writing files it marked pending (what a remote searcher reads in the catalog): a
    # sync still scanning, which may find nothing to write, does not make a complete index change.
    writing: bool
    sync_error: str
    embedder_running: bool
    embedder_error: str
    synced_at: float | None
    scan_skipped: tuple[SkippedFile, ...]
    external_provider_blocked: bool


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
        # Worker processes the files are spread over (shard/); 0 or 1: this process syncs them.
        self.workers = 0
        # The IndexWorkspace calls that follow this sync: they bound a wait for shard workers.
        self._callers: list[IndexCaller] = []
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

    def add_caller(self, caller: IndexCaller) -> None:
        with self._lock:
            self._callers.append(caller)

    def wait_deadline(self, default: float) -> float:
        """Until when the most patient caller waits; `default` when none said."""
        with self._lock:
            return max((c.deadline for c in self._callers), default=default)

    def abandoned(self) -> bool:
        """Every caller that waited for this sync has gone (none: a sync nobody waits on)."""
        with self._lock:
            return bool(self._callers) and all(c.gone.is_set() for c in self._callers)


class WorkspaceWriter:
    """The writer of one workspace's index."""

    def __init__(
        self,
        root: Path,
        workspace_id: str,
        settings: Settings,
        analysis: AnalysisClient,
        embedding: EmbeddingClient,
        tuning: SyncTuning,
        static: StaticChannel,
        interactive: InteractiveWork,
        on_settled: Callable[[WorkspaceWriter], None] | None = None,
    ) -> None:
        self.root = root
        # Called when a sync ended or the last vectors were written: the writer may copy the
        # index into a base of its repository then (`layers.py`).
        self._on_settled = on_settled
        # The commit HEAD was at when the last sync that finished in this process began (None: no
        # sync finished since it began, or no bases are written of this index).
        self.synced_head: str | None = None
        self.workspace_id = workspace_id
        self.key = index_key(workspace_id)
        self._settings = settings
        self._analysis = analysis
        self._embedding = embedding
        self._tuning = tuning
        self.static = static
        self._uri = index_uri(settings, self.key)
        self._storage_options = dict(settings.retrieval.storage_options)
        self._db = lancedb.connect(self._uri, storage_options=self._storage_options or None)
        self.catalog = Catalog.open(
            self._db, legacy=settings.state_dir / "workspaces" / self.key / LEGACY_CATALOG_FILE)
        self._registered = False
        self.write_lock = threading.Lock()
        self._store: ChunkWriter | None = None
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
        # The watch token of the last scan whose result a sync applied in full (see `_settled_token`).
        self._watch_token = ""
        # When this process last finished a sync (a no-op sync writes nothing to the catalog).
        self._synced_at: float | None = None
        # When (epoch seconds) the oldest sync since the last one that finished began: set by a
        # sync's start, kept while syncs fail (the folder may have moved on without the index),
        # cleared when one finishes. The sync lag metric: a sync's own duration while syncs succeed.
        self._behind_since: float | None = None
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
            # The embedding service may have moved to another model since that process (an
            # upgrade): the first sync asks it, as a search does (`note_model_changed`), because
            # a writer running apart from its searchers hears of it from no one else; an index
            # with every vector would otherwise keep the old model's and searchers would answer
            # without vectors.
            self._model_stale = True
            self.embedder.ensure_running()
            # Versions a previous process left behind (it may have been killed mid-run).
            self._schedule_cleanup()

    @property
    def store(self) -> ChunkWriter | None:
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

    # --- syncing ---

    def request_sync(
        self, listener: Callable[[IndexProgress], None] | None = None, *, force: bool = False, workers: int = 0,
        caller: IndexCaller | None = None,
    ) -> _SyncJob:
        with self._jobs_lock:
            job = self._queued
            if job is None or job.started:
                job = _SyncJob()
                self._queued = job
                self._executor.submit(self._run_job, job)
            job.force = job.force or force
            job.workers = max(job.workers, workers)
            if listener is not None:
                job.add_listener(listener)
            if caller is not None:
                job.add_caller(caller)
            return job

    def join_sync(
        self, listener: Callable[[IndexProgress], None], *, force: bool = False, workers: int = 0,
        caller: IndexCaller | None = None,
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
        return running, self.request_sync(listener, force=force, workers=workers, caller=caller)

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
            if self._behind_since is None:
                self._behind_since = time.time()
            # The commit the files were at when this sync read them: a base is written only of an
            # index a sync brought to the files of the commit the checkout is still clean at.
            head = layers.head_commit(self.root) if self._on_settled is not None else None
            self.synced_head = None
            settled = self._settled_token(job)
            # Cleared until this sync has applied its scan: a sync that fails leaves no token.
            self._watch_token = ""
            scan = self._analysis.scan(
                str(self.root), self.catalog.previous_files, version=(id(self.catalog), self.catalog.generation),
                unchanged_since=settled,
            )
            scan_rpc_ms = (time.perf_counter() - scan_started) * 1000
            if scan.unchanged:
                # Nothing in the folders the last whole scan walked has changed: the index stands.
                self._watch_token = settled
                self._synced_at = time.time()
                self._behind_since = None
                self.synced_head = head
                return SyncStats(files_skipped=len(self._scan_skipped), duration_ms=scan_rpc_ms)
            self._scan_skipped = scan.skipped
            if not job.force and self.catalog.identity is None:
                retrieval = self._settings.retrieval
                refusal = guards.size_refusal(self.root, scan.files, retrieval.large_index_files,
                                              retrieval.large_index_mb)
                if refusal is not None:
                    raise IndexRefused(refusal)
            self._ensure_identity(scan.chunker_version)
            self._register()
            if had_files and len(self.catalog) == 0:
                scan = rebase_on_empty_catalog(scan)
            assert self._store is not None
            # While the background pass runs, an edit's chunks would wait behind it in the
            # embedding service (measured: a one-file sync at 1.4 s instead of 0.17 s). With a
            # static channel they are searchable by static vectors at once, and the background
            # pass gives them primary vectors.
            inline = not (self.embedder.running and self._store.static is not None)
            if job.workers > 1:
                job.planned.set()
                stats = self._sync_sharded(scan, job, notify)
                timings: dict[str, float] = {}
            else:
                stats, timings = self._sync_here(scan, job, notify, inline)
            stats.duration_ms = (time.perf_counter() - scan_started) * 1000
            self._synced_at = time.time()
            self._behind_since = None
            self._sync_error = ""
            self._record_manifest()
            self._watch_token = scan.watch_token
            self.synced_head = head
            self.settled()
            if stats.chunks_upserted or stats.chunks_deleted:
                _log.info(
                    "sync wrote changes",
                    extra={
                        "workspace": str(self.root),
                        "scan_ms": round(scan.duration_ms, 1),
                        "scan_rpc_ms": round(scan_rpc_ms, 1),
                        "sync_ms": round(stats.duration_ms, 1),
                        **{f"{step}_ms": round(ms, 1) for step, ms in timings.items()},
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
            self._record_error()
            # An expected failure (a dependency down, a refused workspace): one line, no traceback.
            _log.warning("sync failed", extra={"workspace": str(self.root), "error": str(exc)})
            raise
        except Exception as exc:
            self._sync_error = f"sync failed: {exc}"
            self._record_error()
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
            if due or cold_done:
                self._maintain_in_background()
            elif store is not None:
                # Asked in the maintainer's thread: the index statistics take ~2 ms that the Sync
                # caller (a search waiting for an edit) need not wait for.
                self._maintain_in_background(when_needed=True)
            if stats.chunks_upserted > stats.embeddings_reused + stats.chunks_embedded:
                self.embedder.ensure_running()
        return stats

    def _settled_token(self, job: _SyncJob) -> str:
        """The last whole sync's watch token, when the analysis service may answer this sync's
        scan with "unchanged" (no walk): not forced, the model and store as that sync left them,
        and a complete catalog with nothing pending (an "unchanged" lists no files to resume)."""
        if job.force or self._model_stale or self._store is None or not self.catalog.complete \
                or self.catalog.pending():
            return ""
        return self._watch_token

    def _sync_here(self, scan: ScanResult, job: _SyncJob, notify: Callable[[IndexProgress], None],
                   inline: bool) -> tuple[SyncStats, dict[str, float]]:
        """The sync in this process (`sync.Syncer`): (its stats, milliseconds per step)."""
        assert self._store is not None
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
        return syncer.run(scan), syncer.timings

    def _sync_sharded(self, scan: ScanResult, job: _SyncJob, notify: Callable[[IndexProgress], None]) -> SyncStats:
        """The files this sync would chunk, chunked and vectorised by `job.workers` workers, each
        writing its rows uncommitted (shard/), then committed here at once: pending marks,
        texts, chunks, catalog. A worker that fails fails the sync and nothing is committed. Files
        of the catalog the scan did not find leave in the same commits. No lexical-first pass: a
        reader sees nothing of the new files until the commit, then all of them. The workers are
        processes of this machine, or, with `retrieval.shard_runner` = job, whoever finds the
        plan posted in the index (an Indexed Job's pods) within the callers' patience."""
        assert self._store is not None and self.catalog.identity is not None
        workers = job.workers
        current = {f.relative_path: f for f in scan.files}
        pending = self.catalog.pending()
        to_index = sorted(set(scan.added) | set(scan.changed) | {p for p in pending if p in current})
        removed = sorted((set(scan.removed) | {p for p in pending if p not in current}) - set(to_index))
        notify(IndexProgress(phase=IndexPhase.CHUNKING, files_total=len(to_index)))
        plan = make_plan(str(self.root), self._uri, self.catalog.identity, [current[p] for p in to_index], workers,
                         tuning=self._tuning)
        # The workers read their addresses and storage options from the environment, as services do;
        # the options may be credentials, so they never go into the plan.
        env = {names.addr_env(names.ANALYSIS): self._analysis.address,
               names.addr_env(names.EMBEDDING): self._embedding.address,
               "CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS": json.dumps(self._storage_options)}
        if self._settings.retrieval.shard_runner == "job":
            results = self._commit_posted(plan, job, removed, notify)
        else:
            results = run_shards(plan, workers, db=self._db, env=env)
            with self.write_lock:
                commit_shards(self._store, self.catalog, results, removed=removed)
        chunks = sum(r.stats.chunks for r in results)
        notify(IndexProgress(phase=IndexPhase.WRITING, files_done=len(to_index), files_total=len(to_index),
                             chunks_done=chunks))
        return SyncStats(
            files_added=len(scan.added), files_changed=len(scan.changed), files_removed=len(scan.removed),
            files_skipped=len(scan.skipped) + sum(r.stats.skipped for r in results),
            chunks_upserted=chunks, chunks_embedded=sum(r.stats.chunks_embedded for r in results),
            files_vanished=sum(r.stats.vanished for r in results),
        )

    def _commit_posted(self, plan: ShardPlan, job: _SyncJob, removed: list[str],
                       notify: Callable[[IndexProgress], None]) -> list[ShardResult]:
        """`plan` posted in the index for an Indexed Job's pods; their results committed once all
        are in. The plan ends, whatever happens here, so late workers do nothing (shard/job.py)."""
        assert self._store is not None
        total = len(plan.shards)
        files = sum(len(s) for s in plan.shards)
        default_deadline = time.monotonic() + self._settings.long_rpc_timeout_s

        def stop() -> str | None:
            if self._closing.is_set():
                return "the writer is shutting down"
            return "the index call was cancelled" if job.abandoned() else None

        def progress(reported: frozenset[int]) -> None:
            notify(IndexProgress(phase=IndexPhase.SHARDS, files_done=sum(len(plan.shards[i]) for i in reported),
                                 files_total=files, shards_done=len(reported), shards_total=total))

        with PostedShards(plan, self.workspace_id, db=self._db, uri=self._uri) as posted:
            _log.info("waiting for %d shard workers (Indexed Job)", total,
                      extra={"workspace_id": self.workspace_id, "plan_id": plan.plan_id, "files": files})
            results = posted.wait(deadline=lambda: job.wait_deadline(default_deadline), stop=stop, progress=progress)
            with self.write_lock:
                commit_shards(self._store, self.catalog, results, removed=removed)
        return results

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
        store = ChunkWriter.open(
            self._uri,
            model=identity.model,
            chunker_version=identity.chunker_version,
            static=identity.static,
            storage_options=self._storage_options,
        )
        if store.rebuilt:
            _log.warning("the index of %s was written in another index format; it is rebuilt in format %s",
                         self.root, INDEX_FORMAT_VERSION)
        if (store.created or store.rebuilt) and len(self.catalog) > 0:
            # The table is new but the catalog remembers files: the index was deleted or
            # rebuilt, so the catalog no longer describes it.
            self.catalog.reset(identity)
        self._store = store

    def maintain(self, *, settle: bool = False) -> None:
        """See ChunkWriter.maintain; `settle` once a run of writes (an embedding run) is over."""
        store = self._store
        if store is None:
            return
        self._syncs_since_maintain = 0
        started = time.perf_counter()
        with self.write_lock:
            store.maintain(retention=self.VERSION_RETENTION, settle=settle)
            self.catalog.maintain(self.VERSION_RETENTION)
        # Writes wait for it: how long, and how often, is what an operator asks of a slow index.
        _log.info("index maintained", extra={"workspace": str(self.root), "settle": settle,
                                             "maintain_ms": round((time.perf_counter() - started) * 1000, 1)})
        self._retire_old_tables(store)
        self._schedule_cleanup()

    # How long superseded versions (and unused source texts) are kept for searches still
    # reading them.
    VERSION_RETENTION = DEFAULT_VERSION_RETENTION
    # Past the moment `cleanup_due_at` names, so the versions it counted are old enough.
    CLEANUP_SLACK_S = 1.0

    def _schedule_cleanup(self) -> None:
        """Drop the versions maintenance had to keep (younger than the retention: a search may
        still read them) once they can go. Without this, the versions written by the last
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
        if self._closing.is_set():
            return
        try:
            self.cleanup()
        except Exception:  # noqa: BLE001 - dropping old versions frees disk only; the next timer retries
            _log.exception("cleanup of %s failed", self.root)

    def cleanup(self) -> None:
        """Drop what the last maintenance had to keep, now that it is old enough (see
        `_schedule_cleanup`); then wait for whatever is still too young."""
        store = self._store
        if store is None:
            return
        with self.write_lock:
            store.cleanup(self.VERSION_RETENTION)
            self.catalog.maintain(self.VERSION_RETENTION)
        self._schedule_cleanup()

    def retire_old_tables(self) -> None:
        """What maintenance does last, alone: for a run of writes too small to settle the index."""
        store = self._store
        if store is not None:
            self._retire_old_tables(store)

    def _retire_old_tables(self, store: ChunkWriter) -> None:
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

    def _maintain_in_background(self, *, when_needed: bool = False) -> None:
        """Compaction can take a while on a big table; the search whose sync triggered it
        should not wait for it (later syncs only wait for the write lock). `when_needed`: only
        if the store says it is due (`ChunkWriter.needs_maintenance`)."""
        with self._jobs_lock:
            if self._maintainer is not None and self._maintainer.is_alive():
                return
            self._maintainer = threading.Thread(target=self._maintain_logged, args=(when_needed,),
                                                name=f"maintain-{self.key[:8]}")
            self._maintainer.start()

    def _maintain_logged(self, when_needed: bool = False) -> None:
        try:
            store = self._store
            if when_needed and (store is None or not store.needs_maintenance()):
                return
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

    # --- what a co-located searcher reads ---

    def state(self) -> WriterState:
        return WriterState(
            busy=self._syncing or self._queued is not None,
            writing=bool(self.catalog.pending()),
            sync_error=self._sync_error,
            embedder_running=self.embedder.running,
            embedder_error=self.embedder.error,
            synced_at=self._synced_at,
            scan_skipped=self._scan_skipped,
            external_provider_blocked=self._external_blocked,
        )

    def reading(self) -> IndexReading | None:
        """The index's numbers for metrics; None before its tables exist."""
        store = self._store
        if store is None:
            return None
        total, embedded = store.counts()
        behind = self._behind_since
        return IndexReading(key=self.key, chunks=total, size_bytes=store.size_bytes(), backlog=total - embedded,
                            pending_files=len(self.catalog.pending()),
                            lag_s=max(0.0, time.time() - behind) if behind is not None else 0.0)

    def settled(self) -> None:
        if (self._on_settled is not None and self.synced_head is not None and not self._closing.is_set()
                and not self.embedder.running):
            self._on_settled(self)

    def snapshot(self) -> dict[str, int] | None:
        """{table: version} of this index's tables when nothing is left to write in them (every
        file synced, every vector written), else None. Call under `write_lock`: the versions are
        then one consistent state."""
        store = self._store
        if store is None or not self.catalog.complete or self.catalog.pending():
            return None
        total, embedded = store.counts()
        if total == 0 or embedded < total:
            return None
        names = (CATALOG_TABLE, store.table_name, sources_table_name(store.table_name))
        return {name: self._db.open_table(name).version for name in names}

    def _register(self) -> None:
        """The index's row in the registry, and its workspace and folder in its manifest, from the
        moment its tables exist, before its first pass writes a file: `status` lists an index
        being written, and `gc` finds one whose folder went away before its first pass ended."""
        if self._registered:
            return
        try:
            self.catalog.set_meta(workspace_id=self.workspace_id, root=str(self.root))
            IndexRegistry(index_root(self._settings), self._storage_options).register(
                self.key, self.workspace_id, str(self.root), base=self.catalog.base[0], commit=self.catalog.base[1])
            self._registered = True
        except Exception:  # noqa: BLE001 - what the sync writes matters more; retried when it ends
            _log.exception("could not register the index of %s", self.root)

    def _record_manifest(self) -> None:
        """The manifest a remote searcher reads after a sync: which workspace and folder this
        index is of, no error, the scan's skips; and the index's row in the registry."""
        try:
            self.catalog.set_meta(workspace_id=self.workspace_id, root=str(self.root), last_error="",
                                  scan_skipped=skips_to_json(self._scan_skipped))
        except Exception:  # noqa: BLE001 - the index itself is written; its manifest is retried next sync
            _log.exception("could not record the manifest of %s", self.root)
        self._register()

    def _record_error(self) -> None:
        """A failed sync of an existing index says why in its manifest (a refused or never
        written workspace gets no index for it)."""
        if self.catalog.identity is None:
            return
        try:
            self.catalog.set_meta(last_error=self._sync_error)
        except Exception:  # noqa: BLE001 - the sync already failed; its own error is what gets reported
            _log.exception("could not record the sync error of %s", self.root)

    def note_external_blocked(self, blocked: bool) -> None:
        self._external_blocked = blocked


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000
