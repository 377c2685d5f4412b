"""`codecompass up` heals in place, and the server's ports say what is wrong in one line (issue 15
§1), on the folder's shared services: `up` after one service died restarts only that one, on the
address it had, so an `index` running meanwhile goes on; an external embedding endpoint that is
down at `up` is one line and leaves the rest running; a port out of range or already in use is
one line, and nothing starts or is indexed. tests/e2e/test_heal.py has the live MCP sessions."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from tests.badinput.harness import CliRun, Stack, assert_clean, copy_workspace, up_lines
from tests.fixtures.chain_workspace import write_chain_workspace

from codecompass.retrieval.location import index_key, workspace_id_of

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "sample_workspace"
FILES = 200


def _others(stack: Stack, service: str) -> dict[str, tuple[int, str]]:
    """(pid, address) of every service but ``service``."""
    return {name: (svc["pid"], svc["address"]) for name, svc in stack.runtime().items() if name != service}


@pytest.mark.badinput(case="`up` after one service died",
                      behaviour="`status` says `up` restarts it; `up` restarts only it, on the address it had; "
                                "the others keep their pids; the next search uses it")
def test_up_restarts_only_the_dead_service_on_its_address(stack: Stack, tmp_path: Path) -> None:
    root = copy_workspace(SAMPLE, tmp_path / "ws")
    assert stack.cli("index", str(root)).code == 0
    stack.up()
    address, others = stack.address("selection"), _others(stack, "selection")
    pid = stack.kill("selection")
    status = stack.cli("status")
    assert status.code == 1 and status.out.splitlines()[-1] == (
        "`codecompass up` restarts selection; the others keep running"), status.out
    healed = stack.cli("up")
    assert healed.code == 0, healed.err
    assert up_lines(healed) == [
        f"selection  dead (pid {pid}); restarting it",
        f"selection  SERVING at {address}",
        "kept running (same pids): analysis, embedding, retrieval",
        f"state: {stack.state / 'runtime.json'}; stop with `codecompass down`",
    ]
    assert stack.address("selection") == address and _others(stack, "selection") == others
    search = stack.cli("search", str(root), "how are tokens validated", "--json")
    assert search.code == 0 and "select" not in search.json()["metadata"]["skipped_stages"], search.out


@pytest.mark.badinput(case="`up` restarts analysis while `index` runs",
                      behaviour="the index goes on and ends (exit 0) with exactly the rows of a clean index; "
                                "retrieval keeps its pid")
@pytest.mark.timeout(300)
def test_an_index_survives_up_restarting_a_dependency(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> None:
    base = tmp_path_factory.mktemp("heal-index")
    clean = write_chain_workspace(base / "clean", FILES)
    assert stack.cli("index", str(clean)).code == 0
    root = copy_workspace(write_chain_workspace(base / "source", FILES), base / "ws")
    stack.up()
    address, others = stack.address("analysis"), _others(stack, "analysis")
    index = subprocess.Popen(stack.command("index", str(root)), env=stack.env, text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=1)
    assert index.stderr is not None
    seen: list[str] = []
    for line in index.stderr:
        seen.append(line)
        # Analysis has done its part: retrieval embeds what it chunked.
        if line.startswith("embedding"):
            break
    pid = stack.kill("analysis")
    up = subprocess.Popen(stack.command("up"), env=stack.env, text=True, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE)
    assert up.stdout is not None
    # `up`'s first line comes once it has decided what to restart, before it stops or starts
    # anything: the index must still be running then, or this test shows nothing.
    first = up.stdout.readline()
    running_when_up_acted = index.poll() is None
    rest, up_err = up.communicate(timeout=180)
    healed = Stack.record(CliRun(("up",), up.returncode, first + rest, up_err))
    out, err = index.communicate(timeout=300)
    indexed = Stack.record(CliRun(("index", str(root)), index.returncode, out, "".join(seen) + err))
    assert running_when_up_acted, "the index ended before `up` acted"
    assert indexed.code == 0, indexed.err
    assert healed.code == 0 and up_lines(healed)[:3] == [
        f"analysis   dead (pid {pid}); restarting it",
        f"analysis   SERVING at {address}",
        "kept running (same pids): embedding, retrieval, selection",
    ], healed.out
    assert _others(stack, "analysis") == others
    assert_clean(stack.rows(root), stack.rows(clean))


@pytest.mark.badinput(case="`up` with an external embedding endpoint that is down",
                      behaviour="exit 1: `embedding failed to start` and the endpoint's error in one line, no "
                                "traceback; the other services keep running; the next `up` restarts it")
def test_a_dead_embedding_endpoint_at_up_is_one_line(stack: Stack, free_port: int) -> None:
    stack.up()
    others = _others(stack, "embedding")
    pid = stack.kill("embedding")
    endpoint = f"http://127.0.0.1:{free_port}/v1"
    dead = {"CODECOMPASS_EMBEDDING_PROFILE": "openai-compatible", "CODECOMPASS_EMBEDDING_MODEL": "nomic-embed-text",
            "CODECOMPASS_EMBEDDING_BASE_URL": endpoint, "CODECOMPASS_EMBEDDING_EXTERNAL_PROVIDER_ENABLED": "true",
            "CODECOMPASS_EMBEDDING_ALLOW_CODE_PAYLOAD_TO_EXTERNAL": "true", "CODECOMPASS_EMBEDDING_MAX_RETRIES": "0"}
    run = subprocess.run(stack.command("up"), env={**stack.env, **dead}, capture_output=True, text=True,
                         timeout=180, check=False)
    failed = Stack.record(CliRun(("up",), run.returncode, run.stdout, run.stderr))
    log = stack.state / "logs" / "embedding.log"
    assert failed.code == 1
    assert failed.err_lines == [
        f"codecompass: embedding failed to start: exited with code 1 while warming up (log: {log})",
        (f"warmup of embedding failed: openai-compatible: cannot learn dimensions from {endpoint}/embeddings: "
         f"cannot reach openai-compatible endpoint {endpoint}/embeddings after 1 attempts: [Errno 111] "
         "Connection refused"),
    ]
    assert _others(stack, "embedding") == others
    status = stack.cli("status", "--json")
    assert {row["name"]: (row["state"], row["pid"]) for row in status.json()["services"]}["embedding"] == (
        "dead", pid)
    healed = stack.cli("up")
    assert healed.code == 0 and up_lines(healed)[0] == f"embedding  dead (pid {pid}); restarting it", healed.out


@pytest.mark.parametrize("port", [
    pytest.param("99999", marks=pytest.mark.badinput(case="mcp --port 99999",
                                                     behaviour="exit 2: `argument --port: expected a port from 1 "
                                                               "to 65535`; nothing starts")),
    pytest.param("0", marks=pytest.mark.badinput(case="mcp --port 0",
                                                 behaviour="exit 2, the same line: a client needs the port in "
                                                           "advance")),
    pytest.param("http", marks=pytest.mark.badinput(case="mcp --port http", behaviour="exit 2, the same line")),
])
def test_a_port_out_of_range_is_one_line(stack: Stack, tmp_path: Path, port: str) -> None:
    run = stack.cli("mcp", "--workspace", str(tmp_path), "--transport", "streamable-http", "--port", port)
    assert run.code == 2 and run.out == ""
    assert run.err_lines[-1] == (f"codecompass mcp: error: argument --port: expected a port from 1 to 65535, "
                                 f"got '{port}'")
    assert all(line.startswith(("usage:", " ")) for line in run.err_lines[:-1]), run.err


@pytest.mark.badinput(case="mcp --port that another program listens on",
                      behaviour="exit 1: `cannot listen on 127.0.0.1:PORT: address already in use`; the "
                                "workspace is not indexed")
def test_a_port_in_use_is_one_line_and_nothing_is_indexed(stack: Stack, tmp_path: Path) -> None:
    root = copy_workspace(SAMPLE, tmp_path / "ws")
    stack.up()
    taken = stack.address("retrieval")
    port = taken.rpartition(":")[2]
    run = stack.cli("mcp", "--workspace", str(root), "--transport", "streamable-http", "--port", port)
    assert run.code == 1 and run.out == ""
    assert run.err_lines == [f"codecompass is already running (since {_started_at(stack)})",
                             f"gateway: cannot listen on 127.0.0.1:{port}: address already in use"]
    assert not (stack.state / "index" / index_key(workspace_id_of(root.resolve()))).exists()


def _started_at(stack: Stack) -> str:
    started = json.loads((stack.state / "runtime.json").read_text())["started_at"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00", started)
    return started
