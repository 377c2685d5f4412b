"""Identifier splitting shared by lexical indexing and embedding-text preparation.

Full-text tokenizers (LanceDB's native FTS included) and most embedding vocabularies see
`validateJwtToken` as one opaque word, so a query for "jwt token" would miss it. Keeping the
original token and appending its lowercased parts lets both exact-identifier and word-level
queries match the same text.
"""

from __future__ import annotations

import re
from functools import lru_cache

# `$` and `_` are identifier characters in JS/TS; everything else separates tokens.
_TOKEN = re.compile(r"[A-Za-z0-9_$]+")
# Acronym followed by a capitalised word ("HTTPServer" -> HTTP, Server), then ordinary
# camel humps, remaining acronyms, and digit runs.
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def identifier_parts(token: str) -> list[str]:
    """Lowercased word parts of one identifier: `parse_HTTPResponse2` -> [parse, http, response, 2]."""
    return [part.lower() for part in _PART.findall(token)]


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
    return " ".join(map(_expand, _TOKEN.findall(text)))
