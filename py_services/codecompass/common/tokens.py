"""Token counting for budgets: cl100k_base, the encoding the analysis service counts with
(`node_ts_service/src/tokens.ts`), so a budget means the same number on both sides.

`bpe-openai` compiles the rank table into its extension, so counting works offline and
never fetches a vocabulary at run time (tiktoken would download one).
"""

from __future__ import annotations

import importlib
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


def count_tokens(text: str) -> int:
    """cl100k_base token count of `text`, exact, as the analysis service's. The extension counts a
    text of any length whole (1.6M characters: 0.04 s); only bpe-openai's Python wrapper refused
    inputs over 200,000 tokens."""
    # Ordinary text throughout, as the analysis service counts it: source that contains a special
    # token's spelling (a tokenizer's own code, "<|endoftext|>") is code, not a control token. The
    # extension counts without building the token list (counting drafts is most of selection's
    # own time). A lone surrogate (text decoded with `surrogateescape`) has no UTF-8 form: it
    # counts as U+FFFD, as bpe-openai's own wrapper sanitises it.
    if not text:
        return 0
    try:
        return int(_tokenizer().count(text))
    except UnicodeEncodeError:
        return int(_tokenizer().count(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")))
