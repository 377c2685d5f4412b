"""Fit the search's two calibrated models (`policy.confidence`) on the ranker's train repositories
(the held-out ones no embedding model learned from: `workspaces.py` says why) and report their
calibration on the benchmark's test split.

Both are judged from the same absolute evidence (`policy.confidence.confidence_features`) of the
first stage as the product runs it (the learned ranker when its model is there):
- confidence, P(the first result is a right answer): wrong answers are the negatives that matter,
  a question whose first result is not its answer is one an agent is misled by, whether the
  answer is further down or nowhere;
- answerability, P(a right answer is among the first ANSWERABLE_DEPTH results): whether the
  question has an answer here at all, which decides how much of the ranking an answer gives.
Examples:

- answerable: each query asked of its own repository (label: its first result is a target; else
  the example is a wrong answer), and exact names (`exact_name`: a code-shaped name one symbol of
  the index has, as an agent types it);
- unanswerable (label 0), the shapes a question with no answer takes: the query asked of another
  repository (`wrong_repository`), an exact code name that no chunk has (`missing_name`: a real
  name of the index with one letter changed), and text about nothing in any repository
  (`nonsense`: NONSENSE below, none of them the benchmark's own list).

Agents mostly ask about the code in front of them, so the unanswerable examples together weigh
UNANSWERABLE_SHARE of all examples (the prior; the features decide the rest). A logistic
regression with a small L2 penalty is fitted per model by Newton's method (numpy only); the
weights go into `policy/confidence.py` (DEFAULT_CALIBRATION, DEFAULT_ANSWERABILITY). The test
split is only measured: a reliability table (predicted vs observed per bucket) and the expected
calibration error, at the same prior.

Writes bench/results/calibration-<UTC>.json (and -latest).

Run (after models.ranker.train): .venv/bin/python -m models.ranker.calibrate
(`--reuse` refits on the last run's saved searches.)
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from codecompass.common.config import GatewaySettings, RetrievalSettings
from codecompass.contracts.retrieval.filters import Filters
from codecompass.policy import shape as q
from codecompass.policy.confidence import ANSWERABLE_DEPTH, CONFIDENCE_FEATURES, Calibration, confidence
from codecompass.policy.learned import load_ranker
from codecompass.retrieval.search.hybrid import hybrid_search
from codecompass_dev.evaluation.metrics import Target
from codecompass_dev.evaluation.results import write_results
from codecompass_dev.evaluation.store import open_store, query_embedder, static_embedder
from models.ranker.dump import (
    QUALITY_STATE,
    _targets,
    by_repository,
    generated_queries,
    is_answer,
    quality_queries,
    train_queries,
)
from models.ranker.workspaces import RANKER_DIR, SEED, STATE_DIR

L2 = 1.0
# Assumed share of questions with no answer in the workspace: agents ask about the code in front
# of them. The weight is the prior of every probability the model gives.
UNANSWERABLE_SHARE = 0.1
# Examples per split: enough for six weights, cheap enough to rerun (each is one search).
MAX_OWN = 1500
MISSING_PER_REPO = 5
EXACT_PER_REPO = 5
NONSENSE_PER_REPO = 8
NONSENSE = (
    "knitting patterns for winter scarves", "the capital city of mongolia", "best time to plant tulip bulbs",
    "how do whales sleep underwater", "medieval castle architecture styles", "recipe for lemon meringue pie",
    "qpzm wvtx lkjh", "ZorblaxQuantumFrobnicator", "mxyzptlk_ultra_handler", "history of the roman aqueducts",
    "why is the sky blue at noon", "saxophone fingering chart for beginners", "§§§ ¶¶ †††",
    "tax deductions for home offices", "migratory routes of monarch butterflies", "xkcd 1234 punchline",
)
ANSWERABLE = ("answerable", "exact_name")
BUCKETS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0001)


@dataclass(frozen=True)
class Model:
    """One calibrated model: its name, the constant it goes into, and its label: a right result
    within the first `depth`."""

    name: str
    constant: str
    depth: int


MODELS = (Model("confidence", "DEFAULT_CALIBRATION", 1),
          Model("answerability", "DEFAULT_ANSWERABILITY", ANSWERABLE_DEPTH))


@dataclass
class Examples:
    rows: list[dict[str, float]]
    kinds: list[str]
    # Rank of the first right result (1-based) among the results the gateway asks for; 0: none.
    ranks: list[int]

    def labels(self, depth: int) -> np.ndarray:
        return np.array([1.0 if 0 < rank <= depth else 0.0 for rank in self.ranks])

    def matrix(self, depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        x = np.array([[r[n] for n in CONFIDENCE_FEATURES] for r in self.rows])
        y = self.labels(depth)
        own = np.array([k in ANSWERABLE for k in self.kinds])
        share = UNANSWERABLE_SHARE / (1.0 - UNANSWERABLE_SHARE)
        sw = np.where(own, 1.0, share * own.sum() / max((~own).sum(), 1))
        return x, y, sw


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


def reliability(pred: np.ndarray, y: np.ndarray, sw: np.ndarray) -> tuple[list[dict], float]:
    """Predicted vs observed per bucket, and the expected calibration error (weighted)."""
    rows, error = [], 0.0
    total = float(sw.sum())
    for lo, hi in itertools.pairwise(BUCKETS):
        mask = (pred >= lo) & (pred < hi)
        if mask.any():
            predicted = float(np.average(pred[mask], weights=sw[mask]))
            observed = float(np.average(y[mask], weights=sw[mask]))
            error += float(sw[mask].sum()) / total * abs(predicted - observed)
            rows.append({"bucket": f"{lo:.1f}-{min(hi, 1.0):.1f}", "n": int(mask.sum()),
                         "predicted": round(predicted, 3), "observed": round(observed, 3)})
    return rows, round(error, 4)


def missing_name(rng: random.Random, names: list[str], present: frozenset[str]) -> str | None:
    """A code-shaped name of the index with one letter changed, that no chunk has."""
    shaped = [n for n in names if q.is_code_shaped(n) and len(n) >= 6]
    for _ in range(50):
        if not shaped:
            return None
        name = rng.choice(shaped)
        i = rng.randrange(1, len(name) - 1)
        if not name[i].isalpha():
            continue
        letter = rng.choice("bcdfghklmnprstvwz")
        mutated = name[:i] + (letter.upper() if name[i].isupper() else letter) + name[i + 1:]
        if mutated.lower() not in present:
            return mutated
    return None


def exact_names(rng: random.Random, outline: list[dict]) -> list[tuple[str, Target]]:
    """EXACT_PER_REPO code-shaped names that exactly one non-test symbol of the index has."""
    counts: dict[str, int] = {}
    for row in outline:
        counts[row["name"].lower()] = counts.get(row["name"].lower(), 0) + 1
    pool = sorted((r["name"], Target(r["relative_path"], r["qualified_name"], r["start_line"], r["end_line"]))
                  for r in outline if r["node_kind"] != "module" and not r["is_test"] and q.is_code_shaped(r["name"])
                  and counts[r["name"].lower()] == 1)
    return rng.sample(pool, min(EXACT_PER_REPO, len(pool)))


def collect(split: str, state_dir: Path, workspaces: dict[str, Path], queries: list[dict], generate: bool) -> Examples:
    stores = {repo: open_store(state_dir, path) for repo, path in workspaces.items()}
    if generate:
        for repo, store in stores.items():
            queries += generated_queries(repo, store.outline())
    rng = random.Random(f"{SEED}:calibration:{split}")
    if len(queries) > MAX_OWN:
        queries = rng.sample(queries, MAX_OWN)
    repos = sorted(stores)
    # (repo, text, kind, targets): targets are (symbol targets, file-target paths), () for no answer.
    asks: list[tuple[str, str, str, tuple]] = []
    for query in queries:
        files = frozenset(f["path"] for f in query.get("files", []))
        asks.append((query["repo"], query["query"], "answerable", (_targets(query["targets"]), files)))
        other = repos[(repos.index(query["repo"]) + 1) % len(repos)]
        asks.append((other, query["query"], "wrong_repository", ()))
    for repo in repos:
        for name, target in exact_names(rng, stores[repo].outline()):
            asks.append((repo, name, "exact_name", ((target,), frozenset())))
        names, _ = stores[repo].names()
        present = frozenset(n.lower() for n in names)
        ordered = sorted(names)
        for _ in range(MISSING_PER_REPO):
            if (name := missing_name(rng, ordered, present)) is not None:
                asks.append((repo, name, "missing_name", ()))
        for text in rng.sample(NONSENSE, NONSENSE_PER_REPO):
            asks.append((repo, text, "nonsense", ()))
    first = next(iter(stores.values()))
    embedder = query_embedder(first.model)
    static = static_embedder(first.static)
    texts = sorted({text for _, text, _, _ in asks})
    vectors = dict(zip(texts, embedder.embed(texts, "query"), strict=True))
    static_vectors = dict(zip(texts, static.embed(texts, "query"), strict=True))
    t0 = time.perf_counter()
    items = [(repo, (repo, text, kind, targets, vectors[text], static_vectors[text]))
             for repo, text, kind, targets in asks]
    parts, _ = by_repository(_judge_part, state_dir, workspaces, items)
    out = Examples([r for p in parts for r in p.rows], [k for p in parts for k in p.kinds],
                   [r for p in parts for r in p.ranks])
    print(f"{split}: {len(asks)} searches in {time.perf_counter() - t0:.0f} s", file=sys.stderr)
    return out


def _judge_part(state_dir: Path, workspaces: dict[str, Path], items: list[tuple]) -> Examples:
    """One worker's searches: each one's confidence features and where its first right result is."""
    settings = RetrievalSettings()
    # The pools the gateway's searches rank (see dump.py).
    depth = GatewaySettings().candidates
    ranker = load_ranker() if settings.learned_ranking else None
    stores = {repo: open_store(state_dir, path) for repo, path in workspaces.items()}
    out = Examples([], [], [])
    for repo, text, kind, targets, vector, static_vector in items:
        store = stores[repo]
        outcome = hybrid_search(store, text, query_vector=vector, filters=Filters(), limit=depth,
                                semantic_ratio=settings.semantic_ratio, candidate_pool=settings.candidate_pool,
                                static_query_vector=static_vector, model=ranker)
        # Judged by the ranker's own label rule.
        rank = next((i for i, r in enumerate(outcome.results, start=1) if is_answer(r.chunk, *targets)), 0) \
            if targets else 0
        out.rows.append(outcome.confidence_features)
        out.kinds.append(kind)
        out.ranks.append(rank)
    return out


def cached(split: str, reuse: bool, make) -> Examples:
    """The split's examples: searched now (and saved), or, with `reuse`, the last saved ones, so a
    refit of the models costs no searches."""
    path = RANKER_DIR / f"calibration-{split}.json"
    if reuse and path.exists():
        saved = json.loads(path.read_text())
        return Examples(saved["rows"], saved["kinds"], saved["ranks"])
    examples = make()
    path.write_text(json.dumps(dataclasses.asdict(examples)))
    return examples


def by_kind(examples: Examples, pred: np.ndarray, labels: np.ndarray) -> dict[str, dict]:
    out = {}
    for kind in sorted(set(examples.kinds)):
        mask = np.array([k == kind for k in examples.kinds])
        out[kind] = {"n": int(mask.sum()), "mean_predicted": round(float(pred[mask].mean()), 3),
                     "observed": round(float(labels[mask].mean()), 3),
                     "below_0.5": round(float((pred[mask] < 0.5).mean()), 3)}
        if kind in ANSWERABLE:
            # Right and wrong apart: a wrong one below 0.5 is the point of the model.
            for name, outcome in (("right", 1.0), ("wrong", 0.0)):
                chosen = mask & (labels == outcome)
                if chosen.any():
                    out[kind][f"{name}_n"] = int(chosen.sum())
                    out[kind][f"{name}_below_0.5"] = round(float((pred[chosen] < 0.5).mean()), 3)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quality-state", type=Path, default=QUALITY_STATE)
    parser.add_argument("--no-write", action="store_true")
    parser.add_argument("--reuse", action="store_true", help="refit on the last run's saved examples")
    args = parser.parse_args(argv)
    workspaces, queries = train_queries()
    train = cached("train", args.reuse, lambda: collect("train", STATE_DIR, workspaces, queries, generate=True))
    test_workspaces, test_queries = quality_queries("test")
    test = cached("test", args.reuse,
                  lambda: collect("test", args.quality_state, test_workspaces, test_queries, generate=False))
    report: dict = {"unanswerable_share": UNANSWERABLE_SHARE, "l2": L2}
    for model in MODELS:
        x, y, sw = train.matrix(model.depth)
        w = fit(x, y, sw)
        calibration = Calibration(bias=round(float(w[-1]), 3), weights=tuple(
            (n, round(float(v), 3)) for n, v in zip(CONFIDENCE_FEATURES, w[:-1], strict=True)))
        entry: dict = {"depth": model.depth, "calibration": {"bias": calibration.bias,
                                                             "weights": dict(calibration.weights)}}
        print(f"{model.constant} = {calibration!r}\n")
        for split, examples in (("train", train), ("test", test)):
            _, ys, sws = examples.matrix(model.depth)
            pred = np.array([confidence(row, calibration) for row in examples.rows])
            table, ece = reliability(pred, ys, sws)
            entry[split] = {"examples": len(ys), "positives": int(ys.sum()), "reliability": table,
                            "expected_calibration_error": ece, "by_kind": by_kind(examples, pred, ys)}
            print(f"{model.name}, {split}: {len(ys)} examples, ECE {ece:.4f}")
            print("| Predicted | n | mean predicted | observed |\n|---|---|---|---|")
            for row in table:
                print(f"| {row['bucket']} | {row['n']} | {row['predicted']:.3f} | {row['observed']:.3f} |")
            for kind, row in entry[split]["by_kind"].items():
                print(f"  {kind}: {row}")
        report[model.name] = entry
    if not args.no_write:
        print(f"wrote {write_results('calibration', report)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
