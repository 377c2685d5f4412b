"""Which provider runs, the privacy gates and fallback; the answer is the provider's raw scores.

How a model score combines with the first stage's is ranking policy, applied by the caller
(the gateway, with `codecompass.policy.blend`): this service never needs the first-stage
scores or the blend weight, so the two can never disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict

from codecompass.common.config import RerankSettings
from codecompass.common.logging import get_logger
from codecompass.common.outbound import redact
from codecompass.contracts.rerank.model import (
    EXTERNAL_PROVIDERS,
    LOCAL,
    PROVIDERS,
    REASON_BLOCKED,
    REASON_ERROR,
    REASON_TOO_FEW,
    Candidate,
    RerankOutcome,
    RerankQuery,
    ScoredCandidate,
    UnknownProvider,
)
from codecompass.rerank.providers import (
    CohereReranker,
    LlmReranker,
    LocalReranker,
    Reranker,
    RerankFailed,
    VoyageReranker,
)

log = get_logger("codecompass.rerank.engine")


class _ExternalArgs(TypedDict):
    """The keyword arguments every external reranker takes, typed so each constructor's are checked."""

    api_key: str | None
    base_url: str | None
    model: str | None
    timeout_s: float


def build_providers(settings: RerankSettings) -> dict[str, Reranker]:
    common: _ExternalArgs = {"api_key": settings.api_key, "base_url": settings.base_url, "model": settings.model,
              "timeout_s": settings.timeout_s}
    return {
        LOCAL: LocalReranker(),
        "voyage": VoyageReranker(**common),
        "cohere": CohereReranker(**common),
        "llm": LlmReranker(**common),
    }


def ranked(candidates: Sequence[Candidate], rerank_scores: Mapping[int, float]) -> list[ScoredCandidate]:
    """One raw score per candidate, best model score first; the candidates the provider did not
    score follow in request order (the first stage's)."""
    scored = [ScoredCandidate(id=c.id, rerank_score=rerank_scores.get(i)) for i, c in enumerate(candidates)]
    order = sorted(range(len(scored)),
                   key=lambda i: (scored[i].rerank_score is None, -(scored[i].rerank_score or 0.0), i))
    return [scored[i] for i in order]


class RerankEngine:
    def __init__(self, settings: RerankSettings, providers: Mapping[str, Reranker] | None = None) -> None:
        self._settings = settings
        self._providers = dict(providers) if providers is not None else build_providers(settings)

    def _local(self, query: RerankQuery, *, fallback: bool, reason: str) -> RerankOutcome:
        return RerankOutcome(scores=tuple(ranked(query.candidates, {})), provider=LOCAL, fallback=fallback,
                             fallback_reason=reason)

    def rerank(self, query: RerankQuery) -> RerankOutcome:
        name = query.provider or self._settings.provider
        if name not in PROVIDERS:
            raise UnknownProvider(f"unknown rerank provider {name!r}; expected one of {', '.join(PROVIDERS)}")
        if name == LOCAL or not query.candidates:
            return self._local(query, fallback=False, reason="")
        if name in EXTERNAL_PROVIDERS and not self._settings.external_allowed:
            return self._local(query, fallback=False, reason=REASON_BLOCKED)
        # Seed 001: with fewer candidates than asked for there is nothing to choose between.
        if name == "llm" and len(query.candidates) < query.top_n:
            return self._local(query, fallback=False, reason=REASON_TOO_FEW)
        texts = [c.text for c in query.candidates]
        try:
            scores = self._providers[name].score(query.query, texts, query.top_n)
        except RerankFailed as exc:
            log.warning("rerank provider failed; answering with no model scores",
                        extra={"provider": name, "reason": exc.reason,
                               "detail": redact(str(exc), self._settings.api_key)})
            return self._local(query, fallback=True, reason=exc.reason)
        except Exception as exc:  # noqa: BLE001 - a provider bug must not fail the search that called us
            log.warning("rerank provider raised; answering with no model scores",
                        extra={"provider": name, "error": type(exc).__name__,
                               "detail": redact(str(exc), self._settings.api_key)})
            return self._local(query, fallback=True, reason=REASON_ERROR)
        return RerankOutcome(scores=tuple(ranked(query.candidates, scores)), provider=name)
