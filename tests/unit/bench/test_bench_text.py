from __future__ import annotations

import pytest
from bench.lib.text import blank_spans, first_sentence, leaks_name, split_identifier

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
