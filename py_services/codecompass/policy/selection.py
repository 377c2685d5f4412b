"""Selection policy: which candidates an answer keeps (the gate), and when kept children merge into
their parent.

The selection service (`codecompass.selection.engine`) strings these decisions together with the
rendering and the budget; the decisions themselves, and every number they compare with, live here.
Pure functions of plain values (relevances, shares): no selection types, no I/O.
"""

from __future__ import annotations

from collections.abc import Sequence

# A low-confidence answer (its best candidate below min_relevance) keeps this many: a short answer
# an agent can judge in one read beats an empty one (on the dev split of bench-pipeline the old
# all-or-nothing gate left 7% of answerable queries empty, and their two best candidates held the
# gold in 10 of those 36), while a query no workspace answers costs the agent at most two results.
LOW_CONFIDENCE_RESULTS = 2
# In a confident answer a candidate is kept down to this share of min_relevance (0.2 at the
# default 0.5). Dropping a candidate can only lose recall within a budget, never gain it (the
# ranking's order is kept), so the floor drops only the tail no reader gets to: on the dev split,
# the full min_relevance cut the answer's recall within 8,000 tokens to 0.70 against the ranked
# list's 0.77, a floor of 0.2 kept 0.765 with a quarter fewer tokens than no floor (5,844 vs
# 7,313 per answer), 0.15 kept 0.761 and 0.25 lost more (0.755). Focus still acts here: test code
# in an answer about implementation reaches the floor only with a stronger match.
NOISE_FLOOR_SHARE = 0.4
# A parent absorbs its kept children only when they cover at least this share of its lines. On the
# dev split of bench-pipeline a merge carried more gold lines per token than its children shown
# alone in only 36 of 215 merges that showed any gold (0.043 vs 0.053 gold lines per token
# overall: the parent's own lines were mostly what no ranking picked). No rank or relevance rule
# told the 36 apart (the parent ranked above its child: 24 better, 63 worse); coverage did: from
# 90% the merged results carried 0.089 gold lines per token against 0.087 for their children
# alone, and cost fewer tokens (0.98x: one header and signature instead of one per child).
MERGE_MIN_COVER = 0.9


def relevance_as_sent(relevance: float | None, score: float) -> float:
    """The relevance a candidate is gated on: the one its caller's relevance policy sent, else its
    score as given, clamped to [0, 1] (a plain client that sends no relevance)."""
    return relevance if relevance is not None else min(max(score, 0.0), 1.0)


def gate(relevances: Sequence[float], min_relevance: float) -> list[int]:
    """The positions of the candidates an answer keeps, in the order sent. Never padded: a
    candidate with no relevance (nothing matched) never enters, so nothing stays nothing."""
    best = max(relevances, default=0.0)
    if best >= min_relevance:
        return [i for i, value in enumerate(relevances) if value >= min_relevance * NOISE_FLOOR_SHARE]
    return [i for i, value in enumerate(relevances) if value > 0.0][:LOW_CONFIDENCE_RESULTS]


def merge_earned(covered_share: float) -> bool:
    """Whether kept children covering `covered_share` of their parent's lines merge into it."""
    return covered_share >= MERGE_MIN_COVER
