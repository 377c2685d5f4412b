"""One index writer and two searchers sharing an index on object storage (a local S3 server,
moto, as a real process), every party a real process with its own state dir: nothing is shared
but the bucket. The index is named by its workspace id (the repository's remote), so the
searchers need no copy of the files.

Shows: the writer indexes into s3://; both searchers answer; an incremental sync becomes visible
to both; a searcher reading during a sync never sees a half-written state; a second writer is
serialised by LanceDB's conditional commits (no duplicate, nothing lost); a writer killed
mid-sync loses and duplicates nothing once a writer syncs again."""

from __future__ import annotations

import json
import shutil
import signal
import threading
import time
from pathlib import Path

import lancedb
import pytest
from tests.conftest import SAMPLE_WORKSPACE, index_fully

from codecompass.clients.errors import ServiceError
from codecompass.clients.retrieval import RetrievalClient
from codecompass.contracts.retrieval.model import IndexingStatus, SearchQuery
from codecompass.retrieval.location import index_key

WORKSPACE_ID = "github.com/acme/sample"
ROW_COLUMNS = ("id", "relative_path", "qualified_name", "snippet_hash", "start_line", "end_line", "has_vector")


def _workspace(root: Path, extra_files: int = 0) -> Path:
    """The sample workspace as a clone of github.com/acme/sample, plus generated modules."""
    shutil.copytree(SAMPLE_WORKSPACE, root)
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text('[remote "origin"]\n\turl = git@github.com:acme/sample.git\n',
                                          encoding="utf-8")
    for i in range(extra_files):
        body = "\n".join(f"export function step{i}_{j}(value: number): number {{\n  return value * {j} + {i};\n}}\n"
                         for j in range(12))
        (root / "src" / "gen" / f"module{i}.ts").parent.mkdir(parents=True, exist_ok=True)
        (root / "src" / "gen" / f"module{i}.ts").write_text(body, encoding="utf-8")
    return root


class Team:
    """The processes of one shared index: an embedding service, writers and searchers."""

    def __init__(self, start, analysis: str, s3, tmp_path: Path, prefix: str) -> None:
        self._start = start
        self._tmp = tmp_path
        self._s3 = s3
        self.uri = s3.uri(prefix)
        _, self.embedding = start("codecompass.embedding", {"CODECOMPASS_EMBEDDING_PROFILE": "code-static"})
        self._env = {
            "ANALYSIS_ADDR": analysis, "EMBEDDING_ADDR": self.embedding,
            "CODECOMPASS_EMBEDDING_PROFILE": "code-static",
            "CODECOMPASS_RETRIEVAL_DB_URI": self.uri,
            "CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS": json.dumps(s3.storage_options),
            "CODECOMPASS_RETRIEVAL_SEARCHER_REFRESH_S": "0.1",
        }
        self._count = 0

    def process(self, role: str):
        self._count += 1
        state = self._tmp / f"{role}-{self._count}"
        return self._start("codecompass.retrieval", {**self._env, "CODECOMPASS_RETRIEVAL_ROLE": role,
                                                     "CODECOMPASS_STATE_DIR": str(state)})

    def rows(self) -> list[tuple]:
        db = lancedb.connect(f"{self.uri}/{index_key(WORKSPACE_ID)}", storage_options=self._s3.storage_options)
        (name,) = [n for n in db.list_tables().tables if n.startswith("chunks_")]
        return sorted(tuple(r[c] for c in ROW_COLUMNS)
                      for r in db.open_table(name).to_arrow().select(list(ROW_COLUMNS)).to_pylist())




def _search(address: str, query: str) -> list[str]:
    client = RetrievalClient(address)
    try:
        outcome = client.search(SearchQuery(workspace_root="", workspace_id=WORKSPACE_ID, query=query, limit=10), 30)
    finally:
        client.close()
    return [r.chunk.name for r in outcome.results]


def _eventually(check, timeout: float = 20.0):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            return value
        time.sleep(0.1)


@pytest.mark.timeout(600)
def test_one_writer_two_searchers_on_s3(start_python_service, analysis_server: str, s3, tmp_path: Path) -> None:
    team = Team(start_python_service, analysis_server, s3, tmp_path, "team")
    root = _workspace(tmp_path / "checkout", extra_files=40)
    _, writer = team.process("writer")
    _, searcher_a = team.process("searcher")
    _, searcher_b = team.process("searcher")

    # Before any index exists a searcher answers NOT_INDEXED and creates nothing in the bucket.
    client = RetrievalClient(searcher_a)
    try:
        missing = client.status("", 30, workspace_id=WORKSPACE_ID)
        assert missing.indexing_status is IndexingStatus.NOT_INDEXED
    finally:
        client.close()
    assert s3.keys("team/") == []

    index_fully(writer, root)
    keys = s3.keys(f"team/{index_key(WORKSPACE_ID)}/")
    assert any(k.split("/")[2].startswith("catalog.lance") for k in keys)
    for searcher in (searcher_a, searcher_b):
        assert _search(searcher, "validateToken")[0] == "validateToken"
        client = RetrievalClient(searcher)
        try:
            (listed,) = client.list_indexes(30)
            assert (listed.workspace_id, listed.root) == (WORKSPACE_ID, str(root.resolve()))
            assert listed.status.indexing_status is IndexingStatus.READY and listed.status.chunks > 0
        finally:
            client.close()
    # A searcher writes nothing: its calls that write are refused with one line.
    client = RetrievalClient(searcher_a)
    try:
        with pytest.raises(Exception) as refused:
            client.sync(str(root), 0, 30)
        assert "Sync goes to the index writer; this retrieval server is a searcher" in str(refused.value)
    finally:
        client.close()

    # An incremental sync becomes visible to both searchers; while it is written, searches never
    # see duplicated rows or a chunk count that goes back.
    before = len(team.rows())
    seen: list[tuple[int, list[str]]] = []
    stop = threading.Event()

    def watch() -> None:
        watcher = RetrievalClient(searcher_b)
        try:
            while not stop.is_set():
                outcome = watcher.search(SearchQuery(workspace_root="", workspace_id=WORKSPACE_ID,
                                                     query="rotateSigningKeys step", limit=50), 30)
                seen.append((outcome.metadata.total_chunks, [r.chunk.id for r in outcome.results]))
        finally:
            watcher.close()

    thread = threading.Thread(target=watch)
    thread.start()
    (root / "src" / "auth" / "keys.ts").write_text(
        "/** Rotates the keys that sign session tokens. */\n"
        "export function rotateSigningKeys(count: number): string[] {\n"
        "  return Array.from({ length: count }, String);\n}\n",
        encoding="utf-8")
    for i in range(10):
        (root / "src" / "gen" / f"module{i}.ts").unlink()
    client = RetrievalClient(writer)
    try:
        assert client.sync(str(root), 0, 120).finished
    finally:
        client.close()
    for searcher in (searcher_a, searcher_b):
        assert _eventually(lambda s=searcher: (_search(s, "rotateSigningKeys") or [""])[0] == "rotateSigningKeys")
    stop.set()
    thread.join()
    assert seen and all(len(ids) == len(set(ids)) for _, ids in seen)
    totals = [total for total, _ in seen]
    # Each total is one committed version: the old index or the new one, never a partial write in
    # between (the sync deletes ten files' 120 symbols and 10 cards, and adds one symbol and its
    # file's card, in one commit).
    after = len(team.rows())
    assert set(totals) <= {before, after} and after == before - 130 + 2

    # A second writer on the same index: both sync the same edit at once; commits are serialised,
    # so the index holds each chunk once.
    _, writer_b = team.process("writer")
    (root / "src" / "auth" / "keys.ts").write_text(
        "export function rotateSigningKeys(count: number): string[] {\n  return [];\n}\n"
        "export function revokeSigningKey(id: string): void {}\n", encoding="utf-8")

    def sync(address: str) -> None:
        c = RetrievalClient(address)
        try:
            c.sync(str(root), 0, 120)
        finally:
            c.close()

    threads = [threading.Thread(target=sync, args=(w,)) for w in (writer, writer_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows = team.rows()
    assert len({r[0] for r in rows}) == len(rows)
    assert _eventually(lambda: (_search(searcher_a, "revokeSigningKey") or [""])[0] == "revokeSigningKey")


@pytest.mark.timeout(600)
def test_a_writer_killed_mid_sync_loses_and_duplicates_nothing(start_python_service, analysis_server: str, s3,
                                                               tmp_path: Path) -> None:
    clean = Team(start_python_service, analysis_server, s3, tmp_path / "clean", "clean")
    killed = Team(start_python_service, analysis_server, s3, tmp_path / "killed", "killed")
    root = _workspace(tmp_path / "checkout", extra_files=400)
    _, clean_writer = clean.process("writer")
    index_fully(clean_writer, root)
    expected = clean.rows()

    process, writer = killed.process("writer")
    thread = threading.Thread(target=_index_until_killed, args=(writer, root))
    thread.start()
    # Killed once some of the index is written, before all of it is.
    assert _eventually(lambda: _rows_or_empty(killed) and len(_rows_or_empty(killed)) < len(expected), 120)
    process.send_signal(signal.SIGKILL)
    process.wait()
    thread.join()
    _, restarted = killed.process("writer")
    index_fully(restarted, root)
    assert killed.rows() == expected


def _index_until_killed(address: str, root: Path) -> None:
    with pytest.raises(ServiceError):
        index_fully(address, root)


def _rows_or_empty(team: Team) -> list[tuple]:
    try:
        return team.rows()
    except (ValueError, OSError, RuntimeError):
        return []
