"""The only place rerank domain types meet the generated proto types: the rerank servicer and its
client both convert here."""

from __future__ import annotations

from codecompass.contracts.rerank.model import Candidate, RerankOutcome, RerankQuery, ScoredCandidate
from codecompass.v1 import rerank_pb2 as pb


def query_from_proto(message: pb.RerankRequest) -> RerankQuery:
    return RerankQuery(
        query=message.query,
        candidates=tuple(Candidate(id=d.id, text=d.text) for d in message.documents),
        top_n=message.top_n,
        provider=(message.provider.strip().lower() or None) if message.HasField("provider") else None,
    )


def query_to_proto(query: RerankQuery) -> pb.RerankRequest:
    message = pb.RerankRequest(
        query=query.query,
        documents=[pb.RerankDocument(id=c.id, text=c.text) for c in query.candidates],
        top_n=query.top_n,
    )
    if query.provider is not None:
        message.provider = query.provider
    return message


def outcome_to_proto(outcome: RerankOutcome) -> pb.RerankResponse:
    scores = []
    for s in outcome.scores:
        score = pb.RerankScore(id=s.id)  # final_score is deprecated and never set (rerank.proto)
        if s.rerank_score is not None:
            score.rerank_score = s.rerank_score
        scores.append(score)
    return pb.RerankResponse(scores=scores, rerank_provider=outcome.provider, rerank_fallback=outcome.fallback,
                             fallback_reason=outcome.fallback_reason)


def outcome_from_proto(message: pb.RerankResponse) -> RerankOutcome:
    return RerankOutcome(
        scores=tuple(ScoredCandidate(id=s.id, rerank_score=s.rerank_score if s.HasField("rerank_score") else None)
                     for s in message.scores),
        provider=message.rerank_provider,
        fallback=message.rerank_fallback,
        fallback_reason=message.fallback_reason,
    )
