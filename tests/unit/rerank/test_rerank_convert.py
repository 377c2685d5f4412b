"""Proto <-> domain round trips."""

from __future__ import annotations

from codecompass.contracts.rerank import convert
from codecompass.contracts.rerank.model import Candidate, RerankOutcome, RerankQuery, ScoredCandidate


def test_query_round_trip_keeps_optional_provider() -> None:
    for provider in (None, "cohere"):
        query = RerankQuery("find auth", (Candidate("a", "def a(): ..."), Candidate("b", "")),
                            top_n=3, provider=provider)
        assert convert.query_from_proto(convert.query_to_proto(query)) == query


def test_empty_provider_means_configured_one() -> None:
    message = convert.query_to_proto(RerankQuery("q", (), provider=""))
    assert message.HasField("provider")
    assert convert.query_from_proto(message).provider is None


def test_outcome_round_trip_keeps_unset_rerank_score() -> None:
    outcome = RerankOutcome(scores=(ScoredCandidate("c", 0.75), ScoredCandidate("a", None), ScoredCandidate("z", 0.0)),
                            provider="cohere", fallback=True, fallback_reason="timeout")
    message = convert.outcome_to_proto(outcome)
    assert message.scores[2].HasField("rerank_score") and not message.scores[1].HasField("rerank_score")
    # Deprecated: the blend is the gateway's; the service never fills it.
    assert all(s.final_score == 0.0 for s in message.scores)
    assert convert.outcome_from_proto(message) == outcome
