"""Failure drills (issue 19 §4) on a deployment of every service apart: one index writer, two
searchers behind one address list, the gateway over streamable HTTP with its bearer token. Each
test runs one of bench/drills.py's drills, shorter, and asserts what it measured: a searcher, the
embedding service or the writer SIGKILLed under load, and the object store refusing or hanging
under a writer and searchers on s3://. `make bench-drills` runs them at full length."""

from __future__ import annotations

from pathlib import Path

import pytest
from bench import drills
from bench.lib.loadgen import GRPC_SEARCH, SEMANTIC_SEARCH

pytestmark = [pytest.mark.slow, pytest.mark.timeout(60)]


def test_a_searcher_killed_under_load_costs_no_call(tmp_path: Path) -> None:
    r = drills.searcher_killed(tmp_path, seconds=8.0, kill_at_s=3.0, mcp=3, grpc=2, modules=10)
    assert r["before"]["calls"] > 0 and r["after"]["calls"] > 0
    assert r["summary"]["errors"] == 0, r["summary"]["error_samples"]
    assert r["in_flight_at_kill"]["errors"] == 0
    assert drills.verdict("searcher_killed", r)[1]


def test_the_embedding_service_killed_searches_go_on_flagged_and_recover(tmp_path: Path) -> None:
    r = drills.embedding_killed(tmp_path, seconds=11.0, kill_at_s=3.0, restart_at_s=6.5, mcp=2, grpc=2, modules=5)
    assert r["before"]["errors"] == r["down"]["errors"] == r["after"]["errors"] == 0
    assert r["before"]["flagged"] == 0
    for kind in (GRPC_SEARCH, SEMANTIC_SEARCH):
        down = r["down"]["by_kind"][kind]
        # By the static vectors: the answer says the primary model was unavailable, not that
        # search went lexical (semantic_fallback is for an index with no vector channel left).
        needed_the_model = down["answered"] - down["flags"].get(drills.LEXICAL_ONLY, 0)
        assert needed_the_model > 0
        assert down["flags"].get("primary_unavailable_reason=embedding_unavailable") == needed_the_model, down
        assert "semantic_fallback=True" not in down["flags"]
    assert r["after"]["flagged"] == 0 and r["recovered_after_s"] is not None
    assert drills.verdict("embedding_killed", r)[1]


def test_the_writer_killed_mid_sync_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    r = drills.writer_killed(tmp_path, modules=30, grpc=2, seconds=12.0)
    rows = r["rows"]
    assert r["killed_in_phase"] in ("chunking", "writing", "embedding", "lexical")
    assert rows["after_kill"] == rows["old"]  # nothing of the edit was committed
    assert r["searches"]["errors"] == 0 and r["searches"]["calls"] > 0
    assert set(r["searches"]["totals_seen"]) <= {rows["old"], rows["clean"]}
    assert rows["clean"] != rows["old"] and rows["equal_to_clean"] and rows["duplicate_ids"] == 0
    assert drills.verdict("writer_killed", r)[1]


@pytest.mark.parametrize("mode", ["refused", "hung"])
def test_the_object_store_down_then_back_with_no_restart(tmp_path: Path, mode: str) -> None:
    r = drills.store_down(tmp_path, mode, outage_at_s=2.0, outage_s=5.0, seconds=11.0, modules=5)
    down = r["sync_while_down"]
    assert not down["ok"] and down["seconds"] <= drills.SYNC_DEADLINE_S + 1.0
    assert down["error_lines"] == 1 and not down["traceback"]
    assert "did not answer in time" in down["error"]
    assert r["gateway_sync_while_down"]["seconds"] <= drills.GATEWAY_SYNC_DEADLINE_S + 1.0
    rows = r["rows"]
    assert rows["old_rows_intact"] and rows["added_by_the_outage_sync"] == r["module_rows"]
    assert rows["duplicate_ids"] == 0 and rows["searchers_see_last_sync"] and r["sync_after_recovery"]["ok"]
    # The searchers read their local copy of the index: the outage costs them nothing.
    assert r["searches"]["down"]["errors"] == r["searches"]["after"]["errors"] == 0, r["searches"]
    assert drills.verdict(f"store_{mode}", r)[1]
