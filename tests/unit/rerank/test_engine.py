"""Provider choice, privacy gates, fallback and the raw scores, with fake providers."""

from __future__ import annotations

import io
import logging
from collections.abc import Sequence

import pytest

from codecompass.common.config import ConfigError, RerankSettings, redacted, settings_from
from codecompass.contracts.rerank.model import Candidate, RerankQuery, UnknownProvider
from codecompass.rerank.__main__ import check_settings
from codecompass.rerank.engine import RerankEngine, ranked
from codecompass.rerank.providers import LocalReranker, RerankFailed

SECRET = "rk-live-0123456789abcdef"
OPEN = {"external_provider_enabled": True, "allow_code_payload_to_external": True}
CANDIDATES = (Candidate("a", "alpha"), Candidate("b", "beta"), Candidate("c", "gamma"))


class Fake:
    def __init__(self, name: str, scores: dict[int, float] | None = None, error: Exception | None = None) -> None:
        self.name = name
        self.scores = scores or {}
        self.error = error
        self.calls = 0

    def score(self, query: str, texts: Sequence[str], top_n: int) -> dict[int, float]:
        self.calls += 1
        if self.error is not None:
            raise self.error
        return self.scores


def engine(provider: str = "cohere", fake: Fake | None = None, **settings) -> tuple[RerankEngine, Fake]:
    fake = fake or Fake(provider, {2: 1.0, 0: 0.0})
    providers = {"local": LocalReranker(), "voyage": fake, "cohere": fake, "llm": fake}
    return RerankEngine(RerankSettings(provider=provider, api_key=SECRET, **settings), providers), fake


def test_scores_are_the_models_raw_scores_best_first_then_the_unscored_in_request_order() -> None:
    # No blend here: that is the gateway's policy (codecompass.policy.blend).
    scored = ranked(CANDIDATES, {2: 1.0, 0: 0.0})
    assert [(s.id, s.rerank_score) for s in scored] == [("c", 1.0), ("a", 0.0), ("b", None)]


def test_ties_keep_request_order() -> None:
    assert [s.id for s in ranked(CANDIDATES, {0: 0.5, 1: 0.5, 2: 0.5})] == ["a", "b", "c"]
    assert [s.id for s in ranked(CANDIDATES, {})] == ["a", "b", "c"]


def test_local_scores_nothing() -> None:
    outcome = engine("local")[0].rerank(RerankQuery("q", CANDIDATES))
    assert outcome.provider == "local" and not outcome.fallback and outcome.fallback_reason == ""
    assert [(s.id, s.rerank_score) for s in outcome.scores] == [("a", None), ("b", None), ("c", None)]


@pytest.mark.parametrize("gates", [{}, {"external_provider_enabled": True}, {"allow_code_payload_to_external": True}])
def test_external_provider_needs_both_gates(gates: dict) -> None:
    rerank, fake = engine("cohere", **gates)
    outcome = rerank.rerank(RerankQuery("q", CANDIDATES))
    assert fake.calls == 0
    assert outcome.provider == "local" and outcome.fallback is False
    assert outcome.fallback_reason == "external_provider_blocked"


def test_request_override_is_gated_too() -> None:
    rerank, fake = engine("local")
    outcome = rerank.rerank(RerankQuery("q", CANDIDATES, provider="voyage"))
    assert fake.calls == 0 and outcome.fallback_reason == "external_provider_blocked"


def test_open_gates_use_the_provider() -> None:
    rerank, fake = engine("cohere", **OPEN)
    outcome = rerank.rerank(RerankQuery("q", CANDIDATES))
    assert fake.calls == 1 and outcome.provider == "cohere" and not outcome.fallback
    assert outcome.scores[0].id == "c" and outcome.scores[0].rerank_score == 1.0


@pytest.mark.parametrize("error", [RerankFailed("http_429", "cohere answered HTTP 429"), RuntimeError("bug")])
def test_provider_failure_falls_back_to_local_without_raising(error: Exception) -> None:
    rerank, _ = engine("cohere", Fake("cohere", error=error), **OPEN)
    outcome = rerank.rerank(RerankQuery("q", CANDIDATES))
    assert outcome.provider == "local" and outcome.fallback is True
    assert outcome.fallback_reason == ("http_429" if isinstance(error, RerankFailed) else "provider_error")
    assert [(s.id, s.rerank_score) for s in outcome.scores] == [("a", None), ("b", None), ("c", None)]


def test_llm_is_skipped_with_fewer_candidates_than_top_n() -> None:
    rerank, fake = engine("llm", **OPEN)
    outcome = rerank.rerank(RerankQuery("q", CANDIDATES, top_n=5))
    assert fake.calls == 0 and outcome.provider == "local" and not outcome.fallback
    assert outcome.fallback_reason == "fewer_candidates_than_top_n"


def test_unknown_provider_is_a_caller_error() -> None:
    with pytest.raises(UnknownProvider):
        engine("local")[0].rerank(RerankQuery("q", CANDIDATES, provider="bing"))


def test_key_is_never_in_logs_repr_or_dump(caplog: pytest.LogCaptureFixture) -> None:
    failing = Fake("cohere", error=RerankFailed("http_401", f"invalid api token: Bearer {SECRET}"))
    rerank, _ = engine("cohere", failing, **OPEN)
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(message)s %(detail)s"))
    logger = logging.getLogger("codecompass.rerank.engine")
    logger.addHandler(handler)
    try:
        outcome = rerank.rerank(RerankQuery("q", CANDIDATES))
    finally:
        logger.removeHandler(handler)
    assert outcome.fallback_reason == "http_401"
    assert SECRET not in stream.getvalue() and "***" in stream.getvalue()
    settings = settings_from({"CODECOMPASS_RERANK_API_KEY": SECRET, "CODECOMPASS_RERANK_PROVIDER": "cohere"})
    assert SECRET not in repr(settings) and SECRET not in str(redacted(settings))
    assert settings.rerank.api_key == SECRET and redacted(settings)["rerank"]["api_key"] == "***"


def test_config_defaults_and_validation() -> None:
    settings = settings_from({})
    assert settings.rerank.provider == "local" and settings.rerank.weight == 0.65
    assert settings.rerank_port == 50054 and settings.rerank_addr == "127.0.0.1:50054"
    assert not settings.rerank.external_allowed
    gated = settings_from({"CODECOMPASS_RERANK_EXTERNAL_PROVIDER_ENABLED": "1",
                           "CODECOMPASS_RERANK_ALLOW_CODE_PAYLOAD_TO_EXTERNAL": "true"})
    assert gated.rerank.external_allowed
    with pytest.raises(ConfigError, match="CODECOMPASS_RERANK_WEIGHT"):
        settings_from({"CODECOMPASS_RERANK_WEIGHT": "1.5"})
    with pytest.raises(ConfigError, match="CODECOMPASS_RERANK_PROVIDER"):
        settings_from({"CODECOMPASS_RERANK_PROVIDER": "bing"})


def test_key_in_config_file_is_refused(tmp_path) -> None:
    from codecompass.common.config import read_config_file

    path = tmp_path / "config.yaml"
    path.write_text(f"rerank:\n  api_key: {SECRET}\n")
    with pytest.raises(ConfigError, match="CODECOMPASS_RERANK_API_KEY") as caught:
        read_config_file(path)
    assert SECRET not in str(caught.value)


@pytest.mark.parametrize(("settings", "variable"), [
    (RerankSettings(provider="cohere", **OPEN), "CODECOMPASS_RERANK_API_KEY"),
    (RerankSettings(provider="voyage", **OPEN), "CODECOMPASS_RERANK_API_KEY"),
    (RerankSettings(provider="llm", base_url="http://x/v1", **OPEN), "CODECOMPASS_RERANK_MODEL"),
])
def test_start_refuses_an_external_provider_that_cannot_run(settings: RerankSettings, variable: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        check_settings(settings)


def test_start_accepts_local_and_gated_providers() -> None:
    check_settings(RerankSettings())
    check_settings(RerankSettings(provider="cohere"))  # gates closed: it will answer locally
    check_settings(RerankSettings(provider="llm", base_url="http://x/v1", model="m", **OPEN))
