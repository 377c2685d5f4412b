"""The shard-speed section: runs shaped as run_shard_speed writes them, and the prediction."""

from __future__ import annotations

import pytest
from bench.report.speed import render_shard_speed, render_store_speed, shard_prediction


def run(workers: int, total: float, cpu: float) -> dict:
    return {"workers": workers, "chunks": 1000,
            "seconds": {"total": total, "scan": 0.5, "open_and_plan": 0.5, "workers": total - 1.5, "commit": 0.5},
            "shards": [{"seconds": {"first_answer": 2.0}}] * workers,
            "cpu_seconds": {"workers": cpu / 4, "analysis": cpu * 3 / 4}, "analysis_peak_rss_mib": [900] * workers}


def test_the_prediction_is_the_line_through_cpu_against_workers():
    # 10 CPU s every worker repeats, 40 that divide: 50, 60, 70.
    runs = [run(1, 50.0, 50.0), run(2, 45.0, 60.0), run(3, 48.0, 70.0)]
    p = shard_prediction(runs, 16)
    assert p["per_worker_cpu_s"] == pytest.approx(10.0)
    assert p["divisible_cpu_s"] == pytest.approx(40.0)
    assert p["seconds"] == pytest.approx(10.0 + 40.0 / 16 + 1.5)
    assert p["speedup"] == pytest.approx(50.0 / p["seconds"])
    assert shard_prediction(runs[:1], 16) is None, "one worker count says nothing about the slope"


def test_the_section_shows_every_run_and_the_prediction():
    doc = {"kind": "shard-speed", "run": {"machine": {"nproc": 2}},
           "workspace": {"name": "ws", "files": 10, "lines": 100},
           "settings": {"profile": "code-static", "analysis_services": "one per worker"},
           "runs": {"local": [run(1, 50.0, 50.0), run(2, 40.0, 60.0)]}, "baseline": {"seconds": 65.0, "chunks": 1000}}
    text = render_shard_speed(doc)
    assert "| local | 2 | **40.0** | 0.5 | 38.5 | 0.5 | 1.25x | 2.0 | 15 / 45 | 1,000 | – |" in text
    assert "today's single-process sync" in text.lower() and "**65.0 s**" in text
    assert "Predicted for 16 cores and as many workers (local): **14.0 s**" in text


def test_the_store_speed_section_shows_each_store_and_refresh():
    doc = {"kind": "store-speed", "run": {"machine": {"nproc": 2}}, "profile": "code-static", "queries": 50,
           "workspace": {"name": "ws-300k", "files": 972, "lines": 339752},
           "stores": [{"store": "local", "index_s": 61.04, "search": {"local disk": {"queries": 50, "p50_ms": 40.0,
                                                                                     "p95_ms": 90.5}}},
                      {"store": "s3 (moto)", "index_s": 70.0,
                       "search": {"local copy (default)": {"queries": 50, "p50_ms": 60.0, "p95_ms": 120.0},
                                  "no copy: reads the bucket": {"queries": 50, "p50_ms": 70.0, "p95_ms": 130.0}}}]}
    text = render_store_speed(doc)
    assert "| local | 61.0 | local disk | 40.0 | **90.5** | 50 |" in text
    assert "| s3 (moto) | 70.0 | no copy: reads the bucket | 70.0 | **130.0** | 50 |" in text
