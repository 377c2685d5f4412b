"""The profile advisor: deterministic tiers with reason codes, never a config change."""

from __future__ import annotations

from pathlib import Path

from codecompass_gateway import advisor

from codecompass.common.config import EmbeddingSettings

LOCAL = EmbeddingSettings()
EXTERNAL = EmbeddingSettings(external_provider_enabled=True, allow_code_payload_to_external=True, api_key="k")


def test_the_local_default_is_advised_without_benchmark_evidence_for_more() -> None:
    advice = advisor.advise(900, 1.0, 250.0, LOCAL)
    assert (advice.tier, advice.profile, advice.current_profile) == ("fast_local", "code-small", "code-small")
    assert advice.reasons == ("repo_size_<10k", "language_mix_ts_js", "external_provider_blocked",
                              "no_benchmark_evidence_for_larger_local_model")
    assert advisor.advise(900, 1.0, 250.0, LOCAL) == advice  # reproducible


def test_open_gates_with_a_key_advise_the_code_model_unless_latency_is_tight() -> None:
    assert advisor.advise(20_000, 0.9, 250.0, EXTERNAL).tier == "high_quality"
    tight = advisor.advise(20_000, 0.9, 100.0, EXTERNAL)
    assert tight.tier == "fast_local" and "latency_budget_tight" in tight.reasons
    no_key = EmbeddingSettings(external_provider_enabled=True, allow_code_payload_to_external=True)
    assert "external_key_missing" in advisor.advise(20_000, 0.9, 250.0, no_key).reasons


def test_size_buckets_and_language_mix(tmp_path: Path) -> None:
    assert [advisor.size_bucket(n) for n in (9_999, 10_000, 50_000, 50_001)] == ["<10k", "10k-50k", "10k-50k", ">50k"]
    (tmp_path / "src").mkdir()
    for name in ("a.ts", "b.tsx", "c.js", "d.py", "README.md"):
        (tmp_path / "src" / name).write_text("x")
    (tmp_path / "node_modules").mkdir()
    (tmp_path / "node_modules" / "e.py").write_text("x")
    assert advisor.ts_js_share(tmp_path) == 0.75
    assert "language_mix_other" in advisor.advise(10, advisor.ts_js_share(tmp_path), 250.0, LOCAL).reasons


def test_a_folders_language_mix_is_walked_once_a_while(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "a.ts").write_text("x")
    clock = [1000.0]
    monkeypatch.setattr(advisor.time, "monotonic", lambda: clock[0])
    assert advisor.ts_js_share(tmp_path) == 1.0
    (tmp_path / "b.py").write_text("x")
    clock[0] += advisor.SHARE_TTL_S - 1
    assert advisor.ts_js_share(tmp_path) == 1.0  # reused: index_status does not walk the tree each call
    clock[0] += 2
    assert advisor.ts_js_share(tmp_path) == 0.5
