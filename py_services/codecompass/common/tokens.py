"""Token counting for budgets: cl100k_base, the encoding the analysis service counts with
(`node_ts_service/src/tokens.ts`), so a budget means the same number on both sides.

`bpe-openai` compiles the rank table into its extension, so counting works offline and
never fetches a vocabulary at run time (tiktoken would download one).
"""

from __future__ import annotations

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
# longer texts are counted in line-aligned pieces of at most this many characters (a character
# is at most 4 UTF-8 bytes, so at most 4 tokens).
_PIECE_CHARS = 40_000


def count_tokens(text: str) -> int:
    """cl100k_base token count of `text`: exact up to _PIECE_CHARS characters, and beyond that
    the sum over line-aligned pieces (a token may straddle a cut, so within one per piece)."""
    if not text:
        return 0
    if len(text) <= _PIECE_CHARS:
        return _count(text)
    total, start = 0, 0
    while start < len(text):
        end = min(start + _PIECE_CHARS, len(text))
        if end < len(text):
            cut = text.rfind("\n", start, end)
            end = cut + 1 if cut > start else end
        total += _count(text[start:end])
        start = end
    return total


def _count(text: str) -> int:
    # Ordinary text throughout, as the analysis service counts it: source that contains a special
    # token's spelling (a tokenizer's own code, "<|endoftext|>") is code, not a control token, and
    # `encode` would refuse it. encode_ordinary also skips encode's scan for special tokens: ~40%
    # faster, and counting drafts is most of selection's own time.
    return len(_encoding().encode_ordinary(text))
