"""The speed and chunk sections: payloads as the benches build them, rendered into README sections."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from bench import chunk_bench
from bench.lib.chunk_checks import LineCoverage, Violation
from bench.report.chunk import chunk_table, render_chunk_full, render_chunk_summary
from bench.report.sections import ReportError, update_files
from bench.report.speed import render_speed_full, render_speed_summary, speed_table
from bench.speed import run_speed

from codecompass_dev.evaluation.results import load_latest, write_results

WORKSPACE = Path("/tmp/bench/ws-300k")


def speed_measures(**changes: object) -> dict:
    """The flat dict run_speed fills while it measures (workspace stats included)."""
    results = {
        "workspace": str(WORKSPACE),
        "files": 991,
        "lines": 359_940,
        "source_bytes": 11 * 2**20,
        "services_start_s": 3.4,
        "first_search_ms": 443.2,
        "first_search_results": 10,
        "first_search_status": "INDEXING_STATUS_INDEXING",
        "first_search_completeness": "RESULT_COMPLETENESS_PARTIAL",
        "cold_first_lexical_s": 4.25,
        "cold_first_lexical_after_serving_s": 0.85,
        "lexical_index_s": 29.36,
        "chunks_upserted": 19_443,
        "chunks": 19_443,
        "embedded_chunks": 19_443,
        "embedding_wait_s": 300.0,
        "index_to_ready_s": 330.0,
        "embed_chunks_per_s": 64.8,
        "embedded_before_poll": 0,
        "index_bytes_reported": 120 * 2**20,
        "state_dir_bytes": 121 * 2**20,
        "indexing_status": "INDEXING_STATUS_READY",
        "warm_p50_ms": 62.0,
        "warm_p95_ms": 85.4,
        "warm_server_sync_p50_ms": 24.0,
        "warm_server_search_p50_ms": 35.0,
        "warm_queries": 50,
        "nochange_search_ms": 56.0,
        "edit_search_ms": 272.0,
        "edit_sync_ms_server": 190.0,
        "edit_sync_files_changed": 1,
        "edit_sync_chunks_embedded": 2,
        "edit_overhead_ms": 216.0,
        "state_dir_bytes_settled": 110 * 2**20,
        "index_bytes_settled": 108 * 2**20,
        "rss_mib": {"analysis": 1356.0, "embedding": 372.4, "retrieval": None},
    }
    results.update(changes)
    return results


def speed_doc(tmp_path: Path, results: dict | None = None, fresh: bool = True) -> dict:
    payload = run_speed.build_payload(results or speed_measures(), WORKSPACE, fresh, 720.0)
    write_results("speed", payload, results_dir=tmp_path, stamp="20261123T000000Z")
    doc = load_latest("speed", tmp_path)
    assert doc is not None
    return doc


def pass_result(mode: str, **changes: object) -> chunk_bench.PassResult:
    values: dict = {
        "files": 633,
        "files_skipped": 2,
        "files_syntax_errors": 1,
        "lines": 326_633,
        "chunks": 20_120,
        "scan_s": 0.13,
        "chunk_s": 6.11,
        "peak_rss_mib": 543.2,
        "cpu_s": 8.6,
        "kinds": Counter({"function": 13_109, "method": 2_394, "class": 170}),
        "skipped": ["big.min.js (SKIP_REASON_TOO_LARGE: 3 MiB)"],
        "largest_by_lines": (44_462, 29_959, "typescript/lib/typescript.js:51073-95534 createTypeChecker"),
        "largest_by_tokens": (44_462, 29_959, "typescript/lib/typescript.js:51073-95534 createTypeChecker"),
    }
    values.update(changes)
    return chunk_bench.PassResult(mode, **values)


RESCANS = [
    {
        "workspace": "bench/.work/chunk-corpus",
        "files": 631,
        "first_scan_ms": 94.2,
        "rescan_ms": 39.4,
        "rescan_server_ms": 14.0,
        "changes": 0,
    },
    {
        "workspace": "bench/.work/ws-10k-files",
        "files": 10_000,
        "error": "DEADLINE_EXCEEDED: slow",
        "first_scan_ms": 454.0,
    },
]


def chunk_doc(tmp_path: Path, refs: bool = True, violations: tuple[Violation, ...] = ()) -> dict:
    syntactic = pass_result("syntactic")
    references = (
        pass_result(
            "with one-hop references",
            scan_s=0.11,
            chunk_s=19.32,
            peak_rss_mib=1072.0,
            references=29_538,
            largest_by_tokens=(1_099, 31_000, "q/queryClient.ts:78-1176 QueryClient"),
        )
        if refs
        else None
    )
    coverage = chunk_bench.CoverageReport(
        LineCoverage(lines=1000, covered=995, code_lines=800, code_covered=796, code_covered_by_symbols=700),
        files=631,
        files_without_chunks=["empty.ts"],
        worst=[(1, 80, "a.ts"), (3, 10, "b.ts"), (2, 5, "c.ts"), (1, 1, "d.ts")],
    )
    payload = chunk_bench.build_payload(
        syntactic,
        references,
        40_240,
        list(violations),
        0 if refs else None,
        RESCANS,
        Path("/tmp/bench/chunk-corpus"),
        frozenset({"z.ts"}),
        coverage,
        load_avg_end=(1.23, 1.6, 3.3),
    )
    write_results("chunk", payload, results_dir=tmp_path, stamp="20261123T000000Z")
    doc = load_latest("chunk", tmp_path)
    assert doc is not None
    return doc


SPEED_AND_CHUNK = """# R

<!-- bench:speed:start -->
hand-pasted speed table
<!-- bench:speed:end -->

<!-- bench:speed-full:start -->
<!-- bench:speed-full:end -->

<!-- bench:chunk:start -->
hand-pasted chunk table
<!-- bench:chunk:end -->

<!-- bench:chunk-full:start -->
<!-- bench:chunk-full:end -->
"""


# --- Speed -------------------------------------------------------------------------------


def test_speed_summary_has_one_row_per_goal(tmp_path: Path) -> None:
    text = render_speed_summary(speed_doc(tmp_path))
    assert text.startswith("_Generated by `make bench-report` from `bench/results/speed-latest.json`")
    assert "`ws-300k` on a fresh state dir (a true cold start)." in text
    assert "| Measure (ws-300k, 359,940 lines, 19,443 chunks) | Result | Goal |" in text
    assert (
        "| Cold: process start → first lexical answer (search first; it starts the sync) | **4.2 s** "
        "(0.8 s after SERVING; starting the 3 processes took 3.4 s) | < 5 s |"
    ) in text
    assert "| **330 s**, 19,443 / 19,443 chunks embedded, 64.8 chunks/s while polled (READY) | ≤ 6 min |" in text
    assert "| Warm query p50 / p95 over 50 queries (Search incl. its sync) | **62 / 85 ms** | ≤ 80 / 250 ms |" in text
    assert "| **+216 ms** (272 vs 56 ms; server sync 190 ms) | ≤ 200 ms |" in text
    # Settled size (after the retention), not the size at READY.
    assert "| Index on disk vs source | 10.0× (110.0 MiB for 11.0 MiB of source) |  |" in text
    assert "| Peak RSS (VmHWM) | analysis 1,356 MiB, embedding 372 MiB, retrieval n/a |  |" in text


def test_speed_full_is_the_table_the_bench_prints(tmp_path: Path) -> None:
    doc = speed_doc(tmp_path)
    full = render_speed_full(doc)
    assert full.endswith(speed_table(doc))
    assert "| Workspace | ws-300k: 991 files, 359,940 lines, 11.0 MiB of source |" in full
    assert "| **Cold time to first lexical answer** (start → results; goal < 5 s) | **4.25 s** (first Search" in full
    assert "| **Warm query** p50 / p95 (Search incl. its sync; goal ≤ 80 / 250 ms) | **62 / 85 ms**" in full
    assert "(goal ≤ 200 ms overhead) | **+216 ms**" in full


def test_speed_goals_come_from_the_results_file(tmp_path: Path) -> None:
    doc = speed_doc(tmp_path)
    doc["goals"] = {**doc["goals"], "cold_first_lexical_s": 3.0, "index_to_ready_s": 300.0}
    text = render_speed_summary(doc)
    assert "| < 3 s |" in text and "| ≤ 5 min |" in text


def test_speed_says_when_it_measured_a_restart_or_an_index_still_embedding(tmp_path: Path) -> None:
    results = speed_measures(
        indexing_status="INDEXING_STATUS_INDEXING", embedding_timed_out=True, embedded_chunks=11_776
    )
    for key in (
        "edit_search_ms",
        "nochange_search_ms",
        "edit_overhead_ms",
        "state_dir_bytes_settled",
        "index_bytes_settled",
    ):
        results.pop(key)
    doc = speed_doc(tmp_path, results, fresh=False)
    summary = render_speed_summary(doc)
    assert "cold rows measure a restart over an existing index" in summary
    assert "warm queries and the edit ran while background embedding went on" in summary
    assert "11,776 / 19,443 chunks embedded, 64.8 chunks/s while polled (INDEXING) — stopped waiting" in summary
    assert "One-file edit" not in summary  # no edit target in the workspace: no row, not a crash
    assert "| Index on disk vs source | 11.0× (121.0 MiB" in summary  # the READY size when it never settled
    assert "One-file edit" not in render_speed_full(doc)


def test_speed_payload_keeps_workspace_stats_apart_from_measures(tmp_path: Path) -> None:
    doc = speed_doc(tmp_path)
    assert doc["workspace"] == {
        "name": "ws-300k",
        "path": str(WORKSPACE),
        "files": 991,
        "lines": 359_940,
        "source_bytes": 11 * 2**20,
    }
    assert not set(run_speed.WORKSPACE_KEYS) & set(doc["measures"])
    assert doc["goals"] == run_speed.GOALS
    assert doc["settings"]["fresh_state_dir"] is True and doc["settings"]["max_embed_wait_s"] == 720.0


# --- Chunk -------------------------------------------------------------------------------


def test_chunk_summary_has_one_row_per_target(tmp_path: Path) -> None:
    text = render_chunk_summary(chunk_doc(tmp_path))
    assert text.startswith("_Generated by `make bench-report` from `bench/results/chunk-latest.json`")
    assert "| Measure (chunk-corpus: 631 files, 326,633 lines) | Result | Target |" in text
    assert "| Syntactic scan + chunk through gRPC | **52,345 lines/s** (6.2 s) | ≥ 50,000 lines/s |" in text
    assert "| Scan + chunk with one-hop references | **19.4 s** (29,538 references) | ≤ 60 s for 300k lines |" in text
    assert "| Node peak RSS with references | 1,072 MiB | ≤ 1,536 MiB |" in text
    assert "| 40,240 / **0** | 0 |" in text
    assert "| Line coverage (non-blank lines inside a chunk) | 99.50% | ≥ 99% |" in text
    assert (
        "| `createTypeChecker`: 44,462 lines, 29,959 tokens; `QueryClient`: 31,000 tokens | < 32,000 tokens |" in text
    )
    assert "| No-change re-scan | 631 files: **39 ms**; 10,000 files: **failed** | < 1,000 ms |" in text
    assert text.endswith("Chunks per kind: function 13,109, method 2,394, class 170.")


def test_chunk_full_is_the_table_the_bench_prints(tmp_path: Path) -> None:
    doc = chunk_doc(tmp_path)
    full = render_chunk_full(doc)
    assert full.endswith(chunk_table(doc))
    for row in (
        "| Workspace | /tmp/bench/chunk-corpus |",
        "| Files chunked / skipped / with syntax errors | 631 / 2 / 1 |",
        (
            "| Syntactic scan+chunk | 6.24 s (scan 0.13 s) = **52,345 lines/s** (target ≥ 50,000); "
            "Node CPU 8.6 s = 37,981 lines per CPU-second |"
        ),
        "| Node peak RSS, with references | **1,072 MiB** (target ≤ 1,536 MiB) |",
        "| Files left out of the reference pass (--skip-file) | z.ts |",
        "| Machine load (1/5/15-min load average at the end) | 1.2 / 1.6 / 3.3 |",
        (
            "| **Line coverage** (non-blank lines inside a chunk, comments counted) | **99.50%** = 995 / 1,000 "
            "(target ≥ 99%) |"
        ),
        "| Files with zero chunks (of files chunked) | 1 / 631: empty.ts |",
        "| Least covered files (uncovered / code lines) | b.ts 3/10; c.ts 2/5; a.ts 1/80 |",
        "| Chunk ids differing between the two passes | 0 |",
        (
            "| No-change re-scan, 10,000 files (bench/.work/ws-10k-files) | **failed**: DEADLINE_EXCEEDED: slow "
            "(first scan 454 ms) |"
        ),
        "Skipped files: big.min.js (SKIP_REASON_TOO_LARGE: 3 MiB)",
    ):
        assert row in full, row
    assert "Violations by kind" not in full


def test_chunk_without_the_reference_pass_and_with_violations(tmp_path: Path) -> None:
    violations = (
        Violation("tiling", "id1", "a.ts: overlap"),
        Violation("exact_source", "id2", "b.ts: differs"),
        Violation("tiling", "id3", "c.ts: overlap"),
    )
    doc = chunk_doc(tmp_path, refs=False, violations=violations)
    full = render_chunk_full(doc)
    assert "with one-hop references" not in full and "Chunk ids differing" not in full
    assert "| Chunks validated (both passes) / violations | 40,240 / **3** |" in full
    assert full.endswith(
        "Violations by kind: tiling 2, exact_source 1\n- tiling: a.ts: overlap\n"
        "- exact_source: b.ts: differs\n- tiling: c.ts: overlap"
    )
    summary = render_chunk_summary(doc)
    assert "one-hop references" not in summary and "40,240 / **3** | 0 |" in summary


def test_chunk_payload_keeps_only_the_first_violations(tmp_path: Path) -> None:
    many = tuple(Violation("tiling", f"id{i}", f"f{i}.ts: overlap") for i in range(chunk_bench.VIOLATIONS_KEPT + 5))
    doc = chunk_doc(tmp_path, violations=many)
    assert doc["violations"]["total"] == chunk_bench.VIOLATIONS_KEPT + 5
    assert len(doc["violations"]["first"]) == chunk_bench.VIOLATIONS_KEPT


# --- Sections in a README ----------------------------------------------------------------


def test_speed_and_chunk_sections_are_rewritten_and_then_stable(tmp_path: Path) -> None:
    results_dir = tmp_path / "results"
    speed_doc(results_dir)
    chunk_doc(results_dir)
    readme = tmp_path / "README.md"
    readme.write_text(SPEED_AND_CHUNK, encoding="utf-8")
    assert update_files([readme], results_dir) == [readme]
    text = readme.read_text(encoding="utf-8")
    assert "hand-pasted" not in text
    assert text.count("_Generated by `make bench-report`") == 4
    assert update_files([readme], results_dir, check=True) == []


@pytest.mark.parametrize("kind", ["speed", "chunk"])
def test_a_missing_results_file_leaves_its_sections_alone_unless_strict(tmp_path: Path, kind: str) -> None:
    results_dir = tmp_path / "results"
    # The other kind exists: only the sections of the missing one are left alone.
    (chunk_doc if kind == "speed" else speed_doc)(results_dir)
    readme = tmp_path / "README.md"
    readme.write_text(SPEED_AND_CHUNK, encoding="utf-8")
    assert update_files([readme], results_dir) == [readme]
    text = readme.read_text(encoding="utf-8")
    assert f"hand-pasted {kind} table" in text
    assert f"<!-- bench:{kind}-full:start -->\n<!-- bench:{kind}-full:end -->" in text
    with pytest.raises(ReportError, match=f"{kind}-latest.json"):
        update_files([readme], results_dir, check=True)
