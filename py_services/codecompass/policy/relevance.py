"""Relevance and focus: how sure the answer is of each ranked candidate, and which side of the
code (tests or implementation) the query is about.

The gateway calls these with the ranked list and the search's calibrated confidence, and sends
each candidate's relevance to selection, whose gate compares it with `min_relevance`; selection
itself only gates, merges, renders and budgets. Focus is judged from the query's shape
(`QueryShape.mentions_tests`), the same judgement the ranking's test penalty reads, so the two
never disagree about a query.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from codecompass.common.chunks import Chunk
from codecompass.common.testcode import is_test_path
from codecompass.policy.shape import QueryShape


class QueryFocus(str, Enum):
    # Judged from the query; never the focus of an answer.
    AUTO = "auto"
    IMPLEMENTATION = "implementation"
    TESTS = "tests"
    NONE = "none"


@dataclass(frozen=True)
class RelevancePolicy:
    # Scores are the learned ranker's probabilities, which fall steeply after the best: on the
    # fourth-root scale a result at a sixteenth of the best keeps half the confidence. On the dev
    # split (bench/quality/run_pipeline.py) the square root kept answers to 1,226 tokens and recall
    # within 2,000 tokens to 0.621 (the ranked list: 0.700); the fourth root 0.659 at 3,114 tokens,
    # while queries with no answer stay short either way (the gate reads the confidence first).
    relative_exponent: float = 0.25
    # Relevance factor of the side the query is not about (tests or implementation).
    focus_multiplier: float = 0.7


DEFAULT_RELEVANCE = RelevancePolicy()


def resolve_focus(requested: QueryFocus, shape: QueryShape) -> QueryFocus:
    """The focus an answer has: the requested one, else judged from the query's shape."""
    if requested is not QueryFocus.AUTO:
        return requested
    return QueryFocus.TESTS if shape.mentions_tests else QueryFocus.IMPLEMENTATION


def is_test_code(chunk: Chunk) -> bool:
    """Test code by the chunker's say (a describe/it block) or by its file's path."""
    return chunk.is_test or is_test_path(chunk.relative_path)


def focus_factor(focus: QueryFocus, chunk: Chunk, policy: RelevancePolicy = DEFAULT_RELEVANCE) -> float:
    """What focus multiplies a candidate's relevance (or score) by: less on the side the query is
    not about, 1 otherwise (and for AUTO, which `resolve_focus` settles first)."""
    test = is_test_code(chunk)
    if (focus is QueryFocus.IMPLEMENTATION and test) or (focus is QueryFocus.TESTS and not test):
        return policy.focus_multiplier
    return 1.0


def focused_scores(scores: Sequence[float], chunks: Sequence[Chunk], focus: QueryFocus,
                   policy: RelevancePolicy = DEFAULT_RELEVANCE) -> list[float]:
    """Each score times its focus factor: how a ranked list with no selection to apply focus to
    (the gate) takes a focus someone set (the caller, or the rewrite's LLM)."""
    return [score * focus_factor(focus, chunk, policy) for score, chunk in zip(scores, chunks, strict=True)]


def relevance(scores: Sequence[float], chunks: Sequence[Chunk], confidence: float, focus: QueryFocus,
              policy: RelevancePolicy = DEFAULT_RELEVANCE) -> list[float]:
    """relevance_i = confidence x (score_i / best score) ** relative_exponent x focus, in [0, 1].

    The best candidate's relevance is the search's calibrated confidence; the others' falls with
    their distance from it. The candidates' order already includes the ranking's test penalty, so
    focus reorders nothing: it acts on relevance, i.e. on selection's gate, so that test code
    needs a stronger match to enter an answer about implementation, and the reverse.
    """
    best = max(scores, default=0.0)
    out = []
    for score, chunk in zip(scores, chunks, strict=True):
        value = confidence * (max(score, 0.0) / best) ** policy.relative_exponent if best > 0 else 0.0
        out.append(min(max(value * focus_factor(focus, chunk, policy), 0.0), 1.0))
    return out


def priority(relevance: float | None, score: float, best: float) -> float:
    """How much a result matters to the reader, in [0, 1] (an MCP text item's priority): its
    relevance when selection ran, else its score relative to the best one (a ranked list)."""
    value = relevance if relevance is not None else (score / best if best > 0 else 0.0)
    return round(min(1.0, max(0.0, float(value))), 4)
