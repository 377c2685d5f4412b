"""Searchers: the read-only role. They answer Search, FindHubs, GetIndexStatus and ListIndexes
from what the index writer committed, and never write: a search of an index that does not
exist answers NOT_INDEXED and creates nothing (no folder, no table, no registry row).

A searcher opens each index with a read-consistency interval (`retrieval.searcher_refresh_s`):
every query first checks, at most that often, whether the writer committed a newer version, so
an incremental sync becomes visible without a restart, and a query always reads one committed
version whole (LanceDB versions are immutable). Locally the interval is 0 (the check is a
directory listing); on an object store it defaults to 1 s (each check is a LIST request).

In one process with the writer (the local default), the searcher also reads the writer's live
state (a sync running, its error, the background embedder) through `LiveWriter`; a remote
searcher reads the same facts from the catalog's manifest rows instead.
"""

from __future__ import annotations

import contextvars
import dataclasses
import gc
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Protocol

import lancedb

from codecompass.clients.embedding import EmbeddingClient
from codecompass.common.config import Settings
from codecompass.common.logging import get_logger
from codecompass.common.records import evolve
from codecompass.contracts.analysis.model import SkippedFile
from codecompass.contracts.retrieval.errors import (
    DependencyUnavailable,
    EmbeddingFailed,
    EmbeddingUnavailable,
    IndexRefused,
    InvalidQuery,
)
from codecompass.contracts.retrieval.filters import FilterError, Filters, relative_patterns
from codecompass.contracts.retrieval.model import (
    HubOutcome,
    HubQuery,
    HubResult,
    IndexingStatus,
    IndexStatusReport,
    IndexSummary,
    ResultCompleteness,
    SearchMetadata,
    SearchOutcome,
    SearchQuery,
    WorkspaceSearch,
)
from codecompass.policy import shape as q
from codecompass.policy.learned import Rankers, remember_words
from codecompass.policy.ranking import (
    DEFAULT_HUB_POLICY,
    DEFAULT_POLICY,
    FUSION_ONLY,
    ORIGIN_BASE,
    ORIGIN_CHECKOUT,
    PRIMARY_VECTORS,
    STATIC_VECTORS,
    STRUCTURE,
    RankedResult,
    hub_eligible,
    hub_scores,
)
from codecompass.policy.relevance import QueryFocus, relevance, resolve_focus
from codecompass.policy.shape import length_problem as query_length_problem
from codecompass.policy.workspaces import fair_share
from codecompass.retrieval import guards
from codecompass.retrieval.catalog import CatalogSummary, open_catalog_table, read_summary, skips_from_json
from codecompass.retrieval.interactive import InteractiveWork
from codecompass.retrieval.location import (
    BASE,
    CHECKOUT,
    IndexRegistry,
    InvalidWorkspaceId,
    index_exists,
    index_key,
    index_root,
    index_uri,
    is_local_uri,
    validated_id,
    validated_root,
    workspace_id_for,
)
from codecompass.retrieval.mirror import IndexMirror, mirrorable
from codecompass.retrieval.schema import INDEX_FORMAT_VERSION
from codecompass.retrieval.search.chunk_reader import ChunkReader, VectorCounts
from codecompass.retrieval.search.hybrid import (
    SKIP_DIMENSION_MISMATCH,
    SKIP_EMBEDDING_UNAVAILABLE,
    SKIP_NO_VECTORS,
    channel_pool,
    hybrid_search,
    lexical_candidates,
)
from codecompass.retrieval.static_channel import StaticChannel

_log = get_logger(__name__)

# A query embedding slower than this is not worth waiting for: lexical answers alone.
QUERY_EMBED_TIMEOUT_S = 2.0
# Reason reported when the embedding service now runs another model than the index's.
SKIP_MODEL_CHANGED = "embedding_model_changed"
_FALLBACK_REASONS = {SKIP_EMBEDDING_UNAVAILABLE, SKIP_NO_VECTORS, SKIP_DIMENSION_MISMATCH, SKIP_MODEL_CHANGED}
# How often an object-store index is checked for a newer version when not configured.
OBJECT_STORE_REFRESH_S = 1.0
# A local copy is refreshed by listing the index's prefix: not more often than this.
MIN_MIRROR_REFRESH_S = 0.1


class LiveWriter(Protocol):
    """The writer in the same process, as a searcher sees it (writer.IndexWriter)."""

    def state(self, key: str): ...

    def note_model_changed(self, key: str) -> None: ...

    def attend(self, root: Path, workspace_id: str, key: str) -> None: ...

    def catalog_summary(self, key: str) -> tuple[int, CatalogSummary] | None: ...


@dataclass(frozen=True)
class _Target:
    key: str
    workspace_id: str
    root: Path | None  # None: named by id only (a searcher needs no copy of the files)


class IndexReader:
    """One index as a searcher reads it: its catalog's summary and the chunk store of the
    identity the catalog names, both re-read when the writer committed a newer version."""

    def __init__(self, key: str, uri: str, storage_options: dict[str, str], refresh_s: float,
                 mirror: IndexMirror | None = None,
                 local: Callable[[], tuple[int, CatalogSummary] | None] = lambda: None) -> None:
        self.key = key
        # The summary a writer in this process holds in memory, and the catalog version it is of
        # (None: this process does not write the index): taken when it is of the version read.
        self._local = local
        self._stop = threading.Event()
        if mirror is not None:
            # Read the local copy (every query sees its newest manifest); a thread keeps it current.
            mirror.refresh()
            threading.Thread(target=self._keep_current, args=(mirror, max(refresh_s, MIN_MIRROR_REFRESH_S)),
                             name=f"mirror-{key[:8]}", daemon=True).start()
            uri, storage_options, refresh_s = str(mirror.folder), {}, 0.0
        self._uri = uri
        # Tables are moved to the newest version by `current`, once per query at most: a
        # consistency interval on the connection would check again in every table operation (a
        # search makes several), measured +15 ms at p95 on ws-300k.
        self._db = lancedb.connect(uri, storage_options=storage_options or None)
        self._refresh_s = refresh_s
        self._checked = time.monotonic()
        table = open_catalog_table(self._db)
        if table is None:
            self.close()
            raise FileNotFoundError(uri)
        self._catalog = table
        # The catalog's newest version is listed through its dataset (µs; see
        # ChunkReader.checkout_latest), and the table moved only when that differs.
        self._catalog_data = table.to_lance()
        self._catalog_version = table.version
        self._lock = threading.Lock()
        self._summary: CatalogSummary | None = None
        self._summary_version = -1
        self._store: ChunkReader | None = None
        # The files changed since the base the index started from, per catalog version.
        self._changed: tuple[int, frozenset[str]] | None = None

    def _keep_current(self, mirror: IndexMirror, every_s: float) -> None:
        while not self._stop.wait(every_s):
            try:
                mirror.refresh()
            except OSError as exc:  # the store unreachable for a while: keep serving the copy
                _log.warning("could not refresh the local copy of index %s: %s", self.key, exc)

    def close(self) -> None:
        self._stop.set()

    def current(self) -> tuple[CatalogSummary, ChunkReader | None]:
        """The catalog's summary and the store it names, as of the newest committed version."""
        with self._lock:
            now = time.monotonic()
            refresh = now - self._checked >= self._refresh_s
            if refresh:
                self._checked = now
                if self._catalog_data.latest_version != self._catalog_version:
                    self._catalog.checkout_latest()
                    self._catalog_version = self._catalog.version
            version = self._catalog_version
            if self._summary is None or version != self._summary_version:
                local = self._local()
                self._summary = local[1] if local is not None and local[0] == version else read_summary(self._catalog)
                self._summary_version = version
            summary = self._summary
            identity = summary.identity
            store = self._store
            if identity is None:
                store = None
            elif store is None or (store.model, store.chunker_version, store.static) != (
                    identity.model, identity.chunker_version, identity.static):
                store = ChunkReader.attach(self._db, self._uri, model=identity.model,
                                          chunker_version=identity.chunker_version, static=identity.static)
            elif refresh:
                # Only a store the catalog still names: the writer drops the table of a model it
                # moved away from once the new one is complete, and moving a dropped table to its
                # newest version fails (every search of the index did, until a restart).
                store.checkout_latest()
            self._store = store
            return summary, store


    def changed_since_base(self, summary: CatalogSummary, base: CatalogSummary) -> frozenset[str]:
        """Paths whose content differs from the base's (added or changed in this checkout)."""
        with self._lock:
            if self._changed is None or self._changed[0] != self._summary_version:
                changed = frozenset(p for p, h in summary.hashes.items() if base.hashes.get(p) != h)
                self._changed = (self._summary_version, changed)
            return self._changed[1]


class ReadAhead:
    """While no search or sync has run for QUIET_S, builds the chunks of the index searched last
    that no search has read yet, and splits them into the ranker's words, a batch at a time.

    An agent's questions are mostly new ones, and a new question's candidates are mostly rows no
    search read before: on ws-300k through MCP, a question not asked before answered at p50 96 ms
    where a repeated one took 71 (2026-12-01), as each never-read candidate cost ~50 µs to build
    and ~90 µs to split into words. An agent's questions come seconds apart, while its model
    thinks: the reading happens then. Batches are small (a few ms), so a search that arrives
    waits for little; it stops once every row is read or the chunk cache is full, and starts
    again on the rows a commit wrote. Only for an index that is READY."""

    QUIET_S = 1.0
    BATCH = 32

    def __init__(self, interactive: InteractiveWork) -> None:
        self._interactive = interactive
        self._store: ChunkReader | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        threading.Thread(target=self._run, name="read ahead", daemon=True).start()

    def searched(self, store: ChunkReader) -> None:
        self._store = store
        self._wake.set()

    def close(self) -> None:
        self._stop.set()
        self._wake.set()

    def _run(self) -> None:
        while self._wake.wait() and not self._stop.is_set():
            self._interactive.wait_idle(self._stop, self.QUIET_S)
            store = self._store
            if store is None or self._stop.is_set():
                continue
            try:
                chunks = store.read_ahead(self.BATCH)
                remember_words(chunks)
            except Exception as exc:  # noqa: BLE001 - a table dropped or unreadable meanwhile: searches say so
                _log.debug("read-ahead stopped: %s", exc)
                chunks = []
            if chunks:
                # What the caches now hold lives until it is evicted (freed then by its count of
                # references: cached chunks and words hold no cycles), so it leaves the collector's
                # sight, as startup's objects do (`serving`). Left in it, every chunk of ws-300k
                # read ahead made ~300k tracked objects, and a full collection, which stops every
                # thread, took 250-300 ms in the middle of a search; after this, 2 ms. The
                # collection first, of what the last batch made: garbage frozen would never go.
                gc.collect()
                gc.freeze()
            else:
                # Until the next search: it may be of another index, or find a new version.
                self._wake.clear()


class IndexSearcher:
    """The searcher role: reads over every index under the index root."""

    def __init__(
        self,
        settings: Settings,
        embedding: EmbeddingClient,
        static: StaticChannel,
        interactive: InteractiveWork,
        *,
        writer: LiveWriter | None = None,
        query_embed_timeout_s: float = QUERY_EMBED_TIMEOUT_S,
    ) -> None:
        self._settings = settings
        self._embedding = embedding
        self._static = static
        self._interactive = interactive
        self._writer = writer
        self._query_embed_timeout_s = query_embed_timeout_s
        retrieval = settings.retrieval
        self._options = dict(retrieval.storage_options)
        root = index_root(settings)
        self._refresh_s = (retrieval.searcher_refresh_s if retrieval.searcher_refresh_s is not None
                           else 0.0 if is_local_uri(root) else OBJECT_STORE_REFRESH_S)
        # The learned rankers, one per primary model, loaded once (None: the hand-set stack ranks alone).
        self._rankers = Rankers(retrieval.ranker_model) if retrieval.learned_ranking else None
        self._readers: dict[str, IndexReader] = {}
        self._lock = threading.Lock()
        self._query_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="query-embed")
        # Whether the embedding service last said it blocked an external provider, per index.
        self._blocked: dict[str, bool] = {}
        # The catalogs of the bases indexes started from: a base never changes once written.
        self._bases: dict[str, CatalogSummary] = {}
        self._read_ahead = ReadAhead(interactive)

    def close(self) -> None:
        self._read_ahead.close()
        self._query_pool.shutdown(wait=False, cancel_futures=True)
        with self._lock:
            readers = list(self._readers.values())
        for reader in readers:
            reader.close()

    def forget(self, key: str) -> None:
        """Drop the reader of an index that was deleted."""
        with self._lock:
            reader = self._readers.pop(key, None)
        if reader is not None:
            reader.close()

    def _target(self, root_text: str, workspace_id: str = "") -> _Target:
        if workspace_id:
            try:
                wid = validated_id(workspace_id)
            except InvalidWorkspaceId as exc:
                raise InvalidQuery(str(exc)) from None
            root = validated_root(root_text) if root_text else None
            return _Target(index_key(wid), wid, root)
        root = validated_root(root_text)
        wid = workspace_id_for(self._settings, root)
        return _Target(index_key(wid), wid, root)

    def _reader(self, key: str, target: _Target | None = None) -> IndexReader | None:
        with self._lock:
            reader = self._readers.get(key)
        if reader is not None:
            return reader
        try:
            exists = index_exists(self._settings, key)
        except (OSError, RuntimeError) as exc:
            raise DependencyUnavailable(
                f"the index store at {index_root(self._settings)} is unreachable: {exc}") from None
        if not exists:
            return None
        if self._writer is not None and target is not None and target.root is not None:
            self._writer.attend(target.root, target.workspace_id, key)
        uri = index_uri(self._settings, key)
        mirror = (IndexMirror(uri, self._options, self._settings.state_dir / "index-cache" / key)
                  if self._settings.retrieval.searcher_cache and mirrorable(uri) else None)
        try:
            reader = IndexReader(key, uri, self._options, self._refresh_s, mirror,
                                 local=partial(self._writer.catalog_summary, key) if self._writer is not None
                                 else lambda: None)
        except FileNotFoundError:  # dropped between the check and the open
            return None
        except (OSError, RuntimeError) as exc:
            raise DependencyUnavailable(
                f"the index store at {index_root(self._settings)} is unreachable: {exc}") from None
        with self._lock:
            kept = self._readers.setdefault(key, reader)
        if kept is not reader:  # another query opened it meanwhile
            reader.close()
        return kept

    def _live(self, key: str):
        return self._writer.state(key) if self._writer is not None else None

    # --- Search ---

    def load_rankers(self) -> None:
        """The learned ranker, loaded now rather than by the first search."""
        if self._rankers is not None:
            self._rankers.load()

    def search(self, request: SearchQuery) -> SearchOutcome:
        with self._interactive.running():
            if request.workspaces:
                return self._search_workspaces(request)
            return self._search(request)

    def _search_workspaces(self, request: SearchQuery) -> SearchOutcome:
        """Each workspace searched alone (one after another: a search already spreads its channels
        over this process's pools), the results merged by the fair-share rule of the ranking policy
        (`policy.workspaces`) within the limit, judged by the relevance the gateway's gate uses."""
        if request.workspace_root or request.workspace_id:
            raise InvalidQuery("name the workspaces either in workspaces or in workspace_root and workspace_id, "
                               "not both")
        searched: dict[str, SearchOutcome] = {}
        for ref in request.workspaces:
            target = self._target(ref.workspace_root, ref.workspace_id)
            if target.workspace_id not in searched:  # a workspace named twice is searched once
                searched[target.workspace_id] = self._search(dataclasses.replace(
                    request, workspace_root=ref.workspace_root, workspace_id=ref.workspace_id, workspaces=()))
        focus = resolve_focus(QueryFocus.AUTO, request.shape or q.analyze(request.query))
        groups = [list(zip(outcome.results, relevance([r.score for r in outcome.results],
                                                      [r.chunk for r in outcome.results],
                                                      outcome.metadata.confidence, focus), strict=True))
                  for outcome in searched.values()]
        kept = fair_share(groups, request.limit or self._settings.retrieval.default_limit,
                          self._settings.gateway.confidence_threshold, relevance=lambda pair: pair[1])
        most_confident = max(searched.values(), key=lambda outcome: outcome.metadata.confidence)
        return SearchOutcome(results=tuple(result for _, (result, _) in kept), metadata=most_confident.metadata,
                             workspaces=tuple(WorkspaceSearch(wid, outcome.metadata)
                                              for wid, outcome in searched.items()))

    def _search(self, request: SearchQuery) -> SearchOutcome:
        target = self._target(request.workspace_root, request.workspace_id)
        if not request.query.strip():
            raise InvalidQuery("query must not be empty")
        if (too_long := query_length_problem(request.query)) is not None:
            raise InvalidQuery(too_long)
        retrieval = self._settings.retrieval
        ratio = retrieval.semantic_ratio if request.semantic_ratio is None else request.semantic_ratio
        if not 0.0 <= ratio <= 1.0:
            raise InvalidQuery(f"semantic_ratio must be within [0, 1], got {ratio}")
        limit = request.limit or retrieval.default_limit
        # The clock includes moving to the index's newest version, which the caller waits for
        # too: after an edit, 10-15 ms on ws-300k (the catalog's summary read again, the chunk
        # table reopened).
        started = time.perf_counter()
        reader = self._reader(target.key, target)
        summary, store = reader.current() if reader is not None else (None, None)
        try:
            filters = relative_patterns(request.filters, _root_of(target, summary))
        except FilterError as exc:
            raise InvalidQuery(f"invalid filter: {exc}") from None
        live = self._live(target.key)

        query_future = (
            self._query_pool.submit(contextvars.copy_context().run, self._embed_query, request.query)
            if ratio > 0
            else None
        )
        # A read: the index as it stands. Syncing is the Sync call's job, never a search's; an
        # index that does not exist answers NOT_INDEXED and nothing is created for it.
        if store is None:
            if query_future is not None:
                query_future.cancel()
            status, _ = _index_status(summary, None, live)
            return SearchOutcome(
                results=(),
                metadata=self._metadata(None, status, ResultCompleteness.PARTIAL, started),
            )
        assert summary is not None, "a store comes only from a reader, which reads it with its summary"
        # The version's vector snapshot (after an edit: the fragments its commit wrote) is read
        # while the full-text query runs, which needs none of it: both are mostly Lance's native
        # reads, on two cores (7 ms of the first search after an edit on ws-300k, before the hits).
        self._query_pool.submit(store.vector_snapshot)

        # Sub-millisecond and in process: embedded while the primary embedding is under way.
        static_query = self._static_query(store, request.query) if query_future is not None else None
        # So are the text channels, which need no query vector: the embedding's round trip
        # (~13 ms with code-small) no longer comes before them.
        shape = request.shape or q.analyze(request.query)
        pool = channel_pool(limit, request.candidate_pool or retrieval.candidate_pool)
        lexical = lexical_candidates(store, shape, request.query, filters, pool) if ratio < 1.0 else None
        blocked = self._blocked.get(target.key, live.external_provider_blocked if live is not None else False)
        query_vector, unavailable_reason = None, SKIP_EMBEDDING_UNAVAILABLE
        if query_future is not None:
            try:
                embedded_query = query_future.result(timeout=self._query_embed_timeout_s)
            except (EmbeddingUnavailable, EmbeddingFailed, FutureTimeout) as exc:
                _log.info("query embedding unavailable, answering %s: %s",
                          "by static vectors" if static_query is not None else "lexically", exc)
            else:
                blocked = embedded_query.external_provider_blocked
                self._blocked[target.key] = blocked
                if embedded_query.model != store.model:
                    if self._writer is not None:
                        self._writer.note_model_changed(target.key)
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
        outcome = hybrid_search(
            store,
            request.query,
            query_vector=query_vector,
            filters=filters,
            limit=limit,
            semantic_ratio=ratio,
            candidate_pool=pool,
            policy=DEFAULT_POLICY if request.ranked else FUSION_ONLY,
            unavailable_reason=unavailable_reason,
            static_query_vector=static_query,
            model=self._rankers.for_provider(store.model.provider) if request.ranked and self._rankers else None,
            shape=shape,
            lexical=lexical,
        )
        status, _ = _index_status(summary, (counts.total, counts.primary), live)
        if status is IndexingStatus.READY:
            # Not while the index is written: its rows change under the reading, and the writing
            # needs the cores.
            self._read_ahead.searched(store)
        channels = outcome.vector_channels
        # Chunks some channel of this search could find by vector.
        if STATIC_VECTORS in channels and PRIMARY_VECTORS not in channels:
            vector_searchable = counts.static
        elif query_vector is not None and store.static is not None and store.static == self._static.model():
            vector_searchable = counts.primary + counts.static_only
        else:
            vector_searchable = counts.primary
        if not (summary.complete and vector_searchable >= counts.total):
            completeness = ResultCompleteness.PARTIAL
        elif outcome.truncated:
            completeness = ResultCompleteness.TRUNCATED
        else:
            completeness = ResultCompleteness.COMPLETE
        reason = outcome.semantic_skipped_reason or ""
        metadata = self._metadata(
            store,
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
            answerability=outcome.answerability,
            missing_names=outcome.missing_names,
            nearest_names=outcome.nearest_names,
            # Counted only under a filter: an empty answer then may mean the filter, not the query.
            filtered_chunks=store.count_matching(filters) if filters != Filters() else counts.total,
            channels=_channel_coverage(channels, counts),
            primary_unavailable_reason=(
                unavailable_reason if STATIC_VECTORS in channels and PRIMARY_VECTORS not in channels else ""
            ),
        )
        base_key, base_commit = summary.base
        results = tuple(evolve(r, workspace_id=target.workspace_id) for r in outcome.results)
        if base_key and reader is not None and (base := self._base_catalog(base_key)) is not None:
            changed = reader.changed_since_base(summary, base)
            results = tuple(evolve(r, origin=ORIGIN_CHECKOUT if r.chunk.relative_path in changed else ORIGIN_BASE)
                            for r in results)
        return SearchOutcome(results=results, metadata=dataclasses.replace(metadata, base_commit=base_commit))

    def _base_catalog(self, key: str) -> CatalogSummary | None:
        """The catalog of the base `key`, read once; None when it is gone (collected)."""
        with self._lock:
            known = self._bases.get(key)
        if known is not None:
            return known
        try:
            table = open_catalog_table(lancedb.connect(index_uri(self._settings, key),
                                                       storage_options=self._options or None))
            summary = read_summary(table) if table is not None else None
        except (OSError, RuntimeError, ValueError):
            summary = None
        if summary is not None:
            with self._lock:
                self._bases[key] = summary
        return summary

    def _static_query(self, store: ChunkReader, text: str):
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
        store: ChunkReader | None,
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
        answerability: float | None = None,
        missing_names: tuple[str, ...] = (),
        nearest_names: tuple[str, ...] = (),
        filtered_chunks: int = 0,
        channels: tuple[tuple[str, int], ...] = (),
        primary_unavailable_reason: str = "",
    ) -> SearchMetadata:
        model = store.model if store is not None else None
        static = store.static if store is not None else None
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
            answerability=answerability,
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

    # --- FindHubs ---

    def find_hubs(self, request: HubQuery) -> HubOutcome:
        """The structure stage: symbols connected to several seeds by index-time references.
        A read like search: never syncs."""
        started = time.perf_counter()
        reader = self._reader(self._target(request.workspace_root, request.workspace_id).key)
        store = reader.current()[1] if reader is not None else None
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

    # --- GetIndexStatus / ListIndexes ---

    def status(self, root_text: str, workspace_id: str = "") -> IndexStatusReport:
        """The state of a workspace's index. A folder that is refused (and was never indexed
        with force) has no index to report on: its status is the refusal."""
        target = self._target(root_text, workspace_id)
        reader = self._reader(target.key, target)
        if reader is None and target.root is not None:
            refusal = guards.folder_refusal(target.root, guards.home_folder())
            if refusal is not None:
                raise IndexRefused(refusal)
        return self._report(target.key, reader, target.workspace_id, str(target.root or ""))

    def list_indexes(self) -> list[IndexSummary]:
        """Every index under the index root, by workspace id."""
        out = []
        entries = IndexRegistry(index_root(self._settings), self._options).entries()
        ids = {entry.key: entry.workspace_id for entry in entries}
        for entry in entries:
            reader = self._reader(entry.key)
            if reader is None:
                continue  # registered, then dropped or never written
            status = self._report(entry.key, reader, entry.workspace_id, entry.root)
            if entry.kind == BASE:  # its catalog is the checkout's it was copied from
                status = dataclasses.replace(status, workspace_id=entry.workspace_id, base_commit=entry.commit)
            out.append(IndexSummary(
                workspace_id=entry.workspace_id, key=entry.key, root=entry.root, host=entry.host, status=status,
                kind=entry.kind, base_workspace_id=ids.get(entry.base, ""),
                used_by=tuple(e.workspace_id for e in entries if e.kind == CHECKOUT and e.base == entry.key
                              and entry.kind == BASE)))
        return out

    def _report(self, key: str, reader: IndexReader | None, workspace_id: str, root: str) -> IndexStatusReport:
        summary, store = reader.current() if reader is not None else (None, None)
        live = self._live(key)
        vectors = store.vector_counts() if store is not None else VectorCounts(0, 0, 0, 0)
        counts = (vectors.total, vectors.primary)
        status, error = _index_status(summary, counts, live)
        identity = summary.identity if summary is not None else None
        model = store.model if store is not None else None
        static = store.static if store is not None else None
        synced = [t for t in (live.synced_at if live is not None else None,
                              summary.synced_at if summary is not None else None) if t is not None]
        return IndexStatusReport(
            indexing_status=status,
            files=summary.files if summary is not None else 0,
            chunks=counts[0],
            embedded_chunks=counts[1],
            embedding_model_id=model.model_id if model else "",
            embedding_model_version=model.model_version if model else "",
            index_format_version=(
                f"format={INDEX_FORMAT_VERSION};chunker={identity.chunker_version}" if identity else ""
            ),
            error=error,
            index_bytes=store.size_bytes() if store is not None else 0,
            last_sync_at=max(synced, default=None),
            skipped=_skipped(summary, live),
            static_vector_chunks=vectors.static,
            static_model_id=static.model_id if static else "",
            static_model_version=static.model_version if static else "",
            workspace_id=(summary.meta.get("workspace_id") if summary is not None else "") or workspace_id,
            root=(summary.meta.get("root") if summary is not None else "") or root,
            base_commit=summary.base[1] if summary is not None else "",
        )


def _index_status(summary: CatalogSummary | None, counts: tuple[int, int] | None,
                  live) -> tuple[IndexingStatus, str]:
    """The index's state, and the last error. A failed sync of a complete index (say, the
    analysis service is down) leaves that index as it was and searchable: its status stays
    what its rows say, with the error; only a first index that could not finish is FAILED.
    A remote searcher knows a sync runs (or was cut short) by the catalog's pending marks."""
    if summary is None:
        return (IndexingStatus.INDEXING if live is not None and live.busy else IndexingStatus.NOT_INDEXED), ""
    sync_error = live.sync_error if live is not None else summary.meta.get("last_error", "")
    if sync_error and not summary.complete:
        return IndexingStatus.FAILED, sync_error
    busy = live.busy if live is not None else bool(summary.pending)
    if not summary.complete or counts is None:
        return (IndexingStatus.INDEXING if busy else IndexingStatus.NOT_INDEXED), sync_error
    # A complete index changes only once a sync has files to write: the freshness check before
    # every search (a sync that finds nothing) leaves it READY.
    writing = live.writing if live is not None else busy
    if writing:
        return IndexingStatus.INDEXING, sync_error
    total, embedded = counts
    if embedded < total:
        if live is not None and live.embedder_error and not live.embedder_running:
            return IndexingStatus.FAILED, live.embedder_error
        return IndexingStatus.INDEXING, sync_error
    return IndexingStatus.READY, sync_error


def _skipped(summary: CatalogSummary | None, live) -> tuple[SkippedFile, ...]:
    """What the last sync left out: the scan's skips (live, or as the manifest recorded them)
    and the files chunking skipped."""
    if summary is None:
        return ()
    scan = live.scan_skipped if live is not None and live.scan_skipped else skips_from_json(
        summary.meta.get("scan_skipped", ""))
    chunking = [SkippedFile(path, reason, detail) for path, reason, detail in summary.skipped]
    return tuple(sorted([*scan, *chunking], key=lambda s: s.relative_path))


def _root_of(target: _Target, summary: CatalogSummary | None) -> Path:
    """The folder absolute filter paths are relative to: the request's, else the one the index
    was last synced from."""
    if target.root is not None:
        return target.root
    recorded = summary.meta.get("root", "") if summary is not None else ""
    return Path(recorded or "/")


def _channel_coverage(channels: tuple[str, ...], counts: VectorCounts) -> tuple[tuple[str, int], ...]:
    """(channel, chunks it searched) for each vector channel a search ran on: the primary one
    its embedded rows; the static one the rest, or every row it has when it answered alone."""
    alone = PRIMARY_VECTORS not in channels
    return tuple(
        (name, counts.primary if name == PRIMARY_VECTORS else (counts.static if alone else counts.static_only))
        for name in channels
    )


def _ms_since(started: float) -> float:
    return (time.perf_counter() - started) * 1000
