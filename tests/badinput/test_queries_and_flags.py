"""Queries and flags a user (or an agent) gets wrong: each gets an answer or one clear line with
exit 2, and no search changes the index (reads never write)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.badinput.harness import Stack, copy_workspace

from codecompass.clients.errors import INVALID, ServiceError
from codecompass.clients.retrieval import RetrievalClient
from codecompass.contracts.retrieval.model import SearchQuery
from codecompass.policy.shape import MAX_QUERY_CHARS

SAMPLE = Path(__file__).resolve().parents[1] / "fixtures" / "sample_workspace"
# The longest single argument Linux passes to a program (MAX_ARG_STRLEN) is 128 KiB: a 200 kB
# query reaches the services only through a client (an agent's MCP call), not a command line.
ARGV_QUERY_CHARS = 120_000
CLIENT_QUERY_CHARS = 200_000


@pytest.fixture(scope="module")
def workspace(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = copy_workspace(SAMPLE, tmp_path_factory.mktemp("queries") / "ws")
    assert stack.cli("index", str(root)).code == 0
    return root


@pytest.fixture(scope="module")
def rows_before(stack: Stack, workspace: Path) -> list[tuple]:
    return stack.rows(workspace)


def _search(stack: Stack, root: Path, query: str, *flags: str):
    return stack.cli("search", str(root), query, *flags)


def _usage_error(stack: Stack, *args: str) -> str:
    """The one line argparse prints after the usage of a refused command line (exit 2)."""
    run = stack.cli(*args)
    assert run.code == 2, run.out + run.err
    assert run.out == ""
    return run.err_lines[-1]


def _too_long(chars: int) -> str:
    return f"query too long: {chars:,} characters (the limit is {MAX_QUERY_CHARS:,}); search with the lines that matter"


@pytest.mark.badinput(case="huge query (120 kB on the command line)",
                      behaviour="exit 2: `query too long: N characters (the limit is 10,000)`; the index unchanged")
def test_huge_query_on_the_command_line(stack: Stack, workspace: Path, rows_before: list[tuple]) -> None:
    query = ("decodeJwt verifySignature " * (ARGV_QUERY_CHARS // 26 + 1))[:ARGV_QUERY_CHARS]
    run = _search(stack, workspace, query)
    assert (run.code, run.out, run.err_lines) == (2, "", [f"codecompass: retrieval: {_too_long(ARGV_QUERY_CHARS)}"])
    assert stack.rows(workspace) == rows_before


@pytest.mark.badinput(case="huge query (200 kB from a client)",
                      behaviour="INVALID_ARGUMENT with the same one line; nothing searched")
def test_huge_query_from_a_client(stack: Stack, workspace: Path) -> None:
    client = RetrievalClient(stack.address("retrieval"))
    try:
        with pytest.raises(ServiceError) as refused:
            client.search(SearchQuery(workspace_root=str(workspace), query="x " * (CLIENT_QUERY_CHARS // 2)), 60)
    finally:
        client.close()
    assert refused.value.kind == INVALID
    assert refused.value.user_message() == f"retrieval: {_too_long(CLIENT_QUERY_CHARS)}"


@pytest.mark.badinput(case="query at the length limit", behaviour="answered (exit 0)")
def test_a_query_at_the_limit_is_answered(stack: Stack, workspace: Path) -> None:
    query = ("how is a jwt decoded " * MAX_QUERY_CHARS)[:MAX_QUERY_CHARS]
    run = _search(stack, workspace, query, "--no-select", "--json")
    assert run.code == 0, run.err
    assert run.json()["results"]


@pytest.mark.badinput(case="punctuation-only query",
                      behaviour="exit 0; the first line: `No confident match for \"…\" — it has no letters or digits "
                                "to search by`")
def test_punctuation_only_query(stack: Stack, workspace: Path) -> None:
    run = _search(stack, workspace, "!@#$%^&*()_+-=?")
    assert run.code == 0, run.err
    assert run.out.splitlines()[0].startswith(
        'No confident match for "!@#$%^&*()_+-=?" — it has no letters or digits to search by')


@pytest.mark.badinput(case="a name that exists nowhere",
                      behaviour="exit 0; the first line: `No confident match for \"NAME\" — nothing in the index is "
                                "named NAME`; the answer stays within the low-confidence budget")
def test_a_name_that_exists_nowhere(stack: Stack, workspace: Path) -> None:
    run = _search(stack, workspace, "frobnicateWidget")
    assert run.code == 0, run.err
    assert run.out.splitlines()[0].startswith(
        'No confident match for "frobnicateWidget" — nothing in the index is named frobnicateWidget')
    assert "(the low-confidence budget)" in run.out
    ranked = _search(stack, workspace, "frobnicateWidget", "--no-select", "--json").json()
    # Nothing matched lexically: what the list shows is the vector channel's nearest guesses.
    assert all(r["lexical_score"] == 0 for r in ranked["results"]) and ranked["metadata"]["confidence"] < 0.5


@pytest.mark.badinput(case="a name that exists nowhere, as a ranked list (--no-select)",
                      behaviour="exit 0; the list opens with the same `No confident match for \"NAME\" — …` line")
def test_a_ranked_list_for_a_name_that_exists_nowhere_says_low_confidence(stack: Stack, workspace: Path) -> None:
    run = _search(stack, workspace, "frobnicateWidget", "--no-select")
    assert run.code == 0, run.err
    first = run.out.splitlines()[0]
    assert first.startswith('No confident match for "frobnicateWidget" — nothing in the index is named '
                            "frobnicateWidget"), first
    assert "· below the threshold 0.50" in run.out


@pytest.mark.badinput(case="empty query", behaviour="exit 2: `retrieval: query must not be empty`")
def test_empty_query(stack: Stack, workspace: Path) -> None:
    run = _search(stack, workspace, "   ")
    assert (run.code, run.err_lines) == (2, ["codecompass: retrieval: query must not be empty"])


# FTS-like syntax is plain text here: operators and quotes are words or punctuation, never a
# syntax error, and the names in the query still find their definitions.
FTS_QUERIES = [
    ("decodeJwt AND verifySignature", {"decodeJwt", "verifySignature"}, "AND"),
    ("loadConfig OR NOT slugify", {"loadConfig"}, "OR / NOT"),
    ('"unbalanced quote loadConfig', {"loadConfig"}, "unbalanced double quote"),
    ("it's slugify", {"slugify"}, "unbalanced single quote"),
    ("decode*", None, "trailing *"),
    ("*", None, "lone *"),
    ("name:decodeJwt", {"decodeJwt"}, "field:value"),
    ("(decodeJwt OR (slugify", {"decodeJwt", "slugify"}, "unbalanced parentheses"),
    ("NEAR(decodeJwt slugify)", {"decodeJwt", "slugify"}, "NEAR()"),
    ("decodeJwt^2 ~", {"decodeJwt"}, "boost and fuzzy operators"),
    ("AND OR NOT", None, "operators only"),
]


@pytest.mark.parametrize(("query", "first", "what"), [
    pytest.param(q, first, what, id=what.replace(" ", "-"),
                 marks=pytest.mark.badinput(case=f"FTS-like syntax: {what} (`{q}`)",
                                            behaviour="read as plain words: exit 0, an answer"
                                                      + (f"; {' or '.join(sorted(first))} first" if first else "")))
    for q, first, what in FTS_QUERIES
])
def test_fts_like_syntax(stack: Stack, workspace: Path, query: str, first: set[str] | None, what: str) -> None:
    run = _search(stack, workspace, query, "--no-select", "--json")
    assert run.code == 0, run.err
    results = run.json()["results"]
    assert results
    if first is not None:
        assert results[0]["qualified_name"] in first, [r["qualified_name"] for r in results[:3]]


@pytest.mark.badinput(case="query starting with a dash",
                      behaviour="exit 2 (read as an option) naming the query; after `--` it is searched")
def test_query_starting_with_a_dash(stack: Stack, workspace: Path) -> None:
    line = _usage_error(stack, "search", str(workspace), "-slugify")
    assert line == "codecompass search: error: the following arguments are required: query"
    run = stack.cli("search", str(workspace), "--no-select", "--json", "--", "-slugify")
    assert run.code == 0 and run.json()["results"][0]["qualified_name"] == "slugify"


BAD_FLAGS = [
    ("--max-tokens", "0", "expected an integer from 1 to 1,000,000, got '0'"),
    ("--max-tokens", "-5", "expected an integer from 1 to 1,000,000, got '-5'"),
    ("--max-tokens", "99999999999", "expected an integer from 1 to 1,000,000, got '99999999999'"),
    ("--max-tokens", "lots", "expected an integer from 1 to 1,000,000, got 'lots'"),
    ("--min-relevance", "1.5", "expected a number in [0, 1], got '1.5'"),
    ("--min-relevance", "-0.1", "expected a number in [0, 1], got '-0.1'"),
    ("--min-relevance", "nan", "expected a number in [0, 1], got 'nan'"),
    ("--limit", "0", "expected an integer from 1 to 1,000, got '0'"),
    ("--limit", "100000", "expected an integer from 1 to 1,000, got '100000'"),
    ("--limit", "2.5", "expected an integer from 1 to 1,000, got '2.5'"),
    ("--semantic-ratio", "7", "expected a number in [0, 1], got '7'"),
]


@pytest.mark.parametrize(("flag", "value", "message"), [
    pytest.param(flag, value, message, id=f"{flag}={value}",
                 marks=pytest.mark.badinput(case=f"out-of-range flag: search {flag} {value}",
                                            behaviour=f"exit 2: `argument {flag}: {message}`; nothing called"))
    for flag, value, message in BAD_FLAGS
])
def test_out_of_range_flags(stack: Stack, workspace: Path, flag: str, value: str, message: str) -> None:
    line = _usage_error(stack, "search", str(workspace), "decodeJwt", f"{flag}={value}")
    assert line == f"codecompass search: error: argument {flag}: {message}"


@pytest.mark.badinput(case="flags at their bounds", behaviour="answered (exit 0)")
def test_flags_at_their_bounds(stack: Stack, workspace: Path) -> None:
    run = _search(stack, workspace, "decodeJwt", "--max-tokens", "1000000", "--min-relevance", "0", "--limit", "1000")
    assert run.code == 0, run.err
    run = _search(stack, workspace, "decodeJwt", "--max-tokens", "1", "--min-relevance", "1", "--limit", "1")
    assert run.code == 0, run.err


@pytest.mark.badinput(case="missing path", behaviour="exit 2: `no such file or folder: PATH` (search, index, chunks)")
def test_missing_path(stack: Stack, tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    for args in (("search", str(missing), "decodeJwt"), ("index", str(missing)), ("chunks", str(missing))):
        run = stack.cli(*args)
        assert (run.code, run.err_lines) == (2, [f"codecompass: no such file or folder: {missing}"]), args


@pytest.mark.badinput(case="a file where a workspace folder is expected",
                      behaviour="exit 2: `not a folder: PATH (a workspace is a folder)`")
def test_a_file_as_the_workspace(stack: Stack, workspace: Path) -> None:
    file = workspace / "src" / "auth" / "jwt.ts"
    for args in (("search", str(file), "decodeJwt"), ("index", str(file))):
        run = stack.cli(*args)
        assert (run.code, run.err_lines) == (2, [f"codecompass: not a folder: {file} (a workspace is a folder)"]), args


@pytest.mark.badinput(case="path outside the workspace",
                      behaviour="exit 2: `PATH is outside the workspace ROOT` (chunks); `--path ../`: exit 2, "
                                "`invalid filter: ... leaves the workspace`")
def test_path_outside_the_workspace(stack: Stack, workspace: Path, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.ts"
    outside.write_text("export const elsewhere = 1;\n")
    run = stack.cli("chunks", str(outside), "--workspace", str(workspace))
    assert (run.code, run.err_lines) == (2, [f"codecompass: {outside} is outside the workspace {workspace}"])
    run = _search(stack, workspace, "decodeJwt", "--path", "../")
    assert (run.code, run.err_lines) == (2, [
        "codecompass: invalid filter: path pattern '../' leaves the workspace; patterns are relative to its root"])


@pytest.mark.badinput(case="searches of every bad query above",
                      behaviour="the index is unchanged: the same rows, none duplicated (reads never write)")
def test_queries_never_change_the_index(stack: Stack, workspace: Path, rows_before: list[tuple]) -> None:
    assert stack.rows(workspace) == rows_before
