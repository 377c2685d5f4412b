"""Whether a query is worth rewriting with an LLM (seed 002's heuristic), judged from its shape.

The gateway (`codecompass_gateway.rewrite`) asks the LLM and merges what it finds; when to ask is a
judgement of the query, so it lives with the other judgements of it. No I/O.
"""

from __future__ import annotations

import re

from codecompass.policy import shape as q
from codecompass.policy.shape import REQUEST_WORDS, STOP_WORDS, QueryShape

# Fewer content words than this read as keywords, which the lexical channel already answers well.
MIN_CONTENT_WORDS = 3
# Above this share of stop words a query reads as a sentence, not as keywords (seed 002).
STOP_WORD_RATIO = 0.4
_WORD = re.compile(r"[A-Za-z0-9_$']+")


def content_words(shape: QueryShape) -> list[str]:
    return [w for w in shape.words if w not in REQUEST_WORDS]


def should_rewrite(shape: QueryShape) -> tuple[bool, str]:
    """Seed 002's heuristic, no I/O: (rewrite?, why)."""
    tokens = shape.text.split()
    if shape.path:
        return False, "the query names a file path"
    if any(q.is_code_shaped(t.strip("'\"`,;:?!()[]<>")) for t in tokens):
        return False, "the query is code-shaped (a dotted, camelCase or snake_case name)"
    if len(content_words(shape)) < MIN_CONTENT_WORDS:
        return False, "fewer than three content words: searched as keywords"
    if shape.question:
        return True, "a question in words"
    lowered = [w.lower() for w in _WORD.findall(shape.text)]
    stop = sum(1 for w in lowered if w in STOP_WORDS)
    if lowered and stop / len(lowered) > STOP_WORD_RATIO:
        return True, "a sentence (many stop words)"
    return False, "reads as keywords"
