"""Domain types of the rerank service's messages, for its servicer and its client (no generated
proto types here)."""

from __future__ import annotations

from dataclasses import dataclass

LOCAL = "local"
EXTERNAL_PROVIDERS = ("voyage", "cohere", "llm")
PROVIDERS = (LOCAL, *EXTERNAL_PROVIDERS)

# Reasons a chosen provider did not score; short codes so callers and dashboards can group them.
REASON_BLOCKED = "external_provider_blocked"
REASON_TOO_FEW = "fewer_candidates_than_top_n"
REASON_NOT_CONFIGURED = "provider_not_configured"
REASON_TIMEOUT = "timeout"
REASON_NETWORK = "network_error"
REASON_INVALID = "invalid_response"
REASON_EMPTY = "empty_ranking"
REASON_ERROR = "provider_error"


@dataclass(frozen=True)
class Candidate:
    id: str
    text: str


@dataclass(frozen=True)
class RerankQuery:
    query: str
    candidates: tuple[Candidate, ...]
    top_n: int = 0  # 0: all candidates
    provider: str | None = None  # None: the configured provider


@dataclass(frozen=True)
class ScoredCandidate:
    id: str
    # The provider's raw score; None when it did not score the candidate (past its top_n, not
    # picked by an LLM, or a fallback). Blending it with the first stage is the caller's policy.
    rerank_score: float | None


@dataclass(frozen=True)
class RerankOutcome:
    scores: tuple[ScoredCandidate, ...]
    provider: str
    fallback: bool = False
    fallback_reason: str = ""


class UnknownProvider(ValueError):
    """A request named a provider this service does not have."""
