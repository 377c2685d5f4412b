"""The semantic plan: the mode and the ratio cap retrieval gets (policy.semantic). Pure; no services."""

from __future__ import annotations

import pytest

from codecompass.common.config import ConfigError, read_config_file, settings_from
from codecompass.policy.semantic import (
    HYBRID,
    OFF,
    RERANK_ONLY,
    SKIP_DISABLED,
    SKIP_RERANK_ONLY,
    semantic_plan,
)


def test_off_sends_a_zero_ratio_and_skips_a_model_reranker() -> None:
    plan = semantic_plan(OFF, HYBRID, 0.8)
    assert (plan.mode, plan.ratio_cap, plan.enabled, plan.skipped_reason, plan.model_rerank) == (
        OFF, 0.0, False, SKIP_DISABLED, False)


def test_rerank_only_builds_no_vectors_but_may_rerank() -> None:
    plan = semantic_plan(RERANK_ONLY, HYBRID, 0.8)
    assert (plan.ratio_cap, plan.enabled, plan.skipped_reason, plan.model_rerank) == (
        0.0, False, SKIP_RERANK_ONLY, True)


def test_the_default_mode_applies_unless_the_request_names_one() -> None:
    assert semantic_plan(None, OFF, None).mode == OFF
    assert semantic_plan(" Hybrid ", OFF, None).mode == HYBRID


def test_hybrid_cap_is_the_requests_else_retrievals_default() -> None:
    default = semantic_plan(None, HYBRID, None)
    assert (default.ratio_cap, default.ratio_source, default.enabled) == (None, "retrieval_default", True)
    asked = semantic_plan(None, HYBRID, 0.3)
    assert (asked.ratio_cap, asked.ratio_source, asked.enabled) == (0.3, "request", True)
    zero = semantic_plan(HYBRID, HYBRID, 0.0)
    assert (zero.ratio_cap, zero.enabled, zero.skipped_reason) == (0.0, False, "semantic_ratio_zero")


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="semantic_mode must be one of off, rerank_only, hybrid"):
        semantic_plan("vectors", HYBRID, None)


@pytest.mark.parametrize(("variable", "key", "home"), [
    ("CODECOMPASS_GATEWAY_SEMANTIC_RATIO_SYMBOL", "gateway.semantic_ratio_overrides.symbol", "policy/ranking.py"),
    ("CODECOMPASS_GATEWAY_SEMANTIC_RATIO_NATURAL_LANGUAGE", "gateway.semantic_ratio_overrides.natural_language",
     "policy/ranking.py"),
    ("CODECOMPASS_SELECTION_FOCUS_MULTIPLIER", "selection.focus_multiplier", "policy/relevance.py"),
])
def test_a_removed_policy_setting_fails_at_start_naming_where_the_value_lives(tmp_path, variable: str, key: str,
                                                                               home: str) -> None:
    # One home per policy value: a setup that still sets one learns where it went, rather than
    # having it ignored in silence.
    with pytest.raises(ConfigError, match=f"^{variable} was removed: .*codecompass/{home}"):
        settings_from({variable: "0.5"})
    section, _, name = key.partition(".")
    nested = name.replace(".", ":\n    ")
    path = tmp_path / "config.yaml"
    path.write_text(f"{section}:\n  {nested}: 0.5\n")
    with pytest.raises(ConfigError, match=f"config file .*: {key} was removed: .*codecompass/{home}"):
        read_config_file(path)
