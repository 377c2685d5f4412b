"""The learned ranker's data rules: which repositories train it, the queries made from an index,
the unanswerable questions confidence is fitted with, and its metric."""

from __future__ import annotations

import random
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from models.code_small import examples as code_small_examples
from models.code_static import evaluate as code_static_evaluate
from models.ranker import workspaces
from models.ranker.calibrate import exact_names, missing_name, reliability
from models.ranker.dump import ANSWER, IN_ANSWER_FILE, generated_queries, is_answer, label
from models.ranker.train import Split, diversified, scores_by_type

from codecompass.common.chunks import NodeKind
from codecompass.policy.shape import is_code_shaped
from codecompass_dev.evaluation.metrics import Target


def row(name, path, kind="function", start=1, end=10, is_test=False, qualified=None):
    return {"id": f"{path}:{name}", "name": name, "qualified_name": qualified or name, "node_kind": kind,
            "relative_path": path, "start_line": start, "end_line": end, "depth": 0, "is_test": is_test}


def test_train_repositories_are_the_held_out_ones_with_pairs_and_a_checkout(monkeypatch, tmp_path):
    for repo in ("a/one", "b/two", "e/five"):
        (tmp_path / repo.replace("/", "+")).mkdir()
    monkeypatch.setattr(workspaces, "CORPUS_DIR", tmp_path)
    # e/five is one the embedding models learned from; c/three has no checkout, d/four no pair.
    monkeypatch.setattr(workspaces.vocabulary, "held_out", lambda repo: repo != "e/five")
    assert workspaces.choose({"b/two": [{}], "a/one": [{}], "c/three": [{}], "d/four": [], "e/five": [{}]}) \
        == ["a/one", "b/two"]


def test_the_held_out_rule_is_the_embedding_models_own():
    """The ranker learns only from repositories whose pairs no embedding model trained on: the
    same `vocabulary.held_out` that code-small's examples and code-static's validation use."""
    assert workspaces.vocabulary.held_out is code_small_examples.held_out is code_static_evaluate.held_out


def test_pairs_are_capped_per_rule_and_seeded():
    pairs = [{"id": f"commit-{i}", "rule": "commit"} for i in range(workspaces.CAPS["commit"] + 50)] + \
            [{"id": f"doc-{i}", "rule": "doc"} for i in range(workspaces.CAPS["doc"] + 5)]
    chosen = workspaces.sample_pairs("x/y", pairs)
    assert sum(p["rule"] == "commit" for p in chosen) == workspaces.CAPS["commit"]
    assert sum(p["rule"] == "doc" for p in chosen) == workspaces.CAPS["doc"]
    assert chosen == workspaces.sample_pairs("x/y", list(reversed(pairs)))


def test_concept_pairs_are_capped_and_leave_the_other_rules_samples_as_they_were():
    pairs = [{"id": f"{rule}-{i}", "rule": rule} for rule in ("commit", "doc", "jsdoc") for i in range(200)]
    concept = [{"id": f"concept-{i}", "rule": "concept"} for i in range(workspaces.CAPS["concept"] + 20)]
    before = workspaces.sample_pairs("x/y", pairs)
    after = workspaces.sample_pairs("x/y", pairs + concept)
    assert [p for p in after if p["rule"] != "concept"] == before
    assert sum(p["rule"] == "concept" for p in after) == workspaces.CAPS["concept"]


def write_lines(path: Path, lines: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x\n" * lines, encoding="utf-8")


def test_a_sampled_workspace_holds_the_files_a_concept_pair_answers_with(monkeypatch, tmp_path):
    monkeypatch.setattr(workspaces, "CAP_LINES", 100)
    for rel in ("src/a.ts", "src/b.ts", "lib/big.ts", "lib/near.ts", "other/c.ts", "other/d.ts", "other/e.ts"):
        write_lines(tmp_path / rel, 200 if rel == "lib/big.ts" else 30)
    # A files-only concept pair (no symbol target) and a symbol pair.
    pairs = [{"targets": [], "files": [{"path": "lib/big.ts", "start_line": 0, "end_line": 0}]},
             {"targets": [{"path": "src/a.ts", "qualified_name": "a", "start_line": 1, "end_line": 2}]}]
    chosen = workspaces.sample_files(tmp_path, pairs, "x/y")
    # The answers first, whatever their size (big.ts alone is over the cap), then their folders' files while
    # they fit: none do.
    assert chosen[:2] == ["lib/big.ts", "src/a.ts"]
    assert chosen == ["lib/big.ts", "src/a.ts"]
    monkeypatch.setattr(workspaces, "CAP_LINES", 300)
    chosen = workspaces.sample_files(tmp_path, pairs, "x/y")
    assert chosen[:4] == ["lib/big.ts", "src/a.ts", "lib/near.ts", "src/b.ts"]
    assert chosen == workspaces.sample_files(tmp_path, list(reversed(pairs)), "x/y")


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


def test_a_workspace_is_rebuilt_when_its_sample_changes_and_only_then(tmp_path):
    checkout, into = tmp_path / "checkout", tmp_path / "ws"
    for rel in ("src/a.ts", "src/b.ts", "lib/c.ts"):
        write_lines(checkout / rel, 3)
    pairs = [{"targets": [], "blank": []}]
    assert workspaces.build_workspace(checkout, pairs, ["src/a.ts"], into)
    assert sorted(p.name for p in into.rglob("*.ts")) == ["a.ts"]
    assert not workspaces.build_workspace(checkout, pairs, ["src/a.ts"], into)
    # A concept pair's answer joins the sample: the old workspace lacks it, so it is written again.
    assert workspaces.build_workspace(checkout, pairs, ["lib/c.ts", "src/a.ts"], into)
    assert sorted(p.name for p in into.rglob("*.ts")) == ["a.ts", "c.ts"]


def test_a_path_query_is_answered_by_the_files_top_level_symbols_and_its_card():
    outline = [row("parseConfigFile", "src/config/parse.ts", start=3, end=20),
               row("<module top level>", "src/config/parse.ts", kind="module", start=2, end=24)]
    (path,) = [q for q in generated_queries("x/y", outline) if q["type"] == "path"]
    assert [(t["qualified_name"], t["start_line"], t["end_line"]) for t in path["targets"]] == [
        ("parseConfigFile", 3, 20), ("<module top level>", 2, 24)]  # fmt: skip


def chunk(path: str, name: str, kind: NodeKind, start: int, end: int) -> SimpleNamespace:
    return SimpleNamespace(relative_path=path, qualified_name=name, node_kind=kind, start_line=start, end_line=end)


def test_labels_grade_symbol_targets_and_cards_above_the_rest_of_an_answer_file():
    targets = (Target("lib/a.js", "Pool.drain", 10, 20),)
    files = {"lib/b.js"}
    assert label(chunk("lib/a.js", "Pool.drain", NodeKind.METHOD, 10, 20), targets, files) == ANSWER
    assert label(chunk("lib/a.js", "drain", NodeKind.METHOD, 10, 20), targets, files) == ANSWER  # the target's lines
    assert label(chunk("lib/b.js", "<module top level>", NodeKind.MODULE, 1, 80), targets, files) == ANSWER
    # Another chunk of a file target: on the way to the file a concept question asks for.
    assert label(chunk("lib/b.js", "helper", NodeKind.FUNCTION, 3, 9), targets, files) == IN_ANSWER_FILE
    assert is_answer(chunk("lib/b.js", "helper", NodeKind.FUNCTION, 3, 9), targets, files)
    # Not the card of a file that is no target (a symbol target's file is no file target), nor another symbol.
    assert label(chunk("lib/a.js", "<module top level>", NodeKind.MODULE, 1, 90), targets, files) == 0.0
    assert not is_answer(chunk("lib/a.js", "Pool.fill", NodeKind.METHOD, 22, 30), targets, files)
    # A files-only concept query: its cards are its best answers.
    assert label(chunk("lib/b.js", "<module top level>", NodeKind.MODULE, 1, 80), (), files) == ANSWER


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


def split_of(scores_rows, labels, groups, meta, files, spans):
    return Split(np.zeros((len(labels), 1)), np.array(labels), np.array(groups), meta, np.array(files),
                 np.array(spans).reshape(-1, 2))


def test_mrr_and_file_ndcg_read_the_first_ten():
    scores = np.array([0.9, 0.8, 0.1, 0.5, 0.4])
    meta = [{"type": "nl", "paths": ["a.ts", "b.ts"], "file_targets": [["b.ts", 5, 9]]},
            {"type": "concept", "paths": ["c.ts"], "file_targets": [["d.ts", 0, 0]]}]
    # Query 1: the target is second (b.ts, lines 5-9); query 2 has no target among its candidates.
    split = split_of(scores, [0.0, 1.0, 0.0, 0.0, 0.0], [3, 2], meta, [0, 1, 0, 0, 0],
                     [(1, 3), (5, 9), (4, 4), (1, 2), (3, 4)])
    table = scores_by_type(diversified(scores, split, 1.0), split)
    assert table["all"]["mrr10"] == 0.25 and table["nl"]["mrr10"] == 0.5 and table["concept"]["mrr10"] == 0.0
    assert table["nl"]["file_ndcg10"] == pytest.approx(1 / np.log2(3), abs=1e-4)


def test_file_diversity_replays_the_services_decay():
    # a.ts three times ahead of b.ts: at 0.5 the b.ts row (0.5) passes a.ts's second (0.8 x 0.5).
    scores = np.array([0.9, 0.8, 0.7, 0.5])
    split = split_of(scores, [0.0, 0.0, 0.0, 1.0], [4], [{"type": "concept", "paths": ["a.ts", "b.ts"],
                                                          "file_targets": [["b.ts", 0, 0]]}],
                     [0, 0, 0, 1], [(1, 1)] * 4)
    assert diversified(scores, split, 1.0)[0].tolist() == [0, 1, 2, 3]
    assert diversified(scores, split, 0.5)[0].tolist() == [0, 3, 1, 2]


def test_exact_names_are_code_shaped_unique_and_not_tests():
    outline = [row("parseConfigFile", "src/a.ts"), row("loadPlugins", "src/b.ts"), row("loadPlugins", "src/c.ts"),
               row("helperForTests", "test/h.test.ts", is_test=True), row("plain", "src/d.ts")]
    names = [name for name, _ in exact_names(random.Random(3), outline)]
    # loadPlugins is two symbols, helperForTests test code, plain an English word.
    assert names == ["parseConfigFile"]
