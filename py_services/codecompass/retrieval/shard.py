"""Indexing spread over workers: N processes each chunk and embed a shard of the workspace's files
and write their rows themselves, uncommitted; the index's one writer commits them all at once.

Why Lance's own fragment API, not Ray. A Lance table is a list of fragments (data files) named by
a manifest; a commit writes a new manifest. `lance.fragment.write_fragments` writes data files
and returns their metadata *without* committing, and `LanceDataset.commit(Append(fragments))`
adds any number of them in one new version, conditionally on the version it read. That is the
whole protocol a distributed write needs, and it is what Ray's Lance integration
(`ray.data.Dataset.write_lance`, `lance.ray`) runs underneath: its tasks call the same
`write_fragments` and its driver the same commit. Ray would add a cluster runtime (a head node,
an object store, its own scheduler and failure model) to what Kubernetes already gives us: an
Indexed Job of N pods, each knowing its index (JOB_COMPLETION_INDEX), retried when it fails, and
one writer that commits.

Who runs the workers (`retrieval.shard_runner`):
- `processes` (the default): the writer starts them as N local processes (`run_shards`) and hands
  them the plan as a file.
- `job`: the workers are the pods of a Kubernetes Indexed Job, started by the Job controller, not
  by the writer, on machines that share no disk with it. The writer posts the plan in the index
  itself (`PlanBoard`: the `shard_plans` table, beside `shard_results`) and waits (`PostedShards`)
  for every shard's result, within the IndexWorkspace call's deadline (at most
  long_rpc_timeout_s) and for as long as its caller is there. A pod needs only the index root
  (CODECOMPASS_RETRIEVAL_DB_URI, credentials in CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS) and the
  workspace id: `python -m codecompass.retrieval.shard work --workspace-id ID` finds the index by
  the id's key (location.py), waits for an open plan (`--plan-wait-s`: the Job may start before
  the writer has scanned), runs shard $JOB_COMPLETION_INDEX, and delivers. Its analysis service
  must see the workspace at the writer's path (the plan's root), as with local workers. Kubernetes:

      codecompass index --workers N PATH        # against the writer (or the CronJob running it)
      kubectl patch job indexer-shards -p '{"spec":{"suspend":false}}'   # the Indexed Job
                                                # (deploy/k8s components/sharded-index), completions N

  A board holds one plan, the newest: posting one replaces the last, so an index has at most one
  open plan. A plan ends committed, timed out (a shard never reported: the error names how many
  did and how to start the Job), cancelled (its caller went away, the writer stopped) or failed,
  and stays on the board, ended, until the next: a worker that finds it ended, or whose plan ended
  while it worked, writes nothing. (A writer killed while it waited leaves its plan open: pods may
  still deliver to it, unread, until the next post replaces it.) Exit codes, for the Job's retries
  (backoffLimitPerIndex) and podFailurePolicy: 0 delivered, or nothing to do (the plan was
  committed without this worker); 1 failed, worth a retry (a dependency down, no plan posted in
  time, the plan ended uncommitted); 2 not worth one (bad arguments, settings or plan).

The shape:
1. The writer scans the workspace and opens the index (the tables exist from then on), then
   makes a plan (`make_plan`): the root, the index URI, the index identity, and the files of each
   shard (by a stable hash of the path, `shard_of`). Storage options never go into the plan:
   they may hold credentials, so workers read them from their environment
   (CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS), as the services do.
2. Each worker (`python -m codecompass.retrieval.shard work --plan PLAN.json --shard I`, or
   `--workspace-id ID` to find the plan in the index) chunks its files through the analysis
   service, computes static vectors (and primary ones when the plan says so), writes its rows as
   uncommitted fragments (`ChunkStore.stage`) in bounded batches, and hands its `ShardResult`
   (fragment metadata and catalog entries) to the writer as a row of the index's `shard_results`
   table, so no disk is shared: a worker needs only the index URI, whether a local folder or
   `s3://`.
3. Once every shard delivered, the writer commits (`commit_shards`): pending marks, then the
   texts and the chunks (one version each, `ChunkStore.commit_staged`), then the catalog.

What readers see: nothing of a shard until step 3, then every chunk of every shard at once.
A failed or killed worker commits nothing (the writer commits only when all succeeded); the data
files it wrote are referenced by no version, invisible, and Lance's cleanup (run by maintenance,
`optimize(cleanup_older_than=...)`) deletes such unreferenced files once they are 7 days old
(younger ones might belong to a write still in flight). A writer killed during step 3 leaves
what `Catalog` and `ChunkStore.commit_staged` describe for a killed sync: the files stay pending
and the next sync rewrites them; nothing is duplicated.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Self

import lancedb
import numpy as np
import pyarrow as pa

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.embedding import EmbeddingClient, EmbeddingFailed
from codecompass.common import names
from codecompass.common.chunks import Chunk, Language
from codecompass.common.config import ConfigError, Settings, load_settings
from codecompass.common.logging import configure_logging, get_logger
from codecompass.common.telemetry import init_telemetry
from codecompass.retrieval import filters as sqlf
from codecompass.retrieval.catalog import Catalog, CatalogEntry, IndexIdentity, entry_from_row, entry_row
from codecompass.retrieval.location import InvalidWorkspaceId, index_key, index_uri, validated_id
from codecompass.retrieval.rows import BatchSizes, chunk_in_batches
from codecompass.retrieval.state import ChunkedFile, EmbeddingUnavailable, FileEntry, FileStatus, RetrievalError
from codecompass.retrieval.static_channel import StaticChannel
from codecompass.retrieval.store import DEFAULT_VERSION_RETENTION, ChunkStore, StagedWrite
from codecompass.retrieval.sync import InProcessVectors, SyncTuning, catalog_entry

_log = get_logger(__name__)

PLAN_FORMAT = 1
# The table inside the index where workers leave their results for the writer.
STAGING_TABLE = "shard_results"
_STAGING_SCHEMA = pa.schema(
    [
        pa.field("plan_id", pa.string(), nullable=False),
        pa.field("shard", pa.int32(), nullable=False),
        pa.field("result", pa.string(), nullable=False, metadata={"lance-encoding:compression": "zstd"}),
    ]
)
# The table inside the index where the writer posts the plan for workers it does not start.
PLANS_TABLE = "shard_plans"
_PLANS_SCHEMA = pa.schema(
    [
        pa.field("plan_id", pa.string(), nullable=False),
        pa.field("workspace_id", pa.string(), nullable=False),
        pa.field("state", pa.string(), nullable=False),
        # Why a plan ended uncommitted (one line); empty while open or once committed.
        pa.field("reason", pa.string(), nullable=False),
        pa.field("opened_at", pa.float64(), nullable=False),
        pa.field("ended_at", pa.float64(), nullable=True),
        pa.field("plan", pa.string(), nullable=False, metadata={"lance-encoding:compression": "zstd"}),
    ]
)
# The worker's command in a Job's pods, for messages that say how to start them.
WORKER_COMMAND = "python -m codecompass.retrieval.shard work"
# How long a worker waits for a plan by default: the writer scans the workspace before it posts
# one, and a Job created alongside the index call (a CronJob) may start first.
DEFAULT_PLAN_WAIT_S = 600.0
# How often the driver looks at its worker processes.
_POLL_S = 0.05
# How often the writer looks for the results of workers it did not start, and how often such a
# worker looks for a plan: each look reads a table, a request or two on object storage.
_RESULTS_POLL_S = 0.5
_PLAN_POLL_S = 1.0


class ShardFailed(RetrievalError):
    """A shard could not be indexed; nothing was committed. The message names the shard."""


class ShardsMissing(ShardFailed):
    """Shard workers the writer did not start left no result in time; nothing was committed."""


class ShardsAbandoned(ShardFailed):
    """The writer stopped waiting for shard workers (its caller went away, it shuts down)."""


class InvalidPlan(RetrievalError):
    """A plan file that cannot be run; the message says why."""


class PlanState(str, Enum):
    OPEN = "open"
    COMMITTED = "committed"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"
    FAILED = "failed"


class NoOpenPlan(RetrievalError):
    """A worker found no open plan to deliver to; `last` is the state of the last plan it saw
    ended (None: there was none, or a newer one replaced it)."""

    def __init__(self, message: str, last: PlanState | None) -> None:
        super().__init__(message)
        self.last = last


def shard_of(relative_path: str, shards: int) -> int:
    """The shard a file belongs to: a hash of its path that every process and every run agree on
    (Python's `hash` is salted per process)."""
    if shards < 1:
        raise ValueError(f"shards must be at least 1, got {shards}")
    digest = hashlib.blake2b(relative_path.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


@dataclass(frozen=True)
class ShardPlan:
    """What every worker of one sharded index needs, and nothing secret."""

    plan_id: str
    root: str
    index_uri: str
    identity: IndexIdentity
    shards: tuple[tuple[FileEntry, ...], ...]
    # Workers ask the embedding service for primary vectors; otherwise the writer's background
    # embedder fills them after the commit (the static channel's vectors are there from the start).
    embed: bool = False
    # One analysis service address per shard (a worker per pod, each with its own service, as
    # the Node service type-checks on one thread); empty: ANALYSIS_ADDR for every shard.
    analysis: tuple[str, ...] = ()
    files_per_call: int = SyncTuning.files_per_call
    # Chunks a worker holds before staging them: bounds its memory; each batch is a fragment.
    batch_chunks: int = SyncTuning.max_flush_chunks

    def check_shard(self, shard: int) -> None:
        if not 0 <= shard < len(self.shards):
            raise InvalidPlan(f"shard {shard} is not in the plan "
                              f"(it has {len(self.shards)}: 0 to {len(self.shards) - 1})")

    def to_json(self) -> dict:
        return {
            "format": PLAN_FORMAT,
            "plan_id": self.plan_id,
            "root": self.root,
            "index_uri": self.index_uri,
            "identity": json.loads(self.identity.to_json()),
            "embed": self.embed,
            "analysis": list(self.analysis),
            "files_per_call": self.files_per_call,
            "batch_chunks": self.batch_chunks,
            "shards": [[_file_json(f) for f in files] for files in self.shards],
        }

    @classmethod
    def from_json(cls, data: Mapping) -> ShardPlan:
        if data.get("format") != PLAN_FORMAT:
            raise InvalidPlan(f"plan format {data.get('format')!r} is not {PLAN_FORMAT}: the writer that made it "
                              "runs another version")
        try:
            plan = cls(
                plan_id=str(data["plan_id"]),
                root=str(data["root"]),
                index_uri=str(data["index_uri"]),
                identity=IndexIdentity.from_json(json.dumps(data["identity"])),
                shards=tuple(tuple(_file_of(f) for f in files) for files in data["shards"]),
                embed=bool(data["embed"]),
                analysis=tuple(str(a) for a in data["analysis"]),
                files_per_call=int(data["files_per_call"]),
                batch_chunks=int(data["batch_chunks"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidPlan(f"the plan is malformed: {type(exc).__name__}: {exc}") from None
        if plan.analysis and len(plan.analysis) != len(plan.shards):
            raise InvalidPlan(f"the plan names {len(plan.analysis)} analysis services for {len(plan.shards)} shards")
        return plan


def make_plan(
    root: str,
    index_uri: str,
    identity: IndexIdentity,
    files: Sequence[FileEntry],
    shards: int,
    *,
    embed: bool = False,
    analysis: Sequence[str] = (),
    tuning: SyncTuning | None = None,
) -> ShardPlan:
    """A plan that splits `files` (the writer's scan) into `shards` by `shard_of`."""
    tuning = tuning or SyncTuning()
    split: list[list[FileEntry]] = [[] for _ in range(shards)]
    for file in sorted(files, key=lambda f: f.relative_path):
        split[shard_of(file.relative_path, shards)].append(file)
    return ShardPlan(plan_id=uuid.uuid4().hex, root=root, index_uri=index_uri, identity=identity,
                     shards=tuple(tuple(s) for s in split), embed=embed, analysis=tuple(analysis),
                     files_per_call=tuning.files_per_call, batch_chunks=tuning.max_flush_chunks)


def _file_json(file: FileEntry) -> list:
    return [file.relative_path, file.size_bytes, file.mtime_ns, file.content_hash, file.language.value]


def _file_of(item: list) -> FileEntry:
    path, size, mtime, content_hash, language = item
    return FileEntry(str(path), int(size), int(mtime), str(content_hash), Language(language))


@dataclass(frozen=True)
class PlanStatus:
    """A posted plan's row on the board, without the plan itself (which may be megabytes)."""

    plan_id: str
    workspace_id: str
    state: PlanState
    reason: str
    opened_at: float
    ended_at: float | None


class PlanBoard:
    """The index's `shard_plans` table: the plan of a sharded index for workers that find it by
    the index alone (an Indexed Job's pods). It holds one plan, the newest: posting one replaces
    the last, so an index has at most one open plan, and an ended one stays for late workers."""

    def __init__(self, db: lancedb.DBConnection, uri: str) -> None:
        self.db = db
        self.uri = uri

    def post(self, plan: ShardPlan, workspace_id: str) -> None:
        row = pa.table({"plan_id": [plan.plan_id], "workspace_id": [workspace_id], "state": [PlanState.OPEN.value],
                        "reason": [""], "opened_at": [time.time()], "ended_at": [None],
                        "plan": [json.dumps(plan.to_json())]}, schema=_PLANS_SCHEMA)
        table = self.db.create_table(PLANS_TABLE, row, mode="overwrite")
        # Every post and end is a version of this one-row table; a reader holds one only for
        # the moment it reads, so older ones go at each post rather than pile up run after run.
        table.optimize(cleanup_older_than=DEFAULT_VERSION_RETENTION)

    def status(self) -> PlanStatus | None:
        """The posted plan's row; None when no plan was ever posted in this index."""
        table = self._table()
        if table is None:
            return None
        rows = table.search().select([f.name for f in _PLANS_SCHEMA if f.name != "plan"]).limit(1).to_list()
        if not rows:
            return None
        row = rows[0]
        return PlanStatus(plan_id=row["plan_id"], workspace_id=row["workspace_id"], state=PlanState(row["state"]),
                          reason=row["reason"], opened_at=row["opened_at"], ended_at=row["ended_at"])

    def plan(self, plan_id: str) -> ShardPlan:
        table = self._table()
        rows = ([] if table is None else
                table.search().where(f"plan_id = {sqlf.sql_string(plan_id)}").select(["plan"]).limit(1).to_list())
        if not rows:
            raise NoOpenPlan(f"plan {plan_id} was replaced by a newer one", None)
        return ShardPlan.from_json(json.loads(rows[0]["plan"]))

    def end(self, plan_id: str, state: PlanState, reason: str = "") -> None:
        """Mark the plan ended, if it is still the open one."""
        table = self._table()
        if table is not None:
            table.update(where=f"plan_id = {sqlf.sql_string(plan_id)} "
                               f"AND state = {sqlf.sql_string(PlanState.OPEN.value)}",
                         values={"state": state.value, "reason": reason, "ended_at": time.time()})

    def check_open(self, plan_id: str) -> None:
        """NoOpenPlan unless `plan_id` is the open plan: a worker's last look before it delivers."""
        status = self.status()
        if status is None or status.plan_id != plan_id:
            raise NoOpenPlan(f"plan {plan_id} was replaced by a newer one: nothing written", None)
        if status.state is not PlanState.OPEN:
            raise NoOpenPlan(f"plan {plan_id} ended ({_ended(status)}) before this shard's result: nothing written",
                             status.state)

    def _table(self) -> lancedb.table.Table | None:
        try:
            return self.db.open_table(PLANS_TABLE)
        except (ValueError, FileNotFoundError):
            return None


def _ended(status: PlanStatus) -> str:
    return status.state.value + (f" {time.time() - status.ended_at:.0f} s ago" if status.ended_at is not None else "")


@dataclass
class ShardStats:
    files: int = 0
    chunks: int = 0
    skipped: int = 0
    vanished: int = 0
    chunks_embedded: int = 0
    # Seconds per step: chunking (waiting on the analysis service; `first_answer` of it until
    # the first file came back), static vectors, primary vectors (embedding service), staging
    # (writing fragments), and the whole run.
    seconds: dict[str, float] = field(default_factory=dict)

    def add_time(self, step: str, started: float) -> None:
        self.seconds[step] = self.seconds.get(step, 0.0) + time.perf_counter() - started


@dataclass(frozen=True)
class ShardResult:
    """What a worker hands the writer: its staged rows and the catalog entries of its files."""

    staged: tuple[StagedWrite, ...]
    entries: tuple[CatalogEntry, ...]
    # Files the scan saw that were gone when the analysis service came to read them.
    vanished: tuple[str, ...]
    stats: ShardStats

    def to_json(self) -> dict:
        stats = self.stats
        return {
            "staged": [w.to_json() for w in self.staged],
            # The catalog's own row form: one encoding of an entry.
            "entries": [entry_row(e) for e in self.entries],
            "vanished": list(self.vanished),
            "stats": {"files": stats.files, "chunks": stats.chunks, "skipped": stats.skipped,
                      "vanished": stats.vanished, "chunks_embedded": stats.chunks_embedded,
                      "seconds": stats.seconds},
        }

    @classmethod
    def from_json(cls, data: Mapping) -> ShardResult:
        return cls(
            staged=tuple(StagedWrite.from_json(w) for w in data["staged"]),
            entries=tuple(entry_from_row(row) for row in data["entries"]),
            vanished=tuple(data["vanished"]),
            stats=ShardStats(**data["stats"]),
        )


class ShardWorker:
    """Chunks, embeds and stages one shard's files; commits nothing."""

    def __init__(
        self,
        *,
        root: str,
        files: Sequence[FileEntry],
        analysis: AnalysisClient,
        static: StaticChannel,
        store: ChunkStore,
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


# ---- the worker process ---------------------------------------------------------------------


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
    store = ChunkStore.attach(db, uri, model=identity.model, chunker_version=identity.chunker_version,
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
    _deliver(db, plan, shard, result, board)
    return result


def _deliver(db: lancedb.DBConnection, plan: ShardPlan, shard: int, result: ShardResult,
             board: PlanBoard | None) -> None:
    row = pa.table({"plan_id": [plan.plan_id], "shard": [shard], "result": [json.dumps(result.to_json())]},
                   schema=_STAGING_SCHEMA)
    if board is not None:
        board.check_open(plan.plan_id)
    try:
        db.open_table(STAGING_TABLE).add(row)
    except (ValueError, FileNotFoundError):
        # The writer drops the staging table as a plan ends: it may have ended since the look above.
        if board is not None:
            board.check_open(plan.plan_id)
        raise


def wait_for_plan(board: PlanBoard, wait_s: float) -> ShardPlan:
    """The open plan on the board, waiting up to `wait_s` for one (a Job may start before its
    writer has scanned the workspace); NoOpenPlan when none is open by then."""
    deadline = time.monotonic() + wait_s
    while True:
        status = board.status()
        if status is not None and status.state is PlanState.OPEN:
            return board.plan(status.plan_id)
        if time.monotonic() >= deadline:
            break
        time.sleep(min(_PLAN_POLL_S, max(deadline - time.monotonic(), 0.0)))
    if status is None:
        raise NoOpenPlan(f"no plan was posted in this index in {wait_s:g} s: the writer posts one when asked to "
                         "index with workers under retrieval.shard_runner = job (`codecompass index --workers N`)",
                         None)
    raise NoOpenPlan(f"no open plan in {wait_s:g} s; the last one, {status.plan_id}, ended ({_ended(status)})",
                     status.state)


def _check_static_model(static: StaticChannel, identity: IndexIdentity) -> None:
    """A worker must compute the static vectors the writer would: with the same model."""
    loaded = static.model()
    if identity.static is not None and loaded != identity.static:
        have = loaded.identity() if loaded is not None else "no static model (off or failed to load)"
        raise InvalidPlan(f"this worker has {have}, the index's static channel is {identity.static.identity()}: "
                          "workers must run the writer's build and settings")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m codecompass.retrieval.shard",
                                     description="Index one shard of a workspace for the index writer.")
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("work", help="chunk, embed and stage one shard of a plan")
    source = run.add_mutually_exclusive_group(required=True)
    source.add_argument("--plan", type=Path, help="the plan file the writer made (its own worker processes)")
    source.add_argument("--workspace-id", help="find the plan the writer posted in this workspace's index, under "
                                               "CODECOMPASS_RETRIEVAL_DB_URI (an Indexed Job's pods)")
    # In a Kubernetes Indexed Job every pod gets its index in JOB_COMPLETION_INDEX.
    run.add_argument("--shard", type=int, default=_int_env("JOB_COMPLETION_INDEX"),
                     help="which shard (default: $JOB_COMPLETION_INDEX)")
    run.add_argument("--plan-wait-s", type=float, default=None, metavar="SECONDS",
                     help=f"with --workspace-id: how long to wait for the writer to post a plan "
                          f"(default {DEFAULT_PLAN_WAIT_S:g})")
    args = parser.parse_args(argv)
    if args.shard is None:
        parser.error("--shard is required (or JOB_COMPLETION_INDEX)")
    if args.plan_wait_s is not None and (args.plan is not None or args.plan_wait_s < 0):
        run.error("--plan-wait-s takes a number of seconds, with --workspace-id")
    init_telemetry(names.RETRIEVAL)
    board = None
    try:
        configure_logging(names.RETRIEVAL)
        settings = load_settings()
        if args.plan is not None:
            plan = ShardPlan.from_json(json.loads(args.plan.read_text(encoding="utf-8")))
        else:
            board = _board_of(args.workspace_id, settings)
    except (ConfigError, InvalidPlan, InvalidWorkspaceId, OSError, ValueError) as exc:
        print(f"error: shard {args.shard}: {exc}", file=sys.stderr, flush=True)
        return 2
    try:
        if board is not None:
            plan = wait_for_plan(board, DEFAULT_PLAN_WAIT_S if args.plan_wait_s is None else args.plan_wait_s)
            _log.info("shard plan found", extra={"shard": args.shard, "plan_id": plan.plan_id})
        plan.check_shard(args.shard)
    except InvalidPlan as exc:
        print(f"error: shard {args.shard}: {exc}", file=sys.stderr, flush=True)
        return 2
    except NoOpenPlan as exc:
        return _no_open_plan(args.shard, exc)
    except (RetrievalError, OSError) as exc:
        print(f"error: shard {args.shard}: {exc}", file=sys.stderr, flush=True)
        return 1
    try:
        result = work(plan, args.shard, settings, board=board)
    except NoOpenPlan as exc:
        return _no_open_plan(args.shard, exc)
    except (RetrievalError, OSError) as exc:
        print(f"error: shard {args.shard}: {exc}", file=sys.stderr, flush=True)
        return 1
    except Exception as exc:  # noqa: BLE001 - one line for the driver; the log has the rest
        _log.exception("shard %d failed", args.shard)
        print(f"error: shard {args.shard}: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
        return 1
    stats = result.stats
    _log.info("shard indexed", extra={"shard": args.shard, "files": stats.files, "chunks": stats.chunks,
                                      **{f"{k}_s": round(v, 2) for k, v in stats.seconds.items()}})
    return 0


def _board_of(workspace_id: str, settings: Settings) -> PlanBoard:
    """The plan board of the workspace's index, under the index root this process is configured with."""
    uri = index_uri(settings, index_key(validated_id(workspace_id)))
    return PlanBoard(lancedb.connect(uri, storage_options=dict(settings.retrieval.storage_options) or None), uri)


def _no_open_plan(shard: int, exc: NoOpenPlan) -> int:
    """Nothing to do once the plan was committed without this worker (another try of its shard
    delivered): success, or the Job would retry it for nothing; otherwise a failure."""
    if exc.last is PlanState.COMMITTED:
        print(f"shard {shard}: nothing to do: {exc}", file=sys.stderr, flush=True)
        return 0
    print(f"error: shard {shard}: {exc}", file=sys.stderr, flush=True)
    return 1


def _int_env(name: str) -> int | None:
    value = os.environ.get(name, "").strip()
    return int(value) if value.isdigit() else None


# ---- the writer's side ----------------------------------------------------------------------


def run_shards(
    plan: ShardPlan,
    workers: int,
    *,
    db: lancedb.DBConnection,
    env: Mapping[str, str] | None = None,
    timeout_s: float | None = None,
) -> list[ShardResult]:
    """Run every shard of `plan` as a worker process, at most `workers` at a time (a local
    Indexed Job: `completions` = the plan's shards, `parallelism` = `workers`), and return their
    results, in shard order. `db` is the index's connection (where the results arrive); `env`
    is added to this process's environment for the workers (addresses, storage options).

    The first worker to fail stops the others and raises ShardFailed naming its shard: nothing
    is committed, and the results already delivered are discarded."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    staging = staging_table(db)
    full_env = {**os.environ, **(env or {})}
    deadline = time.monotonic() + timeout_s if timeout_s is not None else None
    total = len(plan.shards)
    try:
        with tempfile.TemporaryDirectory(prefix="codecompass-shards-") as folder:
            plan_file = Path(folder) / "plan.json"
            plan_file.write_text(json.dumps(plan.to_json()), encoding="utf-8")
            _run_workers(plan_file, total, workers, full_env, Path(folder), deadline)
        return _collect(staging, plan)
    finally:
        # One plan runs at a time (the index has one writer): its results, read or not, go with
        # the table, whose versions would otherwise pile up run after run.
        db.drop_table(STAGING_TABLE)


def _run_workers(plan_file: Path, total: int, workers: int, env: dict[str, str], folder: Path,
                 deadline: float | None) -> None:
    waiting = list(range(total))
    running: dict[int, tuple[subprocess.Popen, Path]] = {}
    try:
        while waiting or running:
            while waiting and len(running) < workers:
                shard = waiting.pop(0)
                log = folder / f"shard-{shard}.log"
                with open(log, "wb") as out:
                    process = subprocess.Popen(
                        [sys.executable, "-m", "codecompass.retrieval.shard", "work", "--plan", str(plan_file),
                         "--shard", str(shard)],
                        stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
                        start_new_session=True)
                running[shard] = (process, log)
            for shard, (process, log) in list(running.items()):
                code = process.poll()
                if code is None:
                    continue
                del running[shard]
                if code != 0:
                    raise ShardFailed(f"indexing shard {shard} of {total} failed: {_failure(code, log)}")
            if deadline is not None and time.monotonic() > deadline:
                raise ShardFailed(f"indexing shards {sorted(running)} of {total} did not finish in time")
            time.sleep(_POLL_S)
    finally:
        for process, _ in running.values():
            _kill(process)


def _failure(code: int, log: Path) -> str:
    """The worker's own error line, else how it ended."""
    if code < 0:
        return f"the worker was killed by {signal.Signals(-code).name}"
    lines = [line.strip() for line in log.read_text(encoding="utf-8", errors="replace").splitlines()]
    errors = [line for line in lines if line.startswith("error: ")]
    if errors:
        return errors[-1].removeprefix("error: ").split(": ", 1)[-1]
    return f"the worker exited with code {code}" + (f" ({lines[-1][:300]})" if lines and lines[-1] else "")


def _kill(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


class PostedShards:
    """A plan run by workers the writer does not start (an Indexed Job's pods): posted on the
    index's board for them to find, waited for, and ended whatever happens: committed when the
    `with` block completes (the writer commits inside it), else timed out, cancelled or failed.
    Like `run_shards`, it drops the staging table at the end."""

    def __init__(self, plan: ShardPlan, workspace_id: str, *, db: lancedb.DBConnection, uri: str) -> None:
        self._plan = plan
        self._workspace_id = workspace_id
        self._db = db
        self._board = PlanBoard(db, uri)
        self._staging: lancedb.table.Table | None = None

    def __enter__(self) -> Self:
        # Where results arrive exists before any worker can find the plan.
        self._staging = staging_table(self._db)
        self._board.post(self._plan, self._workspace_id)
        return self

    def wait(self, *, deadline: Callable[[], float], stop: Callable[[], str | None],
             progress: Callable[[frozenset[int]], None]) -> list[ShardResult]:
        """Every shard's result, in shard order, once all are in. `deadline` (a monotonic time,
        asked at each look: a later caller may extend it) bounds the wait: ShardsMissing after
        it; `stop` gives a reason to stop now (ShardsAbandoned); `progress` hears of the shards
        that delivered, whenever that set grows."""
        assert self._staging is not None, "wait inside the with block"
        total = len(self._plan.shards)
        started = time.monotonic()
        reported: frozenset[int] | None = None
        while True:
            now = frozenset(row["shard"] for row in _results(self._staging, self._plan.plan_id, ["shard"]))
            if now != reported:
                reported = now
                progress(reported)
            if len(reported) == total:
                return _collect(self._staging, self._plan)
            why = stop()
            if why:
                raise ShardsAbandoned(f"stopped waiting for shard workers ({why}) with {len(reported)} of {total} "
                                      "reported; nothing was committed")
            left = deadline() - time.monotonic()
            if left <= 0:
                raise self._missing(reported, time.monotonic() - started)
            time.sleep(min(_RESULTS_POLL_S, left))

    def _missing(self, reported: frozenset[int], waited: float) -> ShardsMissing:
        total = len(self._plan.shards)
        missing = ", ".join(str(i) for i in range(total) if i not in reported)
        return ShardsMissing(
            f"{len(reported)} of {total} shard workers reported in {waited:.0f} s (none from shard {missing}); "
            f"nothing was committed: start the Indexed Job, {total} completions, each pod running "
            f"`{WORKER_COMMAND} --workspace-id {shlex.quote(self._workspace_id)}` with this index root")

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, _tb: object) -> None:
        state = (PlanState.COMMITTED if exc is None else PlanState.TIMED_OUT if isinstance(exc, ShardsMissing)
                 else PlanState.CANCELLED if isinstance(exc, ShardsAbandoned) else PlanState.FAILED)
        try:
            self._board.end(self._plan.plan_id, state, "" if exc is None else str(exc) or type(exc).__name__)
        except Exception:  # noqa: BLE001 - the commit (or the failure being raised) is what counts;
            # a plan left open only lets late workers deliver results nobody reads.
            _log.exception("could not mark shard plan %s %s", self._plan.plan_id, state.value)
        finally:
            self._db.drop_table(STAGING_TABLE)


def staging_table(db: lancedb.DBConnection) -> lancedb.table.Table:
    """The index's table where workers leave their results, created when missing: the writer
    makes sure of it before any worker starts (`run_shards` does, and drops it once it has
    read them), as workers only append."""
    try:
        return db.open_table(STAGING_TABLE)
    except (ValueError, FileNotFoundError):
        return db.create_table(STAGING_TABLE, schema=_STAGING_SCHEMA, exist_ok=True)


def _results(staging: lancedb.table.Table, plan_id: str, columns: list[str]) -> list[dict]:
    """The staging table's rows of a plan, as they stand now."""
    staging.checkout_latest()
    return (staging.search().where(f"plan_id = {sqlf.sql_string(plan_id)}").select(columns)
            .limit(max(staging.count_rows(), 1)).to_list())


def _collect(staging: lancedb.table.Table, plan: ShardPlan) -> list[ShardResult]:
    """Every shard's result, read back from the staging table."""
    rows = _results(staging, plan.plan_id, ["shard", "result"])
    # A retried worker may have delivered twice: either result is whole, the other's files are
    # simply never committed.
    by_shard = {row["shard"]: row["result"] for row in rows}
    missing = sorted(set(range(len(plan.shards))) - set(by_shard))
    if missing:
        raise ShardFailed(f"indexing shards {missing} of {len(plan.shards)} exited without a result")
    return [ShardResult.from_json(json.loads(by_shard[i])) for i in range(len(plan.shards))]


def commit_shards(store: ChunkStore, catalog: Catalog, results: Sequence[ShardResult],
                  removed: Iterable[str] = ()) -> None:
    """Commit every shard's rows and catalog entries: the writer's one commit of the sharded
    index (one version of each table), in the order a sync writes (see `catalog`): pending
    marks, then the chunk tables, then the catalog. `removed`: files the catalog knows that
    the scan no longer found; their rows and entries go in the same commits."""
    entries = [e for r in results for e in r.entries]
    gone = sorted({p for r in results for p in r.vanished} | set(removed))
    paths = [e.file.relative_path for e in entries] + gone
    catalog.mark_pending(paths)
    store.commit_staged([w for r in results for w in r.staged], replace_paths=paths)
    catalog.commit(entries, gone, complete=True)

if __name__ == "__main__":
    sys.exit(main())
