"""Fits the search's confidence model (`policy.confidence.confidence`) on the dev split.

Confidence is P(a right answer is among the first ten results), judged from absolute
evidence (`policy.confidence.confidence_features`). Positives and negatives come from the dev queries:
each query asked of its own repository (label: a target is in the first ten), and the same
query asked of another dev repository, where it has no answer (label 0) — the honest shape of
"a question about code that is not there". Agents mostly ask about the code in front of them,
so the unanswerable examples are weighted to be `UNANSWERABLE_SHARE` of all queries rather than
half (the weight is the prior; the features decide the rest). A logistic regression with a small L2 penalty is
fitted by Newton's method (numpy only) and the weights are printed as the `Calibration` to
paste into ranking.py. The reliability table (predicted vs observed by bucket) shows whether
the probabilities mean what they say; the test split's is in the quality run.

Run (after `make bench-quality`):
  .venv/bin/python -m bench.quality.calibrate --state-dir bench/.work/quality-state
"""

from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np

from bench.lib.results import write_results
from bench.quality.run_quality import DEFAULT_QUERIES, load_queries, target_hit, workspace_for
from bench.quality.tune_ranking import open_store
from codecompass.common.config import RetrievalSettings
from codecompass.embedding.minilm import MiniLMProvider
from codecompass.policy.confidence import CONFIDENCE_FEATURES, Calibration, confidence
from codecompass.retrieval.filters import Filters
from codecompass.retrieval.hybrid import hybrid_search

L2 = 1.0
# Assumed share of queries that have no answer in the workspace: agents ask about the code in
# front of them. Chosen on the dev split with the gate: at 0.2 and 0.1 the gate emptied 14% and 8%
# of the answers to real questions; at 0.05, 1-2%, while queries with no answer stay empty.
UNANSWERABLE_SHARE = 0.05


def fit(x: np.ndarray, y: np.ndarray, sample_weight: np.ndarray, l2: float = L2, steps: int = 50) -> np.ndarray:
    """Weighted logistic regression (bias last) by Newton's method; the bias is not penalised."""
    xb = np.hstack([x, np.ones((len(x), 1))])
    sw = sample_weight
    w = np.zeros(xb.shape[1])
    penalty = np.full(xb.shape[1], l2)
    penalty[-1] = 0.0
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ w, -40, 40)))
        grad = xb.T @ (sw * (p - y)) + penalty * w
        hess = (xb * (sw * p * (1 - p))[:, None]).T @ xb + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-8:
            break
    return w


def reliability(pred: np.ndarray, y: np.ndarray, sw: np.ndarray, edges=(0.0, 0.2, 0.4, 0.5, 0.6, 0.8, 1.0001)) -> list[dict]:
    rows = []
    for lo, hi in itertools.pairwise(edges):
        mask = (pred >= lo) & (pred < hi)
        if mask.any():
            rows.append({"bucket": f"{lo:.1f}-{min(hi, 1.0):.1f}", "n": int(mask.sum()),
                         "predicted": round(float(np.average(pred[mask], weights=sw[mask])), 3),
                         "observed": round(float(np.average(y[mask], weights=sw[mask])), 3)})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--state-dir", type=Path, required=True)
    parser.add_argument("--queries", type=Path, default=DEFAULT_QUERIES)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)

    queries = [qy for qy in load_queries(args.queries) if qy.split == "dev"]
    repos = sorted({qy.repo for qy in queries})
    settings = RetrievalSettings()
    model = MiniLMProvider()
    model.warmup()
    vectors = dict(zip((qy.id for qy in queries), model.embed([qy.query for qy in queries], "query"), strict=True))
    stores = {repo: open_store(args.state_dir, workspace_for(repo)) for repo in repos}

    names: list[str] | None = None
    rows: list[list[float]] = []
    evidence: list[dict[str, float]] = []
    labels: list[float] = []
    kinds: list[str] = []
    for qy in queries:
        other = repos[(repos.index(qy.repo) + 1) % len(repos)]
        for repo, own in ((qy.repo, True), (other, False)):
            outcome = hybrid_search(
                stores[repo], qy.query, query_vector=vectors[qy.id], filters=Filters(), limit=10,
                semantic_ratio=settings.semantic_ratio, candidate_pool=settings.candidate_pool,
            )
            features = outcome.confidence_features
            names = names or list(CONFIDENCE_FEATURES)
            rows.append([features[n] for n in names])
            evidence.append(features)
            hit = own and any(target_hit(r.chunk, qy.targets) is not None for r in outcome.results)
            labels.append(1.0 if hit else 0.0)
            kinds.append(f"{qy.type}/{'own' if own else 'other'}")
    assert names is not None
    x, y = np.array(rows), np.array(labels)
    own = np.array([k.endswith("/own") for k in kinds])
    # Own and other examples are equally many: weight other ones to the assumed share.
    sw = np.where(own, 1.0, UNANSWERABLE_SHARE / (1.0 - UNANSWERABLE_SHARE))
    w = fit(x, y, sw)
    calibration = Calibration(bias=round(float(w[-1]), 3),
                              weights=tuple((n, round(float(v), 3)) for n, v in zip(names, w[:-1], strict=True)))
    pred = np.array([confidence(features, calibration) for features in evidence])
    table = reliability(pred, y, sw)
    by_kind = {}
    for kind in sorted(set(kinds)):
        mask = np.array([k == kind for k in kinds])
        by_kind[kind] = {"n": int(mask.sum()), "mean_confidence": round(float(pred[mask].mean()), 3),
                         "answered": round(float(y[mask].mean()), 3),
                         "above_0.5": round(float((pred[mask] >= 0.5).mean()), 3)}
    print(f"{len(queries)} dev queries, {len(rows)} examples, {int(y.sum())} positive\n")
    print(f"DEFAULT_CALIBRATION = {calibration!r}\n")
    print("| Predicted | n | mean predicted | observed |\n|---|---|---|---|")
    for row in table:
        print(f"| {row['bucket']} | {row['n']} | {row['predicted']:.3f} | {row['observed']:.3f} |")
    print("\n| Queries | n | mean confidence | answer in top 10 | confidence >= 0.5 |\n|---|---|---|---|---|")
    for kind, row in by_kind.items():
        print(f"| {kind} | {row['n']} | {row['mean_confidence']:.3f} | {row['answered']:.3f} | {row['above_0.5']:.3f} |")
    if not args.no_write:
        path = write_results("calibration", {
            "split": "dev", "examples": len(rows), "positives": int(y.sum()), "l2": L2,
            "unanswerable_share": UNANSWERABLE_SHARE,
            "calibration": {"bias": calibration.bias, "weights": dict(calibration.weights)},
            "reliability": table, "by_kind": by_kind,
        })
        print(f"\nwrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
