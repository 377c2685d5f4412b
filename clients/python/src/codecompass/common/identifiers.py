"""Identifier splitting shared by lexical indexing and embedding-text preparation.

Full-text tokenizers (LanceDB's native FTS included) and most embedding vocabularies see
`validateJwtToken` as one opaque word, so a query for "jwt token" would miss it. Keeping the
original token and appending its lowercased parts lets both exact-identifier and word-level
queries match the same text.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# Letters and digits of any script, `$` and `_` are identifier characters in JS/TS (`рассчитать`,
# `購物車` and `función` are names as `total` is); everything else separates tokens.
TOKEN = re.compile(r"[\w$]+")
# Acronym followed by a capitalised word ("HTTPServer" -> HTTP, Server), then ordinary
# camel humps, remaining acronyms, and digit runs. Written over ASCII for speed; a token in other
# letters is first spelt in classes (`letter_classes`) and split by the same rule (`_CLASS_PART`),
# letters of scripts without case (CJK) running as one part.
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
_CLASS_PART = re.compile(r"U+(?=UL)|U?L+|U+|D+|O+")


def identifier_parts(token: str) -> list[str]:
    """Lowercased word parts of one identifier: `parse_HTTPResponse2` -> [parse, http, response, 2],
    `рассчитатьСкидку` -> [рассчитать, скидку]."""
    if token.isascii():
        return [part.lower() for part in _PART.findall(token)]
    classes = letter_classes(token)
    return [token[m.start():m.end()].lower() for m in _CLASS_PART.finditer(classes)]


def letter_classes(token: str) -> str:
    """One letter per character: U upper, L lower, D digit, O a letter without case; a combining
    mark takes its base's class (a decomposed `á` stays one letter); anything else separates."""
    out: list[str] = []
    for ch in token:
        if ch.isupper():
            out.append("U")
        elif ch.islower():
            out.append("L")
        elif ch.isdigit():
            out.append("D")
        elif ch.isalpha():
            out.append("O")
        elif unicodedata.category(ch).startswith("M") and out:
            out.append(out[-1])
        else:
            out.append(" ")
    return "".join(out)


@lru_cache(maxsize=1 << 16)
def _expand(token: str) -> str:
    parts = identifier_parts(token)
    if len(parts) > 1 or (parts and parts[0] != token.lower()):
        return f"{token} {' '.join(parts)}"
    return token


def split_identifiers(text: str) -> str:
    """Each identifier in `text`, followed by its lowercased parts when splitting adds information.

    "validateJwtToken parse_http_url HTTPServer2" ->
    "validateJwtToken validate jwt token parse_http_url parse http url HTTPServer2 http server 2".
    Punctuation is dropped: the output feeds tokenizers and embedders, not humans.
    Expansions are memoised per token because source code repeats its identifiers heavily
    (indexing a workspace splits the same few thousand names millions of times).
    """
    return " ".join(map(_expand, TOKEN.findall(text)))
