"""Files the analysis service cannot chunk, or must not chunk twice (issue 15 §2): each costs its
own answer and nothing else. `index` exits 0, the file is listed with its path and reason by
`--show-skipped` and by MCP `index_status`, and every other file of the workspace has its rows."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.badinput.harness import CliRun, Stack, copy_workspace, skipped_line

from codecompass.common.chunks import MODULE_QUALIFIED_NAME

TSCONFIG = '{ "compilerOptions": { "strict": true } }\n'
# An untyped JavaScript reply object whose methods call each other through `this`, and a mailer with
# a method of the same name (the analysis service's own trace fixture).
REPLY_JS = Path(__file__).resolve().parents[2] / "node_ts_service" / "test" / "fixtures" / "trace_js"
AUTH = """/** Validates a session token against its expiry. */
export function validateSessionToken(token: string, now: number): boolean {
  return token.length > 10 && now > 0;
}
"""
USES_AUTH = """import { validateSessionToken } from './auth';

/** Accepts a request whose session token is still valid. */
export function acceptRequest(token: string): boolean {
  return validateSessionToken(token, Date.now());
}
"""
# Deeper than the parser gets on a worker's 256 MB stack (it gets to 400,000 levels).
TOO_DEEP = 1_000_000
# The trial's file: one line, an array nested 20,000 deep. With a tsconfig the type checker read it
# whatever the scan said of it, and the first index wrote nothing.
ONE_LINE_DEEP = ("export const deep = " + "[" * 20_000 + "]" * 20_000 + ";\n\n"
                 "/** How many arrays the outer one holds. */\nexport function outerCount(): number {\n"
                 "  return deep.length;\n}\n")
CANNOT_PARSE = "nested too deep to parse: the parser ran out of stack (Maximum call stack size exceeded)"


def _nested(depth: int) -> str:
    """An array literal nested `depth` deep, one bracket per line, and a function that uses it."""
    return ("export const nested =\n" + "[\n" * depth + "]\n" * depth
            + ";\n\nexport function outerLength(): number {\n  return nested.length;\n}\n")


@dataclass
class Indexed:
    root: Path
    run: CliRun
    rows: list[tuple]

    def names(self, path: str) -> set[str]:
        """The symbols indexed for the file, its card (the module chunk) aside."""
        return {row[2] for row in self.rows if row[1] == path} - {MODULE_QUALIFIED_NAME}

    def skipped_line(self, path: str) -> str:
        return skipped_line(self.run, path)


@pytest.fixture(scope="module")
def unparsable(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Indexed:
    root = tmp_path_factory.mktemp("analysis-faults") / "ws"
    (root / "src").mkdir(parents=True)
    (root / "tsconfig.json").write_text(TSCONFIG)
    (root / "src" / "auth.ts").write_text(AUTH)
    (root / "src" / "data.ts").write_text(ONE_LINE_DEEP)
    (root / "src" / "nested.ts").write_text(_nested(TOO_DEEP))
    (root / "src" / "request.ts").write_text(USES_AUTH)
    run = stack.cli("index", str(root), "--show-skipped")
    return Indexed(root, run, stack.rows(root))


@pytest.mark.badinput(case="a file nested 1,000,000 deep in a project with a tsconfig",
                      behaviour="exit 0; `src/nested.ts  could not be chunked  nested too deep to parse: …`; "
                                "every other file indexed, with its references")
def test_a_file_too_deep_to_parse_is_skipped_and_the_rest_indexed(unparsable: Indexed) -> None:
    assert unparsable.run.code == 0, unparsable.run.err
    assert unparsable.skipped_line("src/nested.ts") == f"src/nested.ts could not be chunked {CANNOT_PARSE}"
    assert "  files       4 added, 0 changed, 0 removed, 1 skipped (1 could not be chunked)" in unparsable.run.out
    assert {row[1] for row in unparsable.rows} == {"src/auth.ts", "src/data.ts", "src/request.ts"}
    assert unparsable.names("src/auth.ts") == {"validateSessionToken"}
    assert unparsable.names("src/request.ts") >= {"acceptRequest"}


@pytest.mark.badinput(case="one line nesting an array 20,000 deep, in a project with a tsconfig",
                      behaviour="indexed, the line a data literal shown as a marker (not skipped as minified); "
                                "the first index writes every other file (it wrote 0 chunks)")
def test_a_line_nested_20000_deep_is_indexed_as_data(stack: Stack, unparsable: Indexed) -> None:
    assert unparsable.names("src/data.ts") == {"deep", "outerCount"}
    found = stack.cli("search", str(unparsable.root), "outerCount", "--no-select", "--limit", "1", "--json").json()
    assert found["results"][0]["qualified_name"] == "outerCount"
    shown = stack.cli("search", str(unparsable.root), "deep", "--path", "src/data.ts", "--no-select", "--json").json()
    (deep,) = [r for r in shown["results"] if r["qualified_name"] == "deep"]
    assert "[…] /* 40000 characters of data not indexed */" in deep["code"]


@pytest.mark.badinput(case="index_status after a file could not be chunked (MCP)",
                      behaviour="`not indexed: src/nested.ts (could not be chunked: nested too deep to parse: …)`; "
                                "structured `skipped` counts it and lists it with reason and detail")
def test_index_status_names_the_file_that_could_not_be_chunked(stack: Stack, unparsable: Indexed) -> None:
    result = stack.mcp_call(unparsable.root, "index_status", {})
    assert not result.is_error, result.content[0].text
    assert f"  not indexed: src/nested.ts (could not be chunked: {CANNOT_PARSE})" in result.content[0].text.splitlines()
    skipped = result.structured_content["skipped"]
    assert skipped["by_reason"] == {"chunk_failed": 1}
    assert skipped["not_indexed"] == [{"path": "src/nested.ts", "reason": "chunk_failed", "detail": CANNOT_PARSE}]


@pytest.fixture(scope="module")
def linked(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Indexed:
    root = tmp_path_factory.mktemp("symlink-cycle") / "ws"
    (root / "src" / "auth").mkdir(parents=True)
    (root / "src" / "requests").mkdir()
    (root / "src" / "auth" / "auth.ts").write_text(AUTH)
    (root / "src" / "requests" / "request.ts").write_text(USES_AUTH.replace("'./auth'", "'../auth/auth'"))
    # Sibling folders linked both ways, and a second name for one file.
    (root / "src" / "auth" / "requests").symlink_to("../requests")
    (root / "src" / "requests" / "auth").symlink_to("../auth")
    (root / "src" / "session.ts").symlink_to("auth/auth.ts")
    run = stack.cli("index", str(root), "--show-skipped")
    return Indexed(root, run, stack.rows(root))


@pytest.mark.badinput(case="symlinked sibling folders pointing at each other (a cycle), and a second name for a file",
                      behaviour="each real file indexed once under its real path; every other name listed as "
                                "`duplicate path` naming the path indexed")
def test_a_symlink_cycle_indexes_each_file_once(linked: Indexed) -> None:
    assert linked.run.code == 0, linked.run.err
    assert "  files       2 added, 0 changed, 0 removed, 3 skipped (3 duplicate paths)" in linked.run.out
    assert linked.skipped_line("src/auth/requests/") == (
        "src/auth/requests/ duplicate path symbolic link to src/requests/, indexed there")
    assert linked.skipped_line("src/requests/auth/") == (
        "src/requests/auth/ duplicate path symbolic link to src/auth/, indexed there")
    assert linked.skipped_line("src/session.ts") == (
        "src/session.ts duplicate path symbolic link to src/auth/auth.ts, indexed there")
    ids = [row[0] for row in linked.rows]
    assert len(ids) == len(set(ids))
    assert {row[1] for row in linked.rows} == {"src/auth/auth.ts", "src/requests/request.ts"}
    assert sorted(row[2] for row in linked.rows if row[1] == "src/auth/auth.ts") == [MODULE_QUALIFIED_NAME,
                                                                                     "validateSessionToken"]


USERS = """import { hash } from './crypto';

/** Creates a user account with a hashed password and a verified email address. */
export function createUser(email: string, password: string): { email: string; hash: string } {
  return { email: email.toLowerCase(), hash: hash(password) };
}
"""
CRYPTO = """/** Hashes a secret with a fixed salt. */
export function hash(secret: string): string {
  return `salted:${secret}`;
}
"""
# Tests beside the code, in a file named test.ts, using the words of the code's doc comment.
USERS_TEST = """import { createUser } from './users';

describe('createUser', () => {
  it('creates a user account with a hashed password', () => {
    const user = createUser('A@x.io', 'pw');
    expect(user.hash).toBe('salted:pw');
  });
  it('creates a user account with a verified email address in lower case', () => {
    expect(createUser('A@x.io', 'pw').email).toBe('a@x.io');
  });
});
"""


@pytest.mark.badinput(case="tests kept beside the code as src/users/test.ts, in the words of the code's doc comment",
                      behaviour="the question from the doc comment answers the implementation first; the "
                                "describe/it blocks are test code (--no-tests leaves them out)")
def test_tests_beside_the_code_are_test_code(stack: Stack, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "src" / "users").mkdir(parents=True)
    (root / "src" / "users" / "users.ts").write_text(USERS)
    (root / "src" / "users" / "crypto.ts").write_text(CRYPTO)
    (root / "src" / "users" / "test.ts").write_text(USERS_TEST)
    assert stack.cli("index", str(root)).code == 0
    question = "creates a user account with a hashed password and a verified email address"
    ranked = stack.cli("search", str(root), question, "--no-select", "--json").json()["results"]
    names = [r["qualified_name"] for r in ranked]
    assert ranked[0]["path"] == "src/users/users.ts", names
    # Every test block ranks below the function it tests.
    assert all(names.index("createUser") < i for i, r in enumerate(ranked) if r["path"] == "src/users/test.ts"), names
    without_tests = stack.cli("search", str(root), question, "--no-select", "--no-tests", "--json").json()["results"]
    assert {r["path"] for r in without_tests} <= {"src/users/users.ts", "src/users/crypto.ts"}


@pytest.mark.badinput(case="read_symbol `file:LINE` inside a 100,000-line function (MCP)",
                      behaviour="the function's first line, a marker `/* … lines 4-61198 not shown (61195 lines) */`, "
                                "the 81 lines around LINE, a marker for the rest, the last line; not lines 1-1,570")
def test_read_symbol_at_a_line_of_a_huge_function_shows_that_line(stack: Stack, tmp_path: Path) -> None:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    steps = [f"    total = step{i}(total);" for i in range(100_000)]
    lines = ["export class Pipeline {", "  /** Runs every generated step. */", "  run(input: number): number {",
             "    let total = input;", *steps, "    return total;", "  }", "}", ""]
    (root / "src" / "pipeline.ts").write_text("\n".join(lines))
    focus = lines.index("    total = step61234(total);") + 1
    result = stack.mcp_call(root, "read_symbol", {"symbol": f"src/pipeline.ts:{focus}"})
    assert not result.is_error, result.content[0].text
    shown = result.content[0].text.splitlines()
    assert shown[:3] == ["// src/pipeline.ts > Pipeline.run  (lines 3-100006)", "run(input: number): number {",
                         f"  /* … lines 4-{focus - 41} not shown ({focus - 44} lines) */"]
    assert shown[3:84] == [line[2:] for line in lines[focus - 41:focus + 40]]
    assert shown[84:] == [f"  /* … lines {focus + 41}-100005 not shown ({100_005 - focus - 40} lines) */", "}"]
    assert result.structured_content["metadata"]["window"] == {"focus_line": focus, "start_line": focus - 40,
                                                               "end_line": focus + 40}


@pytest.mark.badinput(case="codebase_trace callers of a method assigned to an untyped JavaScript object (MCP)",
                      behaviour="the three `this.deliver(…)` calls and `res.deliver('ok')`, each `[by name]` "
                                "(resolved_by name); `partial (unresolved; …)`, never `complete`")
def test_trace_finds_callers_the_checker_cannot_resolve(stack: Stack, tmp_path: Path) -> None:
    root = copy_workspace(REPLY_JS, tmp_path / "ws")
    result = stack.mcp_call(root, "codebase_trace", {"symbol": "reply.deliver", "direction": "callers"})
    assert not result.is_error, result.content[0].text
    lines = result.content[0].text.splitlines()
    assert lines[0] == "callers of reply.deliver (lib/reply.js:13-20)"
    assert lines[1].startswith("4 shown of 4 found — partial (unresolved; the type checker could not resolve")
    assert [line.split("  — ")[0] for line in lines[2:]] == [
        "lib/reply.js:26  reply.asJson", "lib/reply.js:33  reply.asJsonp", "lib/reply.js:39  reply.deliverStatus",
        "lib/routes.js:7  health"]
    assert all(line.endswith("[by name]") for line in lines[2:])
    nodes = result.structured_content["nodes"]
    assert {n["resolved_by"] for n in nodes} == {"name"}
    assert result.structured_content["partial_reason"] == "unresolved"
