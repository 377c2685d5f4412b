"""The query file's format: symbol targets, a concept query's file targets, and their round trip."""

from __future__ import annotations

import json
import math
import random
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from types import SimpleNamespace

import pytest
from bench.quality import build_queries, run_pipeline, run_quality
from bench.quality.build_queries import Query, sample_by_rule, write

from codecompass_dev.corpus.assemble import QualityRepo
from codecompass_dev.evaluation.metrics import FileTarget, Target
from codecompass_dev.evaluation.query_set import load_queries, parse_query
from codecompass_dev.queries.symbol_queries import Candidate, path_queries

QUERIES = Path(build_queries.__file__).with_name("queries.jsonl")


def symbol_query() -> Query:
    return Query("nl-pino-0001", "nl", "pino", "test", "flush the stream on exit",
                 [Target("lib/tools.js", "flush", 10, 20)], source={"commit": "abc"}, leaks_name=True)  # fmt: skip


def concept_query() -> Query:
    return Query(
        "concept-pino-0001", "concept", "pino", "test", "Child loggers share the parent's stream.",
        [Target("lib/proto.js", "child", 85, 178)], [FileTarget("lib/proto.js"), FileTarget("pino.js")],
        {"kind": "docs-api"}, False,
    )  # fmt: skip


def test_lines_round_trip_and_only_concept_lines_carry_files(tmp_path: Path) -> None:
    path = tmp_path / "queries.jsonl"
    write([symbol_query(), concept_query()], path)
    old, new = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines())
    # A symbol type's line is what it always was: no `files` key.
    assert list(old) == ["id", "type", "repo", "split", "query", "targets", "source", "leaks_name"]
    assert new["files"] == [{"path": "lib/proto.js", "start_line": 0, "end_line": 0},
                            {"path": "pino.js", "start_line": 0, "end_line": 0}]  # fmt: skip
    first, second = load_queries(path)
    assert first.files == () and first.targets[0].qualified_name == "flush"
    assert second.files == (FileTarget("lib/proto.js"), FileTarget("pino.js"))
    # File level scores the files and each symbol target's file with the symbol's lines.
    assert second.file_targets == (
        FileTarget("lib/proto.js"),
        FileTarget("pino.js"),
        FileTarget("lib/proto.js", 85, 178),
    )
    assert first.file_targets == (FileTarget("lib/tools.js", 10, 20),)


def test_a_concept_query_may_have_files_only_and_symbol_tools_leave_it_out(tmp_path: Path) -> None:
    files_only = {**asdict(concept_query()), "targets": []}
    path = tmp_path / "queries.jsonl"
    path.write_text(json.dumps(files_only) + "\n", encoding="utf-8")
    assert [q.id for q in load_queries(path)] == ["concept-pino-0001"]
    assert load_queries(path, symbol_level=True) == []
    path.write_text(json.dumps({**files_only, "files": []}) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="has no targets"):
        load_queries(path)


def test_an_old_line_without_files_parses_as_before() -> None:
    raw = {"id": "q", "type": "jsdoc", "query": "x", "targets": [{"path": "a.ts", "qualified_name": "a"}]}
    query = parse_query(raw)
    assert (query.repo, query.split, query.files, query.targets[0].start_line) == (None, "dev", (), 0)


def candidates(rule: str, n: int) -> list[Candidate]:
    return [Candidate(f"{rule} {i}", [], {"kind": rule}, False, [FileTarget(f"{rule}{i}.js")]) for i in range(n)]


def test_the_concept_quota_is_drawn_round_robin_over_the_rules_and_is_seeded() -> None:
    pool = candidates("docs-api", 5) + candidates("package", 1) + candidates("commit-body", 3)
    chosen = sample_by_rule(pool, 6, random.Random("7:pino"))
    # Rules in name order at each depth: commit-body, docs-api, package; the quota ends mid-round.
    assert Counter(c.source["kind"] for c in chosen) == {"commit-body": 3, "docs-api": 2, "package": 1}
    assert chosen == sample_by_rule(list(reversed(pool)), 6, random.Random("7:pino"))
    assert len(sample_by_rule(pool, 50, random.Random(1))) == 9


def test_mined_concept_queries_are_checked_against_the_pinned_sources(tmp_path: Path, monkeypatch) -> None:
    mined = tmp_path / "concept_queries.jsonl"
    rows = [
        {"repo": "pino", "rule": "commit-body", "query": "kept", "files": ["lib/a.js", "lib/b.js"],
         "targets": [{"path": "lib/a.js", "qualified_name": "a", "start_line": 1, "end_line": 3},
                     {"path": "lib/b.js", "qualified_name": "b", "start_line": 9, "end_line": 12}],
         "leaks_name": False, "source": {"kind": "commit-body"}},
        {"repo": "pino", "rule": "docs-file", "query": "gone", "files": ["lib/gone.js"], "targets": [],
         "leaks_name": False, "source": {"kind": "docs-file"}},
        {"repo": "knex", "rule": "package", "query": "another repository", "files": ["knex.js"], "targets": [],
         "leaks_name": False, "source": {"kind": "package"}},
    ]  # fmt: skip
    mined.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    monkeypatch.setattr(build_queries, "CONCEPT_QUERIES_PATH", mined)
    records = [
        {"path": "lib/a.js", "symbols": [{"qualified_name": "a", "start_line": 1, "end_line": 3}]},
        {"path": "lib/b.js", "symbols": [{"qualified_name": "b", "start_line": 10, "end_line": 12}]},  # moved
    ]
    stats: Counter = Counter()
    pino = QualityRepo("pino", "pinojs/pino", "v1", "0" * 40, "test", ("lib",))
    found = build_queries.concept_queries(pino, records, stats)
    assert [(c.text, [t.qualified_name for t in c.targets], [f.path for f in c.files]) for c in found] == [
        ("kept", ["a"], ["lib/a.js", "lib/b.js"])
    ]
    assert (stats["concept_targets_not_in_pinned"], stats["concept_files_not_in_pinned"]) == (1, 1)


def test_a_path_query_is_answered_by_the_files_top_level_symbols_and_then_its_card() -> None:
    def symbol(name: str, start: int, end: int) -> dict:
        return {"name": name, "qualified_name": name, "start_line": start, "end_line": end, "has_body": True}

    records = [
        {"path": "lib/core/parse.js", "card": {"start_line": 2, "end_line": 40},
         "symbols": [symbol("parse", 5, 20), symbol("parse.inner", 8, 9), symbol("tokenize", 22, 39)]},
        {"path": "lib/other/parse.js", "card": {"start_line": 1, "end_line": 9}, "symbols": [symbol("x", 1, 9)]},
    ]  # fmt: skip
    candidates = path_queries(records)
    assert [c.text for c in candidates] == ["core/parse.js", "other/parse.js"]
    # Last, so the first target (a sample's order) is what it was before the card was a target.
    assert candidates[0].targets == [
        Target("lib/core/parse.js", "parse", 5, 20),
        Target("lib/core/parse.js", "tokenize", 22, 39),
        Target("lib/core/parse.js", "<module top level>", 2, 40),
    ]


def test_the_committed_query_file_gives_files_to_concept_lines_only() -> None:
    with open(QUERIES, encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh]
    concept = [r for r in rows if r["type"] == "concept"]
    assert concept and all(r["files"] and r["source"]["kind"] in {"docs-file", "docs-api", "package", "commit-body"}
                           for r in concept)  # fmt: skip
    assert not any("files" in r for r in rows if r["type"] != "concept")
    assert all(f["start_line"] == f["end_line"] == 0 for r in concept for f in r["files"])


# --- Scoring a reply: symbol level where there are symbol targets, file level always ----------


def chunk(path: str, name: str, start: int, end: int) -> SimpleNamespace:
    return SimpleNamespace(relative_path=path, qualified_name=name, start_line=start, end_line=end, id=f"{path}:{name}",
                           snippet_hash="h", collapsed_source="x", is_test=False)  # fmt: skip


class FakeClient:
    """Answers every search with the same ranked chunks: one large file's members, then the other file."""

    def search(self, request, deadline):
        chunks = [chunk("lib/proto.js", f"m{i}", 10 * i, 10 * i + 5) for i in range(1, 4)]
        chunks.append(chunk("pino.js", "<module top level>", 1, 400))
        metadata = SimpleNamespace(search_ms=3.0, semantic_ratio_used=0.5, semantic_skipped_reason="")
        return SimpleNamespace(results=[SimpleNamespace(chunk=c) for c in chunks], metadata=metadata)


def test_a_files_only_concept_query_scores_at_file_level_and_has_no_symbol_scores() -> None:
    query = parse_query({**asdict(concept_query()), "targets": []})
    outcome = run_quality.run_query(FakeClient(), query, "bm25", run_quality.TokenCosts())
    row = dict(zip(run_quality.PER_QUERY_COLUMNS, outcome.row, strict=True))
    assert all(row[c] is None for c in run_quality.SYMBOL_COLUMNS)
    # proto.js at rank 1, pino.js (its module chunk) at rank 4: each file once.
    assert row["file_ndcg10"] == pytest.approx((1 + 1 / math.log2(5)) / (1 + 1 / math.log2(3)))
    assert row["file_r10"] == 1.0 and row["results"] == 4


def test_a_symbol_query_keeps_its_symbol_scores_and_gains_file_level_ones() -> None:
    query = parse_query(asdict(symbol_query()) | {"targets": [{"path": "lib/proto.js", "qualified_name": "m2",
                                                                "start_line": 20, "end_line": 25}]})  # fmt: skip
    outcome = run_quality.run_query(FakeClient(), query, "bm25", run_quality.TokenCosts())
    row = dict(zip(run_quality.PER_QUERY_COLUMNS, outcome.row, strict=True))
    assert (row["first_rank"], row["mrr10"]) == (2, 0.5)
    # File level: m1 (lines 10-15) does not overlap m2's span; m2 at rank 2 does.
    assert row["file_ndcg10"] == pytest.approx(1 / math.log2(3))


def test_symbol_means_skip_the_rows_without_symbol_targets_and_say_how_many_they_cover() -> None:
    width = len(run_quality.PER_QUERY_COLUMNS)
    with_symbols = [1.0] * width
    files_only = [None if c in run_quality.SYMBOL_COLUMNS else 0.5 for c in run_quality.PER_QUERY_COLUMNS]
    table = run_quality.aggregate([with_symbols, files_only])
    assert (table["n"], table["n symbol"], table["MRR@10"], table["file nDCG@10"]) == (2, 1, 1.0, 0.75)
    assert "n symbol" not in run_quality.aggregate([with_symbols])
    pipeline_row = [None if c in ("mrr10", "first_rank") else 1.0 for c in run_pipeline.COLUMNS]
    assert run_pipeline.aggregate([pipeline_row])["mrr10"] is None
    assert run_pipeline.aggregate([pipeline_row])["n symbol"] == 0


def test_the_pipeline_scores_a_ranked_list_and_a_selected_answer_at_file_level() -> None:
    query = parse_query({**asdict(concept_query()), "targets": []})
    chunks = FakeClient().search(None, 0).results
    ranked = SimpleNamespace(selection=None, candidates=[SimpleNamespace(result=r) for r in chunks])
    shown = SimpleNamespace(relative_path="pino.js", qualified_name="<module top level>", start_line=1, end_line=400,
                            expanded_child_ids=(), token_count=50, source="x", clipped=False)  # fmt: skip
    selected = SimpleNamespace(
        selection=SimpleNamespace(results=[shown], total_tokens=50), candidates=ranked.candidates
    )
    for answer, ndcg in (
        (ranked, (1 + 1 / math.log2(5)) / (1 + 1 / math.log2(3))),
        (selected, 1 / (1 + 1 / math.log2(3))),
    ):
        row = dict(zip(run_pipeline.COLUMNS, run_pipeline.score(query, answer, 5.0, run_quality.TokenCosts(), None),
                       strict=True))  # fmt: skip
        assert row["file_ndcg10"] == pytest.approx(ndcg)
        assert row["mrr10"] is None and row["gold_line_share"] is None and row["client_ms"] == 5.0
