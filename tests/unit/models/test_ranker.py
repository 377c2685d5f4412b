"""The learned ranker's data rules: which repositories train it, the queries made from an index,
the unanswerable questions confidence is fitted with, and its metric."""

from __future__ import annotations

import random

import numpy as np
from models.ranker import workspaces
from models.ranker.calibrate import exact_names, missing_name, reliability
from models.ranker.dump import generated_queries
from models.ranker.train import mrr_by_type

from codecompass.policy.shape import is_code_shaped


def row(name, path, kind="function", start=1, end=10, is_test=False, qualified=None):
    return {"id": f"{path}:{name}", "name": name, "qualified_name": qualified or name, "node_kind": kind,
            "relative_path": path, "start_line": start, "end_line": end, "depth": 0, "is_test": is_test}


def test_train_repositories_are_chosen_by_size_and_pairs(monkeypatch):
    sizes = {"a/small": 3_000, "b/mid": 12_000, "c/big": 90_000, "d/mid2": 20_000, "e/few": 15_000}
    monkeypatch.setattr(workspaces, "repo_lines", lambda checkout: sizes[checkout.name.replace("+", "/")])
    pairs = {repo: [{}] * (10 if repo == "e/few" else 100) for repo in sizes}
    # Too small, too big, too few pairs are out; the rest smallest first.
    assert workspaces.choose(pairs) == [("b/mid", 12_000), ("d/mid2", 20_000)]


def test_pairs_are_capped_per_rule_and_seeded():
    pairs = [{"id": f"commit-{i}", "rule": "commit"} for i in range(100)] + \
            [{"id": f"doc-{i}", "rule": "doc"} for i in range(10)]
    chosen = workspaces.sample_pairs("x/y", pairs)
    assert sum(p["rule"] == "commit" for p in chosen) == workspaces.CAPS["commit"]
    assert sum(p["rule"] == "doc" for p in chosen) == workspaces.CAPS["doc"]
    assert chosen == workspaces.sample_pairs("x/y", list(reversed(pairs)))


def test_identifier_and_path_queries_come_from_library_code_only():
    outline = [
        row("parseConfigFile", "src/config/parse.ts"),
        row("loadPlugins", "src/plugins/load.ts"),
        row("parseConfigFileTest", "test/parse.test.ts", is_test=True),
        row("renderExample", "examples/demo/render.ts"),
        row("<module top level>", "src/config/parse.ts", kind="module"),
    ]
    queries = generated_queries("x/y", outline)
    targets = {t["path"] for q in queries for t in q["targets"]}
    assert targets <= {"src/config/parse.ts", "src/plugins/load.ts"}
    kinds = {q["type"] for q in queries}
    assert kinds == {"identifier", "path"}
    assert any(q["type"] == "path" and q["query"] == "config/parse.ts" for q in queries)


def test_a_missing_name_is_a_real_name_with_one_letter_changed():
    names = ["validateToken", "parseConfigFile", "x"]
    present = frozenset(n.lower() for n in names)
    made = missing_name(random.Random(1), names, present)
    assert made is not None and made.lower() not in present and is_code_shaped(made)
    assert any(len(made) == len(n) and sum(a != b for a, b in zip(made, n, strict=True)) == 1 for n in names)


def test_expected_calibration_error_weighs_buckets_by_their_share():
    pred = np.array([0.95, 0.95, 0.15, 0.15])
    y = np.array([1.0, 1.0, 0.0, 1.0])
    table, ece = reliability(pred, y, np.ones(4))
    assert [r["n"] for r in table] == [2, 2]
    assert ece == round(0.5 * abs(0.95 - 1.0) + 0.5 * abs(0.15 - 0.5), 4)


def test_mrr_reads_the_first_target_within_ten():
    scores = np.array([0.9, 0.8, 0.1, 0.5, 0.4])
    labels = np.array([0.0, 1.0, 0.0, 0.0, 0.0])
    meta = [{"type": "nl"}, {"type": "path"}]
    # Query 1: the target is second; query 2 has no target among its candidates.
    assert mrr_by_type(scores, labels, np.array([3, 2]), meta) == {"all": 0.25, "nl": 0.5, "path": 0.0}


def test_exact_names_are_code_shaped_unique_and_not_tests():
    outline = [row("parseConfigFile", "src/a.ts"), row("loadPlugins", "src/b.ts"), row("loadPlugins", "src/c.ts"),
               row("helperForTests", "test/h.test.ts", is_test=True), row("plain", "src/d.ts")]
    names = [name for name, _ in exact_names(random.Random(3), outline)]
    # loadPlugins is two symbols, helperForTests test code, plain an English word.
    assert names == ["parseConfigFile"]
