"""Text preparation for local models: identifier splitting and a header-preserving token window.

General-purpose sentence models tokenize `validateJwtToken` into meaningless
word pieces, so identifiers are replaced by their words ("validate jwt token")
before embedding, for documents and queries alike. Punctuation is dropped: it
costs window tokens and carries little meaning for these models.

A chunk's embedding_text is a preamble, a `---` line, then the collapsed
source. The window keeps the header lines (path > qualified name, Purpose,
Signature) whole where possible, gives the rest of the budget to the code body,
and only then to the other preamble lines (dependencies, referenced symbols),
so truncation eats the tail of the body, never the identity of the chunk.

Changing anything here changes the vectors: bump TEXT_PREP_VERSION.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from codecompass.common.identifiers import identifier_parts

TEXT_PREP_VERSION = "split-v1"

_WORD = re.compile(r"[\w$]+")
_BODY_SEPARATOR = "---"
_HEADER_PREFIXES = ("Purpose:", "Signature:")
# The header may take at most this share of the window while the body needs the
# rest, so an enormous signature cannot push every line of code out.
_CORE_SHARE = 0.75


@lru_cache(maxsize=1 << 16)
def _token_words(token: str) -> tuple[str, ...]:
    # Memoised: code repeats its identifiers, and splitting them is most of the cost of
    # preparing a text for the static model, which embeds thousands of chunks a second.
    return (token.lower(),) if not token.isascii() else tuple(identifier_parts(token))


def to_words(text: str) -> list[str]:
    """Lowercased words of `text`, identifiers split into their parts."""
    words: list[str] = []
    for token in _WORD.findall(text):
        words.extend(_token_words(token))
    return words


@dataclass(frozen=True)
class Sections:
    """Words of a text by priority: header (kept first), body (code), context (other preamble lines)."""

    core: tuple[str, ...]
    context: tuple[str, ...]
    body: tuple[str, ...]

    @property
    def words(self) -> tuple[str, ...]:
        return self.core + self.context + self.body

    def capped(self, max_words: int) -> Sections:
        """Drop words that can never fit: every word costs at least one token."""
        return Sections(self.core[:max_words], self.context[:max_words], self.body[:max_words])


def split_sections(text: str) -> Sections:
    """Split an embedding_text into header / context / body words; plain text (a query) is all body."""
    lines = text.splitlines()
    try:
        separator = next(i for i, line in enumerate(lines) if line.strip() == _BODY_SEPARATOR)
    except StopIteration:
        return Sections((), (), tuple(to_words(text)))
    preamble, body = lines[:separator], lines[separator + 1:]
    core: list[str] = []
    context: list[str] = []
    for index, line in enumerate(preamble):
        is_core = index == 0 or line.lstrip().startswith(_HEADER_PREFIXES)
        (core if is_core else context).extend(to_words(line))
    return Sections(tuple(core), tuple(context), tuple(to_words("\n".join(body))))


def _prefix_that_fits(lengths: Sequence[int], budget: int) -> tuple[int, int]:
    """(number of leading items whose lengths sum to <= budget, that sum)."""
    used = 0
    for count, length in enumerate(lengths):
        if used + length > budget:
            return count, used
        used += length
    return len(lengths), used


def fit_window(sections: Sections, lengths: Sequence[int], budget: int) -> list[int]:
    """Indices into `sections.words` to embed, in order, whose token lengths sum to <= budget.

    `lengths[i]` is the token count of `sections.words[i]` under the model's tokenizer.
    """
    n_core, n_context = len(sections.core), len(sections.context)
    core_lengths = lengths[:n_core]
    context_lengths = lengths[n_core:n_core + n_context]
    body_lengths = lengths[n_core + n_context:]
    body_reserve = min(sum(body_lengths), budget - int(budget * _CORE_SHARE))
    kept_core, used = _prefix_that_fits(core_lengths, budget - body_reserve)
    kept_body, body_used = _prefix_that_fits(body_lengths, budget - used)
    kept_context, _ = _prefix_that_fits(context_lengths, budget - used - body_used)
    return (
        list(range(kept_core))
        + [n_core + i for i in range(kept_context)]
        + [n_core + n_context + i for i in range(kept_body)]
    )
