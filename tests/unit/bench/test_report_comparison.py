"""The comparison section: named quality and pipeline results files side by side, per split and query type."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench.quality import compare_models, compare_runs
from bench.report.comparison import render_comparison, render_models
from bench.report.quality import render_testcode

from codecompass_dev.evaluation.results import write_results


def quality(mrr: float, first_test: float | None) -> dict:
    row = {"MRR@10": mrr, "R@8k tok": 0.8}
    if first_test is not None:  # results files from before the column existed lack it
        row["first is test code"] = first_test
    tables = [
        {"split": split, "group": group, "mode": mode, "n": 5, **row}
        for split in ("dev", "test")
        for group in ("all", "jsdoc")
        for mode in ("bm25", "hybrid+ranking")
    ]
    indexes = {"pino": {"files": 15, "chunks": 172, "index_format_version": "format=3;chunker=4"}}
    return {"tables": tables, "indexes": indexes}


def pipeline(mrr: float) -> dict:
    tables = [
        {"split": "test", "group": group, "stage": stage, "n": 5, "mrr10": mrr, "r_2000tok": 0.6, "r_8000tok": 0.7}
        for group in ("all", "jsdoc")
        for stage in ("first stage", "selection")
    ]
    return {"tables": tables}


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    return {
        "old": write_results("quality", quality(0.5, None), results_dir=tmp_path, stamp="1"),
        "new": write_results("quality", quality(0.25, 0.4), results_dir=tmp_path, stamp="2"),
        "selection": write_results("pipeline", pipeline(0.3), results_dir=tmp_path, stamp="3"),
    }


def test_runs_are_side_by_side_per_split_and_query_type(files: dict[str, Path]) -> None:
    payload = compare_runs.compare(
        [("published", files["old"]), ("repository", files["new"])], [("repository", files["selection"])], "Why."
    )
    text = render_comparison({"kind": "comparison", **payload})
    assert text.index("**Test split**") < text.index("**Dev split**")
    assert "| Query type | Queries | published: MRR@10 | R@8k tok | first is test code | repository: MRR@10 |" in text
    # The ranked list is the product's default mode; a file without the test column shows a dash.
    assert "| jsdoc | 5 | 0.500 | 0.800 | – | 0.250 | 0.800 | 0.400 |" in text
    assert "Test split, the selected answer (`selection`):" in text and "| all | 5 | 0.300 | 0.600 | 0.700 |" in text
    assert "| repository (quality) |" in text and "| 15 | 172 | format=3;chunker=4 |" in text


def test_a_file_of_another_kind_is_one_clear_line(files: dict[str, Path]) -> None:
    with pytest.raises(SystemExit, match=r"a 'pipeline' results file, expected 'quality'"):
        compare_runs.compare([("x", files["selection"])], [], "t")
    with pytest.raises(SystemExit, match=r"expected LABEL=FILE"):
        compare_runs.parse_named("no-label")


def model_run(tmp_path: Path, stamp: str, bm25: float, vector: float, hybrid: float, model: str) -> Path:
    tables = [
        {"split": split, "group": group, "mode": mode, "n": 7, "MRR@10": value}
        for split in ("dev", "test")
        for group in ("all", "nl")
        for mode, value in (("bm25", bm25), ("vector", vector), ("hybrid", 0.0), ("hybrid+ranking", hybrid))
    ]
    payload = {"tables": tables, "indexes": {"pino": {"chunks": 172}}, "settings": {"embedding_models": [model]}}
    return write_results("quality", payload, results_dir=tmp_path, stamp=stamp)


def test_models_are_compared_alone_and_in_the_hybrid_against_one_bm25_column(tmp_path: Path) -> None:
    runs = [("MiniLM", model_run(tmp_path, "1", 0.3, 0.2, 0.45, "all-MiniLM-L6-v2 v1")),
            ("code-small", model_run(tmp_path, "2", 0.302, 0.35, 0.5, "code-small v1"))]
    text = render_models({"kind": "models", **compare_models.compare(runs)})
    assert text.index("**Test split**") < text.index("**Dev split**")
    assert ("| Query type | Queries | BM25 alone | MiniLM vectors alone | code-small vectors alone | hybrid, MiniLM "
            "| hybrid, code-small |") in text
    # BM25 comes from the first run; the plain hybrid (fusion only) is not the product's list and is left out.
    assert "| nl | 7 | 0.300 | 0.200 | 0.350 | 0.450 | 0.500 |" in text
    assert "| code-small | code-small v1 |" in text


def test_models_whose_bm25_differs_were_not_run_on_the_same_index(tmp_path: Path) -> None:
    runs = [("a", model_run(tmp_path, "1", 0.3, 0.2, 0.4, "a")), ("b", model_run(tmp_path, "2", 0.4, 0.2, 0.4, "b"))]
    with pytest.raises(SystemExit, match=r"BM25 alone differs from the first run"):
        compare_models.compare(runs)


def test_testcode_section_shows_the_default_per_group_and_every_variant() -> None:
    columns = {"first_test": "first is test", "first_unpenalised": "first is test, not penalised",
               "first_other": "first is other non-library code", "test_top10": "tests in top 10", "mrr10": "MRR@10",
               "mrr10_no_tests": "MRR@10 without tests", "r8k": "R@8k tok", "r8k_no_tests": "R@8k tok without tests",
               "library_flagged": "library marked test", "about_tests": "read as about tests"}  # fmt: skip
    rows = [
        {"variant": variant, "group": group, "n": 4, **{key: value for key in columns}}
        for variant, value in (("default", 0.25), ("test 0.3", 0.125))
        for group in ("all", "jsdoc", "repo pino")
    ]
    doc = {"kind": "testcode", "run": {"date_utc": "d", "git": {"commit": "abc"}}, "label": "after", "split": "dev",
           "state_dir": "s", "list_depth": 60, "token_budget": 8000, "columns": columns, "rows": rows,
           "variants": {"default": {}, "test 0.3": {"test_penalty": 0.3}}}  # fmt: skip
    text = render_testcode(doc)
    assert "Dev split, index: after;" in text
    assert "| repo pino | 4 | 0.250 |" in text  # per repository, the default policy only
    assert "| Variant | first is test | MRR@10 | R@8k tok | jsdoc MRR@10 |" in text
    assert "| test 0.3 (test_penalty=0.3) | 0.125 | 0.125 | 0.125 | 0.125 |" in text


def test_the_models_table_labels_the_default_profile_the_service_really_defaults_to() -> None:
    from codecompass.common.config import EmbeddingSettings
    from codecompass_dev.evaluation.results import REPO_ROOT

    makefile = (REPO_ROOT / "Makefile").read_text(encoding="utf-8")
    declared = next(line.split(":=", 1)[1].strip() for line in makefile.splitlines()
                    if line.startswith("DEFAULT_PROFILE :="))
    assert declared == EmbeddingSettings().profile


def test_file_level_ndcg_is_compared_when_a_run_has_it(tmp_path: Path) -> None:
    with_file = quality(0.3, 0.4)
    with_file["tables"] = [{**row, "file nDCG@10": 0.6} for row in with_file["tables"]]
    old = write_results("quality", quality(0.5, 0.4), results_dir=tmp_path, stamp="1")
    new = write_results("quality", with_file, results_dir=tmp_path, stamp="2")
    assert compare_runs.compare([("old", old)], [], "Why.")["metrics"]["quality"] == list(compare_runs.QUALITY_METRICS)
    payload = compare_runs.compare([("old", old), ("new", new)], [], "Why.")
    text = render_comparison({"kind": "comparison", **payload})
    assert "| first is test code | file nDCG@10 | new: MRR@10 |" in text
    assert "| all | 5 | 0.500 | 0.800 | 0.400 | – | 0.300 | 0.800 | 0.400 | 0.600 |" in text
