"""The semantic plan: whether the vector channel may run for a query, and the cap on its weight.

Which `semantic_mode` applies (the request's, else the configured one) and the ratio cap
retrieval gets. `off` and `rerank_only` send a cap of 0, so retrieval never embeds the query and
no vector is searched; `off` also skips a model reranker. In `hybrid` the cap is the request's,
else retrieval's own default. The cap is a ceiling: how much of it a query of each intent uses is
`ranking.semantic_weight`'s decision (its `*_share` weights), the one place the semantic ratio per
intent is set.
"""

from __future__ import annotations

from dataclasses import dataclass

from codecompass.common.config import SEMANTIC_MODES
from codecompass.policy.ranking import SKIP_RATIO_ZERO

OFF, RERANK_ONLY, HYBRID = SEMANTIC_MODES
# Why semantic retrieval did not run because of the mode (seed 003's `semantic_skipped_reason`).
SKIP_DISABLED = "semantic_disabled"
SKIP_RERANK_ONLY = "semantic_mode_rerank_only"
# Where a cap came from, besides the mode itself.
FROM_REQUEST = "request"
FROM_RETRIEVAL_DEFAULT = "retrieval_default"


@dataclass(frozen=True)
class SemanticPlan:
    mode: str
    # The cap sent to retrieval: None leaves retrieval's configured default.
    ratio_cap: float | None
    # Where the cap came from: FROM_REQUEST, FROM_RETRIEVAL_DEFAULT or the mode.
    ratio_source: str
    # Semantic retrieval may run for this query (hybrid and a cap that is not 0).
    enabled: bool
    # Why it may not, when it may not.
    skipped_reason: str | None
    # A model reranker may run (False only in `off`).
    model_rerank: bool


def semantic_plan(mode: str | None, default_mode: str, requested_ratio: float | None) -> SemanticPlan:
    """The plan for a request's `mode` (None: `default_mode`) and `requested_ratio` (None: none).
    Raises ValueError, naming the modes, for a mode that is not one."""
    chosen = (mode or default_mode).strip().lower()
    if chosen not in SEMANTIC_MODES:
        raise ValueError(f"semantic_mode must be one of {', '.join(SEMANTIC_MODES)}; got {mode!r}")
    if chosen == OFF:
        return SemanticPlan(OFF, 0.0, OFF, enabled=False, skipped_reason=SKIP_DISABLED, model_rerank=False)
    if chosen == RERANK_ONLY:
        return SemanticPlan(RERANK_ONLY, 0.0, RERANK_ONLY, enabled=False, skipped_reason=SKIP_RERANK_ONLY,
                            model_rerank=True)
    if requested_ratio is None:
        return SemanticPlan(HYBRID, None, FROM_RETRIEVAL_DEFAULT, enabled=True, skipped_reason=None,
                            model_rerank=True)
    # As given: retrieval refuses a ratio outside [0, 1] with a message that names it.
    if requested_ratio == 0.0:
        return SemanticPlan(HYBRID, 0.0, FROM_REQUEST, enabled=False, skipped_reason=SKIP_RATIO_ZERO,
                            model_rerank=True)
    return SemanticPlan(HYBRID, requested_ratio, FROM_REQUEST, enabled=True, skipped_reason=None, model_rerank=True)
