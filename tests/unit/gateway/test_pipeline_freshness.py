"""The pipeline's freshness decision, against fake clients: sync first within the budget,
answer from the index as it stands past it, mark what the sync has not written yet."""

from __future__ import annotations

import time

import pytest
from codecompass_gateway.answer import answer_to_dict
from codecompass_gateway.pipeline import RETRIEVE, SELECT, SYNC, Pipeline, PipelineRequest

from codecompass.clients.errors import UNAVAILABLE, ServiceError
from codecompass.common.chunks import Chunk, Language, NodeKind
from codecompass.common.config import ConfigError, GatewaySettings, Settings, load_settings_from_environ
from codecompass.contracts.retrieval.model import (
    FreshnessStatus,
    IndexingStatus,
    IndexPhase,
    ResultCompleteness,
    SearchMetadata,
    SearchOutcome,
    SyncOutcome,
    SyncStats,
)
from codecompass.contracts.selection.model import Reason, SelectedResult, SelectOutcome
from codecompass.policy.ranking import RankedResult


def _chunk(cid: str, path: str, parent: str = "") -> Chunk:
    return Chunk(id=cid, snippet_hash=cid, relative_path=path, language=Language.TYPESCRIPT,
                 node_kind=NodeKind.FUNCTION, name=cid, qualified_name=cid, parent_id=parent, child_ids=(),
                 depth=1 if parent else 0, signature=f"{cid}()", full_source="",
                 collapsed_source=f"function {cid}() {{}}",
                 start_line=1, end_line=3, jsdoc="", jsdoc_start_line=0, relevant_imports=(), is_test=False,
                 embedding_text="")


RESULTS = tuple(
    RankedResult(chunk=chunk, score=score, lexical_score=score, vector_similarity=0.0, provenance="lexical",
                 lexical_rank=rank, semantic_rank=0)
    for rank, (chunk, score) in enumerate(
        [(_chunk("edited", "src/edited.ts", parent="Edited"), 0.9), (_chunk("clean", "src/clean.ts"), 0.8)], start=1)
)
METADATA = SearchMetadata(indexing_status=IndexingStatus.READY, result_completeness=ResultCompleteness.COMPLETE,
                          semantic_fallback=False, semantic_skipped_reason="", semantic_ratio_used=0.3,
                          external_provider_blocked=False, embedding_model_id="m", embedding_model_version="1")


class FakeRetrieval:
    def __init__(self, sync: SyncOutcome | ServiceError) -> None:
        self._sync = sync
        self.calls: list[tuple] = []

    def sync(self, workspace_root: str, budget_ms: int, timeout_s: float) -> SyncOutcome:
        # Noted when it returns: a search noted after it read the index as the sync left it.
        time.sleep(0.05)
        self.calls.append(("sync", budget_ms, timeout_s))
        if isinstance(self._sync, ServiceError):
            raise self._sync
        return self._sync

    def search(self, query, timeout_s: float) -> SearchOutcome:
        self.calls.append(("search",))
        return SearchOutcome(results=RESULTS, metadata=METADATA)

    def kinds(self) -> list[str]:
        return [c[0] for c in self.calls]

    def close(self) -> None:
        pass


class FakeSelection:
    """Selects the clean candidate as itself and the edited one merged into its parent, whose id
    is no candidate's."""

    def __init__(self) -> None:
        self.queries: list = []

    def select(self, query, timeout_s: float) -> SelectOutcome:
        self.queries.append(query)
        def picked(cid: str, path: str) -> SelectedResult:
            return SelectedResult(chunk_id=cid, relative_path=path, start_line=1, end_line=3, qualified_name=cid,
                                  node_kind=NodeKind.FUNCTION, language=Language.TYPESCRIPT, score=0.5,
                                  relevance=0.5, provenance="lexical", reasons=(Reason.MATCH,), why="", header="",
                                  source="", token_count=3)

        return SelectOutcome(results=(picked("Edited", "src/edited.ts"), picked("clean", "src/clean.ts")),
                             total_tokens=6, max_tokens=100, min_relevance=0.0)

    def close(self) -> None:
        pass


def _pipeline(sync: SyncOutcome | ServiceError, budget_ms: int = 300) -> tuple[Pipeline, FakeRetrieval]:
    settings = Settings(state_dir=None, gateway=GatewaySettings(freshness_budget_ms=budget_ms))  # type: ignore[arg-type]
    pipeline = Pipeline(settings)
    pipeline.close()  # the real clients' channels; fakes take their place
    fake = FakeRetrieval(sync)
    pipeline.retrieval = fake  # type: ignore[assignment]
    pipeline.selection = FakeSelection()  # type: ignore[assignment]
    return pipeline, fake


def _request(**kwargs) -> PipelineRequest:
    return PipelineRequest(workspace_root="/ws", query="edited", rerank=False, **kwargs)


def test_a_sync_within_the_budget_answers_fresh_and_marks_nothing() -> None:
    stats = SyncStats(files_changed=1, chunks_upserted=2, duration_ms=40.0)
    pipeline, fake = _pipeline(SyncOutcome(finished=True, freshness_status=FreshnessStatus.FRESH, stats=stats))
    answer = pipeline.run(_request(select=False))
    # The sync wrote: the search that started with it read the index before its writes, so the
    # answer's search runs after it.
    assert fake.kinds() == ["search", "sync", "search"]
    assert fake.calls[1][1] == 300 and fake.calls[1][2] > 0.3
    assert answer.freshness_status == "fresh" and not any(c.stale for c in answer.candidates)
    assert SYNC in answer.stage_ms and SYNC not in answer.skipped
    meta = answer_to_dict(answer)["metadata"]
    assert meta["freshness_status"] == "fresh" and meta["sync"]["files_changed"] == 1
    assert meta["pending_files"] == 0 and meta["sync_ms"] == answer.stage_ms[SYNC]


def test_a_sync_that_wrote_nothing_lets_the_search_that_started_with_it_answer() -> None:
    stats = SyncStats(files_skipped=3, duration_ms=2.0)
    pipeline, fake = _pipeline(SyncOutcome(finished=True, freshness_status=FreshnessStatus.FRESH, stats=stats))
    answer = pipeline.run(_request(select=False))
    assert fake.kinds() == ["search", "sync"]  # one search, alongside the sync
    assert answer.freshness_status == "fresh" and len(answer.candidates) == 2
    assert {SYNC, RETRIEVE} <= set(answer.stage_ms)


def test_past_the_budget_results_of_files_not_yet_synced_are_stale() -> None:
    pipeline, _ = _pipeline(SyncOutcome(finished=False, freshness_status=FreshnessStatus.SYNCING,
                                        pending_paths=("src/edited.ts", "src/other.ts"), pending_count=2))
    answer = pipeline.run(_request(select=False))
    assert answer.freshness_status == "syncing"
    assert {c.result.chunk.id: c.stale for c in answer.candidates} == {"edited": True, "clean": False}
    data = answer_to_dict(answer)
    assert {r["id"]: r["stale"] for r in data["results"]} == {"edited": True, "clean": False}
    assert data["metadata"]["pending_files"] == 2 and data["metadata"]["pending_known"]
    assert data["metadata"]["sync"] is None


def test_a_selected_result_is_stale_through_its_candidate_or_its_file() -> None:
    # The candidate is stale (its id maps back), and a merged parent from the same file is too.
    pipeline, _ = _pipeline(SyncOutcome(finished=False, freshness_status=FreshnessStatus.SYNCING,
                                        pending_paths=("src/edited.ts",), pending_count=1))
    answer = pipeline.run(_request())
    assert SELECT in answer.stage_ms
    results = answer_to_dict(answer)["results"]
    assert {r["id"]: r["stale"] for r in results} == {"Edited": True, "clean": False}


def test_while_the_first_index_is_written_the_sync_reports_at_once_instead_of_waiting_its_budget() -> None:
    pipeline, fake = _pipeline(SyncOutcome(finished=False, freshness_status=FreshnessStatus.SYNCING,
                                           pending_paths=("src/edited.ts",), pending_count=1))
    answer = pipeline.run(_request(select=False, building=True))
    assert fake.kinds() == ["search", "sync"]  # the search that started with it answers
    assert answer.freshness_status == "syncing"
    assert {c.result.chunk.id: c.stale for c in answer.candidates} == {"edited": True, "clean": False}
    pipeline.run(_request(select=False))  # built: the configured budget again
    # 1 ms, the least there is (0 asks the sync to finish), then the configured 300.
    assert [budget_ms for kind, budget_ms, *_ in (c for c in fake.calls if c[0] == "sync")] == [1, 300]


def test_a_sync_still_scanning_says_what_it_does_not_know() -> None:
    pipeline, _ = _pipeline(SyncOutcome(finished=False, freshness_status=FreshnessStatus.SYNCING, scanning=True))
    answer = pipeline.run(_request(select=False))
    meta = answer_to_dict(answer)["metadata"]
    assert meta["freshness_status"] == "syncing" and meta["pending_known"] is False
    assert not any(c.stale for c in answer.candidates)


def test_a_sync_service_error_is_no_search_failure() -> None:
    error = ServiceError("retrieval", "127.0.0.1:1", UNAVAILABLE, "connection refused")
    pipeline, fake = _pipeline(error)
    answer = pipeline.run(_request(select=False))
    assert answer.freshness_status == "unknown" and len(answer.candidates) == 2
    assert answer.skipped[SYNC].startswith("retrieval service not running at 127.0.0.1:1")
    assert fake.kinds() == ["search", "sync"]  # nothing was written: the search that started with it answers


def test_a_failed_sync_answers_from_the_index_and_says_why() -> None:
    pipeline, _ = _pipeline(SyncOutcome(finished=True, freshness_status=FreshnessStatus.FAILED,
                                        error="analysis service unreachable at 127.0.0.1:1: down"))
    answer = pipeline.run(_request(select=False))
    assert answer.freshness_status == "failed" and len(answer.candidates) == 2
    assert answer.skipped[SYNC] == "sync failed: analysis service unreachable at 127.0.0.1:1: down"


def test_sync_off_skips_the_stage() -> None:
    pipeline, fake = _pipeline(SyncOutcome(finished=True, freshness_status=FreshnessStatus.FRESH))
    answer = pipeline.run(_request(select=False, sync=False))
    assert [c[0] for c in fake.calls] == ["search"]
    assert answer.freshness_status == "unknown" and answer.skipped[SYNC] == "off"
    assert set(answer.stage_ms) == {RETRIEVE}


@pytest.mark.parametrize(("sync", "fresh"), [
    (SyncOutcome(finished=True, freshness_status=FreshnessStatus.FRESH, stats=SyncStats(files_changed=1)), True),
    (SyncOutcome(finished=True, freshness_status=FreshnessStatus.FRESH, stats=SyncStats()), True),
    (SyncOutcome(finished=False, freshness_status=FreshnessStatus.SYNCING, pending_paths=("src/edited.ts",),
                 pending_count=1), False),
    (SyncOutcome(finished=False, freshness_status=FreshnessStatus.SYNCING, scanning=True), False),
    (SyncOutcome(finished=True, freshness_status=FreshnessStatus.FAILED, error="down"), False),
    (ServiceError("retrieval", "127.0.0.1:1", UNAVAILABLE, "connection refused"), False),
    (None, False),
])
def test_selection_may_render_from_the_index_only_after_a_fresh_sync(sync, fresh: bool) -> None:
    pipeline, _ = _pipeline(sync or SyncOutcome(finished=True, freshness_status=FreshnessStatus.FRESH))
    pipeline.run(_request(sync=sync is not None))
    (query,) = pipeline.selection.queries  # type: ignore[attr-defined]
    assert query.index_fresh is fresh


@pytest.mark.parametrize(("sync", "fresh"), [
    # The build planned its files (its phase): the sync queued behind it has not (scanning).
    (SyncOutcome(finished=False, freshness_status=FreshnessStatus.SYNCING, pending_new_files=300, scanning=True,
                 phase=IndexPhase.LEXICAL, phase_files_done=42, phase_files_total=280), True),
    (SyncOutcome(finished=False, freshness_status=FreshnessStatus.SYNCING, pending_paths=("src/edited.ts",),
                 pending_count=1, phase=IndexPhase.CHUNKING), False),
    (SyncOutcome(finished=False, freshness_status=FreshnessStatus.SYNCING, phase=IndexPhase.SCANNING), False),
    (SyncOutcome(finished=False, freshness_status=FreshnessStatus.SYNCING, scanning=True), False),
    (SyncOutcome(finished=False, freshness_status=FreshnessStatus.NOT_INDEXED), False),
    (SyncOutcome(finished=True, freshness_status=FreshnessStatus.FAILED, error="down"), False),
])
def test_while_the_first_index_is_written_its_chunks_render_from_the_index_unless_one_is_stale(sync, fresh) -> None:
    pipeline, _ = _pipeline(sync)
    pipeline.run(_request(building=True))
    (query,) = pipeline.selection.queries  # type: ignore[attr-defined]
    assert query.index_fresh is fresh


@pytest.mark.parametrize(("budget_ms", "timeout_s"), [(0, 30.0), (1000, 3.0)])
def test_the_sync_deadline_follows_the_budget(budget_ms: int, timeout_s: float) -> None:
    pipeline, fake = _pipeline(SyncOutcome(finished=True, freshness_status=FreshnessStatus.FRESH), budget_ms)
    pipeline.run(_request(select=False))
    assert ("sync", budget_ms, pytest.approx(timeout_s)) in fake.calls


def test_the_budget_is_configurable_and_range_checked(tmp_path) -> None:
    env = {"CODECOMPASS_STATE_DIR": str(tmp_path), "HOME": str(tmp_path)}
    assert load_settings_from_environ(env).gateway.freshness_budget_ms == 300
    env["CODECOMPASS_GATEWAY_FRESHNESS_BUDGET_MS"] = "1500"
    assert load_settings_from_environ(env).gateway.freshness_budget_ms == 1500
    env["CODECOMPASS_GATEWAY_FRESHNESS_BUDGET_MS"] = "-1"
    with pytest.raises(ConfigError, match="CODECOMPASS_GATEWAY_FRESHNESS_BUDGET_MS"):
        load_settings_from_environ(env)
