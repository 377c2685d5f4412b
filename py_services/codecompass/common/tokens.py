"""Token counting for budgets: cl100k_base, the encoding the analysis service counts with
(`node_ts_service/src/tokens.ts`), so a budget means the same number on both sides.

`bpe-openai` compiles the rank table into its extension, so counting works offline and
never fetches a vocabulary at run time (tiktoken would download one).
"""

from __future__ import annotations

from functools import lru_cache

import bpe_openai


@lru_cache(maxsize=1)
def _encoding() -> bpe_openai.Encoding:
    return bpe_openai.get_encoding("cl100k_base")


def count_tokens(text: str) -> int:
    """Exact cl100k_base token count of `text`."""
    if not text:
        return 0
    return len(_encoding().encode(text))
