"""A shard worker: chunks, embeds and stages one shard's files (`ShardWorker`), and the run of
one shard of a plan in a worker process (`work`), which delivers the result to the writer."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

import lancedb
import numpy as np

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.embedding import EmbeddingClient
from codecompass.common.chunks import Chunk
from codecompass.common.config import Settings
from codecompass.common.logging import get_logger
from codecompass.contracts.analysis.model import ChunkedFile, FileEntry, FileStatus
from codecompass.contracts.retrieval.errors import EmbeddingFailed, EmbeddingUnavailable
from codecompass.retrieval.catalog import CatalogEntry, IndexIdentity
from codecompass.retrieval.index.chunk_writer import ChunkWriter, StagedWrite
from codecompass.retrieval.index.rows import BatchSizes, chunk_in_batches
from codecompass.retrieval.index.shard.board import PlanBoard
from codecompass.retrieval.index.shard.plan import InvalidPlan, ShardPlan
from codecompass.retrieval.index.shard.results import ShardResult, ShardStats, deliver
from codecompass.retrieval.index.sync import InProcessVectors, SyncTuning, catalog_entry
from codecompass.retrieval.static_channel import StaticChannel

_log = get_logger(__name__)


class ShardWorker:
    """Chunks, embeds and stages one shard's files; commits nothing."""

    def __init__(
        self,
        *,
        root: str,
        files: Sequence[FileEntry],
        analysis: AnalysisClient,
        static: StaticChannel,
        store: ChunkWriter,
        embedder: EmbeddingClient | None = None,
        files_per_call: int = SyncTuning.files_per_call,
        batch_chunks: int = SyncTuning.max_flush_chunks,
    ) -> None:
        self._root = root
        self._files = {f.relative_path: f for f in files}
        self._analysis = analysis
        self._store = store
        self._in_process = InProcessVectors(static, store, store.model)
        # The static model's vectors are the primary ones there: nothing to ask the service for.
        self._embedder = None if self._in_process.into_primary else embedder
        self._files_per_call = files_per_call
        self._batch_chunks = batch_chunks
        self.stats = ShardStats()

    def run(self) -> ShardResult:
        started = time.perf_counter()
        stats = self.stats
        staged: list[StagedWrite] = []
        entries: list[CatalogEntry] = []
        gone: list[str] = []

        def arrived(chunked: ChunkedFile) -> None:
            entries.append(catalog_entry(chunked, self._files[chunked.relative_path]))
            if chunked.status == FileStatus.SKIPPED:
                stats.skipped += 1

        rest = chunk_in_batches(
            lambda call: self._chunk_files(call, started), sorted(self._files), files_per_call=self._files_per_call,
            sizes=BatchSizes(first=self._batch_chunks, most=self._batch_chunks),
            write=lambda batch: staged.append(self._stage(batch.rows)), arrived=arrived, gone=gone.append).rest
        if rest.rows:
            staged.append(self._stage(rest.rows))
        stats.vanished = len(gone)
        stats.add_time("total", started)
        return ShardResult(staged=tuple(staged), entries=tuple(entries), vanished=tuple(gone), stats=stats)

    def _chunk_files(self, call: list[str], started: float) -> Iterator[ChunkedFile]:
        """The stream of one call, timed: `chunk` counts only the waits on it, not the work
        done on each file it gave (which the step does between two of its answers)."""
        stats = self.stats
        waited = time.perf_counter()
        for chunked in self._analysis.chunk_files(self._root, call):
            stats.add_time("chunk", waited)
            if "first_answer" not in stats.seconds:
                # Mostly the analysis service building the workspace's Program: a cost every
                # worker pays once, whatever its share of the files.
                stats.seconds["first_answer"] = time.perf_counter() - started
            stats.files += 1
            yield chunked
            waited = time.perf_counter()
        stats.add_time("chunk", waited)

    def _stage(self, chunks: list[Chunk]) -> StagedWrite:
        stats = self.stats
        started = time.perf_counter()
        vectors, static_vectors = self._in_process.compute(chunks)
        stats.add_time("static_vectors", started)
        if self._embedder is not None:
            started = time.perf_counter()
            vectors = self._embed(chunks)
            stats.add_time("embed", started)
        stats.chunks_embedded += len(vectors)
        started = time.perf_counter()
        write = self._store.stage(chunks, vectors, static_vectors)
        stats.add_time("stage", started)
        stats.chunks += len(chunks)
        return write

    def _embed(self, chunks: list[Chunk]) -> dict[str, np.ndarray]:
        """Primary vectors from the embedding service; none (the writer's background embedder
        fills them after the commit) when it cannot give them in the index's model."""
        assert self._embedder is not None
        try:
            result = self._embedder.embed_documents([c.embedding_text for c in chunks])
        except (EmbeddingUnavailable, EmbeddingFailed) as exc:
            _log.warning("shard embedding skipped, the writer's background embedding fills it in: %s", exc)
            return {}
        if result.model != self._store.model:
            _log.warning("the embedding service runs %s, not the index's %s; vectors left to the writer",
                         result.model.identity(), self._store.model.identity())
            return {}
        return {c.id: v for c, v in zip(chunks, result.vectors, strict=True)}


def work(plan: ShardPlan, shard: int, settings: Settings, *, board: PlanBoard | None = None) -> ShardResult:
    """Run shard `shard` of `plan` and leave its result in the index's staging table. A plan
    found on the index's `board` gets it only while still open: NoOpenPlan when it ended
    meanwhile (its writer reads no more results)."""
    plan.check_shard(shard)
    identity = plan.identity
    # A posted plan is run in the index it was found in, however the writer names that index.
    uri = board.uri if board is not None else plan.index_uri
    db = board.db if board is not None else lancedb.connect(
        uri, storage_options=dict(settings.retrieval.storage_options) or None)
    store = ChunkWriter.attach(db, uri, model=identity.model, chunker_version=identity.chunker_version,
                              static=identity.static)
    if store is None:
        raise InvalidPlan(f"the index at {uri} has no table for the plan's identity: the writer opens "
                          "the index before it starts the workers")
    retrieval = settings.retrieval
    static = StaticChannel(enabled=retrieval.static_channel, model_dir=retrieval.static_model_dir,
                           max_tokens=settings.embedding.max_tokens)
    _check_static_model(static, identity)
    analysis = AnalysisClient(plan.analysis[shard] if plan.analysis else settings.analysis_addr,
                              timeout_s=settings.rpc_timeout_s)
    embedder = (EmbeddingClient(settings.embedding_addr, timeout_s=settings.rpc_timeout_s,
                                batch_size=settings.embedding.batch_size) if plan.embed else None)
    try:
        result = ShardWorker(root=plan.root, files=plan.shards[shard], analysis=analysis, static=static, store=store,
                             embedder=embedder, files_per_call=plan.files_per_call,
                             batch_chunks=plan.batch_chunks).run()
    finally:
        analysis.close()
        if embedder is not None:
            embedder.close()
    deliver(db, plan, shard, result, board)
    return result


def _check_static_model(static: StaticChannel, identity: IndexIdentity) -> None:
    """A worker must compute the static vectors the writer would: with the same model."""
    loaded = static.model()
    if identity.static is not None and loaded != identity.static:
        have = loaded.identity() if loaded is not None else "no static model (off or failed to load)"
        raise InvalidPlan(f"this worker has {have}, the index's static channel is {identity.static.identity()}: "
                          "workers must run the writer's build and settings")
