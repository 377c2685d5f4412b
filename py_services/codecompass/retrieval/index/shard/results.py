"""A shard's result (`ShardResult`: its staged rows and catalog entries), how a worker delivers
it to the writer through the index's `shard_results` table, and how the writer collects and
commits them all."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import lancedb
import pyarrow as pa

from codecompass.retrieval import filter_sql as sqlf
from codecompass.retrieval.catalog import Catalog, CatalogEntry, entry_from_row, entry_row
from codecompass.retrieval.index.chunk_writer import ChunkWriter, StagedWrite
from codecompass.retrieval.index.shard.board import PlanBoard
from codecompass.retrieval.index.shard.plan import ShardFailed, ShardPlan

# The table inside the index where workers leave their results for the writer.
STAGING_TABLE = "shard_results"
_STAGING_SCHEMA = pa.schema(
    [
        pa.field("plan_id", pa.string(), nullable=False),
        pa.field("shard", pa.int32(), nullable=False),
        pa.field("result", pa.string(), nullable=False, metadata={"lance-encoding:compression": "zstd"}),
    ]
)


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


def deliver(db: lancedb.DBConnection, plan: ShardPlan, shard: int, result: ShardResult,
            board: PlanBoard | None) -> None:
    """Leave a worker's result in the index's staging table; a plan found on `board` takes it only
    while still open (NoOpenPlan otherwise)."""
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


def staging_table(db: lancedb.DBConnection) -> lancedb.table.Table:
    """The index's table where workers leave their results, created when missing: the writer
    makes sure of it before any worker starts (`run_shards` does, and drops it once it has
    read them), as workers only append."""
    try:
        return db.open_table(STAGING_TABLE)
    except (ValueError, FileNotFoundError):
        return db.create_table(STAGING_TABLE, schema=_STAGING_SCHEMA, exist_ok=True)


def result_rows(staging: lancedb.table.Table, plan_id: str, columns: list[str]) -> list[dict]:
    """The staging table's rows of a plan, as they stand now."""
    staging.checkout_latest()
    return (staging.search().where(f"plan_id = {sqlf.sql_string(plan_id)}").select(columns)
            .limit(max(staging.count_rows(), 1)).to_list())


def collect(staging: lancedb.table.Table, plan: ShardPlan) -> list[ShardResult]:
    """Every shard's result, read back from the staging table."""
    rows = result_rows(staging, plan.plan_id, ["shard", "result"])
    # A retried worker may have delivered twice: either result is whole, the other's files are
    # simply never committed.
    by_shard = {row["shard"]: row["result"] for row in rows}
    missing = sorted(set(range(len(plan.shards))) - set(by_shard))
    if missing:
        raise ShardFailed(f"indexing shards {missing} of {len(plan.shards)} exited without a result")
    return [ShardResult.from_json(json.loads(by_shard[i])) for i in range(len(plan.shards))]


def commit_shards(store: ChunkWriter, catalog: Catalog, results: Sequence[ShardResult],
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
