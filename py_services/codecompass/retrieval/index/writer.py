"""The index writer role: IndexWorkspace, Sync and DropIndex over validated workspace roots, one
`WorkspaceWriter` (workspace_writer.py) per workspace it writes. One writer per index; any
number of searchers (`searcher.py`) read what it commits."""

from __future__ import annotations

import dataclasses
import queue
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import lancedb

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.embedding import EmbeddingClient
from codecompass.common.config import Settings
from codecompass.common.cores import usable_cores
from codecompass.common.files import tree_bytes
from codecompass.common.logging import get_logger
from codecompass.common.telemetry import IndexReading, observe_indexes
from codecompass.contracts.retrieval.errors import (
    DependencyUnavailable,
    IndexNotFound,
    IndexRefused,
    InvalidQuery,
    RetrievalError,
)
from codecompass.contracts.retrieval.model import (
    IndexPhase,
    IndexProgress,
    SyncOutcome,
    SyncStats,
    base_id,
    base_repository,
    repository_of,
)
from codecompass.retrieval import guards
from codecompass.retrieval.catalog import CatalogSummary
from codecompass.retrieval.index import layers
from codecompass.retrieval.index.sync import SyncTuning
from codecompass.retrieval.index.workspace_writer import IndexCaller, WorkspaceWriter, WriterState
from codecompass.retrieval.interactive import InteractiveWork
from codecompass.retrieval.location import (
    CHECKOUT,
    LOCAL_PREFIX,
    IndexRegistry,
    InvalidWorkspaceId,
    index_exists,
    index_key,
    index_root,
    index_uri,
    is_local_uri,
    list_tables,
    validated_root,
    workspace_id_for,
)
from codecompass.retrieval.static_channel import StaticChannel

_log = get_logger(__name__)

# Progress messages of an IndexWorkspace stream are throttled to this interval.
_PROGRESS_INTERVAL_S = 0.2


# Shard workers per core of the writer's machine, at most. A second one per core overlaps one
# worker's waits (reading files, the analysis service's answers) with another's CPU; past that
# they only queue for the cores, and each costs its memory.
MAX_WORKERS_PER_CORE = 2

class IndexWriter:
    """The writer role: IndexWorkspace, Sync and DropIndex over validated workspace roots."""

    def __init__(
        self,
        settings: Settings,
        analysis: AnalysisClient,
        embedding: EmbeddingClient,
        static: StaticChannel,
        interactive: InteractiveWork,
        tuning: SyncTuning | None = None,
    ) -> None:
        self._settings = settings
        self._analysis = analysis
        self._embedding = embedding
        self._tuning = tuning or SyncTuning()
        self._static = static
        self._interactive = interactive
        self._workspaces: dict[str, WorkspaceWriter] = {}
        self._lock = threading.Lock()
        # Keys of the bases known to exist; one base written at a time.
        self._bases: set[str] = set()
        self._bases_lock = threading.Lock()
        # Each index's size, backlog and lag, read when metrics are collected.
        self._stop_observing = observe_indexes(self._readings)

    def _readings(self) -> list[IndexReading]:
        with self._lock:
            workspaces = list(self._workspaces.values())
        return [reading for ws in workspaces if (reading := ws.reading()) is not None]

    def warmup(self) -> None:
        """The index root must be writable (a local one) or reachable (an object store), or
        nothing can be indexed."""
        root = index_root(self._settings)
        if is_local_uri(root):
            folder = Path(root.removeprefix("file://"))
            folder.mkdir(parents=True, exist_ok=True)
            probe = folder / f".probe-{threading.get_ident()}"
            probe.write_text("ok", encoding="utf-8")
            probe.unlink()
        else:
            IndexRegistry(root, dict(self._settings.retrieval.storage_options)).entries()

    def close(self, timeout: float = 5.0) -> None:
        self._stop_observing()
        with self._lock:
            workspaces = list(self._workspaces.values())
            self._workspaces.clear()
        for ws in workspaces:
            ws.close(timeout)

    def state(self, key: str) -> WriterState | None:
        """The live state of an index this process writes; None when it writes no such index."""
        with self._lock:
            ws = self._workspaces.get(key)
        return ws.state() if ws is not None else None

    def catalog_summary(self, key: str) -> tuple[int, CatalogSummary] | None:
        """(catalog version, summary) of an index this process writes, from memory; None when it
        writes no such index."""
        with self._lock:
            ws = self._workspaces.get(key)
        return ws.catalog.summary() if ws is not None else None

    def attend(self, root: Path, workspace_id: str, key: str) -> None:
        """A searcher in this process reads an index this writer has not opened: open it now,
        so the work a previous process left (vectors still missing, old versions to clean up)
        resumes without waiting for the next sync. Reads stay reads; the writer does its own work."""
        with self._lock:
            if key in self._workspaces:
                return
        if index_exists(self._settings, key):
            self.workspace(str(root), "" if workspace_id.startswith("local:") else workspace_id)

    def resume_all(self) -> None:
        """Open every index synced from a folder of this machine that still exists, so a
        restarted writer resumes what it left (the role `writer` does this at start)."""
        host = socket.gethostname()
        for entry in IndexRegistry(index_root(self._settings),
                                   dict(self._settings.retrieval.storage_options)).entries():
            if entry.host == host and entry.root and Path(entry.root).is_dir():
                try:
                    self.attend(Path(entry.root), entry.workspace_id, entry.key)
                except RetrievalError as exc:
                    _log.warning("could not resume the index of %s: %s", entry.root, exc)

    def note_model_changed(self, key: str) -> None:
        """A search found the embedding service on another model than the index's: the next
        sync re-identifies the index (a new table under the new model)."""
        with self._lock:
            ws = self._workspaces.get(key)
        if ws is not None:
            ws.mark_model_stale()

    def workspace(self, root_text: str, workspace_id: str = "") -> WorkspaceWriter:
        root = validated_root(root_text)
        try:
            wid = workspace_id_for(self._settings, root, workspace_id)
        except InvalidWorkspaceId as exc:
            raise InvalidQuery(str(exc)) from None
        key = index_key(wid)
        with self._lock:
            ws = self._workspaces.get(key)
            if ws is not None and ws.root != root:
                # Same workspace id from another folder (a second clone): one writer, the newest folder.
                ws.close(timeout=5.0)
                ws = None
            if ws is None:
                # Bases are shared by the checkouts of a repository; a configured id names one index
                # on purpose, and a folder outside any repository with a remote has no other checkout.
                shares_bases = (self._settings.retrieval.checkout_bases and not workspace_id
                                and not wid.startswith(LOCAL_PREFIX))
                base = self._start_from_base(root, wid, key) if shares_bases else None
                ws = WorkspaceWriter(root, wid, self._settings, self._analysis, self._embedding, self._tuning,
                                     self._static, self._interactive,
                                     on_settled=self._settled if shares_bases else None)
                if base is not None:
                    ws.catalog.set_meta(**{layers.BASE_META: base.key, layers.BASE_COMMIT_META: base.commit})
                    if ws.store is not None:
                        ws.store.build_indexes()
                self._workspaces[key] = ws
            return ws

    def _start_from_base(self, root: Path, wid: str, key: str) -> layers.Base | None:
        """A checkout's index that does not exist yet starts from its repository's nearest base
        (`layers.py`), when there is one; the base, or None (the index starts empty)."""
        if index_exists(self._settings, key):
            return None
        base = layers.nearest_base(self._settings, root, repository_of(wid))
        if base is None:
            return None
        try:
            layers.start_from_base(self._settings, key, base)
        except (OSError, RuntimeError, ValueError) as exc:
            _log.warning("could not start the index of %s from its base; indexing every file", root,
                         extra={"base": base.key, "detail": str(exc)})
            return None
        # Registered at once: until its first sync registers it, a collection of the repository's
        # unused bases would not know this index reads the base's files.
        IndexRegistry(index_root(self._settings), dict(self._settings.retrieval.storage_options)).register(
            key, wid, str(root), base=base.key, commit=base.commit)
        _log.info("index starts from a base", extra={"root": str(root), "base": base.key, "commit": base.commit,
                                                     "files_differing": base.differing})
        return base

    def _settled(self, ws: WorkspaceWriter) -> None:
        threading.Thread(target=self._write_base, args=(ws,), name=f"base-{ws.key[:8]}", daemon=True).start()

    def _write_base(self, ws: WorkspaceWriter) -> None:
        """Copy a checkout's index into a base of its repository when the checkout is clean at a
        commit that has none yet and nothing is left to write in the index; then collect the
        repository's bases nobody uses (`layers.collectable_bases`)."""
        commit = layers.clean_commit(ws.root)
        if commit is None or commit != ws.synced_head:
            return
        repository = repository_of(ws.workspace_id)
        key = index_key(base_id(repository, commit))
        with self._bases_lock:
            if key in self._bases or index_exists(self._settings, key):
                self._bases.add(key)
                return
            started = time.perf_counter()
            # Copied under the lock maintenance takes too: it rewrites the full-text index and
            # deletes the files of old versions, which the copy of a version is reading.
            with ws.write_lock:
                tables = ws.snapshot()
                if tables is None:
                    return
                try:
                    layers.write_base(self._settings, ws.key, tables, repository, commit, ws.root)
                except (OSError, RuntimeError, ValueError) as exc:
                    _log.warning("could not write a base of %s", repository,
                                 extra={"commit": commit, "detail": str(exc)})
                    return
            self._bases.add(key)
        _log.info("base written", extra={"repository": repository, "commit": commit, "key": key,
                                         "ms": round((time.perf_counter() - started) * 1000, 1)})
        registry = IndexRegistry(index_root(self._settings), dict(self._settings.retrieval.storage_options))
        for stale in layers.collectable_bases(registry.entries()):
            if base_repository(stale.workspace_id) == repository:
                self.drop(stale.key)

    # --- IndexWorkspace ---

    def _workspace_to_sync(self, root_text: str, force: bool, workspace_id: str = "") -> WorkspaceWriter:
        """The workspace, unless it is a folder never indexed without force and has no index
        yet (one made with force stays in sync without it)."""
        root = validated_root(root_text)
        if not force:
            refusal = guards.folder_refusal(root, guards.home_folder())
            if refusal is not None and not self._indexed_before(root, workspace_id):
                raise IndexRefused(refusal)
        return self.workspace(root_text, workspace_id)

    def _indexed_before(self, root: Path, workspace_id: str) -> bool:
        try:
            key = index_key(workspace_id_for(self._settings, root, workspace_id))
        except InvalidWorkspaceId as exc:
            raise InvalidQuery(str(exc)) from None
        with self._lock:
            known = self._workspaces.get(key)
        if known is None and not index_exists(self._settings, key):
            # Checked first so that a refused folder gets no state of its own.
            return False
        return (known or self.workspace(str(root), workspace_id)).catalog.identity is not None

    def index(self, root_text: str, *, wait_for_embeddings: bool, force: bool = False,
              workspace_id: str = "", workers: int = 0, wait_s: float | None = None,
              cancelled: threading.Event | None = None) -> Iterator[IndexProgress]:
        """Sync a workspace, streaming progress; `workers` > 1 spreads the files to chunk over
        that many workers (a cold index of a large workspace). `wait_s` (the caller's deadline,
        at most long_rpc_timeout_s) and `cancelled` (set when the caller goes away) bound a wait
        for workers started elsewhere (retrieval.shard_runner = job)."""
        if self._settings.retrieval.shard_runner != "job" and workers > (most := MAX_WORKERS_PER_CORE * usable_cores()):
            raise InvalidQuery(f"workers={workers} is far more than the {most // MAX_WORKERS_PER_CORE} cores this "
                               f"index writer has (its shard workers are processes of its machine); give at most "
                               f"{most}, or run them as an Indexed Job (retrieval.shard_runner = job)")
        ws = self._workspace_to_sync(root_text, force, workspace_id)
        updates: queue.Queue[IndexProgress] = queue.Queue()
        patience = (self._settings.long_rpc_timeout_s if wait_s is None
                    else min(wait_s, self._settings.long_rpc_timeout_s))
        caller = IndexCaller(time.monotonic() + patience, cancelled or threading.Event())
        running, job = ws.join_sync(updates.put, force=force, workers=workers, caller=caller)
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

    def _wait_for_embeddings(self, ws: WorkspaceWriter) -> Iterator[IndexProgress]:
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

    # --- Sync ---

    def sync(self, root_text: str, budget_s: float | None, *, force: bool = False,
             workspace_id: str = "") -> SyncOutcome:
        """Sync a workspace within a budget (None: until done); see `WorkspaceWriter.sync`."""
        if budget_s is not None and budget_s < 0:
            raise InvalidQuery(f"sync budget must not be negative, got {budget_s}")
        with self._interactive.running():
            return self._workspace_to_sync(root_text, force, workspace_id).sync(budget_s, force=force)

    # --- DropIndex ---

    def drop(self, key: str) -> int:
        """Delete an index whole (its tables, its registry row); the bytes it held. A sync of
        its workspace later starts a new one."""
        options = dict(self._settings.retrieval.storage_options)
        entries = IndexRegistry(index_root(self._settings), options).entries()
        users = [e.workspace_id for e in entries if e.kind == CHECKOUT and e.base == key]
        if users:
            raise InvalidQuery(f"this base is where {len(users)} checkout index(es) started from, and their tables "
                               f"read its files: drop them first ({', '.join(sorted(users)[:3])})")
        with self._lock:
            ws = self._workspaces.pop(key, None)
        if ws is not None:
            ws.close(timeout=5.0)
        if not index_exists(self._settings, key):
            raise IndexNotFound(f"no index with key {key}")
        uri = index_uri(self._settings, key)
        db = lancedb.connect(uri, storage_options=options or None)
        freed = 0
        if is_local_uri(uri):
            freed = tree_bytes(uri.removeprefix("file://"))
        for name in list_tables(db):
            db.drop_table(name)
        if is_local_uri(uri):
            shutil.rmtree(uri.removeprefix("file://"), ignore_errors=True)
            shutil.rmtree(self._settings.state_dir / "workspaces" / key, ignore_errors=True)
        IndexRegistry(index_root(self._settings), options).unregister(key)
        _log.info("dropped index", extra={"key": key, "bytes": freed})
        return freed


def _added(first: SyncStats, then: SyncStats) -> SyncStats:
    """What two syncs in a row did together; skips are the later scan's (each scan counts all)."""
    summed = SyncStats(**{f.name: getattr(first, f.name) + getattr(then, f.name)
                          for f in dataclasses.fields(SyncStats)})
    return dataclasses.replace(summed, files_skipped=then.files_skipped)

