"""Train the learned ranker: LightGBM LambdaRank on the train repositories' candidates,
early-stopped on the benchmark's dev split, reported on its test split.

Reads models/.work/ranker/{train,dev,test}.npz (`dump.py`); writes the model as text
(models/ranker/model.txt, what the retrieval service loads) and models/ranker/training.json:
the parameters, the data, the stopping round, MRR@10 per query type of the hand-set stack and
the model on dev and test, and the features by gain. The hand-set stack's order is a feature
column (`handset_rank_inv`), so both are scored on exactly the same candidate pools.

Run: .venv/bin/python -m models.ranker.train
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import lightgbm
import numpy as np

from codecompass.policy.learned import EXPLAINED, FEATURES, scale_path
from models.ranker.calibrate import fit
from models.ranker.workspaces import RANKER_DIR

HERE = Path(__file__).resolve().parent
MODEL_PATH = HERE / "model.txt"
REPORT_PATH = HERE / "training.json"
PARAMS = {
    "objective": "lambdarank",
    "metric": "ndcg",
    "eval_at": [10],
    # Only the head of the list is read: pairs below 20 matter little.
    "lambdarank_truncation_level": 20,
    # Chosen on dev from a grid of 48 (leaves 7-63, rate 0.02/0.05, min leaf 20-100, feature
    # share 0.5/0.8): dev MRR@10 0.623-0.648; the best is here, the next within 0.001.
    "learning_rate": 0.02,
    "num_leaves": 31,
    "min_data_in_leaf": 100,
    "feature_fraction": 0.5,
    "bagging_fraction": 0.8,
    "bagging_freq": 1,
    "lambda_l2": 1.0,
    "num_threads": 2,
    "seed": 20261126,
    "deterministic": True,
    "force_row_wise": True,
    "verbosity": -1,
}
MAX_ROUNDS = 1500
EARLY_STOP = 100


def load(split: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict]]:
    data = np.load(RANKER_DIR / f"{split}.npz")
    meta = json.loads((RANKER_DIR / f"{split}.json").read_text(encoding="utf-8"))
    if tuple(meta["features"]) != FEATURES:
        raise SystemExit(f"{split}.npz was dumped with other features: rerun models.ranker.dump")
    return data["x"], data["y"], data["groups"], meta["queries"]


def mrr_by_type(scores: np.ndarray, y: np.ndarray, groups: np.ndarray, meta: list[dict]) -> dict[str, float]:
    """MRR@10 per query type (and "all"): the first target's reciprocal rank within the first ten."""
    by_type: dict[str, list[float]] = defaultdict(list)
    start = 0
    for size, query in zip(groups, meta, strict=True):
        s, labels = scores[start:start + size], y[start:start + size]
        start += size
        order = np.argsort(-s, kind="stable")[:10]
        hits = np.flatnonzero(labels[order] > 0)
        rr = 1.0 / (hits[0] + 1) if len(hits) else 0.0
        by_type[query["type"]].append(rr)
        by_type["all"].append(rr)
    return {t: round(float(np.mean(v)), 4) for t, v in sorted(by_type.items())}


def scoring_ms(model_path: Path, rows: np.ndarray, repeats: int = 200) -> dict[str, float]:
    """Median time, on one thread, to score 100 candidates and explain the first EXPLAINED (what
    the service does per search), with the saved model as the service loads it."""
    booster = lightgbm.Booster(model_file=str(model_path))
    batch = rows[:100]
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        booster.predict(batch, num_threads=1)
        booster.predict(batch[:EXPLAINED], pred_contrib=True, num_threads=1)
        times.append((time.perf_counter() - t0) * 1000)
    return {"median": round(float(np.median(times)), 3), "p95": round(float(np.percentile(times, 95)), 3)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=MODEL_PATH, help="the model file (default: the committed one)")
    args = parser.parse_args(argv)
    x_train, y_train, g_train, m_train = load("train")
    x_dev, y_dev, g_dev, m_dev = load("dev")
    x_test, y_test, g_test, m_test = load("test")
    train = lightgbm.Dataset(x_train, y_train, group=g_train, feature_name=list(FEATURES), free_raw_data=False)
    dev = lightgbm.Dataset(x_dev, y_dev, group=g_dev, reference=train, free_raw_data=False)
    t0 = time.perf_counter()
    booster = lightgbm.train(PARAMS, train, num_boost_round=MAX_ROUNDS, valid_sets=[dev], valid_names=["dev"],
                             callbacks=[lightgbm.early_stopping(EARLY_STOP, verbose=False)])
    seconds = time.perf_counter() - t0
    handset = FEATURES.index("handset_rank_inv")
    report = {
        "params": PARAMS, "max_rounds": MAX_ROUNDS, "early_stopping_rounds": EARLY_STOP,
        "best_iteration": booster.best_iteration, "train_seconds": round(seconds, 1),
        "data": {split: {"queries": len(m), "rows": len(y), "queries_with_target_in_pool": sum(1 for q in m if q["found"]),
                         "repositories": len({q["repo"] for q in m})}
                 for split, m, y in (("train", m_train, y_train), ("dev", m_dev, y_dev), ("test", m_test, y_test))},
        "mrr10": {},
    }
    for split, x, y, g, m in (("dev", x_dev, y_dev, g_dev, m_dev), ("test", x_test, y_test, g_test, m_test)):
        report["mrr10"][split] = {
            "hand-set": mrr_by_type(x[:, handset], y, g, m),
            "learned": mrr_by_type(booster.predict(x, num_iteration=booster.best_iteration), y, g, m),
        }
    gain = booster.feature_importance("gain", iteration=booster.best_iteration)
    report["features_by_gain"] = {FEATURES[i]: round(float(gain[i]), 1) for i in np.argsort(-gain) if gain[i] > 0}
    booster.save_model(str(args.out), num_iteration=booster.best_iteration)
    # Scores as probabilities: P(a candidate is an answer | its margin), fitted on the train rows.
    a, b = fit(booster.predict(x_train, num_iteration=booster.best_iteration)[:, None], y_train,
               np.ones(len(y_train)), l2=0.0)
    report["score_scale"] = {"a": round(float(a), 5), "b": round(float(b), 5)}
    scale_path(args.out).write_text(json.dumps(report["score_scale"]) + "\n", encoding="utf-8")
    report["score_ms_per_100_candidates"] = scoring_ms(args.out, x_dev)
    REPORT_PATH.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    for split, rows in report["mrr10"].items():
        for name, values in rows.items():
            print(f"{split:<5} {name:<9} " + " ".join(f"{t} {v:.3f}" for t, v in values.items()), file=sys.stderr)
    print(f"best iteration {booster.best_iteration}, {seconds:.0f} s -> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
