"""The sharded index's pure parts: which shard a file is in, plans and results across processes,
and the worker command's answers to a bad plan."""

import json
import logging
from collections import Counter

import lancedb
import pytest
from tests.unit.retrieval.test_store import MODEL, make_chunk

from codecompass.common.chunks import Language
from codecompass.retrieval.catalog import Catalog, CatalogEntry, IndexedChunk, IndexIdentity
from codecompass.retrieval.schema import EmbeddingModel
from codecompass.retrieval.shard import (
    InvalidPlan,
    ShardPlan,
    ShardResult,
    ShardStats,
    commit_shards,
    main,
    make_plan,
    shard_of,
)
from codecompass.retrieval.state import FileEntry
from codecompass.retrieval.store import ChunkStore
from codecompass.retrieval.sync import SyncTuning

IDENTITY = IndexIdentity(model=EmbeddingModel("local", "m", "1", 8), chunker_version="5",
                         static=EmbeddingModel("code-static", "code-static", "w", 4))


def files(n: int) -> list[FileEntry]:
    return [FileEntry(f"src/dir{i % 7}/file{i}.ts", 100 + i, 10**18 + i, f"h{i}", Language.TYPESCRIPT)
            for i in range(n)]


def test_shard_of_is_the_same_in_every_process_and_run():
    # Pinned: a salted hash (Python's hash()) would give other values in another process.
    assert [shard_of(p, 3) for p in ("src/a.ts", "src/b.ts", "lib/index.js", "README.md")] == [2, 0, 2, 1]
    assert shard_of("src/a.ts", 1) == 0


def test_shard_of_spreads_files_evenly():
    counts = Counter(shard_of(f.relative_path, 3) for f in files(3000))
    assert set(counts) == {0, 1, 2}
    assert all(900 <= n <= 1100 for n in counts.values()), counts


def test_shard_of_refuses_no_shards():
    with pytest.raises(ValueError, match="shards must be at least 1, got 0"):
        shard_of("src/a.ts", 0)


def test_a_plan_puts_every_file_in_exactly_one_shard_and_survives_json():
    scanned = files(50)
    plan = make_plan("/ws", "s3://bucket/idx/key", IDENTITY, scanned, 3, analysis=["a:1", "b:2", "c:3"],
                     tuning=SyncTuning(files_per_call=8, max_flush_chunks=100))

    planned = [f for shard in plan.shards for f in shard]
    assert sorted(planned, key=lambda f: f.relative_path) == sorted(scanned, key=lambda f: f.relative_path)
    assert all(shard_of(f.relative_path, 3) == i for i, shard in enumerate(plan.shards) for f in shard)
    assert (plan.files_per_call, plan.batch_chunks) == (8, 100)
    assert ShardPlan.from_json(json.loads(json.dumps(plan.to_json()))) == plan
    assert "storage" not in json.dumps(plan.to_json()), "credentials never go into a plan"


@pytest.mark.parametrize(("change", "message"), [
    ({"format": 99}, "plan format 99 is not 1: the writer that made it runs another version"),
    ({"shards": "nope"}, "the plan is malformed: ValueError: "),
    ({"analysis": ["a:1"]}, "the plan names 1 analysis services for 3 shards"),
])
def test_a_bad_plan_is_refused_with_one_line(change, message):
    data = {**make_plan("/ws", "/idx", IDENTITY, files(10), 3).to_json(), **change}
    with pytest.raises(InvalidPlan) as refused:
        ShardPlan.from_json(data)
    assert str(refused.value).startswith(message)


def test_a_result_survives_json():
    entry = CatalogEntry(files(1)[0], (IndexedChunk("id1", "snip", "sig"),))
    skipped = CatalogEntry(files(2)[1], (), "chunk_failed", "nested too deep to parse")
    result = ShardResult(staged=(), entries=(entry, skipped), vanished=("src/gone.ts",),
                         stats=ShardStats(files=3, chunks=1, skipped=1, vanished=1, seconds={"chunk": 0.5}))
    assert ShardResult.from_json(json.loads(json.dumps(result.to_json()))) == result


@pytest.fixture
def restore_logging():
    """main() points the root logger at this test's captured stderr, which pytest closes."""
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    yield
    root.handlers[:] = saved[0]
    root.setLevel(saved[1])


@pytest.mark.badinput(case="shard worker given a plan that is not one (missing, not JSON, another format, no shard)",
                      behaviour="exit 2 with one line naming the shard and the problem")
def test_the_worker_command_answers_a_bad_plan_with_one_line(tmp_path, capsys, restore_logging):
    missing = tmp_path / "missing.json"
    assert main(["work", "--plan", str(missing), "--shard", "1"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("error: shard 1: [Errno 2] No such file")

    garbage = tmp_path / "garbage.json"
    garbage.write_text("{not json")
    assert main(["work", "--plan", str(garbage), "--shard", "0"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith("error: shard 0: Expecting property name")

    old = tmp_path / "old.json"
    old.write_text(json.dumps({**make_plan("/ws", "/idx", IDENTITY, files(4), 2).to_json(), "format": 0}))
    assert main(["work", "--plan", str(old), "--shard", "0"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == \
        "error: shard 0: plan format 0 is not 1: the writer that made it runs another version"

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(make_plan("/ws", str(tmp_path / "idx"), IDENTITY, files(4), 2).to_json()))
    assert main(["work", "--plan", str(plan), "--shard", "5"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == \
        "error: shard 5: shard 5 is not in the plan (it has 2: 0 to 1)"

    assert main(["work", "--plan", str(plan), "--shard", "0"]) == 1
    assert capsys.readouterr().err.strip().splitlines()[-1] == (
        f"error: shard 0: the index at {tmp_path / 'idx'} has no table for the plan's identity: "
        "the writer opens the index before it starts the workers")


def test_commit_shards_replaces_re_indexed_files_and_removes_gone_ones(tmp_path):
    uri = str(tmp_path / "index")
    db = lancedb.connect(uri)
    store = ChunkStore.open(uri, model=MODEL, chunker_version="c1")
    catalog = Catalog.open(db)
    catalog.reset(IndexIdentity(model=MODEL, chunker_version="c1"))
    old = [make_chunk("a1", "oldName", "src/a.ts"), make_chunk("g1", "gone", "src/gone.ts"),
           make_chunk("k1", "kept", "src/kept.ts")]
    store.apply_changes(upserts=old, delete_ids=[], vectors={})
    catalog.commit([entry(c) for c in old], [], complete=True)
    new = make_chunk("a2", "newName", "src/a.ts")
    worker = ChunkStore.open(uri, model=MODEL, chunker_version="c1")
    result = ShardResult(staged=(worker.stage([new], {}, {}),), entries=(entry(new),), vanished=(),
                         stats=ShardStats(files=1, chunks=1))

    commit_shards(store, catalog, [result], removed=["src/gone.ts"])

    assert sorted(r["id"] for r in store.outline()) == ["a2", "k1"]
    assert sorted(catalog.entries()) == ["src/a.ts", "src/kept.ts"]
    assert catalog.entries()["src/a.ts"].chunk_ids == ("a2",)
    assert catalog.pending() == frozenset() and catalog.complete
    assert sorted(Catalog.open(lancedb.connect(uri)).entries()) == ["src/a.ts", "src/kept.ts"]


def entry(chunk) -> CatalogEntry:
    return CatalogEntry(FileEntry(chunk.relative_path, 10, 1, f"h-{chunk.id}", Language.TYPESCRIPT),
                        (IndexedChunk.of(chunk),))
