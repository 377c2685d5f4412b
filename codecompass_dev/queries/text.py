"""Text helpers of query mining (the benchmark's and the training corpus's): JSDoc blanking, identifier
splitting, query hygiene."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_IDENT_PARTS = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_INLINE_LINK = re.compile(r"\{@(?:link|linkcode|linkplain)\s+([^}|\s]+)(?:[\s|]+([^}]*))?\}")
_HTML_TAG = re.compile(r"</?[a-zA-Z][^>]*>")
_MD_IMAGE = re.compile(r"!\[[^\]]*\]\([^)]*\)")
_MD_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)[.!?](?=\s|$)")
_WORD = re.compile(r"[A-Za-z0-9]+")


def blank_spans(text: str, spans: Iterable[Sequence[int]], *, keep_width: bool = False) -> str:
    """Remove each [start, end) span but keep its line breaks, so every line keeps its number.

    A line left with only whitespace (a comment that filled it) becomes empty. With
    `keep_width`, every character of a span except line breaks becomes a space instead, so
    columns and offsets do not move either.
    """
    if keep_width:
        return _blank_keeping_width(text, spans)
    out: list[str] = []
    cursor = 0
    touched_lines: set[int] = set()
    line = 0
    for start, end in sorted((int(s), int(e)) for s, e in spans):
        if start < cursor or end < start or end > len(text):
            raise ValueError(f"bad span [{start}, {end}) after offset {cursor} in a text of {len(text)} chars")
        kept = text[cursor:start]
        out.append(kept)
        line += kept.count("\n")
        removed = text[start:end]
        touched_lines.add(line)
        for pos, char in enumerate(removed):
            if char == "\n":
                out.append("\r\n" if pos and removed[pos - 1] == "\r" else "\n")
                line += 1
                touched_lines.add(line)
        cursor = end
    out.append(text[cursor:])
    lines = "".join(out).split("\n")
    for index in touched_lines:
        if index < len(lines) and not lines[index].strip():
            lines[index] = "\r" if lines[index].endswith("\r") else ""
    return "\n".join(lines)


def _blank_keeping_width(text: str, spans: Iterable[Sequence[int]]) -> str:
    chars = list(text)
    cursor = 0
    for start, end in sorted((int(s), int(e)) for s, e in spans):
        if start < cursor or end < start or end > len(text):
            raise ValueError(f"bad span [{start}, {end}) after offset {cursor} in a text of {len(text)} chars")
        for pos in range(start, end):
            if chars[pos] not in "\r\n":
                chars[pos] = " "
        cursor = end
    return "".join(chars)


def split_identifier(name: str) -> list[str]:
    """camelCase / PascalCase / snake_case / kebab-case identifier -> lowercase words."""
    return [part.lower() for part in _IDENT_PARTS.findall(name)]


def words(text: str) -> list[str]:
    return [w.lower() for w in _WORD.findall(text)]


def clean_jsdoc(description: str) -> str:
    """JSDoc description as plain prose: links resolved to their text, markup dropped, one line."""
    text = _INLINE_LINK.sub(lambda m: (m.group(2) or m.group(1)).strip(), description)
    text = _MD_IMAGE.sub(" ", text)
    text = _MD_LINK.sub(r"\1", text)
    text = _HTML_TAG.sub(" ", text)
    text = text.replace("`", "")
    return " ".join(text.split())


def first_sentence(description: str) -> str:
    """The first sentence of a JSDoc description (the first paragraph if it has no full stop)."""
    paragraph = description.strip().split("\n\n", 1)[0]
    text = clean_jsdoc(paragraph)
    match = _SENTENCE_END.search(text)
    return text[: match.end()].strip() if match else text


def sentences(text: str) -> list[str]:
    """Plain prose split after each full stop, question or exclamation mark (not after e.g., i.e., etc.)."""
    out = []
    start = 0
    for match in _SENTENCE_END.finditer(text):
        out.append(text[start : match.end()].strip())
        start = match.end()
    out.append(text[start:].strip())
    return [sentence for sentence in out if sentence]


def contains_sequence(haystack: Sequence[str], needle: Sequence[str]) -> bool:
    if not needle or len(needle) > len(haystack):
        return False
    n = len(needle)
    return any(list(haystack[i : i + n]) == list(needle) for i in range(len(haystack) - n + 1))


def leaks_name(query: str, name: str) -> bool:
    """True when the query gives the target away: its name verbatim, or its split words in sequence."""
    if name.lower() in query.lower():
        return True
    query_words = words(query)
    name_words = split_identifier(name)
    return contains_sequence(query_words, name_words)
