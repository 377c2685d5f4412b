"""The sharded index's pure parts: which shard a file is in, plans and results across processes,
the worker command's answers to a bad plan; and the plan board of an Indexed Job's workers (on
local disk: the round trip through the index, who may deliver, how the writer's wait ends)."""

import itertools
import json
import logging
import threading
import time
from collections import Counter

import lancedb
import pytest
from tests.unit.retrieval.test_store import MODEL, make_chunk

from codecompass.common.chunks import Language
from codecompass.contracts.analysis.model import FileEntry
from codecompass.contracts.embedding.model import EmbeddingModel
from codecompass.retrieval.catalog import Catalog, CatalogEntry, IndexedChunk, IndexIdentity
from codecompass.retrieval.index.chunk_writer import ChunkWriter
from codecompass.retrieval.index.shard.__main__ import main
from codecompass.retrieval.index.shard.board import PLANS_TABLE, NoOpenPlan, PlanBoard, PlanState, wait_for_plan
from codecompass.retrieval.index.shard.job import PostedShards, ShardsAbandoned, ShardsMissing
from codecompass.retrieval.index.shard.plan import InvalidPlan, ShardPlan, make_plan, shard_of
from codecompass.retrieval.index.shard.results import STAGING_TABLE, ShardResult, ShardStats, commit_shards, deliver
from codecompass.retrieval.index.sync import SyncTuning
from codecompass.retrieval.location import index_key, list_tables

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
    store = ChunkWriter.open(uri, model=MODEL, chunker_version="c1")
    catalog = Catalog.open(db)
    catalog.reset(IndexIdentity(model=MODEL, chunker_version="c1"))
    old = [make_chunk("a1", "oldName", "src/a.ts"), make_chunk("g1", "gone", "src/gone.ts"),
           make_chunk("k1", "kept", "src/kept.ts")]
    store.apply_changes(upserts=old, delete_ids=[], vectors={})
    catalog.commit([entry(c) for c in old], [], complete=True)
    new = make_chunk("a2", "newName", "src/a.ts")
    worker = ChunkWriter.open(uri, model=MODEL, chunker_version="c1")
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


# ---- the plan board (retrieval.shard_runner = job) ------------------------------------------

WORKSPACE_ID = "github.com/acme/api#packages/core"
EMPTY = ShardResult(staged=(), entries=(), vanished=(), stats=ShardStats())


def board_at(uri) -> PlanBoard:
    return PlanBoard(lancedb.connect(str(uri)), str(uri))


def test_a_posted_plan_survives_the_index_and_one_plan_is_open_at_a_time(tmp_path):
    board = board_at(tmp_path / "index")
    assert board.status() is None
    first = make_plan("/ws", "s3://bucket/idx/key", IDENTITY, files(20), 3)
    second = make_plan("/ws", "s3://bucket/idx/key", IDENTITY, files(30), 2)

    before = time.time()
    board.post(first, WORKSPACE_ID)
    status = board.status()
    assert (status.plan_id, status.workspace_id, status.state, status.reason, status.ended_at) == \
        (first.plan_id, WORKSPACE_ID, PlanState.OPEN, "", None)
    assert before <= status.opened_at <= time.time()
    # Another process, another connection: the plan is in the index, whole.
    assert board_at(tmp_path / "index").plan(first.plan_id) == first

    board.post(second, WORKSPACE_ID)
    assert board.status().plan_id == second.plan_id and board.status().state is PlanState.OPEN
    assert board.db.open_table(PLANS_TABLE).count_rows() == 1, "posting replaces: one open plan per index"
    with pytest.raises(NoOpenPlan, match=f"plan {first.plan_id} was replaced by a newer one"):
        board.plan(first.plan_id)
    board.end(first.plan_id, PlanState.COMMITTED)
    assert board.status().state is PlanState.OPEN, "ending a replaced plan leaves the open one alone"

    board.end(second.plan_id, PlanState.TIMED_OUT, "shard 1's pod didn't start")
    ended = board_at(tmp_path / "index").status()
    assert (ended.state, ended.reason) == (PlanState.TIMED_OUT, "shard 1's pod didn't start")
    assert ended.ended_at is not None and ended.opened_at <= ended.ended_at <= time.time()
    board.end(second.plan_id, PlanState.COMMITTED)
    assert board.status().state is PlanState.TIMED_OUT, "an ended plan stays as it ended"
    assert board.plan(second.plan_id) == second, "and stays readable for late workers"


def test_a_worker_delivers_only_while_its_plan_is_open(tmp_path):
    board = board_at(tmp_path / "index")
    plan = make_plan("/ws", "/idx", IDENTITY, files(6), 2)
    with PostedShards(plan, WORKSPACE_ID, db=board.db, uri=board.uri):
        deliver(board.db, plan, 0, EMPTY, board)
        assert board.db.open_table(STAGING_TABLE).count_rows() == 1
        board.end(plan.plan_id, PlanState.TIMED_OUT)
        with pytest.raises(NoOpenPlan) as late:
            deliver(board.db, plan, 1, EMPTY, board)
        assert late.value.last is PlanState.TIMED_OUT
        assert str(late.value).startswith(f"plan {plan.plan_id} ended (timed_out 0 s ago) before this shard's "
                                          "result: nothing written")
        assert board.db.open_table(STAGING_TABLE).count_rows() == 1
    # The plan's end dropped the staging table: a worker later still is told why, not "table not found".
    with pytest.raises(NoOpenPlan, match="ended"):
        deliver(board.db, plan, 1, EMPTY, board)
    assert STAGING_TABLE not in list_tables(board.db)


def test_a_worker_waits_for_a_plan_and_takes_only_an_open_one(tmp_path):
    board = board_at(tmp_path / "index")
    with pytest.raises(NoOpenPlan, match=r"^no plan was posted in this index in 0 s: the writer posts one") as none:
        wait_for_plan(board, 0)
    assert none.value.last is None

    plan = make_plan("/ws", "/idx", IDENTITY, files(6), 2)
    poster = threading.Timer(0.5, board.post, (plan, WORKSPACE_ID))
    poster.start()
    started = time.monotonic()
    assert wait_for_plan(board, 30) == plan
    assert time.monotonic() - started < 10
    poster.join()

    board.end(plan.plan_id, PlanState.COMMITTED)
    with pytest.raises(NoOpenPlan) as ended:
        wait_for_plan(board, 0)
    assert ended.value.last is PlanState.COMMITTED
    assert str(ended.value) == f"no open plan in 0 s; the last one, {plan.plan_id}, ended (committed 0 s ago)"


def deliver_later(board: PlanBoard, plan: ShardPlan, shards: list[int]) -> threading.Timer:
    """Workers of `shards` delivering once the plan is posted (the writer's wait has begun)."""
    def deliver_each() -> None:
        for shard in shards:
            deliver(board.db, plan, shard, EMPTY, board)

    timer = threading.Timer(0.3, deliver_each)
    timer.start()
    return timer


def test_the_writer_waits_for_every_shard_and_ends_the_plan_committed(tmp_path):
    board = board_at(tmp_path / "index")
    plan = make_plan("/ws", "/idx", IDENTITY, files(9), 3)
    heard = []
    with PostedShards(plan, WORKSPACE_ID, db=board.db, uri=board.uri) as posted:
        workers = deliver_later(board, plan, [2, 0, 1])
        deadline = time.monotonic() + 30
        results = posted.wait(deadline=lambda: deadline, stop=lambda: None, progress=heard.append)
        workers.join()
        assert board.status().state is PlanState.OPEN, "open until the writer's commit is done"
    assert results == [EMPTY, EMPTY, EMPTY]
    assert heard[0] == frozenset() and heard[-1] == frozenset({0, 1, 2})
    assert all(a < b for a, b in itertools.pairwise(heard)), "each report is news"
    assert board.status().state is PlanState.COMMITTED
    assert STAGING_TABLE not in list_tables(board.db)


def test_a_missing_shard_worker_times_the_plan_out_naming_how_to_start_the_job(tmp_path):
    board = board_at(tmp_path / "index")
    plan = make_plan("/ws", "/idx", IDENTITY, files(9), 3)
    posted = PostedShards(plan, "local:/home/me/my project", db=board.db, uri=board.uri)
    with pytest.raises(ShardsMissing) as missing, posted:
        deliver_later(board, plan, [1]).join()
        deadline = time.monotonic() + 0.5
        posted.wait(deadline=lambda: deadline, stop=lambda: None, progress=lambda _: None)
    assert str(missing.value) == (
        "1 of 3 shard workers reported in 1 s (none from shard 0, 2); nothing was committed: start the Indexed Job, "
        "3 completions, each pod running `python -m codecompass.retrieval.index.shard work --workspace-id "
        "'local:/home/me/my project'` with this index root")
    status = board.status()
    assert (status.state, status.reason) == (PlanState.TIMED_OUT, str(missing.value))
    assert STAGING_TABLE not in list_tables(board.db)


def test_a_wait_stopped_or_failed_ends_the_plan_so(tmp_path):
    board = board_at(tmp_path / "index")
    plan = make_plan("/ws", "/idx", IDENTITY, files(4), 2)
    posted = PostedShards(plan, WORKSPACE_ID, db=board.db, uri=board.uri)
    with pytest.raises(ShardsAbandoned, match=r"^stopped waiting for shard workers \(the index call was cancelled\) "
                                              r"with 0 of 2 reported; nothing was committed$"), posted:
        posted.wait(deadline=time.monotonic, stop=lambda: "the index call was cancelled", progress=lambda _: None)
    assert board.status().state is PlanState.CANCELLED

    again = make_plan("/ws", "/idx", IDENTITY, files(4), 2)
    with pytest.raises(OSError, match="disk full"), PostedShards(again, WORKSPACE_ID, db=board.db, uri=board.uri):
        raise OSError("disk full")
    assert (board.status().state, board.status().reason) == (PlanState.FAILED, "disk full")


@pytest.mark.badinput(case="shard worker of an Indexed Job with no plan to run (none posted, the last one ended)",
                      behaviour="exit 1 with one line (the Job retries); exit 0 when the plan was committed")
def test_the_worker_command_without_an_open_plan(tmp_path, capsys, restore_logging, monkeypatch):
    monkeypatch.setenv("CODECOMPASS_RETRIEVAL_DB_URI", str(tmp_path / "root"))
    assert main(["work", "--workspace-id", WORKSPACE_ID, "--shard", "1", "--plan-wait-s", "0"]) == 1
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(
        "error: shard 1: no plan was posted in this index in 0 s: the writer posts one when asked to index with "
        "workers under retrieval.shard_runner = job")

    board = board_at(tmp_path / "root" / index_key(WORKSPACE_ID))
    plan = make_plan("/ws", "/elsewhere", IDENTITY, files(4), 2)
    board.post(plan, WORKSPACE_ID)
    board.end(plan.plan_id, PlanState.TIMED_OUT, "1 of 2 reported")
    assert main(["work", "--workspace-id", WORKSPACE_ID, "--shard", "1", "--plan-wait-s", "0"]) == 1
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(
        f"error: shard 1: no open plan in 0 s; the last one, {plan.plan_id}, ended (timed_out ")

    again = make_plan("/ws", "/elsewhere", IDENTITY, files(4), 2)
    board.post(again, WORKSPACE_ID)
    board.end(again.plan_id, PlanState.COMMITTED)
    assert main(["work", "--workspace-id", WORKSPACE_ID, "--plan-wait-s", "0", "--shard", "0"]) == 0
    assert capsys.readouterr().err.strip().splitlines()[-1].startswith(
        f"shard 0: nothing to do: no open plan in 0 s; the last one, {again.plan_id}, ended (committed ")
    assert STAGING_TABLE not in list_tables(board.db), "nothing written"


@pytest.mark.badinput(case="shard worker started with both or neither of --plan and --workspace-id, a bad id, "
                           "or a plan wait without --workspace-id",
                      behaviour="exit 2 with one usage line")
def test_the_worker_command_refuses_a_bad_invocation(tmp_path, capsys, restore_logging):
    for argv in (["work", "--shard", "0"],
                 ["work", "--plan", "p.json", "--workspace-id", WORKSPACE_ID, "--shard", "0"],
                 ["work", "--plan", "p.json", "--shard", "0", "--plan-wait-s", "5"],
                 ["work", "--workspace-id", WORKSPACE_ID, "--shard", "0", "--plan-wait-s", "-1"]):
        with pytest.raises(SystemExit) as usage:
            main(argv)
        assert usage.value.code == 2
        last = capsys.readouterr().err.strip().splitlines()[-1]
        assert last.startswith("python -m codecompass.retrieval.index.shard work: error: ")
    assert main(["work", "--workspace-id", "  ", "--shard", "0"]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == "error: shard 0: workspace_id must not be empty"
