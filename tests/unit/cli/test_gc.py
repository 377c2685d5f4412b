"""`codecompass gc` and `down --purge` over a state dir laid out as the retrieval service lays it."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from codecompass_cli.runtime import RuntimeState, ServiceState, write_state

from codecompass.common.config import settings_from
from codecompass.retrieval.state import (
    record_workspace_root,
    recorded_workspace_root,
    workspace_key,
    workspace_state_dir,
)


def _index(state: Path, workspace: Path, size: int) -> None:
    """A workspace's state as retrieval writes it: catalog folder (with the record) and index folder."""
    record_workspace_root(state, workspace)
    (workspace_state_dir(state, workspace) / "catalog.sqlite3").write_bytes(b"c" * size)
    table = state / "index" / workspace_key(workspace) / "chunks.lance"
    table.mkdir(parents=True)
    (table / "data.lance").write_bytes(b"i" * size)


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    state = tmp_path / "state"
    monkeypatch.setenv("CODECOMPASS_STATE_DIR", str(state))
    return state


@pytest.fixture
def workspaces(tmp_path: Path, state: Path) -> dict[str, Path]:
    live, gone = tmp_path / "live", tmp_path / "gone"
    live.mkdir()
    gone.mkdir()
    _index(state, live, 1024 * 1024)
    _index(state, gone, 512 * 1024)
    gone.rmdir()
    # An index from before workspaces were recorded: its workspace cannot be known.
    (state / "index" / ("f" * 32)).mkdir(parents=True)
    (state / "index" / ("f" * 32) / "data").write_bytes(b"x" * 100)
    return {"live": live, "gone": gone}


def test_the_workspace_record_round_trips(tmp_path: Path) -> None:
    record_workspace_root(tmp_path / "state", tmp_path / "ws")
    folder = workspace_state_dir(tmp_path / "state", tmp_path / "ws")
    assert recorded_workspace_root(folder) == tmp_path / "ws"
    (folder / "workspace.json").write_text("[not a record")
    assert recorded_workspace_root(folder) is None


def test_gc_dry_run_lists_every_index_and_removes_nothing(run_cli, state: Path, workspaces: dict[str, Path]) -> None:
    result = run_cli("gc", "--dry-run")
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        f"kept        2.0 MB  {workspaces['live']}",
        f"missing     1.0 MB  {workspaces['gone']} (workspace no longer exists)",
        f"kept         100 B  (workspace not recorded; index {'f' * 12})",
        f"3 indexes (3.0 MB) in {state}; would remove 1 of deleted workspaces (1.0 MB)",
    ]
    assert (state / "index" / workspace_key(workspaces["gone"])).is_dir()


@pytest.mark.badinput(case="indexes of deleted workspaces",
                      behaviour="`gc` lists them with size and workspace and removes them; live ones stay")
def test_gc_removes_the_index_of_a_missing_workspace_and_keeps_the_live_one(
        run_cli, state: Path, workspaces: dict[str, Path]) -> None:
    result = run_cli("gc")
    assert result.code == 0, result.err
    assert f"removed     1.0 MB  {workspaces['gone']} (workspace no longer exists)" in result.out
    gone_key, live_key = workspace_key(workspaces["gone"]), workspace_key(workspaces["live"])
    assert not (state / "index" / gone_key).exists() and not (state / "workspaces" / gone_key).exists()
    assert (state / "index" / live_key).is_dir() and (state / "workspaces" / live_key / "catalog.sqlite3").is_file()
    assert (state / "index" / ("f" * 32)).is_dir()
    again = run_cli("gc")
    assert again.out.splitlines()[-1] == f"2 indexes (2.0 MB) in {state}; removed 0 of deleted workspaces (0 B)"


def test_gc_on_an_empty_state_dir(run_cli, state: Path) -> None:
    result = run_cli("gc")
    assert (result.code, result.out) == (0, f"no indexes in {state}\n")


def test_gc_leaves_indexes_alone_while_the_services_run(run_cli, state: Path, workspaces: dict[str, Path]) -> None:
    service = subprocess.Popen(["sleep", "60"])
    try:
        settings = settings_from({"CODECOMPASS_STATE_DIR": str(state)})
        write_state(settings, RuntimeState(started_at="t", workspace=None, services={
            "retrieval": ServiceState("retrieval", service.pid, "127.0.0.1:1", "l", ["sleep", "60"], "t")}))
        result = run_cli("gc")
        assert (result.code, result.out) == (1, "")
        assert result.err == ("codecompass: the services are running and may hold these indexes open; stop them "
                              "with `codecompass down` first, or list only with `codecompass gc --dry-run`\n")
        assert (state / "index" / workspace_key(workspaces["gone"])).is_dir()
        assert run_cli("gc", "--dry-run").code == 0
    finally:
        service.kill()
        service.wait()


@pytest.mark.badinput(case="`down` and the indexes",
                      behaviour="`down` keeps them and says where; `down --purge` removes them")
def test_down_keeps_the_indexes_and_says_so_and_purge_removes_them(
        run_cli, state: Path, workspaces: dict[str, Path]) -> None:
    down = run_cli("down")
    assert down.code == 0
    assert down.out.splitlines() == [
        "codecompass is not running",
        (f"indexes kept in {state} (`codecompass gc` removes those of deleted workspaces, "
         "`codecompass down --purge` all of them)"),
    ]
    assert (state / "index" / workspace_key(workspaces["live"])).is_dir()

    purge = run_cli("down", "--purge")
    assert purge.code == 0
    assert purge.out.splitlines()[-1] == f"removed 3 indexes (3.0 MB) from {state}"
    assert list((state / "index").iterdir()) == [] and list((state / "workspaces").iterdir()) == []
    assert json.loads(run_cli("status", "--json").out)["state_dir"] == str(state)
