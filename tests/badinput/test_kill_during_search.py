"""kill -9 of a service while searches are running: a search whose analysis or embedding service
dies still answers (from the index as it stands, or lexically); one whose retrieval service dies
either finished first or ends with the one line naming retrieval. Nothing in the index changes,
and `codecompass up` brings the set back."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from tests.badinput.harness import CliRun, Stack, copy_workspace

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "sample_workspace"
SEARCHES = 4
# The CLI takes about half a second to import and connect: a kill after that lands while the
# searches sync and retrieve.
KILL_AFTER_S = 0.6
QUERIES = ("how are tokens validated", "where is the config loaded", "decodeJwt", "retry with backoff")


@pytest.fixture(scope="module")
def workspace(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_workspace(SAMPLE, tmp_path_factory.mktemp("kill-search") / "ws")
    assert stack.cli("index", str(root)).code == 0
    return root


def _search_and_kill(stack: Stack, root: Path, service: str) -> list[CliRun]:
    stack.up()
    pid = stack.pid(service)
    argvs = [("search", str(root), query, "--json") for query in QUERIES[:SEARCHES]]
    processes = [subprocess.Popen(stack.command(*argv), env=stack.env, text=True, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE) for argv in argvs]
    time.sleep(KILL_AFTER_S)
    os.kill(pid, signal.SIGKILL)
    runs = []
    for argv, process in zip(argvs, processes, strict=True):
        out, err = process.communicate(timeout=120)
        runs.append(Stack.record(CliRun(argv, process.returncode, out, err)))
    return runs


@pytest.mark.parametrize("service", [
    pytest.param("analysis", marks=pytest.mark.badinput(
        case="kill -9 of analysis during searches",
        behaviour="every search answers (exit 0) from the index as it stands")),
    pytest.param("embedding", marks=pytest.mark.badinput(
        case="kill -9 of embedding during searches",
        behaviour="every search answers (exit 0); lexical once the embedding service is gone")),
])
def test_a_dependency_killed_during_searches_leaves_them_answering(stack: Stack, workspace: Path,
                                                                   service: str) -> None:
    rows = stack.rows(workspace)
    runs = _search_and_kill(stack, workspace, service)
    assert [run.code for run in runs] == [0] * SEARCHES, [run.err for run in runs]
    assert all(run.json()["results"] or run.json()["selection"] is not None for run in runs)
    assert stack.rows(workspace) == rows


@pytest.mark.badinput(case="kill -9 of retrieval during searches",
                      behaviour="each search finished first (exit 0) or ends with exit 1: "
                                "`retrieval service not running at ADDR; run codecompass up`; `up` restarts it")
def test_retrieval_killed_during_searches_is_one_line(stack: Stack, workspace: Path) -> None:
    rows = stack.rows(workspace)
    runs = _search_and_kill(stack, workspace, "retrieval")
    for run in runs:
        if run.code != 0:
            assert run.code == 1 and len(run.err_lines) == 1, run.err
            assert re.fullmatch(r"codecompass: retrieval service not running at 127\.0\.0\.1:\d+; "
                                r"run `codecompass up`", run.err_lines[0])
    stack.up()
    after = stack.cli("search", str(workspace), "decodeJwt", "--no-select", "--json")
    assert after.code == 0 and after.json()["results"][0]["qualified_name"] == "decodeJwt"
    assert stack.rows(workspace) == rows
