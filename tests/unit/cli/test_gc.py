"""`codecompass gc` asks the retrieval service which indexes exist (ListIndexes) and drops those
of deleted workspaces through the index writer (DropIndex); `down --purge` removes a local state
dir's indexes. Real retrieval and analysis processes, the code-static profile (no model service)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from tests.conftest import SAMPLE_WORKSPACE

from codecompass.clients.retrieval import RetrievalClient
from codecompass.retrieval.location import index_key, workspace_id_of


@pytest.fixture
def served(start_python_service, analysis_server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """A retrieval service over its own state dir with two indexed workspaces, `live` and `gone`,
    and `gone`'s folder deleted since."""
    state = tmp_path / "state"
    _, embedding = start_python_service("codecompass.embedding", {"CODECOMPASS_EMBEDDING_PROFILE": "code-static"})
    env = {"ANALYSIS_ADDR": analysis_server, "EMBEDDING_ADDR": embedding, "CODECOMPASS_STATE_DIR": str(state),
           "CODECOMPASS_EMBEDDING_PROFILE": "code-static"}
    _, retrieval = start_python_service("codecompass.retrieval", env)
    workspaces = {}
    client = RetrievalClient(retrieval)
    try:
        for name in ("live", "gone"):
            root = tmp_path / name
            shutil.copytree(SAMPLE_WORKSPACE, root)
            for _ in client.index(str(root), wait_for_embeddings=True, timeout_s=300):
                pass
            workspaces[name] = root
    finally:
        client.close()
    shutil.rmtree(workspaces["gone"])
    monkeypatch.setenv("CODECOMPASS_STATE_DIR", str(state))
    monkeypatch.setenv("RETRIEVAL_ADDR", retrieval)
    return {"state": state, "retrieval": retrieval, **workspaces}


def _key(root: Path) -> str:
    return index_key(workspace_id_of(root))


@pytest.mark.badinput(case="indexes of deleted workspaces",
                      behaviour="`gc` lists them with size and workspace and removes them (DropIndex); live ones stay")
def test_gc_lists_every_index_and_drops_those_of_deleted_workspaces(run_cli, served: dict) -> None:
    state, live, gone = served["state"], served["live"], served["gone"]
    gone_key = index_key(f"local:{gone}")
    dry = run_cli("gc", "--dry-run")
    assert dry.code == 0, dry.err
    lines = dry.out.splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("kept") or lines[1].startswith("kept")
    assert any(line.startswith("missing") and line.endswith(f"{gone} (workspace no longer exists)") for line in lines)
    assert any(line.startswith("kept") and line.endswith(str(live)) for line in lines)
    assert lines[-1].startswith("2 indexes (") and "would remove 1 of deleted workspaces" in lines[-1]
    assert (state / "index" / gone_key).is_dir()

    result = run_cli("gc")
    assert result.code == 0, result.err
    assert any(line.startswith("removed") and line.endswith(f"{gone} (workspace no longer exists)")
               for line in result.out.splitlines())
    assert not (state / "index" / gone_key).exists()
    assert (state / "index" / _key(live)).is_dir()
    again = run_cli("gc")
    assert again.out.splitlines()[-1].startswith("1 index (") and again.out.endswith(
        "removed 0 of deleted workspaces (0 B)\n")
    # The live index still answers.
    client = RetrievalClient(served["retrieval"])
    try:
        assert client.status(str(live), 30).chunks > 0
    finally:
        client.close()


def test_gc_with_no_index(run_cli, start_python_service, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, retrieval = start_python_service("codecompass.retrieval", {"CODECOMPASS_STATE_DIR": str(tmp_path / "state")})
    monkeypatch.setenv("RETRIEVAL_ADDR", retrieval)
    result = run_cli("gc")
    assert (result.code, result.out) == (0, f"no indexes at {retrieval}\n")


@pytest.mark.badinput(case="`down` and the indexes",
                      behaviour="`down` keeps them and says where; `down --purge` removes them")
def test_down_keeps_the_indexes_and_says_so_and_purge_removes_them(run_cli, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "state"
    monkeypatch.setenv("CODECOMPASS_STATE_DIR", str(state))
    for key in ("a" * 32, "b" * 32):
        table = state / "index" / key / "catalog.lance"
        table.mkdir(parents=True)
        (table / "data.lance").write_bytes(b"i" * 1024 * 1024)
    # A catalog an earlier version kept beside the index.
    (state / "workspaces" / ("a" * 32)).mkdir(parents=True)
    (state / "workspaces" / ("a" * 32) / "catalog.sqlite3").write_bytes(b"c" * 1024 * 1024)
    down = run_cli("down")
    assert down.code == 0
    assert down.out.splitlines() == [
        "codecompass is not running",
        (f"indexes kept in {state} (`codecompass gc` removes those of deleted workspaces, "
         "`codecompass down --purge` all of them)"),
    ]
    assert (state / "index" / ("a" * 32)).is_dir()
    purge = run_cli("down", "--purge")
    assert purge.code == 0
    assert purge.out.splitlines()[-1] == f"removed 2 indexes (3.0 MB) from {state}"
    assert not (state / "index").exists() and not (state / "workspaces").exists()


def test_status_lists_the_indexes_the_service_knows(run_cli, served: dict) -> None:
    result = run_cli("status")
    lines = result.out.splitlines()
    at = lines.index("indexes: 2")
    listed = lines[at + 1:at + 3]
    assert any(line.strip().startswith("ready") and line.endswith(str(served["live"])) for line in listed)
    assert all(" files, " in line and " chunks, " in line for line in listed)
    payload = run_cli("status", "--json").json_lines()[0]
    assert {ix["root"] for ix in payload["indexes"]} == {str(served["live"]), str(served["gone"])}
    assert all(ix["status"] == "ready" and ix["chunks"] > 0 for ix in payload["indexes"])
