"""Invariants every chunk of a real corpus must satisfy (issue 2, section 4).

Pure functions over plain values so they are unit-tested without a service:
  * full_source is the exact file text starting on start_line and ending on end_line;
  * every child lies inside its parent and siblings do not overlap (children tile);
  * parent/child links agree (parent_id, child_ids, depth) and ids are unique;
  * embedding_text stays under the token ceiling of the embedding models.
Plus line coverage: the share of a file's non-blank lines inside some chunk.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

TOKEN_CEILING = 32_000


@dataclass(frozen=True)
class ChunkView:
    """The fields of a chunk the checks need, detached from the generated proto type."""

    id: str
    parent_id: str
    child_ids: tuple[str, ...]
    depth: int
    start_line: int
    end_line: int
    full_source: str
    collapsed_source: str
    embedding_token_count: int
    qualified_name: str = ""
    jsdoc_start_line: int = 0
    node_kind: str = ""


@dataclass(frozen=True)
class Violation:
    kind: str
    chunk_id: str
    detail: str


def line_starts(text: str) -> list[int]:
    """Offset of the first character of every line; lines end at '\\n' (a CR stays in its line)."""
    starts = [0]
    pos = text.find("\n")
    while pos != -1:
        starts.append(pos + 1)
        pos = text.find("\n", pos + 1)
    return starts


def locate(text: str, starts: Sequence[int], chunk: ChunkView) -> tuple[int, int] | None:
    """Offsets [begin, end) of full_source if it starts on start_line and ends on end_line."""
    if not chunk.full_source or chunk.start_line < 1 or chunk.end_line < chunk.start_line:
        return None
    if chunk.end_line > len(starts):
        return None
    first_line_begin = starts[chunk.start_line - 1]
    first_line_end = starts[chunk.start_line] if chunk.start_line < len(starts) else len(text) + 1
    begin = text.find(chunk.full_source, first_line_begin)
    while begin != -1 and begin < first_line_end:
        end = begin + len(chunk.full_source)
        last_char_line = bisect.bisect_right(starts, end - 1)
        if last_char_line == chunk.end_line:
            return begin, end
        begin = text.find(chunk.full_source, begin + 1)
    return None


def check_file(text: str, chunks: Sequence[ChunkView], token_ceiling: int = TOKEN_CEILING) -> list[Violation]:
    """All invariant violations among the chunks of one file."""
    violations: list[Violation] = []
    starts = line_starts(text)
    by_id: dict[str, ChunkView] = {}
    spans: dict[str, tuple[int, int]] = {}
    for chunk in chunks:
        if chunk.id in by_id:
            violations.append(Violation("duplicate_id", chunk.id, chunk.qualified_name))
        by_id[chunk.id] = chunk
        span = locate(text, starts, chunk)
        if span is None:
            violations.append(
                Violation(
                    "full_source_mismatch",
                    chunk.id,
                    f"{chunk.qualified_name} lines {chunk.start_line}-{chunk.end_line}",
                )
            )
        else:
            spans[chunk.id] = span
        if not 0 < chunk.embedding_token_count < token_ceiling:
            violations.append(
                Violation("token_count", chunk.id, f"{chunk.qualified_name}: {chunk.embedding_token_count} tokens")
            )
    violations.extend(_check_hierarchy(by_id, spans))
    return violations


def _check_hierarchy(by_id: dict[str, ChunkView], spans: dict[str, tuple[int, int]]) -> Iterable[Violation]:
    for chunk in by_id.values():
        if chunk.parent_id:
            parent = by_id.get(chunk.parent_id)
            if parent is None:
                yield Violation("dangling_parent", chunk.id, chunk.qualified_name)
            elif chunk.id not in parent.child_ids:
                yield Violation("parent_missing_child", chunk.id, chunk.qualified_name)
            elif chunk.depth != parent.depth + 1:
                yield Violation("depth", chunk.id, f"{chunk.qualified_name}: {chunk.depth} under {parent.depth}")
        elif chunk.depth != 0:
            yield Violation("depth", chunk.id, f"{chunk.qualified_name}: top level at depth {chunk.depth}")
        child_spans: list[tuple[int, int, str]] = []
        for child_id in chunk.child_ids:
            child = by_id.get(child_id)
            if child is None:
                yield Violation("dangling_child", chunk.id, f"{chunk.qualified_name} -> {child_id}")
                continue
            if child.parent_id != chunk.id:
                yield Violation("child_wrong_parent", child.id, child.qualified_name)
            if child_id in spans and chunk.id in spans:
                begin, end = spans[child_id]
                p_begin, p_end = spans[chunk.id]
                if begin < p_begin or end > p_end:
                    yield Violation(
                        "child_outside_parent", child.id, f"{child.qualified_name} in {chunk.qualified_name}"
                    )
                child_spans.append((begin, end, child_id))
        child_spans.sort()
        for (_, prev_end, prev_id), (begin, _, child_id) in itertools.pairwise(child_spans):
            if begin < prev_end:
                yield Violation(
                    "siblings_overlap", child_id, f"{by_id[prev_id].qualified_name} / {by_id[child_id].qualified_name}"
                )


MODULE_KIND = "module"


@dataclass
class LineCoverage:
    """Line coverage of one file or a sum of files (see line_coverage)."""

    lines: int = 0
    covered: int = 0
    code_lines: int = 0
    code_covered: int = 0
    code_covered_by_symbols: int = 0

    def add(self, other: LineCoverage) -> None:
        self.lines += other.lines
        self.covered += other.covered
        self.code_lines += other.code_lines
        self.code_covered += other.code_covered
        self.code_covered_by_symbols += other.code_covered_by_symbols


def line_coverage(text: str, chunks: Sequence[ChunkView]) -> LineCoverage:
    """Which non-blank lines of a file lie inside some chunk's [jsdoc_start_line or start_line, end_line].

    The same definition as lineCoverage in node_ts_service/src/chunker.ts:
    blank lines never count; comment lines count in `lines` (a license header
    outside every chunk is honestly uncovered) and are left out of
    `code_lines`. A line is a comment line when, stripped, it starts with `//`
    (or is a first-line shebang) or lies in a block comment opened at the
    start of a line, up to a closing `*/` with nothing after it.
    `code_covered_by_symbols` leaves the module chunk out: how much code has
    a chunk of its own rather than only the file-level one.
    """
    lines = text.split("\n")
    every = [0] * (len(lines) + 2)
    symbols = [0] * (len(lines) + 2)
    for chunk in chunks:
        first = chunk.jsdoc_start_line if chunk.jsdoc_start_line > 0 else chunk.start_line
        last = min(chunk.end_line, len(lines))
        if first < 1 or last < first:
            continue
        marks = (every,) if chunk.node_kind == MODULE_KIND else (every, symbols)
        for mark in marks:
            mark[first] += 1
            mark[last + 1] -= 1
    result = LineCoverage()
    in_every = in_symbols = 0
    in_block = False
    for i, line in enumerate(lines):
        in_every += every[i + 1]
        in_symbols += symbols[i + 1]
        stripped = line.strip()
        if not stripped:
            continue
        comment = False
        if in_block or stripped.startswith("/*"):
            close = stripped.find("*/", 0 if in_block else 2)
            in_block = close < 0
            comment = in_block or not stripped[close + 2 :].strip()
        elif stripped.startswith("//") or (i == 0 and stripped.startswith("#!")):
            comment = True
        result.lines += 1
        result.covered += in_every > 0
        if comment:
            continue
        result.code_lines += 1
        result.code_covered += in_every > 0
        result.code_covered_by_symbols += in_symbols > 0
    return result
