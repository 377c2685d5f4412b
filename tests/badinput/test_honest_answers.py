"""No silent wrong answer (issue 15 §3): what a search could not do is said, in the answer a
person (the CLI) and an agent (MCP over stdio) read: a name nothing is called, a path filter that
is absolute or matches nothing, a first index that is still being written, and progress that
tells the truth."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest
from tests.badinput.harness import Stack, copy_workspace
from tests.fixtures.chain_workspace import write_chain_workspace

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "sample_workspace"


@pytest.fixture(scope="module")
def workspace(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_workspace(SAMPLE, tmp_path_factory.mktemp("honest") / "ws")
    assert stack.cli("index", str(root)).code == 0
    return root


@pytest.mark.badinput(case="a misspelt exact name (`validateTokenz`)",
                      behaviour="exit 0: `No confident match for \"validateTokenz\" — nothing in the index is named "
                                "validateTokenz (nearest: validateToken, …)`; the index unchanged")
def test_a_misspelt_name_names_the_nearest_ones(stack: Stack, workspace: Path) -> None:
    before = stack.rows(workspace)
    run = stack.cli("search", str(workspace), "validateTokenz")
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    assert lines[0].startswith('No confident match for "validateTokenz" — nothing in the index is named '
                               "validateTokenz (nearest: validateToken"), lines[0]
    assert lines[1].startswith(" 1. relevance 0."), lines[1]  # the names are said once, first
    ranked = stack.cli("search", str(workspace), "validateTokenz", "--no-select", "--json").json()
    meta = ranked["metadata"]
    assert meta["missing_names"] == ["validateTokenz"] and meta["nearest_names"][0] == "validateToken"
    # The near match is still listed first, but never with confidence.
    assert ranked["results"][0]["qualified_name"] == "TokenService.validateToken" or meta["confidence"] < 0.5
    assert meta["confidence"] <= 0.2
    assert stack.rows(workspace) == before


@pytest.mark.badinput(case="search_code for a misspelt exact name (MCP)",
                      behaviour="low_confidence true, missing_names and nearest_names set, suggested_action "
                                "`search_code(query=\"validateToken\")`")
def test_search_code_for_a_misspelt_name_is_low_confidence(stack: Stack, workspace: Path) -> None:
    result = stack.mcp_call(workspace, "search_code", {"query": "validateTokenz"})
    assert not result.is_error, result.content[0].text
    meta = result.structured_content["metadata"]
    assert meta["low_confidence"] is True and meta["missing_names"] == ["validateTokenz"]
    assert meta["suggested_action"].startswith('search_code(query="validateToken") — nothing in the index is named '
                                               "validateTokenz; the nearest names are validateToken")
    # The right name is answered with confidence: the rule is about names that are missing.
    found = stack.mcp_call(workspace, "search_code", {"query": "validateToken"}).structured_content["metadata"]
    assert found["low_confidence"] is False and found["missing_names"] == []


@pytest.mark.badinput(case="absolute --path inside the workspace",
                      behaviour="read as the workspace-relative path: the same results as `--path src/auth`")
def test_an_absolute_path_filter_inside_the_workspace(stack: Stack, workspace: Path) -> None:
    relative = stack.cli("search", str(workspace), "validate token", "--path", "src/auth", "--no-select", "--json")
    absolute = stack.cli("search", str(workspace), "validate token", "--path", f"{workspace}/src/auth", "--no-select",
                         "--json")
    assert relative.code == absolute.code == 0, absolute.err
    paths = [r["path"] for r in absolute.json()["results"]]
    assert paths and all(p.startswith("src/auth/") for p in paths)
    assert paths == [r["path"] for r in relative.json()["results"]]


@pytest.mark.badinput(case="absolute --path outside the workspace",
                      behaviour="exit 2: `retrieval: invalid filter: path pattern '/etc' is outside the workspace "
                                "ROOT; …`")
def test_an_absolute_path_filter_outside_the_workspace(stack: Stack, workspace: Path) -> None:
    run = stack.cli("search", str(workspace), "validate token", "--path", "/etc")
    assert (run.code, run.out) == (2, "")
    assert run.err_lines == [(f"codecompass: retrieval: invalid filter: path pattern '/etc' is outside the workspace "
                              f"{workspace}; patterns are relative to its root (e.g. src/auth or **/*.ts)")]


@pytest.mark.badinput(case="a path filter that matches no file",
                      behaviour="exit 0: `the filters matched no indexed code (the index holds N chunks); …`, not "
                                "'no code matched'; MCP: the same as a note")
def test_a_path_filter_that_matches_nothing_says_so(stack: Stack, workspace: Path) -> None:
    run = stack.cli("search", str(workspace), "validate token", "--path", "nothere/")
    assert run.code == 0, run.err
    total = len(stack.rows(workspace))
    assert run.out.splitlines()[0] == (f"the filters matched no indexed code (the index holds {total:,} chunks); "
                                       "--path patterns are relative to the workspace root")
    result = stack.mcp_call(workspace, "semantic_search", {"query": "validate token", "path": "nothere/"})
    assert not result.is_error
    assert result.content[0].text.startswith(f"The filter path='nothere/' matched no indexed code (the index holds "
                                             f"{total:,} chunks)")
    assert "No code in" not in " ".join(c.text for c in result.content)


def _assert_truthful_progress(err: str) -> None:
    """`index`'s progress lines without a terminal: each step once and in order, the lexical
    first pass shown, a step's chunks never 0 once its files come back, one `writing` line after
    the last chunking one (a stray `writing 71/71 chunks 0` once appeared mid-chunking)."""
    lines = [line for line in err.splitlines() if line.split(" ", 1)[0] in
             ("scanning", "lexical", "chunking", "writing", "embedding", "done")]
    steps = [line.split(" ", 1)[0] for line in lines]
    order = [step for i, step in enumerate(steps) if i == 0 or steps[i - 1] != step]
    assert order[:4] == ["scanning", "lexical", "chunking", "writing"], order
    assert steps.count("writing") == 1
    for line in lines:
        fields = line.split()
        if fields[0] in ("lexical", "chunking") and fields[2].split("/")[0] not in ("0",):
            assert fields[4] != "0", line


@pytest.mark.badinput(case="search during a cold index",
                      behaviour="answers from what is written, with `the index is still being written (PHASE: "
                                "N/M files, C chunks searchable so far)`; never a bare 'no results'; `index` shows "
                                "each step once, in order, chunks counted as they come")
def test_a_search_during_the_first_index_says_how_far_it_is(stack: Stack, tmp_path: Path) -> None:
    root = write_chain_workspace(tmp_path / "cold", 1500, classes=True)
    index = subprocess.Popen(stack.command("index", str(root), "--no-wait"), env=stack.env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    answers: list[list[str]] = []
    assert index.stderr is not None
    # The index's own sync runs first (its first line is out), then searches come in as an agent's would.
    first = index.stderr.readline()
    try:
        deadline = time.monotonic() + 240
        while index.poll() is None and time.monotonic() < deadline:
            run = stack.cli("search", str(root), "computes the value of stage 1234")
            assert run.code == 0, run.err
            answers.append(run.out.splitlines())
            time.sleep(0.2)
    finally:
        _out, rest = index.communicate(timeout=300)
    err = first + rest
    assert index.returncode == 0, err
    _assert_truthful_progress(err)
    # The first screen: a low-confidence answer's first line says so, and the index's progress follows it.
    progress = [next((line for line in lines[:2] if line.startswith("the index is still being written (")), None)
                for lines in answers]
    partial = [line for line in progress if line is not None]
    assert partial, "no search ran while the first index was being written"
    for line in partial:
        assert line.endswith(" chunks searchable so far): this answer covers that part only"), line
    # An empty answer is never the only thing said while the index is incomplete.
    for lines, line in zip(answers, progress, strict=True):
        if lines and lines[0].endswith("— nothing in the index matched it."):
            assert line is not None or "index ready" in lines[-1], lines
