"""Token counting for budgets: cl100k_base, the encoding the analysis service counts with
(`node_ts_service/src/tokens.ts`), so a budget means the same number on both sides.

`bpe-openai` compiles the rank table into its extension, so counting works offline and
never fetches a vocabulary at run time (tiktoken would download one).
"""

from __future__ import annotations

import importlib
import re
from functools import lru_cache
from typing import Any

from codecompass.common.lean_imports import without_package_init

ENCODING = "cl100k_base"


@lru_cache(maxsize=1)
def _tokenizer() -> Any:  # bpe_openai._bindings.PyTokenizer (the extension ships no types)
    # The Rust tokenizer of bpe-openai's extension, imported without the package's `__init__`
    # (which parses three vocabularies in Python for a wrapper we do not use: 0.9 s of CPU at
    # every process start; lean_imports). Its counts equal the wrapper's
    # `len(encode_ordinary(text))` (compared on 6.3M characters of ws-300k: 0 differences).
    without_package_init("bpe_openai")
    return importlib.import_module("bpe_openai._bindings").tokenizer_for_encoding(ENCODING)


def preload() -> None:
    """Loads the tokenizer now (in a background thread), so the first count does not wait for it."""
    _tokenizer()


# bpe-openai refuses inputs over 200,000 tokens (a 40,000-line generated function has more);
# longer texts are counted in pieces of at most this many characters (a character is at most 4
# UTF-8 bytes, so at most 4 tokens).
_PIECE_CHARS = 40_000
_NON_SPACE = re.compile(r"\S")


def count_tokens(text: str) -> int:
    """cl100k_base token count of `text`, exact, as the analysis service's: a longer text than
    _PIECE_CHARS is counted in pieces cut at the start of a non-blank line, where no cl100k piece
    can straddle (the argument is in node_ts_service/src/tokens.ts), so the sum is the count.
    Only a text with a single line longer than _PIECE_CHARS is cut inside it, within one token."""
    if not text:
        return 0
    if len(text) <= _PIECE_CHARS:
        return _count(text)
    total, start = 0, 0
    while start < len(text):
        end = min(start + _PIECE_CHARS, len(text))
        if end < len(text):
            cut = _line_start_before(text, start, end)
            end = cut if cut > start else end
        total += _count(text[start:end])
        start = end
    return total


def _line_start_before(text: str, start: int, end: int) -> int:
    """The last offset in (start, end] that begins a line holding more than whitespace; -1: none."""
    newline = text.rfind("\n", start, end)
    while newline >= 0:
        line_end = text.find("\n", newline + 1)
        if _NON_SPACE.search(text, newline + 1, line_end if line_end >= 0 else len(text)):
            return newline + 1
        newline = text.rfind("\n", start, newline)
    return -1


def _count(text: str) -> int:
    # Ordinary text throughout, as the analysis service counts it: source that contains a special
    # token's spelling (a tokenizer's own code, "<|endoftext|>") is code, not a control token. The
    # extension counts without building the token list (counting drafts is most of selection's
    # own time). A lone surrogate (text decoded with `surrogateescape`) has no UTF-8 form: it
    # counts as U+FFFD, as bpe-openai's own wrapper sanitises it.
    try:
        return int(_tokenizer().count(text))
    except UnicodeEncodeError:
        return int(_tokenizer().count(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")))
