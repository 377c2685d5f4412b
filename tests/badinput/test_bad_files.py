"""Files a workspace should not contain, or contains anyway: each is indexed or skipped with its
reason, `index` exits 0, and the rest of the workspace is indexed whole, once."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pytest
from tests.badinput.harness import CliRun, Stack, skipped_line

from codecompass.common.chunks import MODULE_QUALIFIED_NAME

GOOD = """/** Validates a session token against its expiry. */
export function validateSessionToken(token: string, now: number): boolean {
  return token.length > 10 && now > 0;
}
"""
LONG_FUNCTIONS = 50
LONG_BODY = 994  # 50 functions of 1,000 lines: 50,000 lines


def _long_file() -> str:
    lines: list[str] = []
    for f in range(LONG_FUNCTIONS):
        lines += [f"/** Stage {f} of the long pipeline. */",
                  f"export function longStage{f}(input: number[]): number {{",
                  "  let total = 0;"]
        lines += [f"  total += input[{i % 7}] * {i};" for i in range(LONG_BODY)]
        lines += ["  return total;", "}", ""]
    lines[-1] = "// end of the long pipeline"
    return "\n".join(lines) + "\n"


@dataclass
class Indexed:
    root: Path
    outside: Path
    first: CliRun
    second: CliRun
    rows_after_first: list[tuple]
    rows_after_second: list[tuple]

    def paths(self) -> set[str]:
        return {row[1] for row in self.rows_after_first}

    def skipped_line(self, path: str) -> str:
        return skipped_line(self.first, path)


@pytest.fixture(scope="module")
def indexed(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Indexed:
    base = tmp_path_factory.mktemp("bad-files")
    root, outside = base / "ws", base / "outside"
    src = root / "src"
    src.mkdir(parents=True)
    outside.mkdir()
    (root / "package.json").write_text('{"name": "bad-files"}\n')
    (src / "good.ts").write_text(GOOD)
    (src / "blob.ts").write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 16)
    (src / "latin1.ts").write_bytes('export const café = "naïve";\nexport function latinHelper() { return 1; }\n'
                                    .encode("latin-1"))
    (src / "app.min.js").write_text(
        "var a=" + ";var ".join(f"x{i}=function(y){{return y+{i}}}" for i in range(4000)) + ";\n")
    (src / "long.ts").write_text(_long_file())
    (src / "broken.ts").write_text("export function brokenParser(x: number {\n  return x +;\n}\n"
                                   "export class HalfWritten {\n  method() {\n")
    (src / "empty.ts").write_text("")
    (outside / "secret.ts").write_text("export function outsideSecretHelper(): number { return 42; }\n")
    os.symlink("../src", src / "loop")
    os.symlink(outside / "secret.ts", src / "escape.ts")
    os.symlink(outside, src / "outdir")

    first = stack.cli("index", str(root), "--show-skipped")
    rows_first = stack.rows(root)
    second = stack.cli("index", str(root))
    return Indexed(root, outside, first, second, rows_first, stack.rows(root))


@pytest.mark.badinput(case="a workspace of bad files",
                      behaviour="`index` exits 0; the summary counts each skip by reason; only good files have rows")
def test_index_finishes_and_counts_every_skip_by_reason(indexed: Indexed) -> None:
    assert indexed.first.code == 0, indexed.first.err
    assert ("  files       4 added, 0 changed, 0 removed, 6 skipped (2 outside the workspace, 1 binary, 1 minified, "
            "1 not UTF-8, 1 symlink loop)") in indexed.first.out.splitlines()
    assert indexed.paths() == {"src/good.ts", "src/long.ts", "src/broken.ts"}


@pytest.mark.badinput(case="binary file", behaviour="skipped with reason `binary` (offset of the NUL byte); exit 0")
def test_binary_file(indexed: Indexed) -> None:
    assert indexed.first.code == 0
    assert indexed.skipped_line("src/blob.ts").startswith("src/blob.ts binary NUL byte at offset ")
    assert "src/blob.ts" not in indexed.paths()


@pytest.mark.badinput(case="non-UTF-8 file", behaviour="skipped with reason `not UTF-8` (byte offset); exit 0")
def test_non_utf8_file(indexed: Indexed) -> None:
    assert indexed.first.code == 0
    assert indexed.skipped_line("src/latin1.ts").startswith("src/latin1.ts not UTF-8 invalid UTF-8 near byte ")
    assert "src/latin1.ts" not in indexed.paths()


@pytest.mark.badinput(case="minified file", behaviour="skipped with reason `minified`; exit 0")
def test_minified_file(indexed: Indexed) -> None:
    assert indexed.skipped_line("src/app.min.js").startswith("src/app.min.js minified ")
    assert "src/app.min.js" not in indexed.paths()


@pytest.mark.badinput(case="50,000-line file",
                      behaviour="indexed whole: one chunk per function, the last one searchable by name")
def test_a_50000_line_file(stack: Stack, indexed: Indexed) -> None:
    assert len((indexed.root / "src/long.ts").read_text().splitlines()) == 50_000
    rows = [row for row in indexed.rows_after_first if row[1] == "src/long.ts"]
    # Its card (the whole file, every function collapsed) beside one chunk per function.
    functions = [row for row in rows if row[2] != MODULE_QUALIFIED_NAME]
    assert len(rows) == len(functions) + 1, "and the file's card"
    assert sorted(row[2] for row in functions) == sorted(f"longStage{f}" for f in range(LONG_FUNCTIONS))
    assert max(row[4] for row in functions) == 49_999  # the last function's closing brace
    found = stack.cli("search", str(indexed.root), "longStage49", "--no-select", "--limit", "1", "--json")
    assert found.code == 0 and found.json()["results"][0]["qualified_name"] == "longStage49"


@pytest.mark.badinput(case="syntax errors", behaviour="indexed as far as it parses; its symbols searchable; exit 0")
def test_syntax_errors(stack: Stack, indexed: Indexed) -> None:
    names = {row[2] for row in indexed.rows_after_first if row[1] == "src/broken.ts"}
    assert {"brokenParser", "HalfWritten"} <= names
    found = stack.cli("search", str(indexed.root), "brokenParser", "--no-select", "--limit", "1", "--json")
    assert found.code == 0 and found.json()["results"][0]["path"] == "src/broken.ts"


@pytest.mark.badinput(case="symlink loop", behaviour="skipped with reason `symlink loop`; the scan ends; exit 0")
def test_symlink_loop(indexed: Indexed) -> None:
    assert indexed.skipped_line("src/loop/").startswith("src/loop/ symlink loop symbolic link to ancestor ")
    assert not any(path.startswith("src/loop/") for path in indexed.paths())


@pytest.mark.badinput(case="symlink escaping the workspace",
                      behaviour="skipped with reason `outside the workspace` (file and folder links); never read")
def test_symlink_escaping_the_workspace(stack: Stack, indexed: Indexed) -> None:
    assert indexed.skipped_line("src/escape.ts") == (
        f"src/escape.ts outside the workspace symbolic link to {indexed.outside / 'secret.ts'}")
    assert indexed.skipped_line("src/outdir/") == (
        f"src/outdir/ outside the workspace symbolic link to {indexed.outside}")
    found = stack.cli("search", str(indexed.root), "outsideSecretHelper", "--no-select", "--json")
    assert found.code == 0
    assert all(r["path"] in indexed.paths() for r in found.json()["results"])


@pytest.mark.badinput(case="empty file", behaviour="indexed with no chunks; not an error")
def test_empty_file(indexed: Indexed) -> None:
    assert indexed.first.code == 0
    assert "src/empty.ts" not in indexed.paths()
    assert "src/empty.ts" not in indexed.first.out


@pytest.mark.badinput(case="re-index of a workspace of bad files",
                      behaviour="nothing changed, nothing written; the same rows, none duplicated")
def test_reindex_changes_nothing(indexed: Indexed) -> None:
    assert indexed.second.code == 0, indexed.second.err
    assert "files       0 added, 0 changed, 0 removed, 6 skipped" in indexed.second.out
    assert indexed.rows_after_second == indexed.rows_after_first
    ids = [row[0] for row in indexed.rows_after_first]
    assert len(ids) == len(set(ids))
