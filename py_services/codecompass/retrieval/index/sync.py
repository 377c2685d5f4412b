"""One incremental sync of a workspace's index with its files (blueprint 000, "Incremental
Indexing"): scan diff → re-chunk changed files → diff chunk ids → reuse or queue vectors →
signature cascade → static vectors → write → catalog commit.

Static vectors (the in-process static model, see `static_channel`) are computed for every chunk
a write upserts, lexical-first pass included, and go into the same commit: a chunk is
searchable semantically the moment it is searchable lexically. The primary model's vectors
still come from the embedding service (inline for edit-sized syncs, else in the background).
When the primary model *is* the static model (the `code-static` profile), the in-process
vectors are the primary ones: they fill the primary column instead, and no second column
holds the same numbers twice.

Write batching: a sync whose changes fit one flush (every edit-sized sync) makes exactly one
`apply_changes`, i.e. one table version. A cold index of a large workspace flushes in
geometrically growing batches instead, so the first few hundred chunks become searchable
lexically within seconds, memory stays bounded, and the number of versions (and full-text
index refreshes) grows only logarithmically with the workspace. Every flush is followed by its
own catalog commit, which is what makes an interrupted cold index resume where it stopped.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace

import numpy as np

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.embedding import EmbeddingClient
from codecompass.common.chunks import Chunk
from codecompass.common.logging import get_logger
from codecompass.common.testcode import is_test_path
from codecompass.contracts.analysis.model import ChunkedFile, FileEntry, FileStatus, ScanResult
from codecompass.contracts.embedding.model import EmbeddingModel
from codecompass.contracts.retrieval.errors import DependencyUnavailable, EmbeddingFailed, EmbeddingUnavailable
from codecompass.contracts.retrieval.model import IndexPhase, IndexProgress, SyncStats
from codecompass.policy.ranking import declaration_path, example_path, vendored_path
from codecompass.retrieval.catalog import Catalog, CatalogEntry, IndexedChunk, signature_digest
from codecompass.retrieval.index.chunk_writer import ChunkWriter
from codecompass.retrieval.index.rows import Batch, BatchSizes, chunk_in_batches
from codecompass.retrieval.static_channel import StaticChannel

_log = get_logger(__name__)

ProgressFn = Callable[[IndexProgress], None]


class SyncInterrupted(DependencyUnavailable):
    """The service is shutting down; the sync stopped at a batch boundary."""


@dataclass(frozen=True)
class SyncTuning:
    # Without a static channel, up to this many new chunks are embedded inside the sync, so the
    # search right after an edit already finds the edited code semantically; more (a cold
    # index, a branch switch) are left to the background embedder so the lexical index is not
    # held back. A chunk written with a static vector is found semantically already.
    inline_embed_limit: int = 64
    # First flush small (a cold workspace answers lexically quickly), then doubling.
    first_flush_chunks: int = 500
    max_flush_chunks: int = 16_000
    # Files per ChunkFiles call: bounds one stream's deadline and the work lost to a failure.
    files_per_call: int = 256
    # A sync that chunks at least this many files writes them syntactically first (no type
    # checker: ~50k lines/s) so they are searchable lexically within seconds, then re-chunks
    # them with one-hop references, which needs the whole Program built first (measured:
    # 33 s to a first answer on a 360k-line cold workspace without this pass).
    lexical_first_min_files: int = 200


def lexical_first_order(relative_path: str) -> int:
    """Where a file goes in a cold index's lexical pass: the implementation first, then examples,
    docs, scripts, benchmarks, built or vendored code and type declarations, then tests. The first
    flush is what a cold workspace's first answer searches (500 chunks, about 40 files), and
    most questions are about the implementation: in path order, fastify's held 20 example and
    benchmark files and its build scripts before the first file of lib/. Stable within a rank."""
    if is_test_path(relative_path):
        return 2
    if example_path(relative_path) or vendored_path(relative_path) or declaration_path(relative_path):
        return 1
    return 0


def rebase_on_empty_catalog(scan: ScanResult) -> ScanResult:
    """The scan diffed against a catalog that was since reset: everything present is new."""
    return replace(scan, added=tuple(f.relative_path for f in scan.files), changed=(), removed=())


class Syncer:
    """Runs one sync. Callers serialise syncs of a workspace; `write_lock` serialises the
    writes of this sync with those of the background embedder."""

    def __init__(
        self,
        *,
        root: str,
        catalog: Catalog,
        store: ChunkWriter,
        analysis: AnalysisClient,
        embedder: EmbeddingClient | None,
        model: EmbeddingModel,
        write_lock: threading.Lock,
        tuning: SyncTuning = SyncTuning(),
        progress: ProgressFn = lambda _p: None,
        cancel: threading.Event | None = None,
        planned: Callable[[], None] = lambda: None,
        static: StaticChannel | None = None,
    ) -> None:
        self._root = root
        self._catalog = catalog
        self._store = store
        self._analysis = analysis
        self._embedder = embedder
        self._model = model
        self._write_lock = write_lock
        self._tuning = tuning
        self._progress = progress
        self._cancel = cancel or threading.Event()
        # Called once the files this sync will write are marked pending in the catalog (or
        # it found nothing to do): from then on the catalog's pending set is what it lacks.
        self._planned = planned
        self._in_process = InProcessVectors(static, store, model)
        self._stats = SyncStats()
        self._current: dict[str, FileEntry] = {}
        # Files a previous, interrupted sync was writing: the table may hold ids for them that
        # the catalog never recorded, so their stale ids are read from the table itself.
        self._interrupted: frozenset[str] = frozenset()
        # Chunk ids that must be re-embedded even if their snippet is cached (cascade).
        self._force_embed: set[str] = set()
        self._queued: set[str] = set()
        # Chunks the chunking step has produced so far (progress: what it has found, written or not).
        self._chunks_seen = 0
        # Milliseconds per step, for the sync log line (where an edit's overhead goes).
        self.timings: dict[str, float] = {}

    @contextmanager
    def _timed(self, step: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.timings[step] = self.timings.get(step, 0.0) + (time.perf_counter() - started) * 1000

    def run(self, scan: ScanResult) -> SyncStats:
        started = time.perf_counter()
        stats = self._stats
        stats.files_added = len(scan.added)
        stats.files_changed = len(scan.changed)
        stats.files_removed = len(scan.removed)
        stats.files_skipped = len(scan.skipped)
        self._current = {f.relative_path: f for f in scan.files}
        self._interrupted = self._catalog.pending()
        entries = self._catalog.entries()

        to_chunk = list(dict.fromkeys([*scan.added, *scan.changed]))
        chunking = set(to_chunk)
        to_chunk += sorted(p for p in self._interrupted if p in self._current and p not in chunking)
        chunking.update(to_chunk)
        removed = set(scan.removed) | {p for p in self._interrupted if p not in self._current}
        # A file the scanner now skips (e.g. it became minified) leaves the index.
        removed |= {s.relative_path for s in scan.skipped if s.relative_path in entries}
        removed -= chunking

        self._catalog.touch(
            f
            for f in scan.files
            if f.relative_path not in chunking
            and (e := entries.get(f.relative_path)) is not None
            and e.file.content_hash == f.content_hash
            and (e.file.mtime_ns, e.file.size_bytes) != (f.mtime_ns, f.size_bytes)
        )
        if not to_chunk and not removed:
            if not self._catalog.complete:
                self._catalog.commit([], [], complete=True)
            self._planned()
            stats.duration_ms = (time.perf_counter() - started) * 1000
            return stats

        self._catalog.mark_pending([*to_chunk, *removed])
        self._planned()
        # Only files never indexed: rewriting indexed ones without vectors would defeat the
        # snippet-hash vector reuse of the pass that follows.
        unindexed = sorted((p for p in to_chunk if p not in entries), key=lexical_first_order)
        if len(unindexed) >= self._tuning.lexical_first_min_files:
            self._write_lexical_first(unindexed)
            # Their rows now exist without catalog entries; like an interrupted sync's, the
            # stale ids among them are read from the table.
            self._interrupted = self._interrupted | frozenset(unindexed)
        self._queued = set(to_chunk)
        rate = _Rate(len(to_chunk))
        chunk_started = time.perf_counter()

        def arrived(chunked: ChunkedFile) -> None:
            self._queued.discard(chunked.relative_path)
            self._chunks_seen += len(chunked.chunks)

        def gone(path: str) -> None:
            self._queued.discard(path)
            removed.add(path)
            stats.files_vanished += 1

        def report(files_done: int) -> None:
            self._progress(IndexProgress(phase=IndexPhase.CHUNKING, files_done=files_done, files_total=len(to_chunk),
                                         chunks_done=self._chunks_seen, eta_seconds=rate.eta(files_done)))

        self._progress(IndexProgress(phase=IndexPhase.CHUNKING, files_total=len(to_chunk)))
        outcome = chunk_in_batches(
            lambda call: self._analysis.chunk_files(self._root, call), to_chunk,
            files_per_call=self._tuning.files_per_call, sizes=self._flush_sizes(),
            write=lambda batch: self._flush(_by_path(batch), removed=set(), complete=False),
            arrived=arrived, gone=gone, after_file=report, stop=self._cancel.is_set)
        if outcome.stopped:
            # Keep what is chunked; the files not reached stay pending for the next run.
            self._flush(_by_path(outcome.rest), removed=set(), complete=False)
            raise SyncInterrupted("sync interrupted by shutdown; it resumes on the next sync")
        flushed_ms = sum(self.timings.values())
        self.timings["chunk"] = (time.perf_counter() - chunk_started) * 1000 - flushed_ms
        files_done = outcome.rest.files_done
        self._progress(IndexProgress(phase=IndexPhase.WRITING, files_done=files_done, files_total=len(to_chunk),
                                     chunks_done=self._chunks_seen))
        self._flush(_by_path(outcome.rest), removed=removed, complete=True)
        stats.duration_ms = (time.perf_counter() - started) * 1000
        return stats

    def _write_lexical_first(self, paths: list[str]) -> None:
        """Write syntactic chunks of `paths` without vectors and without committing them to
        the catalog: the files stay pending, so the reference pass that follows (or the next
        sync, after a crash) rewrites the same ids with full embedding text, and nothing is
        embedded from the reference-less text."""
        rate = _Rate(len(paths))
        written = 0

        def write(batch: Batch) -> None:
            nonlocal written
            upserts = batch.rows
            vectors, static_vectors = self._in_process_vectors(upserts)
            with self._timed("lexical_first"), self._write_lock:
                self._store.apply_changes(upserts=upserts, delete_ids=[], vectors=vectors,
                                          static_vectors=static_vectors)
            written += len(upserts)

        def write_and_report(batch: Batch) -> None:
            write(batch)
            # Reported at each write: chunks_done is what a search can find now.
            self._progress(IndexProgress(phase=IndexPhase.LEXICAL, files_done=batch.files_done,
                                         files_total=len(paths), chunks_done=written,
                                         eta_seconds=rate.eta(batch.files_done)))

        self._progress(IndexProgress(phase=IndexPhase.LEXICAL, files_total=len(paths)))
        # Stopped by a shutdown, it writes what it has chunked: the files stay pending either way.
        rest = chunk_in_batches(
            lambda call: self._analysis.chunk_files(self._root, call, lexical_only=True), paths,
            files_per_call=self._tuning.files_per_call, sizes=self._flush_sizes(), write=write_and_report,
            stop=self._cancel.is_set).rest
        if rest.rows:
            write(rest)
        self._progress(IndexProgress(phase=IndexPhase.LEXICAL, files_done=rest.files_done, files_total=len(paths),
                                     chunks_done=written, eta_seconds=0.0))

    def _flush_sizes(self) -> BatchSizes:
        return BatchSizes(first=self._tuning.first_flush_chunks, most=self._tuning.max_flush_chunks)

    def _flush(self, files: dict[str, ChunkedFile], *, removed: set[str], complete: bool) -> None:
        stats = self._stats
        with self._timed("cascade"):
            self._cascade(files, removed)
        upserts = [c for f in files.values() if f.status != FileStatus.SKIPPED for c in f.chunks]
        new_ids = {c.id for c in upserts}
        stale: set[str] = set()
        for path in [*files, *removed]:
            entry = self._catalog.get(path)
            if entry is not None:
                stale.update(entry.chunk_ids)
        interrupted = sorted(p for p in [*files, *removed] if p in self._interrupted)
        if interrupted:
            stale.update(self._store.chunk_ids_for_files(interrupted))
        stale -= new_ids

        known: set[str] = set()
        if self._in_process.into_primary:
            # Cheaper to compute than to look up, and always from the chunk's current text.
            vectors, static_vectors = self._in_process_vectors(upserts)
            stats.chunks_embedded += len(vectors)
        else:
            _, static_vectors = self._in_process_vectors(upserts)
            # In an index already complete (an edit), a chunk with a static vector is searchable
            # semantically from this commit on; its primary vector comes from the background
            # embedder right after, off the path of the search waiting for this sync (2 chunks
            # of an edit: 57-88 ms of a 180-230 ms sync on ws-300k). A first index embeds its
            # few chunks here, so that it is written once, under the full-text index it settles with.
            deferred = static_vectors if self._catalog.complete else {}
            # There, the code a file the index has kept is in the rows its chunks replace, which
            # the write reads anyway: those chunks keep their vectors from them, and only a new
            # file's (a move, a copy) are looked up by snippet across the table (11 ms of an
            # edit's sync on ws-300k).
            known = {c.id for path, f in files.items() if self._catalog.get(path) is not None
                     for c in f.chunks if c.id in deferred and c.id not in self._force_embed}
            with self._timed("reuse_vectors"):
                vectors = self._reuse_vectors([c for c in upserts if c.id not in known])
            with self._timed("embed_inline"):
                self._embed_inline([c for c in upserts if c.id not in vectors and c.id not in deferred], vectors)

        with self._timed("write"), self._write_lock:
            stats.embeddings_reused += self._store.apply_changes(
                upserts=upserts, delete_ids=sorted(stale), vectors=vectors, static_vectors=static_vectors,
                keep_vectors=known)
            self._catalog.commit([self._entry(f) for f in files.values()], removed - set(files), complete=complete)
        stats.chunks_upserted += len(upserts)
        stats.chunks_deleted += len(stale)
        stats.files_skipped += sum(1 for f in files.values() if f.status == FileStatus.SKIPPED)
        stats.files_changed_during_sync += sum(
            1 for path, f in files.items()
            if f.content_hash and path in self._current and f.content_hash != self._current[path].content_hash)

    def _cascade(self, files: dict[str, ChunkedFile], removed: set[str]) -> None:
        """Blueprint 000 step 4: a chunk whose signature changed makes every chunk whose
        embedding text quotes that signature stale. Those are re-chunked (the analysis service
        writes embedding_text) and re-embedded even though their own snippet is unchanged.

        Only signature changes of chunks that still exist count: a moved or deleted symbol
        changes its importers' files, which are then dirty on their own."""
        changed_signatures: set[str] = set()
        for path, chunked in files.items():
            entry = self._catalog.get(path)
            if entry is None:
                continue
            old = {c.id: c.signature_digest for c in entry.chunks}
            changed_signatures.update(
                c.id for c in chunked.chunks if c.id in old and old[c.id] != signature_digest(c.signature)
            )
        if not changed_signatures:
            return
        referencing = set(self._store.ids_referencing(sorted(changed_signatures)))
        for chunked in files.values():
            for chunk in chunked.chunks:
                if any(r.chunk_id in changed_signatures for r in chunk.references):
                    referencing.add(chunk.id)
        referencing -= changed_signatures
        if not referencing:
            return
        self._force_embed |= referencing
        self._stats.cascade_reembedded += len(referencing)
        in_hand = {c.id for f in files.values() for c in f.chunks}
        to_rechunk = sorted(
            {
                chunk_path
                for chunk_id in referencing - in_hand
                if (chunk_path := self._catalog.path_of_chunk(chunk_id)) is not None
                and chunk_path not in files
                and chunk_path not in removed
                and chunk_path not in self._queued
                and chunk_path in self._current
            }
        )
        if not to_rechunk:
            return
        self._catalog.mark_pending(to_rechunk)
        for chunked in self._analysis.chunk_files(self._root, to_rechunk):
            files[chunked.relative_path] = chunked

    def _in_process_vectors(self, upserts: list[Chunk]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        if not self._in_process.active or not upserts:
            return {}, {}
        with self._timed("static_vectors"):
            return self._in_process.compute(upserts)

    def _reuse_vectors(self, upserts: list[Chunk]) -> dict[str, np.ndarray]:
        candidates = [c for c in upserts if c.id not in self._force_embed]
        if not candidates:
            return {}
        cached = self._store.vectors_for_snippets(sorted({c.snippet_hash for c in candidates}))
        vectors = {c.id: cached[c.snippet_hash] for c in candidates if c.snippet_hash in cached}
        self._stats.embeddings_reused += len(vectors)
        return vectors

    def _embed_inline(self, missing: list[Chunk], vectors: dict[str, np.ndarray]) -> None:
        if self._embedder is None or not missing or len(missing) > self._tuning.inline_embed_limit:
            return
        try:
            result = self._embedder.embed_documents([c.embedding_text for c in missing])
        except (EmbeddingUnavailable, EmbeddingFailed) as exc:
            _log.warning("inline embedding skipped, background embedding will retry: %s", exc)
            return
        if result.model != self._model:
            _log.warning("embedding model changed to %s; vectors not stored", result.model.identity())
            return
        for chunk, vector in zip(missing, result.vectors, strict=True):
            vectors[chunk.id] = vector
        self._stats.chunks_embedded += len(missing)

    def _entry(self, chunked: ChunkedFile) -> CatalogEntry:
        # Every chunked path comes from this scan (changed, added, interrupted or cascade files).
        return catalog_entry(chunked, self._current[chunked.relative_path])


class InProcessVectors:
    """Where the in-process static model's vectors go in `store`: into the static column when
    the table has one of that very model, or into the primary column when the primary model is
    that model (the code-static profile). Never into a column of another model's identity."""

    def __init__(self, static: StaticChannel | None, store: ChunkWriter, model: EmbeddingModel) -> None:
        static_model = static.model() if static is not None else None
        self._static = static if static_model is not None else None
        self._into_static = self._static is not None and store.static == static_model
        self.into_primary = self._static is not None and store.static is None and model == static_model

    @property
    def active(self) -> bool:
        return self._into_static or self.into_primary

    def compute(self, chunks: list[Chunk]) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """(primary vectors, static vectors) the static model gives `chunks`: one of the two,
        depending on the column it fills, or neither."""
        if not self.active or not chunks:
            return {}, {}
        assert self._static is not None, "both of the columns `active` asks about need a static channel"
        computed = self._static.embed_chunks(chunks)
        return (computed, {}) if self.into_primary else ({}, computed)


def catalog_entry(chunked: ChunkedFile, scanned: FileEntry) -> CatalogEntry:
    """What the catalog records of a chunked file the scan saw as `scanned`."""
    # The chunker's own view of the file wins: it is what the chunks were made from.
    file = FileEntry(
        relative_path=chunked.relative_path,
        size_bytes=chunked.size_bytes or scanned.size_bytes,
        mtime_ns=chunked.mtime_ns or scanned.mtime_ns,
        content_hash=chunked.content_hash or scanned.content_hash,
        language=scanned.language,
    )
    if chunked.status == FileStatus.SKIPPED:
        return CatalogEntry(file, (), chunked.skip_reason or "skipped", chunked.skip_detail)
    return CatalogEntry(file, tuple(IndexedChunk.of(c) for c in chunked.chunks))


def _by_path(batch: Batch) -> dict[str, ChunkedFile]:
    return {f.relative_path: f for f in batch.files}


class _Rate:
    """An ETA that does not promise before it knows: none until the step has run a few seconds
    and done a twentieth of its files, then the remaining files at the rate since the first file
    came back (a cold step's first answer waits on the type checker's Program, which no later
    file pays again: counting it made a 10-minute index first show 45 minutes)."""

    MIN_SECONDS = 3.0
    MIN_SHARE = 0.05

    def __init__(self, total: int) -> None:
        self._total = total
        self._first: float | None = None
        self._first_done = 0

    def eta(self, done: int) -> float:
        now = time.perf_counter()
        if self._first is None:
            self._first, self._first_done = now, done
            return -1.0
        elapsed = now - self._first
        progressed = done - self._first_done
        if elapsed < self.MIN_SECONDS or progressed <= 0 or done < self.MIN_SHARE * self._total:
            return -1.0
        return (self._total - done) * elapsed / progressed

