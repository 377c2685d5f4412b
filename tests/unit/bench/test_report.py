from __future__ import annotations

import json
from pathlib import Path

import pytest
from bench.report.quality import render_quality_full, render_quality_summary
from bench.report.sections import (
    MARKDOWN_FILES,
    SECTION_RE,
    SECTIONS,
    ReportError,
    main,
    rewrite,
    section_renderer,
    update_files,
)
from bench.report.tables import provenance

from codecompass_dev.evaluation.results import (
    REPO_ROOT,
    RESULTS_DIR,
    latest_path,
    load_latest,
    machine_info,
    to_json,
    write_results,
)


def quality_doc() -> dict:
    row = {
        "MRR@10": 0.5,
        "R@1": 0.25,
        "R@5": 0.75,
        "R@10": 1.0,
        "nDCG@10": 0.6,
        "R@500 tok": 0.2,
        "R@2k tok": 0.5,
        "R@8k tok": 0.9,
        "tokens@10 mean": 1234.5,
        "tokens@10 median": 1000.0,
    }
    tables = [
        {"split": split, "group": group, "mode": mode, "n": 2, **row}
        for split in ("dev", "test")
        for group in ("all", "nl")
        for mode in ("bm25", "hybrid+ranking")
    ]
    latency = {"search_ms p50": 10.0, "search_ms p95": 20.0, "client_ms p50": 12.0, "client_ms p95": 25.0}
    return {
        "run": {"date_utc": "2026-11-23T00:00:00+00:00", "git": {"commit": "abcdef1234567", "dirty_files": []}},
        "settings": {"modes": {"bm25": {}, "hybrid+ranking": {}}, "embedding_models": ["minilm v1"]},
        "queries": {
            "total": 4,
            "by_split_type": {"dev/nl": 2, "test/nl": 2},
            "by_repo": {"pino": 4},
            "unanswerable": {},
        },
        "indexes": {
            "pino": {
                "files": 15,
                "chunks": 300,
                "embedded": 300,
                "index_bytes": 2**20,
                "sync_seconds": 3.0,
                "status": "INDEXING_STATUS_READY",
            }
        },
        "tables": tables,
        "latency": {"bm25": latency, "hybrid+ranking": latency},
        "mode_diagnostics": {
            "bm25": {
                "request": {"semantic_ratio": 0.0},
                "semantic_ratio_used mean": 0.0,
                "ratio_lowered": 0,
                "semantic_skipped": {},
                "results mean": 60.0,
                "budget_not_spent": 0,
            }
        },
    }


MARKED = """# Title

Intro kept.

<!-- bench:quality:start -->
old table
<!-- bench:quality:end -->

Text between.

<!-- bench:quality-full:start -->
<!-- bench:quality-full:end -->
Tail kept.
"""


@pytest.fixture
def results_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "results"
    write_results("quality", quality_doc(), results_dir=directory, stamp="20261123T000000Z")
    return directory


def test_write_results_writes_a_stamped_file_and_a_latest_copy(results_dir: Path) -> None:
    stamped = results_dir / "quality-20261123T000000Z.json"
    latest = results_dir / "quality-latest.json"
    assert stamped.read_bytes() == latest.read_bytes()
    assert not latest.is_symlink()
    doc = load_latest("quality", results_dir)
    assert doc is not None and doc["kind"] == "quality" and doc["schema_version"] == 1


def test_to_json_keeps_scalar_lists_on_one_line_and_writes_nan_as_null() -> None:
    text = to_json({"rows": {"q1": [1, 0.5, float("nan")]}, "nested": [{"a": [1, 2]}]})
    assert '"q1": [1,0.5,null]' in text
    assert json.loads(text)["nested"] == [{"a": [1, 2]}]


def test_rewrite_fills_marked_sections_and_leaves_the_rest(tmp_path: Path, results_dir: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(MARKED, encoding="utf-8")
    assert update_files([readme], results_dir) == [readme]
    text = readme.read_text(encoding="utf-8")
    assert "old table" not in text
    assert text.startswith("# Title\n\nIntro kept.\n\n<!-- bench:quality:start -->\n_Generated")
    assert "Text between." in text and text.endswith("<!-- bench:quality-full:end -->\nTail kept.\n")
    assert "**Test split**" in text  # the headline is the held-out split
    assert (
        "| `hybrid+ranking` | 2 | 0.500 | 0.250 | 0.750 | 1.000 | 0.600 | 0.200 | 0.500 | 0.900 | 1,000 | 10 / 20 |"
        in text
    )
    # A second run changes nothing, and --check agrees.
    assert update_files([readme], results_dir) == []
    assert update_files([readme], results_dir, check=True) == []


def test_check_flags_a_hand_edited_table(tmp_path: Path, results_dir: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(MARKED, encoding="utf-8")
    update_files([readme], results_dir)
    readme.write_text(readme.read_text(encoding="utf-8").replace("0.750", "0.790", 1), encoding="utf-8")
    assert update_files([readme], results_dir, check=True) == [readme]
    assert "0.790" in readme.read_text(encoding="utf-8")  # check never writes
    assert main(["--check", "--results-dir", str(results_dir), str(readme)]) == 1


def test_unknown_section_and_missing_results_are_errors(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("<!-- bench:nope:start -->\n<!-- bench:nope:end -->\n", encoding="utf-8")
    with pytest.raises(ReportError, match="unknown bench section"):
        update_files([readme], tmp_path)
    readme.write_text(MARKED, encoding="utf-8")
    with pytest.raises(ReportError, match="quality-latest.json"):
        update_files([readme], tmp_path / "empty", check=True)
    # Without --check a section whose results are missing is left as it is.
    assert update_files([readme], tmp_path / "empty") == []


def test_every_marked_section_has_a_renderer() -> None:
    for path in MARKDOWN_FILES:
        for match in SECTION_RE.finditer(path.read_text(encoding="utf-8")):
            assert match["name"] in SECTIONS, f"{path}: {match['name']}"


def test_bench_results_holds_latest_results() -> None:
    assert any(RESULTS_DIR.glob("*-latest.json")), "bench/results holds no *-latest.json"


def marked_sections() -> list:
    return [
        pytest.param(path, match["name"], id=f"{path.relative_to(REPO_ROOT)}:{match['name']}")
        for path in MARKDOWN_FILES
        for match in SECTION_RE.finditer(path.read_text(encoding="utf-8"))
    ]


@pytest.mark.parametrize(("path", "name"), marked_sections())
def test_readme_section_is_in_sync_with_its_latest_results(path: Path, name: str) -> None:
    """Fails when a generated table was edited by hand, or results landed without `make bench-report`.

    A section whose benchmark has not written its results file yet keeps its text and is
    skipped here (by name, so the missing file shows in the test report), not failed.
    """
    section = SECTIONS.get(name)
    assert section is not None, f"{path}: no renderer for {name!r}"
    if not latest_path(section.kind, RESULTS_DIR).exists():
        pytest.skip(f"bench/results/{section.kind}-latest.json does not exist yet")
    render = section_renderer(RESULTS_DIR, strict=True)
    text = path.read_text(encoding="utf-8")
    assert rewrite(text, lambda n: render(n) if n == name else None) == text, (
        f"run `make bench-report`: {path.name} section {name!r} differs from bench/results/{section.kind}-latest.json"
    )


def with_file_level(doc: dict) -> dict:
    """A run with file-level scores and a `concept` group, some of whose queries have no symbol targets."""
    tables = [{**row, "file nDCG@10": 0.7, "file R@10": 0.8} for row in doc["tables"]]
    tables += [
        {**row, "group": "concept", "n": 3, "n symbol": 1, "MRR@10": 0.25, "file nDCG@10": 0.4}
        for row in tables
        if row["group"] == "nl"
    ]
    return {**doc, "tables": tables}


def test_results_without_file_level_scores_render_as_before() -> None:
    text = render_quality_summary({"kind": "quality", **quality_doc()})
    assert "file nDCG@10" not in text and "File-level" not in text
    assert "| `bm25` | 2 | 0.500 | 0.250 | 0.750 | 1.000 | 0.600 | 0.200 | 0.500 | 0.900 | 1,000 | 10 / 20 |" in text


def test_file_level_columns_and_the_concept_row_appear_when_the_run_has_them() -> None:
    doc = {"kind": "quality", **with_file_level(quality_doc())}
    summary = render_quality_summary(doc)
    assert "| R@8k tok | file nDCG@10 | file R@10 | Tokens@10 median |" in summary
    assert "| `bm25` | 2 | 0.500 | 0.250 | 0.750 | 1.000 | 0.600 | 0.200 | 0.500 | 0.900 | 0.700 | 0.800 |" in summary
    assert "File-level nDCG@10 by query type" in summary
    assert "| concept | 3 | 0.400 | 0.400 |" in summary  # the file-level matrix
    assert "| concept | 3 | 0.250 | 0.250 |" in summary  # MRR@10 by type: over its 1 query with symbols
    full = render_quality_full(doc)
    assert "| `hybrid+ranking` | 3 (1 with symbol targets) | 0.250 |" in full


def test_a_run_records_how_fast_its_cores_were_and_the_tables_say_so() -> None:
    machine = machine_info()
    assert machine["reference_ms"] > 0 and machine["nproc"] >= 1
    line = provenance({"kind": "load", "run": {"date_utc": "2026-12-02", "machine": {**machine, "reference_ms": 9.1}}})
    assert "cores (reference 9.1 ms)," in line
    # A run from before the reference was recorded renders as it did.
    old = provenance({"kind": "load", "run": {"machine": {"nproc": 2, "ram_gib": 23.5}}})
    assert "2 cores, 23.5 GiB" in old and "reference" not in old
