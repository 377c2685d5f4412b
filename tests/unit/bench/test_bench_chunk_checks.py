from __future__ import annotations

from bench.lib.chunk_checks import ChunkView, check_file, line_coverage, line_starts, locate

TEXT = """export class Box {
  open(): void {
    this.lid = 1;
  }
  close(): void { this.lid = 0; }
}
const a = () => 1, b = () => 2;
"""


def view(
    cid: str,
    start: int,
    end: int,
    source: str,
    parent: str = "",
    children: tuple[str, ...] = (),
    depth: int = 0,
    tokens: int = 10,
) -> ChunkView:
    return ChunkView(cid, parent, children, depth, start, end, source, source, tokens, cid)


BOX_SOURCE = TEXT.split("\nconst")[0]
OPEN = "open(): void {\n    this.lid = 1;\n  }"
CLOSE = "close(): void { this.lid = 0; }"


def good_chunks() -> list[ChunkView]:
    return [
        view("Box", 1, 6, BOX_SOURCE, children=("open", "close")),
        view("open", 2, 4, OPEN, parent="Box", depth=1),
        view("close", 5, 5, CLOSE, parent="Box", depth=1),
        view("a", 7, 7, "a = () => 1"),
        view("b", 7, 7, "b = () => 2"),
    ]


def test_valid_chunks_have_no_violations() -> None:
    assert check_file(TEXT, good_chunks()) == []


def test_locate_requires_the_text_to_start_and_end_on_the_stated_lines() -> None:
    starts = line_starts(TEXT)
    assert locate(TEXT, starts, view("open", 2, 4, OPEN)) is not None
    assert locate(TEXT, starts, view("open", 1, 4, OPEN)) is None
    assert locate(TEXT, starts, view("open", 2, 5, OPEN)) is None


def test_partial_or_shifted_source_is_reported() -> None:
    chunks = good_chunks()
    chunks[1] = view("open", 2, 4, "open(): void {\n    this.lid = 2;\n  }", parent="Box", depth=1)
    kinds = [v.kind for v in check_file(TEXT, chunks)]
    assert kinds == ["full_source_mismatch"]


def test_broken_hierarchy_is_reported() -> None:
    chunks = good_chunks()
    chunks[2] = view("close", 5, 5, CLOSE, parent="Box", depth=2)
    chunks.append(view("orphan", 7, 7, "a = () => 1", parent="missing", depth=1))
    kinds = sorted(v.kind for v in check_file(TEXT, chunks))
    assert kinds == ["dangling_parent", "depth"]


def test_overlapping_siblings_and_escaping_children_are_reported() -> None:
    chunks = [
        view("Box", 2, 4, OPEN, children=("x", "y")),
        view("x", 2, 4, OPEN, parent="Box", depth=1),
        view("y", 5, 5, CLOSE, parent="Box", depth=1),
    ]
    kinds = sorted(v.kind for v in check_file(TEXT, chunks))
    assert kinds == ["child_outside_parent"]
    chunks = [
        view("Box", 1, 6, BOX_SOURCE, children=("x", "y")),
        view("x", 2, 4, OPEN, parent="Box", depth=1),
        view("y", 3, 3, "this.lid = 1;", parent="Box", depth=1),
    ]
    assert [v.kind for v in check_file(TEXT, chunks)] == ["siblings_overlap"]


def test_token_ceiling_and_duplicate_ids() -> None:
    chunks = good_chunks()
    chunks[3] = view("a", 7, 7, "a = () => 1", tokens=32_000)
    chunks[4] = view("a", 7, 7, "b = () => 2")
    kinds = sorted(v.kind for v in check_file(TEXT, chunks))
    assert kinds == ["duplicate_id", "token_count"]


def test_line_coverage_counts_non_blank_lines_inside_chunks_and_tells_comments_apart() -> None:
    text = "// header\n/* block\n   still */\nimport x from 'x';\n\n/** Doc. */\nfunction f() {\n  return 1;\n}\n"
    doc = ChunkView("f", "", (), 0, 7, 9, "function f() {\n  return 1;\n}", "", 5, "f", jsdoc_start_line=6)
    cov = line_coverage(text, [doc])
    # Non-blank: 8 lines; the JSDoc and the function are covered.
    assert (cov.lines, cov.covered) == (8, 4)
    # Code lines: import, function (3 lines); the JSDoc is a comment line.
    assert (cov.code_lines, cov.code_covered, cov.code_covered_by_symbols) == (4, 3, 3)
    module = ChunkView("m", "", (), 0, 1, 9, text.rstrip(), "", 5, "<module top level>", node_kind="module")
    cov = line_coverage(text, [doc, module])
    assert (cov.covered, cov.code_covered, cov.code_covered_by_symbols) == (8, 4, 3)
