"""`codecompass doctor` (retrieval/doctor.py): each cause that keeps an index writer from starting,
produced for real and named in one line, and what the writer will do to an index of another index
format (the upgrade runbook): an older one is rebuilt at its next sync, after which search answers
from the new one; a newer one is flagged, since this writer would drop it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import lance
from tests.unit.retrieval.sync_harness import Harness, _seed

from codecompass.common.serving import ServiceSpec, start_server
from codecompass.retrieval.location import index_key, index_uri, workspace_id_of
from codecompass.retrieval.schema import FORMAT_METADATA_KEY, INDEX_FORMAT_VERSION, SOURCES_PREFIX, TABLE_PREFIX

REPO = Path(__file__).resolve().parents[3]
PYTHONPATH = os.pathsep.join([str(REPO / "clients" / "python" / "src"), str(REPO / "py_services"),
                              str(REPO / "gateway_mcp"), str(REPO)])


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _run(module: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": PYTHONPATH, "CODECOMPASS_BIND_HOST": "127.0.0.1",
            "RETRIEVAL_PORT": str(_free_port()), **env}
    return subprocess.run([sys.executable, "-m", module, *args], env=full, capture_output=True, text=True,
                          timeout=120, check=False)


def _doctor(**env: str) -> subprocess.CompletedProcess[str]:
    return _run("codecompass_cli", "doctor", **env)


def _failures(run: subprocess.CompletedProcess[str]) -> list[str]:
    return [line.removeprefix("FAIL ") for line in run.stdout.splitlines() if line.startswith("FAIL ")]


def test_a_healthy_setup_is_all_ok(tmp_path: Path) -> None:
    run = _doctor(CODECOMPASS_STATE_DIR=str(tmp_path / "state"))
    assert (run.returncode, run.stderr) == (0, "")
    assert [line.split()[0] for line in run.stdout.splitlines()] == ["ok", "ok", "ok"]


def test_an_index_root_that_cannot_be_written_is_named_and_the_writer_really_fails(tmp_path: Path) -> None:
    # A state dir under a file is refused by the settings already (one line, exit 2); an index root
    # elsewhere (retrieval.db_uri) is only found out by the writer's warmup.
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("a file where the index root should be")
    env = {"CODECOMPASS_STATE_DIR": str(tmp_path / "state"), "CODECOMPASS_RETRIEVAL_DB_URI": str(blocker / "index")}
    run = _doctor(**env)
    assert run.returncode == 1
    assert _failures(run) == [f"index root {blocker / 'index'} is not writable ({blocker / 'index'}: a file stands "
                              "where a folder is needed): fix its permissions or set CODECOMPASS_STATE_DIR / "
                              "CODECOMPASS_RETRIEVAL_DB_URI to a writable folder"]
    # The cause is real: a writer started with these settings exits 1.
    writer = _run("codecompass.retrieval", **env, CODECOMPASS_RETRIEVAL_ROLE="writer")
    assert writer.returncode == 1


def test_a_taken_port_is_named_with_who_holds_it(tmp_path: Path) -> None:
    env = {"CODECOMPASS_STATE_DIR": str(tmp_path / "state")}
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        run = _doctor(**env, RETRIEVAL_PORT=str(port))
        assert _failures(run) == [f"port {port} on 127.0.0.1 is taken by another program: stop it or set "
                                  "RETRIEVAL_PORT"]
        # The cause is real: a writer on that port exits 1, saying so.
        writer = _run("codecompass.retrieval", **env, CODECOMPASS_RETRIEVAL_ROLE="writer",
                      RETRIEVAL_PORT=str(port))
        assert writer.returncode == 1 and f"cannot listen on 127.0.0.1:{port}" in writer.stderr
    server = start_server(ServiceSpec(name="retrieval", register=lambda _server: []), host="127.0.0.1",
                          warmup_in_background=False)
    try:
        run = _doctor(**env, RETRIEVAL_PORT=str(server.port))
        assert _failures(run) == [f"port {server.port} is taken by a running CodeCompass server (health SERVING): a "
                                  "writer is running already, or set RETRIEVAL_PORT"]
    finally:
        server.stop(0)


def test_an_object_store_that_cannot_be_reached_or_has_no_bucket_is_named(tmp_path: Path, s3) -> None:
    env = {"CODECOMPASS_STATE_DIR": str(tmp_path / "state"),
           "CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS": json.dumps(s3.storage_options)}
    ok = _doctor(**env, CODECOMPASS_RETRIEVAL_DB_URI=s3.uri("idx"))
    assert ok.returncode == 0, ok.stdout
    assert ok.stdout.splitlines()[0] == f"ok   index root {s3.uri('idx')} is reachable and writable"
    missing = _doctor(**env, CODECOMPASS_RETRIEVAL_DB_URI="s3://no-such-bucket-cc/idx")
    (line,) = _failures(missing)
    assert line.startswith("index root s3://no-such-bucket-cc/idx cannot be written: ") and "bucket" in line.lower()
    s3.stop()
    down = _doctor(**env, CODECOMPASS_RETRIEVAL_DB_URI=s3.uri("idx"))
    (line,) = _failures(down)
    assert line.startswith(f"index root {s3.uri('idx')} cannot be written: ")
    assert line.endswith("(check the bucket, the endpoint and the credentials in "
                         "CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS)")
    assert "Traceback" not in down.stdout + down.stderr


def _stamp_format(uri: str, fmt: str) -> None:
    """What an index written by a release of another index format looks like: its chunk and source
    tables stamped with that format (the columns are this release's; only the stamp is read)."""
    for table in Path(uri).iterdir():
        if table.name.startswith((TABLE_PREFIX, SOURCES_PREFIX)):
            dataset = lance.dataset(str(table))
            dataset.update_schema_metadata({FORMAT_METADATA_KEY: fmt})


def test_an_index_of_an_older_format_is_flagged_then_rebuilt_by_the_next_sync(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    before = [r.chunk.id for r in harness.search("validate the token signature").results]
    harness.engine.close()
    key = index_key(workspace_id_of(harness.root))
    older = str(int(INDEX_FORMAT_VERSION) - 1)
    _stamp_format(index_uri(harness.settings, key), older)
    env = {"CODECOMPASS_STATE_DIR": str(harness.settings.state_dir)}

    run = _doctor(**env)
    assert run.returncode == 0, run.stdout
    assert (f"note index of {workspace_id_of(harness.root)} ({key}) is in index format {older}; this release writes "
            f"{INDEX_FORMAT_VERSION}: the writer rebuilds it at its next start or sync, and search finds nothing in "
            "it until then") in run.stdout.splitlines()

    # The upgrade: a writer of this release (a restart), then a sync (the gateway's next search,
    # or `codecompass index`): the index is rebuilt in this format and answers as before.
    harness.engine = harness.new_engine()
    harness.index()
    assert [r.chunk.id for r in harness.search("validate the token signature").results] == before
    after = _doctor(**env)
    assert after.returncode == 0 and "note" not in after.stdout


def test_an_index_of_a_newer_format_is_a_failure_this_writer_would_drop(harness: Harness) -> None:
    _seed(harness)
    harness.index()
    harness.engine.close()
    key = index_key(workspace_id_of(harness.root))
    newer = str(int(INDEX_FORMAT_VERSION) + 1)
    _stamp_format(index_uri(harness.settings, key), newer)
    run = _doctor(CODECOMPASS_STATE_DIR=str(harness.settings.state_dir))
    assert run.returncode == 1
    assert _failures(run) == [f"index of {workspace_id_of(harness.root)} ({key}) is in index format {newer}, newer "
                              f"than this release's {INDEX_FORMAT_VERSION}: this writer would drop it; run the release "
                              "that wrote it, or restore a backup of this format"]
    harness.engine = harness.new_engine()
