"""Sharded indexing as a Kubernetes Indexed Job, with real processes on the local S3 server: a
writer (`retrieval.shard_runner = job`) asked for IndexWorkspace(workers=2) posts the plan in the
index and waits; the test starts the workers the way the Job controller would, each with
JOB_COMPLETION_INDEX, the index root and the workspace id: no plan file, no disk shared with the
writer. The sample workspace keeps it small (the sharded S3 tests of test_sharded_index.py are
the slow, thorough ones)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import lancedb
import pytest
from tests.conftest import SAMPLE_WORKSPACE
from tests.fixtures.s3 import MotoS3Server, S3Bucket

from codecompass.clients.errors import ServiceError
from codecompass.clients.retrieval import RetrievalClient
from codecompass.contracts.retrieval.model import IndexPhase, IndexProgress
from codecompass.retrieval.index.shard.board import PlanBoard, PlanState
from codecompass.retrieval.index.shard.results import STAGING_TABLE
from codecompass.retrieval.location import index_key, list_tables, workspace_id_of
from codecompass.v1 import retrieval_pb2, retrieval_pb2_grpc

WORKER_TIMEOUT_S = 120


@dataclass
class JobStack:
    bucket: S3Bucket
    root_uri: str
    writer: str  # the writer's address
    analysis: str
    base: Path

    def workspace(self, name: str) -> tuple[Path, str]:
        """A copy of the sample workspace, and its workspace id (what a Job's pods are given)."""
        root = self.base / name / "ws"
        shutil.copytree(SAMPLE_WORKSPACE, root)
        return root, workspace_id_of(root.resolve())

    def pod(self, workspace_id: str, shard: int, *extra: str) -> subprocess.Popen:
        """One pod of the Indexed Job: the index root and credentials by environment, as a Job's
        spec would set them, and its completion index."""
        env = {**os.environ, "JOB_COMPLETION_INDEX": str(shard), "ANALYSIS_ADDR": self.analysis,
               "CODECOMPASS_RETRIEVAL_DB_URI": self.root_uri,
               "CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS": json.dumps(self.bucket.storage_options)}
        return subprocess.Popen([sys.executable, "-m", "codecompass.retrieval.index.shard", "work",
                                 "--workspace-id", workspace_id, *extra],
                                env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                text=True)

    def db(self, workspace_id: str) -> lancedb.DBConnection:
        return lancedb.connect(f"{self.root_uri}/{index_key(workspace_id)}",
                               storage_options=self.bucket.storage_options)

    def board(self, workspace_id: str) -> PlanBoard:
        return PlanBoard(self.db(workspace_id), f"{self.root_uri}/{index_key(workspace_id)}")

    def rows(self, workspace_id: str) -> tuple[list, list]:
        """Every chunk (its identity, place and vector flag) and every catalog file, as a new reader sees them."""
        db = self.db(workspace_id)
        chunks = []
        for name in [n for n in list_tables(db) if n.startswith("chunks_")]:
            columns = ["id", "relative_path", "snippet_hash", "start_line", "end_line", "has_vector"]
            chunks += [tuple(r[c] for c in columns) for r in db.open_table(name).to_arrow().select(columns).to_pylist()]
        files = [(r["key"], r["content_hash"], r["chunks"]) for r in db.open_table("catalog").to_arrow().to_pylist()
                 if r["kind"] == "file"]
        return sorted(chunks), sorted(files)

    def versions(self, workspace_id: str) -> dict[str, int]:
        db = self.db(workspace_id)
        return {name: len(db.open_table(name).list_versions()) for name in list_tables(db)}


@pytest.fixture(scope="module")
def stack(s3_server: MotoS3Server, start_python_service_session, analysis_server: str,
          tmp_path_factory: pytest.TempPathFactory) -> JobStack:
    bucket = S3Bucket(s3_server, f"cc-job-{uuid.uuid4().hex[:12]}")
    s3_server.client().create_bucket(Bucket=bucket.bucket)
    base = tmp_path_factory.mktemp("indexed-job")
    _, embedding = start_python_service_session("codecompass.embedding",
                                                {"CODECOMPASS_EMBEDDING_PROFILE": "code-static"})
    _, writer = start_python_service_session("codecompass.retrieval", {
        "ANALYSIS_ADDR": analysis_server, "EMBEDDING_ADDR": embedding, "CODECOMPASS_EMBEDDING_PROFILE": "code-static",
        "CODECOMPASS_RETRIEVAL_ROLE": "writer", "CODECOMPASS_RETRIEVAL_SHARD_RUNNER": "job",
        "CODECOMPASS_STATE_DIR": str(base / "writer-state"), "CODECOMPASS_RETRIEVAL_DB_URI": bucket.uri("indexes"),
        "CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS": json.dumps(bucket.storage_options)})
    return JobStack(bucket, bucket.uri("indexes"), writer, analysis_server, base)


class IndexCall:
    """IndexWorkspace in a thread, as `codecompass index --workers N` runs it against the writer."""

    def __init__(self, address: str, root: Path, workers: int, timeout_s: float) -> None:
        self.progress: list[IndexProgress] = []
        self.error: ServiceError | None = None
        self.posted = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(address, root, workers, timeout_s))
        self._thread.start()

    def _run(self, address: str, root: Path, workers: int, timeout_s: float) -> None:
        client = RetrievalClient(address)
        try:
            for progress in client.index(str(root), wait_for_embeddings=False, timeout_s=timeout_s, workers=workers):
                self.progress.append(progress)
                if progress.phase is IndexPhase.SHARDS:
                    self.posted.set()
        except ServiceError as exc:
            self.error = exc
        finally:
            client.close()

    def join(self, timeout_s: float) -> None:
        self._thread.join(timeout_s)
        assert not self._thread.is_alive(), f"IndexWorkspace still running after {timeout_s} s"


def finished(pod: subprocess.Popen) -> tuple[int, str]:
    """(exit code, last stderr line) of a pod, once it ends."""
    _, err = pod.communicate(timeout=WORKER_TIMEOUT_S)
    lines = err.strip().splitlines()
    return pod.returncode, lines[-1] if lines else ""


@pytest.fixture
def pods() -> Iterator[list[subprocess.Popen]]:
    """Every pod a test starts is gone after it, whatever the test did."""
    started: list[subprocess.Popen] = []
    yield started
    for pod in started:
        if pod.poll() is None:
            pod.kill()
        pod.communicate()


def test_an_indexed_job_of_two_pods_indexes_as_the_writer_would(stack: JobStack, pods) -> None:
    """Pod 0 starts before the writer has a plan and waits for it; pod 1 after the plan is posted.
    The index equals the writer's own sync of an identical copy; a late pod then writes nothing."""
    root, workspace_id = stack.workspace("job")
    plain, plain_id = stack.workspace("plain")
    early = stack.pod(workspace_id, 0, "--plan-wait-s", "120")
    pods.append(early)
    time.sleep(1.0)
    assert early.poll() is None, "a pod with no plan yet waits for one"

    started = time.monotonic()
    call = IndexCall(stack.writer, root, workers=2, timeout_s=180)
    assert call.posted.wait(120), f"no SHARDS progress: {call.error}"
    pods.append(stack.pod(workspace_id, 1))
    call.join(180)
    sharded_s = time.monotonic() - started

    assert call.error is None, call.error
    assert [finished(pod)[0] for pod in pods] == [0, 0]
    shards = [p for p in call.progress if p.phase is IndexPhase.SHARDS]
    assert (shards[0].shards_done, shards[0].shards_total) == (0, 2)
    assert shards[-1].shards_done == 2 and shards[-1].files_done == shards[-1].files_total > 0
    final = call.progress[-1]
    assert final.phase is IndexPhase.DONE and final.stats.chunks_upserted > 0
    assert stack.board(workspace_id).status().state is PlanState.COMMITTED

    plain_call = IndexCall(stack.writer, plain, workers=0, timeout_s=180)
    plain_call.join(180)
    assert plain_call.error is None, plain_call.error
    assert final.stats.chunks_upserted == plain_call.progress[-1].stats.chunks_upserted
    assert stack.rows(workspace_id) == stack.rows(plain_id)
    assert STAGING_TABLE not in list_tables(stack.db(workspace_id))
    print(f"\nIndexWorkspace(workers=2) with an Indexed Job's 2 pods: {sharded_s:.1f} s")

    # A retried pod after the commit: nothing to do, a success for the Job, and nothing written.
    before = stack.versions(workspace_id)
    code, line = finished(stack.pod(workspace_id, 1, "--plan-wait-s", "1"))
    assert code == 0, line
    assert line.startswith("shard 1: nothing to do: no open plan in 1 s; the last one, ") and "(committed " in line
    assert stack.versions(workspace_id) == before


@pytest.mark.badinput(case="a sharded index on an Indexed Job whose pod for one shard never comes",
                      behaviour="the writer's wait ends within the call's deadline with one line (how many reported, "
                                "how to start the Job); nothing committed; the pod coming late writes nothing")
def test_a_missing_pod_times_the_plan_out_and_commits_nothing(stack: JobStack, pods) -> None:
    root, workspace_id = stack.workspace("missing")
    # The deadline only has to outlast one pod's work (a few seconds); the test waits all of it.
    call = IndexCall(stack.writer, root, workers=2, timeout_s=15)
    assert call.posted.wait(12), f"no SHARDS progress: {call.error}"
    pods.append(stack.pod(workspace_id, 0))
    call.join(45)

    assert finished(pods[0])[0] == 0
    assert call.error is not None, "IndexWorkspace must fail without shard 1"
    message = str(call.error)
    assert call.error.status == "ABORTED", message
    assert message.startswith("1 of 2 shard workers reported in "), message
    assert message.endswith(
        " s (none from shard 1); nothing was committed: start the Indexed Job, 2 completions, each pod running "
        f"`python -m codecompass.retrieval.index.shard work --workspace-id {workspace_id}` with this index root"
    ), message
    assert "\n" not in message
    assert stack.rows(workspace_id) == ([], []), "nothing committed"
    status = stack.board(workspace_id).status()
    assert (status.state, status.reason) == (PlanState.TIMED_OUT, message)
    assert STAGING_TABLE not in list_tables(stack.db(workspace_id))

    before = stack.versions(workspace_id)
    code, line = finished(stack.pod(workspace_id, 1, "--plan-wait-s", "1"))
    assert code == 1, line
    assert line.startswith(f"error: shard 1: no open plan in 1 s; the last one, {status.plan_id}, ended (timed_out ")
    assert stack.versions(workspace_id) == before


def test_a_cancelled_index_call_ends_its_plan(stack: JobStack) -> None:
    """The caller gives up (Ctrl-C on `codecompass index`): the writer stops waiting at once rather
    than hold the workspace's sync for the rest of the deadline, and its plan ends cancelled."""
    root, workspace_id = stack.workspace("cancelled")
    channel = grpc.insecure_channel(stack.writer)
    try:
        stream = retrieval_pb2_grpc.RetrievalServiceStub(channel).IndexWorkspace(
            retrieval_pb2.IndexWorkspaceRequest(workspace_root=str(root), workers=2), timeout=300)
        first = next(r for r in stream if r.phase == retrieval_pb2.INDEX_PHASE_SHARDS)
        assert (first.shards_done, first.shards_total) == (0, 2)
        stream.cancel()
    finally:
        channel.close()
    board = stack.board(workspace_id)
    deadline = time.monotonic() + 30
    while board.status().state is PlanState.OPEN:
        assert time.monotonic() < deadline, "the plan is still open 30 s after its caller left"
        time.sleep(0.2)
    status = board.status()
    assert status.state is PlanState.CANCELLED
    assert status.reason == ("stopped waiting for shard workers (the index call was cancelled) with 0 of 2 reported; "
                             "nothing was committed")
    assert stack.rows(workspace_id) == ([], [])
