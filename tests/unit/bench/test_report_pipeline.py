"""The pipeline sections: a payload shaped as run_pipeline writes it, rendered into tables."""

from __future__ import annotations

from bench.quality import run_pipeline
from bench.report.pipeline import render_pipeline_full, render_pipeline_summary
from bench.report.speed import render_health, render_mcp_speed, render_pipeline_speed, render_render_speed


def payload() -> dict:
    def row(split, group, stage, mrr, **extra):
        return {"split": split, "group": group, "stage": stage, "n": 10, "mrr10": mrr, "ndcg10": mrr, "r1": 0.3,
                "r5": 0.6, "r_500tok": 0.4, "r_2000tok": 0.6, "r_8000tok": 0.8, "gold_line_share": 0.35,
                "tokens": 900.0, "tokens median": 800, "tokens max": 7900, "empty answers": 0.1, **extra}

    tables = [row(split, group, stage, mrr)
              for split in ("test", "dev") for group in ("all", "nl")
              for stage, mrr in (("first stage", 0.55), ("selection", 0.5))]
    return {
        "kind": "pipeline",
        "run": {"date_utc": "2026-11-23T15:00:00+00:00", "git": {"commit": "abc"}, "machine": {"nproc": 2}},
        "settings": {"stages": {"first stage": {}, "selection": {}}},
        "tables": tables,
        "latency_ms": {"selection": {"retrieve": {"p50": 40.0, "p95": 80.0}, "select": {"p50": 10.0, "p95": 60.0},
                                     "total": {"p50": 55.0, "p95": 150.0}}},
        "nonsense": {"queries": ["?!"], "results_by_repo": {"a": [0], "b": [1]}, "max_results": 1, "at_most_two": 1.0},
    }


def test_summary_leads_with_the_test_split_and_every_stage() -> None:
    text = render_pipeline_summary(payload())
    assert "**Test split**" in text
    assert "| `first stage` | 10 | 0.550 |" in text and "| `selection` | 10 | 0.500 |" in text
    assert "900 / 800 / 7,900 (top 10)" in text  # a list's tokens are its top 10
    assert "at most 1 results; 100% return 2 or fewer" in text
    assert "| `selection` | retrieve 40 / 80, select 10 / 60 | 55 / 150 |" in text


def test_full_section_has_both_splits_and_a_type_matrix() -> None:
    text = render_pipeline_full(payload())
    assert text.index("**Test split**") < text.index("**Dev split**")
    assert "| Query type | Queries | BM25 only | `first stage` | `selection` |" in text


def test_gold_share_counts_meaningful_lines_of_the_targets_file_only() -> None:
    gold = {"src/a.ts": {"return token.valid;", "function check(token) {"}}
    shown = [("src/a.ts", "function check(token) {\n  return token.valid;\n}\n"), ("src/b.ts", "return token.valid;")]
    # "}" is not meaningful; the b.ts line is outside the target's file.
    assert run_pipeline.gold_share(shown, gold) == 2 / 3


def test_health_section_says_whether_the_service_kept_answering() -> None:
    doc = {
        "kind": "health", "workspace": "bench/.work/ws-300k", "goals": {"health_max_ms": 1000.0},
        "run": {"date_utc": "2026-11-23", "git": {"commit": "abc"}, "machine": {"nproc": 2}},
        "measures": {"chunk_files": 972, "chunk_references": 85218, "chunk_s": 67.4, "peak_rss_mib": 1214.8,
                     "health": {"count": 628, "p50_ms": 6.1, "p95_ms": 66.0, "max_ms": 1197.4}, "health_over_1s": 1,
                     "health_errors": 0, "render": {"count": 68, "p50_ms": 14.5, "p95_ms": 111.6, "max_ms": 555.5},
                     "render_errors": 0},
    }
    text = render_health(doc)
    assert "| 6 / 66 / **1197** | answers within 1 s: missed (1 over, 0 errors) |" in text
    assert "(972 files, 85,218 references, 67 s" in text


def test_pipeline_speed_section_lists_configurations_and_targets() -> None:
    stage = {"p50": 80.0, "p90": 100.0, "p95": 110.0}
    doc = {
        "kind": "pipeline-speed",
        "run": {"date_utc": "2026-11-23", "git": {"commit": "abc"}, "machine": {"nproc": 2}},
        "workspace": {"name": "ws-300k", "lines": 339752, "chunks": 22056},
        "settings": {"queries": 50, "passes": 2, "warm_up_passes": 1},
        "latency_ms": {"default": {"retrieve": stage, "select": stage,
                                   "total": {"p50": 95.0, "p90": 140.0, "p95": 260.0}}},
        "targets": [{"target": "whole local pipeline p95", "goal_ms": 250.0, "measured_ms": 260.0, "met": False}],
    }
    text = render_pipeline_speed(doc)
    assert "| `default` | retrieve 80 / 110, select 80 / 110 | 95 / 140 / **260** |" in text
    assert "| whole local pipeline p95 | 260 ms | ≤ 250 ms: **missed** |" in text


def test_mcp_speed_section_has_tools_answers_and_cold_start() -> None:
    tokens = {"mean": 2625.5, "median": 721.0, "max": 7997.0}
    doc = {
        "kind": "mcp-speed", "run": {"date_utc": "2026-11-23", "git": {"commit": "abc"}, "machine": {"nproc": 2}},
        "workspace": {"name": "ws-300k", "lines": 339752}, "calls": {"queries": 50},
        "client": {"protocol_version": "2026-07-28"},
        "latency_ms": {"read_symbol": {"n": 50, "errors": 0, "p50": 27.0, "p95": 33.4, "first_call_ms": 39.5}},
        "semantic_search_answer": {"semantic_search": {
            "answers": 50, "with_results": 33, "results": {"median": 4.0}, "text_tokens_all_answers": tokens,
            "response_tokens": {"max": 12873.0}, "chars": {"max": 34703.0}, "over_25000_tokens": 0,
            "over_50000_chars": 0}},
        "cold_start": {"met": False, "handshake_s": 3.77, "first_answer_s": 14.96, "tries": 1, "goal_s": 5.0,
                       "index_status_after": {"indexing_status": "indexing"}},
    }
    text = render_mcp_speed(doc)
    assert "| `read_symbol` | 50 | 0 | 27 / 33 | 40 |" in text
    assert "| `semantic_search` | 33 / 50 | 4 | 2,626 / 721 / 7,997 | 12,873 | 34,703 | 0 / 0 |" in text
    assert "first answer with results after **15.0 s**" in text and "goal < 5 s: **missed**" in text


def test_unanswerable_kinds_curve_and_reliability_are_rendered() -> None:
    doc = payload()
    del doc["nonsense"]
    doc["unanswerable"] = {"summary": {
        "nonsense": {"n": 50, "at_most_two": 1.0, "low_confidence": 1.0, "max_results": 2},
        "wrong repository": {"n": 120, "at_most_two": 0.6, "low_confidence": 0.55, "max_results": 30}}, "queries": {}}
    doc["budget_curve"] = [{"split": "test", "group": "all", "n": 10, "budgets": [500, 2000],
                            "list": [0.4, 0.6], "selection": [0.5, 0.65]}]
    doc["calibration"] = {"test": {
        "calibrated": run_pipeline.reliability([(0.95, True), (0.9, True), (0.15, False), (0.1, True)]),
        "composite": run_pipeline.reliability([(0.5, True)]), "composite_threshold": 0.5,
        "answerable_low_confidence": 0.25}}
    text = render_pipeline_full(doc)
    assert "| wrong repository | 120 | 60% | 30 | 55% |" in text
    assert "| all | 10 | 0.500 / 0.400 | 0.650 / 0.600 |" in text
    assert "`calibrated` confidence (expected calibration error 0.225, 4 queries)" in text
    assert "| 0.9-1.0 | 2 | 0.925 | 1.000 |" in text and "| 0.1-0.2 | 2 | 0.125 | 0.500 |" in text


def test_reliability_bins_and_expected_calibration_error() -> None:
    table = run_pipeline.reliability([(0.05, False), (0.05, False), (0.75, True), (0.75, False), (1.0, True)])
    assert [(b["bin"], b["n"], b["observed"]) for b in table["bins"]] == [
        ("0.0-0.1", 2, 0.0), ("0.7-0.8", 2, 0.5), ("0.9-1.0", 1, 1.0)]
    # |0.05 - 0| x 2/5 + |0.75 - 0.5| x 2/5 + |1 - 1| x 1/5
    assert table["ece"] == round(0.05 * 0.4 + 0.25 * 0.4, 4) and run_pipeline.reliability([])["ece"] is None


def test_unanswerable_sets_ask_each_repository_the_next_ones_queries() -> None:
    def q(i, repo):
        return run_pipeline.Query(id=f"{repo}-{i}", type="nl", repo=repo, split="dev", query=f"{repo} question {i}",
                                  targets=())
    queries = [q(i, r) for r in ("a", "b") for i in range(8)]
    sets = run_pipeline.unanswerable_sets(queries, ["b", "a"])
    assert sets["wrong repository"] == [("b", "a question 0"), ("b", "a question 4"),
                                        ("a", "b question 0"), ("a", "b question 4")]
    assert len(sets["nonsense"]) == 2 * len(run_pipeline.NONSENSE_QUERIES)
    assert ("a", run_pipeline.NOWHERE_NAMES[0]) in sets["names nowhere"]


def test_file_level_columns_and_the_concept_table_appear_when_the_run_has_them(monkeypatch) -> None:
    monkeypatch.setattr("bench.report.pipeline._bm25_row", lambda split, group: None)  # no quality run beside it
    doc = payload()
    assert "file nDCG@10" not in render_pipeline_full(doc)
    doc["tables"] = [{**row, "file_ndcg10": 0.7, "file_r10": 0.9} for row in doc["tables"]]
    doc["tables"] += [{**row, "group": "concept", "n": 4, "n symbol": 2, "file_ndcg10": 0.45}
                      for row in doc["tables"] if row["group"] == "nl"]
    summary = render_pipeline_summary(doc)
    assert "| Gold lines | file nDCG@10 | file R@10 |" in summary
    assert "concept questions" in summary
    assert "| `first stage` | 4 (2 with symbol targets) | 0.550 |" in summary
    full = render_pipeline_full(doc)
    assert "file-level nDCG@10 by query type and stage" in full
    assert "| concept | 4 | – | 0.450 | 0.450 |" in full


def test_a_result_that_expands_several_targets_answers_each_of_them() -> None:
    from types import SimpleNamespace as NS

    from codecompass_dev.evaluation.metrics import Target

    def chunk(cid, name, start, end):
        return NS(id=cid, relative_path="src/a.ts", qualified_name=name, start_line=start, end_line=end)

    children = [chunk("c1", "one", 3, 9), chunk("c2", "two", 11, 20), chunk("c3", "other", 22, 30)]
    card = NS(relative_path="src/a.ts", qualified_name="<module top level>", start_line=1, end_line=30,
              expanded_child_ids=("c1", "c2", "c3"), clipped=False)
    alone = NS(relative_path="src/b.ts", qualified_name="three", start_line=1, end_line=5, expanded_child_ids=(),
               clipped=False)
    answer = NS(candidates=[NS(result=NS(chunk=c)) for c in children], selection=NS(results=[card, alone]))
    targets = [Target("src/a.ts", "two", 11, 20), Target("src/b.ts", "three", 1, 5), Target("src/a.ts", "one", 3, 9)]
    assert run_pipeline.selection_hits(answer, targets) == [(2, 0), (1,)]
    query = NS(targets=targets)
    assert run_pipeline.curve_row(query, answer) == 1.0


def test_render_speed_section_compares_both_configurations() -> None:
    def stage(p50: float) -> dict[str, float]:
        return {"n": 60, "p50": p50, "p95": p50 * 2}

    doc = {
        "kind": "render-speed", "run": {"date_utc": "2026-11-29", "git": {"commit": "abc"}, "machine": {"nproc": 2}},
        "workspace": {"name": "grpc-js", "lines": 55000, "chunks": 4000, "embedding_model": "code-static 1"},
        "settings": {"questions": ["a", "b"], "passes": 3, "warm_up_passes": 1},
        "latency_ms": {"render all": {"select": stage(80.0), "total": stage(190.0)},
                       "from index": {"select": stage(20.0), "total": stage(130.0)}},
        "answers": {"identical": 6, "differing": 0, "differing_questions": []},
        "answers_without_a_fresh_sync": {},
    }
    text = render_render_speed(doc)
    assert "| `render all` | 80.0 / 160.0 | 190.0 / 380.0 |" in text
    assert "| `from index` | 20.0 / 40.0 | 130.0 / 260.0 |" in text
    assert "identical in both configurations: **6 of 6**" in text
