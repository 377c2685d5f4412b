"""Token counting for budgets: cl100k_base, the encoding the analysis service counts with
(`node_ts_service/src/tokens.ts`), so a budget means the same number on both sides.

`bpe-openai` compiles the rank table into its extension, so counting works offline and
never fetches a vocabulary at run time (tiktoken would download one).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import bpe_openai


@lru_cache(maxsize=1)
def _encoding() -> bpe_openai.Encoding:
    # Imported on first use: loading the rank table takes ~0.5 s (1.6 s on a busy machine), which
    # an MCP server must not spend before it answers the client's handshake (`preload` after).
    import bpe_openai

    return bpe_openai.get_encoding("cl100k_base")


def preload() -> None:
    """Loads the encoding now (in a background thread), so the first count does not wait for it."""
    _encoding()


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
    # token's spelling (a tokenizer's own code, "<|endoftext|>") is code, not a control token, and
    # `encode` would refuse it. encode_ordinary also skips encode's scan for special tokens: ~40%
    # faster, and counting drafts is most of selection's own time.
    return len(_encoding().encode_ordinary(text))
