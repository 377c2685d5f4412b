"""The edit-visible section: per-edit times as the bench measures them, summarised and rendered."""

from __future__ import annotations

from bench.report.speed import render_edit_visible
from bench.speed.edit_visible import summary


def edit(sync: float, search: float, found: int | None = 1, embedded: int = 0) -> dict:
    return {"sync_ms": sync, "search_ms": search, "visible_ms": sync + search, "server_sync_ms": sync - 4,
            "server_steps_ms": {"chunk": sync / 2, "write": sync / 4},
            "server_search_ms": search - 10, "chunks_upserted": 3, "chunks_embedded": embedded,
            "found_rank": found}


def payload(runs: list[dict]) -> dict:
    return {"kind": "edit-visible", "run": {"date_utc": "2026-12-01T00:00:00+00:00"},
            "workspace": {"name": "ws-300k", "files": 972, "lines": 339_752, "bytes": 10_381_685,
                          "target": "packages/rxjs/src/internal/operators/map.ts"},
            "index": {"chunks": 22_141}, "think_s": 2.0, "summary": summary(runs), "per_edit": runs}


def test_the_first_edit_after_a_restart_is_kept_out_of_the_percentiles() -> None:
    runs = [edit(1000, 90), edit(40, 30), edit(50, 30), edit(60, 40, found=None, embedded=2)]
    s = summary(runs)
    assert s["sync_ms"]["p50"] == 50 and s["visible_ms"]["p50"] == 80
    assert s["first_edit"]["sync_ms"] == 1000
    assert s["found_in_top10"] == 3 and s["chunks_embedded_inline"] == 2
    assert s["met"] is True
    assert s["server_steps_p50_ms"] == {"chunk": 25.0, "write": 12.5}


def test_the_section_says_whether_the_goal_was_met_and_how_often_the_edit_was_found() -> None:
    missed = render_edit_visible(payload([edit(1000, 90), edit(110, 60), edit(120, 70, found=None)]))
    assert "| **Visible: sync + search** (goal ≤ 100 ms: **missed**) | 180 | " in missed
    assert "p50 ms per step: chunk 57.5, write 28.8." in missed
    assert "top ten after 2 of 3 edits" in missed and "first edit after a restart: sync 1000 ms" in missed
    met = render_edit_visible(payload([edit(300, 90), edit(40, 30), edit(50, 30)]))
    assert "(goal ≤ 100 ms: met) | 75 |" in met
