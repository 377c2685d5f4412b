"""The rerank blend: a model reranker's raw score and the first stage's score as one.

The rerank service returns raw model scores; the gateway blends them here, so the ranking has
one home whether a reranker ran or not.
"""

from __future__ import annotations


def rerank_blend(first_stage: float, rerank: float | None, weight: float) -> float:
    """`rerank x weight + first_stage x (1 - weight)`; the first-stage score when the reranker did
    not score the candidate (past its top_n, not picked by an LLM, or a fallback).

    The first stage keeps a share because a model reading a chunk out of context sometimes
    misses an exact symbol hit the first stage found for certain.
    """
    if rerank is None:
        return first_stage
    return rerank * weight + first_stage * (1.0 - weight)
