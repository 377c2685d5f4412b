from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from codecompass_dev.queries.commits import FileChange, clean_subject, touched_symbols
from codecompass_dev.queries.symbols import EXTRACTOR
from codecompass_dev.queries.text import blank_spans, first_sentence, leaks_name, split_identifier

SOURCE = """import { x } from './x';

/**
 * Projects each value.
 * @param v the value
 */
export function project(v: number) {
  const s = "/** not a comment */"; /** trailing doc */ return v;
}
"""


def spans_of(text: str, *needles: str) -> list[tuple[int, int]]:
    return [(text.index(n), text.index(n) + len(n)) for n in needles]


def test_blanking_keeps_every_line_number() -> None:
    doc = "/**\n * Projects each value.\n * @param v the value\n */"
    out = blank_spans(SOURCE, spans_of(SOURCE, doc, "/** trailing doc */"))
    assert out.count("\n") == SOURCE.count("\n")
    out_lines, src_lines = out.split("\n"), SOURCE.split("\n")
    assert out_lines[2:6] == ["", "", "", ""]
    assert out_lines[6] == src_lines[6]
    assert out_lines[7] == '  const s = "/** not a comment */";  return v;'
    assert "Projects" not in out


def test_blanking_keeps_crlf_line_ends() -> None:
    text = "a\r\n/** doc\r\n */\r\nb\r\n"
    out = blank_spans(text, spans_of(text, "/** doc\r\n */"))
    assert out == "a\r\n\r\n\r\nb\r\n"


def test_blanking_rejects_overlapping_spans() -> None:
    with pytest.raises(ValueError, match="bad span"):
        blank_spans("abcdef", [(0, 4), (2, 5)])


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("mergeMap", ["merge", "map"]),
        ("XMLHttpRequest", ["xml", "http", "request"]),
        ("snake_case_name", ["snake", "case", "name"]),
        ("$ZodXIDDef", ["zod", "xid", "def"]),
        ("toJSONSchema2", ["to", "json", "schema", "2"]),
    ],
)
def test_split_identifier(name: str, words: list[str]) -> None:
    assert split_identifier(name) == words


def test_first_sentence_resolves_links_and_drops_markup() -> None:
    doc = (
        "Projects each source value to an Observable which is merged in the output\nObservable.\n\n"
        '<span class="informal">Maps each value using {@link mergeAll}.</span>'
    )
    assert (
        first_sentence(doc) == "Projects each source value to an Observable which is merged in the output Observable."
    )
    assert first_sentence("Uses {@link Foo | the foo} e.g. here. Then more.") == "Uses the foo e.g. here."
    assert first_sentence("No full stop in this paragraph\n\nSecond paragraph.") == "No full stop in this paragraph"


@pytest.mark.parametrize(
    ("query", "name", "leaks"),
    [
        ("Merges the values with merge map semantics", "mergeMap", True),
        ("Calls mergeMap on each value", "mergeMap", True),
        ("Maps then merges each inner observable", "mergeMap", False),
        ("Returns the next value", "next", True),
        ("Returns the following value", "next", False),
    ],
)
def test_leaks_name(query: str, name: str, leaks: bool) -> None:
    assert leaks_name(query, name) is leaks


def test_blanking_keeping_width_keeps_offsets_and_line_ends() -> None:
    text = "a /** doc\r\n */ b\n"
    start = text.index("/**")
    end = text.index("*/") + 2
    out = blank_spans(text, [(start, end)], keep_width=True)
    assert len(out) == len(text) and out.count("\n") == text.count("\n")
    assert out == "a" + " " * 8 + "\r\n" + " " * 4 + "b\n"


@pytest.mark.parametrize(
    ("subject", "query"),
    [
        ("fix(core): handle null values in the queue (#1234)", "handle null values in the queue"),
        ("[v4] Fix race when cancelling fetch (fixes #12)", "Fix race when cancelling fetch"),
        ("fetch: do not leak the body stream on abort", "do not leak the body stream on abort"),
        ("feat!: add retryDelay option for mutations #55", "add retryDelay option for mutations"),
        ("chore: bump deps", None),
        ("docs(readme): explain the retry option in detail", None),
        ("Merge pull request #3 from a/b", None),
        ("fix typo in the error message", None),
        ('Revert "add retry to the fetch loop"', None),
        ("7.8.2", None),
        ("fix: small bug", None),
    ],
)
def test_commit_subjects_are_cleaned_or_dropped(subject: str, query: str | None) -> None:
    assert clean_subject(subject) == query


def test_changed_lines_select_the_innermost_symbols() -> None:
    symbols = [
        {"qualified_name": "Box", "start_line": 1, "end_line": 20},
        {"qualified_name": "Box.open", "start_line": 3, "end_line": 8},
        {"qualified_name": "Box.close", "start_line": 10, "end_line": 15},
    ]
    assert touched_symbols(FileChange("a.ts", {4, 5}, []), symbols) == {"Box.open"}
    assert touched_symbols(FileChange("a.ts", {9, 12}, []), symbols) == {"Box", "Box.close"}
    assert touched_symbols(FileChange("a.ts", {30}, []), symbols) == set()
    # A pure deletion counts only when both neighbouring lines lie in the same innermost symbol.
    assert touched_symbols(FileChange("a.ts", set(), [5]), symbols) == {"Box.open"}
    assert touched_symbols(FileChange("a.ts", set(), [8]), symbols) == set()


def test_commonjs_assignments_are_named_like_the_analysis_service(tmp_path: Path) -> None:
    source = (
        "function Runner() {}\n"
        "/** Runs. */\n"
        "Runner.prototype.run = function (fn) {\n"
        "  throw new Error('runner is already running');\n"
        "};\n"
        "exports.helper = function () {};\n"
        "module.exports = function main() {};\n"
    )
    (tmp_path / "runner.js").write_text(source, encoding="utf-8")
    out = subprocess.run(
        ["node", str(EXTRACTOR), str(tmp_path)], check=True, capture_output=True, text=True, timeout=60
    )
    (record,) = [json.loads(line) for line in out.stdout.splitlines()]
    symbols = {s["qualified_name"]: s for s in record["symbols"]}
    assert set(symbols) == {"Runner", "Runner.run", "helper", "main"}
    run = symbols["Runner.run"]
    assert (run["kind"], run["start_line"], run["end_line"]) == ("method", 3, 5)
    assert run["jsdoc"] == "Runs." and [t["message"] for t in run["throws"]] == ["runner is already running"]
    (span,) = run["jsdoc_spans"]
    assert source[span[0] : span[1]] == "/** Runs. */"
