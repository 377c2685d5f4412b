"""Indexing spread over worker processes, into indexes on the local S3 server: the same workspace
indexed by 1 and by 3 workers gives identical rows; a failed or killed worker commits nothing.

Real processes throughout: the Node analysis service, `python -m codecompass.retrieval.index.shard`
workers, moto's S3 server; the writer's side (plan, commit) runs in the test process."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import lancedb
import pyarrow as pa
import pytest
from tests.conftest import SAMPLE_WORKSPACE
from tests.fixtures.chain_workspace import write_chain_workspace

from codecompass.clients.analysis import AnalysisClient
from codecompass.clients.embedding import EmbeddingClient
from codecompass.common.config import load_settings
from codecompass.contracts.embedding.model import EmbeddingModel
from codecompass.contracts.retrieval.filters import Filters
from codecompass.retrieval.catalog import Catalog, IndexIdentity
from codecompass.retrieval.index.chunk_writer import ChunkWriter
from codecompass.retrieval.index.shard.plan import ShardFailed, make_plan, shard_of
from codecompass.retrieval.index.shard.processes import run_shards
from codecompass.retrieval.index.shard.results import STAGING_TABLE, commit_shards, staging_table
from codecompass.retrieval.index.sync import SyncTuning
from codecompass.retrieval.location import list_tables
from codecompass.retrieval.schema import sources_table_name
from codecompass.retrieval.static_channel import StaticChannel

# The primary model's vectors are left to the writer's background embedder (no embedding service
# here); the static channel's vectors are computed by the workers, into the static column.
PRIMARY = EmbeddingModel("test", "primary-left-to-the-background", "1", 8)
# Small calls and batches: every worker stages several fragments.
TUNING = SyncTuning(files_per_call=4, max_flush_chunks=40)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample workspace, 30 generated modules that call each other, and one file copied
    under a name that falls in another shard of three, so two workers stage the same text."""
    root = tmp_path_factory.mktemp("sharded") / "ws"
    shutil.copytree(SAMPLE_WORKSPACE, root)
    write_chain_workspace(root / "chain", 30, classes=True)
    original = "src/utils/strings.ts"
    copy = next(f"vendor/copy{i}/strings.ts" for i in range(100)
                if shard_of(f"vendor/copy{i}/strings.ts", 3) != shard_of(original, 3))
    (root / copy).parent.mkdir(parents=True)
    shutil.copy(root / original, root / copy)
    return root


@pytest.fixture(scope="module")
def static_model():
    settings = load_settings()
    model = StaticChannel(enabled=True, model_dir=settings.retrieval.static_model_dir,
                          max_tokens=settings.embedding.max_tokens).model()
    assert model is not None, "the committed static model must load"
    return model


class Writer:
    """The writer's side of a sharded index: scan, open the index, plan, run, commit."""

    def __init__(self, uri: str, storage_options: dict[str, str], root: Path, analysis_addr: str, static,
                 primary: EmbeddingModel = PRIMARY) -> None:
        self.uri = uri
        self.storage_options = storage_options
        self.root = root
        self.analysis_addr = analysis_addr
        self.db = lancedb.connect(uri, storage_options=storage_options)
        analysis = AnalysisClient(analysis_addr, timeout_s=60)
        try:
            self.scan = analysis.scan(str(root), list, version=object())
        finally:
            analysis.close()
        self.identity = IndexIdentity(model=primary, chunker_version=self.scan.chunker_version, static=static)
        self.store = ChunkWriter.open(uri, model=primary, chunker_version=self.scan.chunker_version, static=static,
                                     storage_options=storage_options)
        self.catalog = Catalog.open(self.db)
        self.catalog.reset(self.identity)

    def env(self) -> dict[str, str]:
        """What the workers get: addresses and storage options by environment, never in the plan."""
        return {"ANALYSIS_ADDR": self.analysis_addr,
                "CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS": json.dumps(self.storage_options)}

    def plan(self, shards: int, **kwargs):
        return make_plan(str(self.root), self.uri, self.identity, self.scan.files, shards, tuning=TUNING, **kwargs)

    def index(self, workers: int):
        results = run_shards(self.plan(workers), workers, db=self.db, env=self.env(), timeout_s=240)
        commit_shards(self.store, self.catalog, results)
        return results

    def rows(self) -> tuple[pa.Table, pa.Table]:
        """Every chunk row and every source text, as a new reader of the bucket sees them."""
        db = lancedb.connect(self.uri, storage_options=self.storage_options)
        return (db.open_table(self.store.table_name).to_arrow().sort_by("id"),
                db.open_table(sources_table_name(self.store.table_name)).to_arrow().sort_by("key"))

    def versions(self) -> tuple[int, int, int]:
        db = lancedb.connect(self.uri, storage_options=self.storage_options)
        return (len(db.open_table(self.store.table_name).list_versions()),
                len(db.open_table(sources_table_name(self.store.table_name)).list_versions()),
                len(db.open_table("catalog").list_versions()))


def test_one_and_three_workers_give_identical_rows_on_s3(s3, analysis_server, workspace, static_model):
    one = Writer(s3.uri("one"), s3.storage_options, workspace, analysis_server, static_model)
    three = Writer(s3.uri("three"), s3.storage_options, workspace, analysis_server, static_model)
    assert one.store.counts() == (0, 0)

    single = one.index(1)
    sharded = three.index(3)

    assert [len(r.entries) for r in sharded] == [len(files) for files in three.plan(3).shards]
    assert all(r.entries and len(r.staged) >= 2 for r in sharded), "every worker staged several batches"
    chunks, texts = three.rows()
    assert chunks.num_rows == sum(r.stats.chunks for r in single) > 150
    assert chunks.num_rows == len(set(chunks.column("id").to_pylist())), "no chunk id twice"
    assert texts.num_rows == len(set(texts.column("key").to_pylist())), "no text twice"
    # Every column of every row (ids, snippet hashes, texts, static vectors), and every text.
    assert (chunks, texts) == one.rows()
    assert dict(three.catalog.entries()) == dict(one.catalog.entries())
    assert len(three.catalog.entries()) == len(three.scan.files) and three.catalog.complete
    assert Catalog.open(lancedb.connect(three.uri, storage_options=s3.storage_options)).entries() \
        == three.catalog.entries()
    # One version of the chunk table on top of its creation; the sources table also has the
    # delete of the copy's texts staged twice (by two workers, or by one worker's two batches:
    # the copy's file card repeats the original's); the catalog: reset, pending marks, commit.
    assert three.versions()[:2] == (2, 3)
    assert one.versions()[:2] == (2, 3)
    # Searchable at once, static channel included; the primary vectors are the background's.
    counts = three.store.vector_counts()
    assert (counts.total, counts.primary, counts.static) == (chunks.num_rows, 0, chunks.num_rows)
    assert three.store.get_chunks(["nope"]) == []
    hit = three.store.find_by_names(["compute7"], Filters(), 5)
    assert [c.relative_path for c in hit] == ["chain/src/mod7.ts"]
    assert "return helper6(x) + 7" in hit[0].full_source
    # The workers' results are gone once read.
    assert STAGING_TABLE not in list_tables(three.db)


@pytest.mark.badinput(case="a sharded index whose worker fails (its analysis service is down)",
                      behaviour="one line naming the shard and why; nothing committed, no result left behind")
def test_a_failed_worker_commits_nothing(s3, analysis_server, workspace, static_model, free_port):
    writer = Writer(s3.uri("failed"), s3.storage_options, workspace, analysis_server, static_model)
    before = writer.versions()
    dead = f"127.0.0.1:{free_port}"
    plan = writer.plan(3, analysis=[analysis_server, dead, analysis_server])

    with pytest.raises(ShardFailed) as failed:
        run_shards(plan, 3, db=writer.db, env=writer.env(), timeout_s=240)

    assert str(failed.value).startswith(f"indexing shard 1 of 3 failed: analysis service unreachable at {dead}")
    assert "\n" not in str(failed.value)
    assert writer.versions() == before
    assert writer.store.counts() == (0, 0)
    assert writer.rows()[1].num_rows == 0
    assert len(writer.catalog.entries()) == 0 and not writer.catalog.complete
    assert STAGING_TABLE not in list_tables(writer.db)


@pytest.mark.badinput(case="a sharded index's worker killed (kill -9) after writing data",
                      behaviour="nothing visible to any reader; the plan run again commits each row once")
def test_a_killed_worker_leaves_nothing_visible(s3, analysis_server, workspace, static_model, tmp_path):
    writer = Writer(s3.uri("killed"), s3.storage_options, workspace, analysis_server, static_model)
    plan = writer.plan(1)
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(json.dumps(plan.to_json()))
    staging_table(writer.db)
    before = writer.versions()
    data = f"killed/{writer.store.table_name}.lance/data/"
    worker = subprocess.Popen(
        [sys.executable, "-m", "codecompass.retrieval.index.shard", "work", "--plan", str(plan_file), "--shard", "0"],
        env={**os.environ, **writer.env()}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not s3.keys(data):
            assert worker.poll() is None, f"the worker ended before writing data: {worker.stderr.read()[-500:]}"
            assert time.monotonic() < deadline, "the worker wrote no data in 120 s"
            time.sleep(0.02)
        worker.send_signal(signal.SIGKILL)
    finally:
        worker.kill()
        worker.wait()
        worker.stderr.close()
    assert worker.returncode == -signal.SIGKILL, "the worker finished before it could be killed"

    assert s3.keys(data), "its data files are in the bucket..."
    assert writer.versions() == before, "...but no version references them"
    assert writer.rows()[0].num_rows == 0
    assert writer.db.open_table(STAGING_TABLE).count_rows() == 0

    results = run_shards(plan, 1, db=writer.db, env=writer.env(), timeout_s=240)
    commit_shards(writer.store, writer.catalog, results)
    chunks = writer.rows()[0]
    assert chunks.num_rows == results[0].stats.chunks > 150
    assert chunks.num_rows == len(set(chunks.column("id").to_pylist()))



def test_workers_embed_with_the_embedding_service_when_the_plan_says_so(
        s3, analysis_server, start_python_service_session, workspace, static_model):
    _, embedding = start_python_service_session("codecompass.embedding", {"CODECOMPASS_EMBEDDING_PROFILE": "minilm"})
    client = EmbeddingClient(embedding, timeout_s=60, batch_size=32)
    try:
        model, _ = client.model_info()
        writer = Writer(s3.uri("embedded"), s3.storage_options, workspace, analysis_server, static_model,
                        primary=model)
        results = run_shards(writer.plan(2, embed=True), 2, db=writer.db,
                             env={**writer.env(), "EMBEDDING_ADDR": embedding}, timeout_s=240)
        commit_shards(writer.store, writer.catalog, results)

        counts = writer.store.vector_counts()
        assert counts.total == counts.primary == counts.static == sum(r.stats.chunks_embedded for r in results) > 150
        [chunk] = writer.store.find_by_names(["compute7"], Filters(), 1)
        expected = client.embed_documents([chunk.embedding_text]).vectors[0]
        primary, _ = writer.store.cosines([chunk.id], expected, None)[chunk.id]
        assert primary > 0.999, "the stored vector is the service's for that chunk (int8)"
    finally:
        client.close()


def test_the_writer_indexes_with_workers_as_its_own_sync_would(start_python_service, analysis_server, s3,
                                                              workspace, tmp_path: Path) -> None:
    """IndexWorkspace(workers=3) through a real retrieval service (the index on S3): the same rows
    and catalog as the writer's own sync of an identical copy, and a search answers from them."""
    from codecompass.clients.retrieval import RetrievalClient
    from codecompass.contracts.retrieval.model import IndexingStatus, IndexPhase, SearchQuery
    from codecompass.retrieval.location import index_key, workspace_id_of

    _, embedding = start_python_service("codecompass.embedding", {"CODECOMPASS_EMBEDDING_PROFILE": "code-static"})
    _, retrieval = start_python_service("codecompass.retrieval", {
        "ANALYSIS_ADDR": analysis_server, "EMBEDDING_ADDR": embedding, "CODECOMPASS_EMBEDDING_PROFILE": "code-static",
        "CODECOMPASS_STATE_DIR": str(tmp_path / "state"), "CODECOMPASS_RETRIEVAL_DB_URI": s3.uri("writer"),
        "CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS": json.dumps(s3.storage_options)})
    copies = {name: tmp_path / name / "ws" for name in ("sharded", "synced")}
    for root in copies.values():
        shutil.copytree(workspace, root)
    client = RetrievalClient(retrieval)
    try:
        sharded = list(client.index(str(copies["sharded"]), wait_for_embeddings=True, timeout_s=300, workers=3))
        synced = list(client.index(str(copies["synced"]), wait_for_embeddings=True, timeout_s=300))
        assert sharded[-1].phase is IndexPhase.DONE and sharded[-1].stats.chunks_upserted > 0
        assert IndexPhase.LEXICAL not in {p.phase for p in sharded}
        assert sharded[-1].stats.chunks_upserted == synced[-1].stats.chunks_upserted
        status = client.status(str(copies["sharded"]), 30)
        assert status.indexing_status is IndexingStatus.READY and status.chunks == sharded[-1].stats.chunks_upserted
        hits = client.search(SearchQuery(workspace_root=str(copies["sharded"]), query="validateToken", limit=5), 30)
        assert hits.results[0].chunk.name == "validateToken"
    finally:
        client.close()

    def rows(root: Path) -> tuple[list, list]:
        db = lancedb.connect(f"{s3.uri('writer')}/{index_key(workspace_id_of(root))}",
                             storage_options=s3.storage_options)
        (name,) = [n for n in list_tables(db) if n.startswith("chunks_")]
        columns = ["id", "relative_path", "snippet_hash", "start_line", "end_line", "has_vector"]
        chunks = sorted(tuple(r[c] for c in columns)
                        for r in db.open_table(name).to_arrow().select(columns).to_pylist())
        files = sorted((r["key"], r["content_hash"], r["chunks"])
                       for r in db.open_table("catalog").to_arrow().to_pylist()
                       if r["kind"] == "file")
        return chunks, files

    assert rows(copies["sharded"]) == rows(copies["synced"])
