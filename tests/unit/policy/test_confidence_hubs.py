"""Confidence and hub policy (ranking.py) on hand-made inputs."""

import pytest
from tests.unit.policy.test_ranking import chunk, lexical

from codecompass.common.chunks import NodeKind
from codecompass.policy.confidence import Calibration, confidence, confidence_features
from codecompass.policy.ranking import HubPolicy, hub_eligible, hub_scores, rank
from codecompass.policy.shape import analyze


def test_coverage_counts_query_words_found_in_the_best_results():
    ranked = rank(analyze("retry the failed upload"), lexical(
        (chunk("a", "retryUpload", source="function retryUpload(failed) { upload(failed) }"), 5.0),
    ), ratio=0.0, limit=10)
    features = confidence_features(analyze("retry the failed upload"), ranked)
    assert features["coverage"] == pytest.approx(1.0)
    nonsense = confidence_features(analyze("purple elephant quantum banana"), ranked)
    assert nonsense["coverage"] == 0.0


def test_prefix_stems_match_inflections():
    ranked = rank(analyze("inserted edges"), lexical((chunk("a", "insertEdge", source="insertEdge(e)"), 1.0)),
                  ratio=0.0, limit=10)
    assert confidence_features(analyze("inserted edges"), ranked)["coverage"] == pytest.approx(1.0)


def test_confidence_is_zero_when_no_channel_found_anything():
    assert confidence({"coverage": 1.0}, Calibration(bias=5.0, weights=())) == 0.0


def test_confidence_rises_with_evidence():
    weak = {"lexical": 1.0, "coverage": 0.2, "cosine": 0.1}
    # Every word covered, the name found by its definition, a clear and strong first result.
    strong = {"lexical": 1.0, "coverage": 1.0, "cosine": 0.6, "definition": 1.0, "exact_name": 1.0,
              "top_score": 0.9, "margin": 0.5}
    assert 0.0 < confidence(weak) < 0.5 < confidence(strong) < 1.0


SEEDS = [("s1", 1.0), ("s2", 0.8), ("s3", 0.6), ("s4", 0.2)]


def test_a_symbol_connected_to_several_seeds_is_a_hub():
    outgoing = {"s1": ["mw"], "s2": ["mw", "only2"], "s3": ["mw"]}
    hubs = hub_scores(SEEDS, outgoing, {}, HubPolicy())
    assert [h.chunk_id for h in hubs] == ["mw"]
    hub = hubs[0]
    assert hub.connected == ("s1", "s2", "s3") and hub.outgoing == 3 and hub.incoming == 0
    # Connected to the three best seeds: just under the best seed.
    assert hub.score == pytest.approx(0.9)


def test_hub_of_weak_seeds_scores_low_and_callers_count():
    hubs = hub_scores(SEEDS, {"s4": ["h"]}, {"s3": ["h"]}, HubPolicy())
    assert len(hubs) == 1 and hubs[0].incoming == 1 and hubs[0].outgoing == 1
    assert hubs[0].score == pytest.approx(0.9 * (0.6 + 0.2) / (1.0 + 0.8 + 0.6))


def test_seeds_are_never_hubs_and_the_cap_holds():
    outgoing = {sid: ["s1", "a", "b", "c", "d"] for sid, _ in SEEDS}
    hubs = hub_scores(SEEDS, outgoing, {}, HubPolicy(max_hubs=2))
    assert len(hubs) == 2 and all(h.chunk_id != "s1" for h in hubs)


def test_tests_and_module_chunks_are_not_hubs():
    assert hub_eligible(chunk("a", "Options"))
    assert not hub_eligible(chunk("t", "helper", "src/__tests__/x.ts"))
    assert not hub_eligible(chunk("m", "<module top level>", kind=NodeKind.MODULE))
