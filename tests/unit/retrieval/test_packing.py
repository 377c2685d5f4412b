"""What the store leaves out of a row and rebuilds on read: exact or not used at all."""

from __future__ import annotations

from codecompass.common.chunks import Chunk, Language, NodeKind, SymbolReference
from codecompass.retrieval import packing

FILE = """/** Adds things. */
export function outer(a: number): number {
  /** Inner helper. */
  function inner(b: number): number {
    function deepest(c: number): number {
      return c * 2;
    }
    return deepest(b) + 1;
  }
  return inner(a);
}

outer(1);
"""


def _span(text: str, start: str, end_marker: str) -> tuple[int, int]:
    begin = text.index(start)
    return begin, text.index(end_marker, begin) + len(end_marker)


def _chunk(chunk_id: str, kind: NodeKind, parent: str, children: tuple[str, ...], depth: int, full: str,
           collapsed: str, jsdoc: str = "", references: tuple[SymbolReference, ...] = ()) -> Chunk:
    signature = full.split("\n", 1)[0].removesuffix(" {")
    preamble = f"[TypeScript] src/a.ts > {chunk_id}\nSignature: {signature}\n"
    if references:
        preamble += "\nReferenced symbols:" + "".join(f"\n- {r.name}: {r.signature}" for r in references)
    return Chunk(
        id=chunk_id, snippet_hash=f"h-{chunk_id}", relative_path="src/a.ts", language=Language.TYPESCRIPT,
        node_kind=kind, name=chunk_id, qualified_name=chunk_id, parent_id=parent, child_ids=children, depth=depth,
        signature=signature, full_source=full, collapsed_source=collapsed, start_line=1, end_line=10, jsdoc=jsdoc,
        jsdoc_start_line=1 if jsdoc else 0, relevant_imports=(), is_test=False,
        embedding_text=f"{preamble}\n---\n\n{collapsed}", references=references,
    )


def _file_chunks() -> list[Chunk]:
    o0, o1 = _span(FILE, "export function outer", "\n}")
    i0, i1 = _span(FILE, "function inner", "\n  }")
    d0, d1 = _span(FILE, "function deepest", "\n    }")
    outer_full, inner_full, deepest_full = FILE[o0:o1], FILE[i0:i1], FILE[d0:d1]
    inner_collapsed = inner_full.replace(FILE[d0:d1][FILE[d0:d1].index("{") :], "{ /* 3 lines collapsed */ }")
    outer_collapsed = outer_full.replace(inner_full[inner_full.index("{") :], "{ /* 6 lines collapsed */ }")
    module_collapsed = FILE.strip().replace(outer_full[outer_full.index("{") :], "{ /* 9 lines collapsed */ }")
    refs = (SymbolReference("deepest", "function deepest(c: number): number", "src/a.ts", "deepest"),)
    return [
        _chunk("module", NodeKind.MODULE, "", (), 0, FILE.strip(), module_collapsed),
        _chunk("outer", NodeKind.FUNCTION, "", ("inner",), 0, outer_full, outer_collapsed, "/** Adds things. */"),
        _chunk("inner", NodeKind.FUNCTION, "outer", ("deepest",), 1, inner_full, inner_collapsed,
               "/** Inner helper. */", refs),
        _chunk("deepest", NodeKind.FUNCTION, "inner", (), 2, deepest_full, deepest_full),
    ]


def _rebuild(chunk: Chunk, placement: packing.Placement, texts: dict[str, str]) -> tuple[str, str, str]:
    text = texts[placement.key]
    full = packing.slice_text(text, placement.offset, placement.length)
    assert full is not None
    jsdoc = chunk.jsdoc if placement.jsdoc_offset < 0 else text[placement.jsdoc_offset :][: len(chunk.jsdoc)]
    assert placement.collapsed_spans is not None
    collapsed = packing.decode_collapsed(full, placement.collapsed_markers, placement.collapsed_spans)
    return full, jsdoc, collapsed


def test_a_file_with_a_module_chunk_is_stored_once_and_every_chunk_is_a_slice_of_it() -> None:
    chunks = _file_chunks()
    placements, texts = packing.place_sources(chunks)
    assert list(texts.values()) == [FILE.strip()]
    for chunk in chunks:
        assert _rebuild(chunk, placements[chunk.id], texts) == (chunk.full_source, chunk.jsdoc, chunk.collapsed_source)
        assert placements[chunk.id].collapsed_markers in ("", "{ /* 3 lines collapsed */ }",
                                                          "{ /* 6 lines collapsed */ }", "{ /* 9 lines collapsed */ }")


def test_without_a_module_chunk_each_root_is_one_text_with_its_jsdoc_in_front() -> None:
    chunks = _file_chunks()[1:]
    placements, texts = packing.place_sources(chunks)
    assert list(texts.values()) == ["/** Adds things. */" + chunks[0].full_source]
    for chunk in chunks:
        assert _rebuild(chunk, placements[chunk.id], texts) == (chunk.full_source, chunk.jsdoc, chunk.collapsed_source)


def test_a_chunk_that_is_not_inside_its_parent_gets_its_own_text() -> None:
    outer, inner = _file_chunks()[1:3]
    moved = Chunk(**{**inner.__dict__, "full_source": "function elsewhere() {}", "collapsed_source": "x"})
    placements, texts = packing.place_sources([outer, moved])
    assert texts[placements[moved.id].key] == "/** Inner helper. */function elsewhere() {}"
    # The collapsed text is not the full source with markers: stored verbatim.
    assert placements[moved.id].collapsed_spans is None


def test_collapsed_source_that_does_not_follow_the_marker_rule_is_not_encoded() -> None:
    full = "function f() {\n  return 1;\n}"
    assert packing.encode_collapsed("function f() { /* 3 lines collapsed */ }", full, []) is None
    assert packing.encode_collapsed("function g() {\n  return 1;\n}", full, [(0, len(full))]) is None
    # A marker written in the code itself, with nothing collapsed, is copied like any text.
    literal = "const s = 1; /* 2 lines collapsed */"
    assert packing.encode_collapsed(literal, literal, []) is None


def test_embedding_text_keeps_only_what_other_columns_do_not_hold() -> None:
    inner = _file_chunks()[2]
    prefix, layout = packing.encode_embedding(inner)
    assert layout == packing.EMBEDDING_PREFIX_AND_COLLAPSED
    assert inner.signature not in prefix and "deepest(c: number)" not in prefix
    assert inner.collapsed_source not in prefix
    rebuilt = packing.decode_embedding(prefix, layout, inner.signature, inner.references, inner.collapsed_source)
    assert rebuilt == inner.embedding_text


def test_embedding_text_that_cannot_be_rebuilt_is_stored_verbatim() -> None:
    inner = _file_chunks()[2]
    truncated = Chunk(**{**inner.__dict__, "embedding_text": inner.embedding_text[:-5] + "/* … 3 lines truncated */"})
    prefix, layout = packing.encode_embedding(truncated)
    assert layout == packing.EMBEDDING_PREFIX_ONLY
    assert packing.decode_embedding(prefix, layout, inner.signature, inner.references, "") == truncated.embedding_text
    odd = Chunk(**{**inner.__dict__, "embedding_text": "text with a \ue000 private-use character"})
    assert packing.encode_embedding(odd) == (odd.embedding_text, packing.EMBEDDING_VERBATIM)
