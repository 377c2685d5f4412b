"""The learned ranker on hand-made candidates: its features read what they say, a model file
orders the hand-set list and names its reasons, and a missing or foreign model falls back."""

import json
import logging
import threading

import lightgbm
import numpy as np
import pytest
from tests.unit.policy.test_ranking import chunk

from codecompass.common.chunks import NodeKind, SymbolReference
from codecompass.policy import learned
from codecompass.policy.learned import (
    FEATURES,
    SIGNAL_PREFIX,
    FeatureRecorder,
    PathExplainer,
    Rankers,
    feature_matrix,
    load_ranker,
    scale_path,
)
from codecompass.policy.ranking import Candidate, rank
from codecompass.policy.shape import analyze


def col(name):
    return FEATURES.index(name)


def candidates():
    a = chunk("a", "parseConfig", "src/config.ts", source="function parseConfig(text) { return load(text) }")
    b = chunk("b", "loadFile", "src/files.ts", source="function loadFile(path) { read config file }")
    t = chunk("t", "parses config", "test/config.test.ts", is_test=True, source="it('parses config', () => {})")
    return [
        Candidate(a, bm25=4.0, lexical_rank=1, primary_cosine=0.62, static_cosine=0.41, in_degree=7),
        Candidate(b, bm25=2.0, lexical_rank=2, cosine=0.71, semantic_rank=1, primary_cosine=0.71, in_degree=1),
        Candidate(t, bm25=3.0, lexical_rank=3, primary_cosine=0.55),
    ]


def test_features_read_the_candidates():
    shape = analyze("how is the config parsed")
    recorder = FeatureRecorder()
    rank(shape, candidates(), ratio=0.2, limit=10, model=recorder)
    rows = dict(zip(recorder.ids, recorder.rows, strict=True))
    assert recorder.rows.shape == (3, len(FEATURES))
    assert rows["a"][col("bm25_rel")] == pytest.approx(1.0)
    assert rows["b"][col("bm25_rel")] == pytest.approx(0.5)
    # Every candidate's cosine, found by the vector channel or not; the best is the gap's zero.
    assert rows["a"][col("cos_primary")] == pytest.approx(0.62)
    assert rows["b"][col("cos_primary_gap")] == pytest.approx(0.0)
    assert rows["b"][col("cos_primary_rank_inv")] == pytest.approx(1.0)
    assert rows["b"][col("has_primary")] == 1.0 and rows["b"][col("cos_static")] == 0.0
    assert rows["a"][col("in_degree")] == pytest.approx(np.log1p(7))
    assert rows["t"][col("is_test")] == 1.0 and rows["t"][col("pen_test")] == 1.0
    assert rows["a"][col("q_natural_language")] == 1.0
    # "config" is in a's name; "parsed" shares a's stem "parse".
    assert rows["a"][col("cov_name")] > rows["b"][col("cov_name")] == 0.0
    assert rows["a"][col("kind_function")] == 1.0


def test_links_between_candidates_are_the_graph_feature():
    caller = chunk("c", "run", "src/run.ts")
    callee = chunk("d", "step", "src/step.ts")
    caller = type(caller)(**{**caller.__dict__, "references": (SymbolReference("step", "step()", "src/step.ts", "d"),)})
    shape = analyze("run step")
    results = rank(shape, [Candidate(caller, bm25=1.0, lexical_rank=1), Candidate(callee, bm25=0.5, lexical_rank=2)],
                   ratio=0.0, limit=10)
    x = feature_matrix(shape, results, {"c": Candidate(caller), "d": Candidate(callee)})
    assert x[:, col("links_top")].tolist() == [1.0, 1.0]
    assert x[0, col("out_degree")] == pytest.approx(np.log1p(1))


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    """A model trained here to prefer the candidate the primary model finds closest."""
    rng = np.random.default_rng(7)
    rows, labels, groups = [], [], []
    for _ in range(300):
        x = rng.random((8, len(FEATURES))).astype(np.float32)
        y = np.zeros(8, dtype=np.float32)
        y[int(np.argmax(x[:, col("cos_primary")]))] = 1.0
        rows.append(x)
        labels.append(y)
        groups.append(8)
    data = lightgbm.Dataset(np.concatenate(rows), np.concatenate(labels), group=groups, feature_name=list(FEATURES))
    booster = lightgbm.train({"objective": "lambdarank", "verbosity": -1, "num_leaves": 7, "min_data_in_leaf": 5},
                             data, num_boost_round=40)
    path = tmp_path_factory.mktemp("ranker") / "model.txt"
    booster.save_model(str(path))
    scale_path(path).write_text(json.dumps({"a": 1.0, "b": 0.0}))
    return path


def test_the_model_decides_and_says_why(model_file):
    ranker = load_ranker(model_file)
    shape = analyze("how is the config parsed")
    hand_set = rank(shape, candidates(), ratio=0.2, limit=10)
    learned = rank(shape, candidates(), ratio=0.2, limit=10, model=ranker)
    assert hand_set[0].chunk.id == "a"
    # b has the highest primary cosine: the model trained to read it puts b first.
    assert learned[0].chunk.id == "b"
    # Scores are the model's probabilities (Platt-scaled margins), best first.
    scores = [r.score for r in learned]
    assert scores == sorted(scores, reverse=True) and all(0.0 < s < 1.0 for s in scores)
    reasons = [k for k in learned[0].signals if k.startswith(SIGNAL_PREFIX)]
    assert f"{SIGNAL_PREFIX}cos_primary" in reasons
    assert len(rank(shape, candidates(), ratio=0.2, limit=2, model=ranker)) == 2


def test_contributions_add_up_to_the_margin_along_the_path(model_file):
    ranker = load_ranker(model_file)
    rows = np.random.default_rng(3).random((50, len(FEATURES))).astype(np.float32)
    rows[0] = 0.0
    contributions = ranker.explainer.contributions(rows)
    assert contributions.shape == (50, len(FEATURES) + 1)
    np.testing.assert_allclose(contributions.sum(axis=1), ranker.booster.predict(rows, raw_score=True), atol=1e-9)
    # The bias is the trees' root values, the same for every row.
    assert np.ptp(contributions[:, -1]) == 0.0
    # The model was trained to read the primary cosine: that is what moves a row most.
    moved = np.argmax(np.abs(contributions[:, :-1]), axis=1)
    assert np.mean(moved == col("cos_primary")) > 0.9
    # LightGBM reads a missing value as zero in a model without learned missing values; so does the walk.
    missing = np.full((1, len(FEATURES)), np.nan, dtype=np.float32)
    np.testing.assert_array_equal(ranker.explainer.contributions(missing), contributions[:1])


def test_a_model_with_splits_the_walk_cannot_read_is_refused(model_file):
    dump = load_ranker(model_file).booster.dump_model()
    node = dump["tree_info"][0]["tree_structure"]
    node["missing_type"] = "NaN"
    with pytest.raises(ValueError, match="only numerical splits without missing values"):
        PathExplainer(dump)


def test_an_index_is_ranked_by_the_ranker_of_its_primary_model(model_file, tmp_path):
    # models/ranker/<provider>/model.txt: a ranker trained on that model's cosines.
    root = tmp_path / "rankers"
    (root / "code-static").mkdir(parents=True)
    for name in ("model.txt", "model.scale.json"):
        (root / "code-static" / name).write_bytes(scale_path(model_file).read_bytes() if name.endswith(".json")
                                                 else model_file.read_bytes())
    rankers = Rankers(None, root=root)
    own = rankers.for_provider("code-static")
    assert own is not None and own is rankers.for_provider("code-static")
    # Another model without a ranker of its own gets the default (the committed model).
    default = rankers.for_provider("code-small")
    assert default is not own and default is rankers.for_provider("voyage")
    # A provider name is never a path.
    assert rankers.for_provider("../code-static") is default
    # A configured model ranks every index, whatever its model.
    configured = Rankers(model_file, root=root)
    assert configured.for_provider("code-static") is configured.for_provider("code-small") is not None
    assert configured.for_provider("code-static") is not own


def test_the_default_ranker_loads_when_asked_and_a_search_that_comes_first_waits(monkeypatch, caplog):
    release, loaded, calls = threading.Event(), object(), []

    def slow_load(path):
        calls.append(path)
        release.wait(10)
        return loaded

    monkeypatch.setattr(learned, "load_ranker", slow_load)
    rankers = Rankers(None)
    assert calls == []  # nothing loads before the service asks
    loader = threading.Thread(target=rankers.load)
    loader.start()
    got: list[object] = []
    search = threading.Thread(target=lambda: got.append(rankers.for_provider("code-small")))
    search.start()
    search.join(0.2)
    assert search.is_alive() and not got
    release.set()
    search.join(10)
    loader.join(10)
    assert got == [loaded] and calls == [None]  # loaded once

    def failing_load(path):
        raise ImportError("no lightgbm")

    monkeypatch.setattr(learned, "load_ranker", failing_load)
    with caplog.at_level(logging.WARNING):
        assert Rankers(None).for_provider("code-small") is None
    assert "ranking with the hand-set stack" in caplog.text


def test_no_model_file_means_the_hand_set_stack(tmp_path, caplog):
    with caplog.at_level(logging.INFO):
        assert load_ranker(tmp_path / "absent.txt") is None
    assert "ranking with the hand-set stack" in caplog.text


def test_a_model_without_its_score_scale_is_refused(model_file, tmp_path, caplog):
    alone = tmp_path / "model.txt"
    alone.write_bytes(model_file.read_bytes())
    with caplog.at_level(logging.WARNING):
        assert load_ranker(alone) is None
    assert "ranking with the hand-set stack" in caplog.text


def test_a_model_of_other_features_is_refused(tmp_path, caplog):
    data = lightgbm.Dataset(np.random.default_rng(1).random((40, 3)), np.tile([1.0, 0.0, 0.0, 0.0], 10),
                            group=[4] * 10)
    path = tmp_path / "other.txt"
    lightgbm.train({"objective": "lambdarank", "verbosity": -1, "min_data_in_leaf": 2}, data, 5).save_model(str(path))
    with caplog.at_level(logging.WARNING):
        assert load_ranker(path) is None
    assert "features differ" in caplog.text


def test_a_module_chunk_is_a_kind_feature():
    module = chunk("m", "<module top level>", "src/index.ts", kind=NodeKind.MODULE)
    shape = analyze("index")
    results = rank(shape, [Candidate(module, bm25=1.0, lexical_rank=1)], ratio=0.0, limit=5)
    x = feature_matrix(shape, results, {"m": Candidate(module)})
    assert x[0, col("kind_module")] == 1.0 and x[0, col("index_file")] == 1.0


def test_a_file_card_and_its_file_are_features():
    card_text = ("[TypeScript] src/retry/scheduler.ts > <module top level>\n"
                 "Purpose: Schedules retries of failed jobs.\n"
                 "Signature: module src/retry/scheduler.ts\nExports: RetryScheduler, backoff\n\n---\nimport x;")
    card = chunk("card", "<module top level>", "src/retry/scheduler.ts", kind=NodeKind.MODULE, source="import x;")
    card = type(card)(**{**card.__dict__, "embedding_text": card_text})
    member = chunk("fn", "backoff", "src/retry/scheduler.ts", source="function backoff(n) { return 2 ** n }")
    other = chunk("o", "parseJob", "src/jobs/parse.ts", source="function parseJob(text) { retries }")
    cands = [Candidate(member, bm25=3.0, lexical_rank=1), Candidate(other, bm25=2.0, lexical_rank=2),
             Candidate(card, bm25=1.0, lexical_rank=3)]
    shape = analyze("how are failed jobs retried?")
    assert shape.question
    recorder = FeatureRecorder()
    rank(shape, cands, ratio=0.0, limit=10, model=recorder)
    rows = dict(zip(recorder.ids, recorder.rows, strict=True))
    assert rows["card"][col("q_question")] == 1.0
    # "failed" and "jobs" are in the card's purpose; only a card has card words.
    assert rows["card"][col("cov_card")] > 0.0 and rows["o"][col("cov_card")] == 0.0
    # The file holds the member and the card: their summed score, its best rank, its card.
    assert rows["card"][col("file_score_sum")] == pytest.approx(rows["fn"][col("file_score_sum")])
    assert rows["card"][col("file_score_sum")] > rows["o"][col("file_score_sum")]
    assert rows["card"][col("file_best_rank_inv")] == rows["fn"][col("file_best_rank_inv")] == 1.0
    assert rows["fn"][col("file_card_candidate")] == 1.0 and rows["o"][col("file_card_candidate")] == 0.0
