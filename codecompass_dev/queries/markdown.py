"""Markdown read as documentation: its sections, their prose, and the code spans they write.

One home for how the benchmark's concept miner (codecompass_dev/queries/concepts.py) and the training
corpus's doc miner (models/corpus/mine_docs.py) read a README or a docs page, so both split a
page and find its prose by the same rule.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_CODE_SPAN = re.compile(r"`([^`]+)`")
_NOT_PROSE_START = re.compile(r"^\s*(?:[|<!>#*+-]|\d+[.)]\s|\[!\[|```|~~~)")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_EMPHASIS = re.compile(r"(\*\*|__|\*|_)(?=\S)(.+?)(?<=\S)\1")
_FRONT_MATTER_TITLE = re.compile(r"^title:\s*['\"]?(.*?)['\"]?\s*$")


@dataclass(frozen=True)
class Section:
    heading: str  # the heading's text ("" for a page's lead without a front matter title)
    line: int  # 1-based line of the heading (of a lead: of its first line)
    body: list[str]  # the lines up to the next heading
    body_line: int  # 1-based line of body[0]

    def prose(self, *, plain: bool = True, whole_blocks: bool = False) -> Iterator[tuple[int, str]]:
        """(1-based line, text) of each prose paragraph of the body, in order (see prose_paragraphs)."""
        return prose_paragraphs(self.body, self.body_line, plain=plain, whole_blocks=whole_blocks)


def sections(text: str, *, lead: bool = False) -> list[Section]:
    """Every ATX heading outside fenced code, with the lines up to the next one.

    With `lead`, the lines before the first heading are a section too (a page whose title lives in
    its YAML front matter starts its prose there): its heading is the front matter's `title`, and
    the front matter itself is not part of its body.
    """
    out: list[Section] = []
    lines = text.splitlines()
    start = 0
    title = ""
    if lead and lines and lines[0].strip() == "---":
        end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
        if end is not None:
            title = next((m.group(1) for m in map(_FRONT_MATTER_TITLE.match, lines[1:end]) if m), "")
            start = end + 1
    if lead:
        out.append(Section(title, start + 1, [], start + 1))
    fence = None
    for number, line in enumerate(lines[start:], start=start + 1):
        match = _FENCE.match(line)
        if match:
            fence = None if fence == match.group(1) else fence or match.group(1)
        elif fence is None and (heading := _HEADING.match(line)):
            out.append(Section(heading.group(2), number, [], number + 1))
            continue
        if out:
            out[-1].body.append(line)
    if lead and not any(line.strip() for line in out[0].body):
        out.pop(0)
    return out


def prose_paragraphs(
    lines: Sequence[str], first_line: int = 1, *, plain: bool = True, whole_blocks: bool = False
) -> Iterator[tuple[int, str]]:
    """(line, text) of each prose paragraph: not a list, table, quote, image, HTML or code.

    `plain`: Markdown links reduced to their text, emphasis and backticks dropped (else the lines
    joined as written, code spans and all). `first_line` is the 1-based number of `lines[0]`.
    By default a non-prose line is skipped alone, so the line after a list item starts a paragraph
    (the training corpus's doc rule reads first paragraphs that way). With `whole_blocks`, a block
    between blank lines is prose only when its first line is, and not indented as code (4 spaces):
    a list item's continuation lines are the list's, not a paragraph cut mid-sentence.
    """
    finish = _plain if plain else " ".join
    paragraph: list[str] = []
    start = 0
    in_fence = False
    skipping = False  # whole_blocks: inside a block that did not open as prose
    for number, line in enumerate(lines, start=first_line):
        if _FENCE.match(line):
            if paragraph:
                yield start, finish(paragraph)
                paragraph = []
            in_fence = not in_fence
            skipping = False
            continue
        if in_fence:
            continue
        if not line.strip():
            if paragraph:
                yield start, finish(paragraph)
                paragraph = []
            skipping = False
            continue
        if skipping:
            continue
        if not paragraph and (_NOT_PROSE_START.match(line) or (whole_blocks and line.startswith("    "))):
            skipping = whole_blocks
            continue
        if not paragraph:
            start = number
        paragraph.append(line.strip())
    if paragraph:
        yield start, finish(paragraph)


def _plain(paragraph: list[str]) -> str:
    text = _LINK.sub(r"\1", " ".join(paragraph))
    return _EMPHASIS.sub(r"\2", text).replace("`", "")


def first_paragraph(lines: Sequence[str]) -> str:
    """The first prose paragraph, Markdown stripped ('' when there is none)."""
    return next((text for _, text in prose_paragraphs(lines)), "")


def code_spans(text: str) -> list[str]:
    """The contents of the `code spans` of a line of Markdown, in order."""
    return _CODE_SPAN.findall(text)


def outside_fences(lines: Sequence[str]) -> Iterator[str]:
    """The lines that are not inside fenced code (the fence lines themselves left out)."""
    in_fence = False
    for line in lines:
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence:
            yield line
