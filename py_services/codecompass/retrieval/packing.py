"""How a chunk is laid out in the table without storing what can be rebuilt exactly.

Every chunk at every depth carries its full source, so a nested symbol's text was stored once
per ancestor (and once more in the file's module chunk); every embedding text repeats the
chunk's collapsed source, its signature and the signatures of the symbols it references, all
of which are columns already. Measured on effect's sources (5.5 MiB, 12.9k chunks) those
copies were two thirds of the table's text.

- Sources: the chunks of one file are placed largest first; a chunk whose text occurs inside
  a text already placed (its parent's, or the module chunk's, which is the whole file) becomes
  a slice of it; any other chunk's text becomes a new text, stored once in the sources table
  under a digest of its content. A JSDoc comment is a slice too when it occurs in front of the
  chunk inside the same text (a root's comment is stored in front of its source for that).
- Collapsed source: the full source with some children's bodies replaced by a marker
  (`{ /* 12 lines collapsed */ }`); stored as the markers alone plus the spans of the full
  source between them.
- Embedding text: its collapsed-source suffix, its `Signature:` line and its referenced-symbol
  lines are replaced by placeholders that `decode_embedding` expands from the other columns.

Every encoding is checked by decoding it at write time; one that does not give back the exact
input is not used (the value is stored verbatim), so a read always returns exactly what was
written, whatever the chunker does.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from codecompass.common.chunks import Chunk, SymbolReference

# How many of a file's earlier texts a chunk without a placed parent is looked for in. The
# first is the largest (the module chunk, when the file has one); more only cost time.
_MAX_TEXTS_TRIED = 4

# Private-use code points stand for the parts of an embedding text taken from other columns.
_SIGNATURE_MARK = "\ue000"
_REFERENCES_MARK = "\ue001"

# What the chunker puts where a child's body was (node_ts_service/src/symbols.ts, collapsedBody).
_COLLAPSED_MARKER = re.compile(r"(?:\{ |\[ )?/\* \d+ lines collapsed \*/(?: \}| \])?")
# How far before a child's end its body may end (`};`, `},`, `) ;`...).
_MAX_BODY_TAIL = 16

# `embedding_layout` values.
EMBEDDING_VERBATIM = 0
EMBEDDING_PREFIX_AND_COLLAPSED = 1
EMBEDDING_PREFIX_ONLY = 2


def source_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True)
class Placement:
    """Where a chunk's full source (and maybe its JSDoc) lives: `text[offset:offset+length]`
    of the text stored under `key`; `jsdoc_offset` is -1 when the JSDoc is stored inline.
    `collapsed_spans` is None when the collapsed source is stored verbatim, else see
    `decode_collapsed` (`collapsed_markers` is then what the column holds)."""

    key: str
    offset: int
    length: int
    jsdoc_offset: int = -1
    collapsed_markers: str = ""
    collapsed_spans: tuple[int, ...] | None = None


@dataclass
class _Text:
    key: str
    text: str
    # File line of the text's first line, when known: it turns a chunk's start line into a
    # place to start looking, so a file of thousands of symbols is not searched from the top
    # for each of them.
    first_line: int
    _line_starts: list[int] = field(default_factory=list)

    def find(self, needle: str, line: int, lo: int = 0, hi: int | None = None) -> int:
        hi = len(self.text) if hi is None else hi
        hint = self._line_offset(line)
        if lo <= hint <= hi:
            at = self.text.find(needle, hint, hi)
            if at >= 0:
                return at
        return self.text.find(needle, lo, hi)

    def _line_offset(self, line: int) -> int:
        if not self._line_starts:
            self._line_starts = [0]
            at = self.text.find("\n")
            while at >= 0:
                self._line_starts.append(at + 1)
                at = self.text.find("\n", at + 1)
        index = line - self.first_line
        if index <= 0:
            return 0
        return self._line_starts[min(index, len(self._line_starts) - 1)]


def place_sources(chunks: Iterable[Chunk]) -> tuple[dict[str, Placement], dict[str, str]]:
    """(placement per chunk id, texts to store by key) for one batch of chunks."""
    by_file: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_file.setdefault(chunk.relative_path, []).append(chunk)
    placements: dict[str, Placement] = {}
    texts: dict[str, str] = {}
    for file_chunks in by_file.values():
        placed: dict[str, tuple[_Text, int]] = {}
        file_texts: list[_Text] = []
        # Largest first: an enclosing text is placed before what it encloses.
        for chunk in sorted(file_chunks, key=lambda c: (-len(c.full_source), c.depth)):
            source = chunk.full_source
            spot: tuple[_Text, int] | None = None
            parent = placed.get(chunk.parent_id)
            if parent is not None:
                text, start = parent
                length = placements[chunk.parent_id].length
                at = text.find(source, chunk.start_line, start, start + length)
                if at >= 0:
                    spot = (text, at)
            if spot is None:
                for text in file_texts[:_MAX_TEXTS_TRIED]:
                    at = text.find(source, chunk.start_line)
                    if at >= 0:
                        spot = (text, at)
                        break
            if spot is None:
                # A new text; a JSDoc comment goes in front so that it is a slice as well.
                body = chunk.jsdoc + source
                text = _Text(source_key(body), body, chunk.jsdoc_start_line or chunk.start_line)
                file_texts.append(text)
                texts[text.key] = body
                spot = (text, len(chunk.jsdoc))
            text, at = spot
            jsdoc_offset = -1
            if chunk.jsdoc:
                found = text.text.rfind(chunk.jsdoc, 0, at)
                jsdoc_offset = found if found >= 0 else -1
            placed[chunk.id] = spot
            placements[chunk.id] = Placement(text.key, at, len(source), jsdoc_offset)
        _place_collapsed(file_chunks, placements)
    return placements, texts


def _place_collapsed(file_chunks: list[Chunk], placements: dict[str, Placement]) -> None:
    """Encode each chunk's collapsed source against its full source, using where its children
    (for the module chunk: the file's top-level symbols) lie in the same text."""
    by_id = {c.id: c for c in file_chunks}
    top_level = [c.id for c in file_chunks if not c.parent_id]
    for chunk in file_chunks:
        if chunk.collapsed_source == chunk.full_source:
            placements[chunk.id] = _with_collapsed(placements[chunk.id], "", (0, len(chunk.full_source), 0))
            continue
        here = placements[chunk.id]
        child_ids = chunk.child_ids or (top_level if chunk.node_kind.value == "module" else ())
        children = []
        for child_id in child_ids:
            spot = placements.get(child_id)
            if child_id == chunk.id or child_id not in by_id or spot is None or spot.key != here.key:
                continue
            start = spot.offset - here.offset
            if start >= 0 and start + spot.length <= here.length:
                children.append((start, start + spot.length))
        children.sort()
        encoded = encode_collapsed(chunk.collapsed_source, chunk.full_source, children)
        if encoded is not None:
            placements[chunk.id] = _with_collapsed(here, *encoded)


def _with_collapsed(placement: Placement, markers: str, spans: tuple[int, ...]) -> Placement:
    return Placement(placement.key, placement.offset, placement.length, placement.jsdoc_offset, markers, spans)


def encode_collapsed(
    collapsed: str, full: str, children: Sequence[tuple[int, int]]
) -> tuple[str, tuple[int, ...]] | None:
    """(markers, spans) such that `decode_collapsed(full, markers, spans) == collapsed`, or
    None. `children` are the (start, end) offsets in `full` of the symbols whose bodies may
    have been collapsed, in order."""
    markers: list[str] = []
    spans: list[int] = []
    at_c = at_f = 0
    child = 0
    while True:
        match = _COLLAPSED_MARKER.search(collapsed, at_c)
        if match is None:
            rest = len(collapsed) - at_c
            if not full.startswith(collapsed[at_c:], at_f) or at_f + rest != len(full):
                return None
            spans += (at_f, rest, 0)
            break
        copied = match.start() - at_c
        if not full.startswith(collapsed[at_c : match.start()], at_f):
            return None
        body_start = at_f + copied
        while child < len(children) and children[child][1] <= body_start:
            child += 1
        if child == len(children) or children[child][0] > body_start:
            return None
        child_end = children[child][1]
        after = _COLLAPSED_MARKER.search(collapsed, match.end())
        following = collapsed[match.end() : min(match.end() + 64, after.start() if after else len(collapsed))]
        resume = next(
            (
                child_end - tail
                for tail in range(min(_MAX_BODY_TAIL, child_end - body_start) + 1)
                if full.startswith(following, child_end - tail)
            ),
            None,
        )
        if resume is None:
            return None
        markers.append(match.group())
        spans += (at_f, copied, len(match.group()))
        at_c, at_f = match.end(), resume
        child += 1
    result = "".join(markers), tuple(spans)
    return result if decode_collapsed(full, *result) == collapsed else None


def decode_collapsed(full: str, markers: str, spans: Sequence[int]) -> str:
    """`spans` is a flat list of (start, length, marker length) triples: the span of `full`,
    then the next marker."""
    out: list[str] = []
    at = 0
    for i in range(0, len(spans), 3):
        start, length, marker = spans[i], spans[i + 1], spans[i + 2]
        out.append(full[start : start + length])
        out.append(markers[at : at + marker])
        at += marker
    return "".join(out)


def slice_text(text: str | None, offset: int, length: int) -> str | None:
    if text is None or offset < 0 or offset + length > len(text):
        return None
    return text[offset : offset + length]


def _references_block(references: Iterable[SymbolReference]) -> str:
    return "".join(f"\n- {r.name}: {r.signature}" for r in references)


def encode_embedding(chunk: Chunk) -> tuple[str, int]:
    """(stored prefix, layout) for `chunk.embedding_text`; see `decode_embedding`."""
    text = chunk.embedding_text
    collapsed = chunk.collapsed_source
    if _SIGNATURE_MARK in text or _REFERENCES_MARK in text:
        return text, EMBEDDING_VERBATIM
    if collapsed and text.endswith(collapsed):
        prefix, layout = text[: len(text) - len(collapsed)], EMBEDDING_PREFIX_AND_COLLAPSED
    else:
        prefix, layout = text, EMBEDDING_PREFIX_ONLY
    signature_line = f"Signature: {chunk.signature}\n"
    if chunk.signature and signature_line in prefix:
        prefix = prefix.replace(signature_line, _SIGNATURE_MARK, 1)
    references = _references_block(chunk.references)
    if references and references in prefix:
        prefix = prefix.replace(references, _REFERENCES_MARK, 1)
    if decode_embedding(prefix, layout, chunk.signature, chunk.references, collapsed) != text:
        return text, EMBEDDING_VERBATIM
    return prefix, layout


def decode_embedding(
    prefix: str, layout: int, signature: str, references: Iterable[SymbolReference], collapsed: str
) -> str:
    if layout == EMBEDDING_VERBATIM:
        return prefix
    text = prefix
    if _SIGNATURE_MARK in text:
        text = text.replace(_SIGNATURE_MARK, f"Signature: {signature}\n", 1)
    if _REFERENCES_MARK in text:
        text = text.replace(_REFERENCES_MARK, _references_block(references), 1)
    if layout == EMBEDDING_PREFIX_AND_COLLAPSED:
        text += collapsed
    return text
