"""The cold index's stage profile: stage walls from progress reports, log and span parsing, and the
rendered section."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from types import SimpleNamespace

from bench.report.speed import render_index_stages
from bench.speed import index_stages


def test_stage_walls_run_from_each_phase_to_the_next() -> None:
    walls = index_stages.stage_walls({"scanning": 0.0, "lexical": 0.4, "chunking": 12.0, "embedding": 40.0,
                                      "done": 700.0}, 700.0)
    assert walls == {"scan": 0.4, "lexical pass": 11.6, "reference pass": 28.0, "primary embedding": 660.0}
    # A warm index reports no lexical pass: the reference pass starts after the scan.
    assert index_stages.stage_walls({"chunking": 0.2}, 3.0) == {"scan": 0.2, "reference pass": 2.8}


def test_log_records_and_spans_are_read_back(tmp_path: Path) -> None:
    lines = [json.dumps({"msg": "index maintained", "maintain_ms": 12.5}), "not json, a stray line",
             json.dumps({"msg": "sync wrote changes", "chunk_ms": 5.0, "note": "index maintained"})]
    service = SimpleNamespace(log_lines=lines)
    assert [r["maintain_ms"] for r in index_stages.log_records(service, "index maintained")] == [12.5]
    trace = tmp_path / "spans.jsonl"
    span = {"service": "analysis", "name": "codecompass.v1.CodeAnalysisService/ChunkFiles",
            "start_ns": 0, "end_ns": 2_000_000_000, "attributes": {"codecompass.chunk.references": True}}
    trace.write_text(json.dumps(span) + "\n" + json.dumps({**span, "attributes": {}}) + "\n")
    found = index_stages.spans(trace)
    assert index_stages.span_seconds(found, "analysis", span["name"], **{"codecompass.chunk.references": True}) \
        == (2.0, 1)
    assert index_stages.span_seconds(found, "analysis", span["name"]) == (4.0, 2)


def test_the_section_shows_each_stage_and_its_share() -> None:
    doc = {
        "kind": "index-stages",
        "run": {"date_utc": "2026-11-30T09:00:00+00:00", "git": {"commit": "abc", "dirty_files": []},
                "machine": {"nproc": 2, "ram_gib": 23.5, "load_avg": [1, 1, 1]}},
        "workspace": {"name": "ws-300k", "files": 972, "lines": 339_752, "source_bytes": 10_000_000},
        "ready_s": 100.0, "chunks": 22_141, "embedded_chunks": 22_141,
        "stages_s": {"scan": 1.0, "lexical pass": 9.0, "reference pass": 20.0, "primary embedding": 70.0},
        "sync_ms": {"chunk": 16_000.0, "static_vectors": 10_000.0},
        "analysis": {"lexical_chunk_s": 7.2, "lexical_calls": 4, "reference_chunk_s": 38.0, "reference_calls": 8},
        "embedding": {"service_s": 60.0, "calls": 692, "chunks_per_s": 316.3},
        "maintenance": {"count": 5, "total_s": 4.0, "longest_s": 1.5},
        "cpu_s": {"analysis": 59.0, "embedding": 100.0, "retrieval": 40.0},
        "peak_rss_mib": {"analysis": 1420.0, "embedding": 298.0, "retrieval": 1093.0},
        "index_bytes_at_ready": 50 * 2**20,
    }
    text = render_index_stages(doc)
    assert "| primary embedding | 70.0 | 70% |" in text
    assert "| **to READY** | **100.0** | 100% |" in text
    assert "5 runs, longest 1.5 s" in text and "316.3 chunks/s" in text
    assert "state dir at READY 50.0 MiB" in text


def test_the_script_says_how_to_run_it() -> None:
    out = subprocess.run([".venv/bin/python", "-m", "bench.speed.index_stages", "--help"], capture_output=True,
                         text=True, check=True).stdout
    assert "--workspace" in out and "READY" in out
