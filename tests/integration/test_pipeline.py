"""The gateway's pipeline end to end: real analysis, embedding, retrieval, rerank and selection
services, each its own process, on the sample workspace."""

from __future__ import annotations

import dataclasses
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from codecompass_gateway.answer import answer_to_dict
from codecompass_gateway.pipeline import HUBS, RERANK, RETRIEVE, SELECT, SYNC, Pipeline, PipelineRequest

from codecompass.clients.retrieval import RetrievalClient
from codecompass.common.config import load_settings
from codecompass.common.tokens import count_tokens
from codecompass.contracts.selection.model import Reason
from codecompass.policy.selection import LOW_CONFIDENCE_MAX_TOKENS

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def stack(indexed_stack: dict[str, str]) -> dict[str, str]:
    return {"root": indexed_stack["root"], "retrieval_addr": indexed_stack["RETRIEVAL_ADDR"],
            "rerank_addr": indexed_stack["RERANK_ADDR"], "selection_addr": indexed_stack["SELECTION_ADDR"]}


@pytest.fixture
def pipeline(stack: dict[str, str]) -> Iterator[Pipeline]:
    settings = dataclasses.replace(load_settings(), **{k: v for k, v in stack.items() if k.endswith("_addr")})
    running = Pipeline(settings)
    yield running
    running.close()


def test_the_answer_is_selected_rendered_code_within_budget(pipeline, stack, span_exporter) -> None:
    answer = pipeline.run(PipelineRequest(workspace_root=stack["root"], query="how are tokens validated",
                                          max_tokens=3000))
    selection = answer.selection
    assert selection is not None and selection.results
    assert selection.total_tokens <= 3000
    assert sum(r.token_count for r in selection.results) == selection.total_tokens
    names = [r.qualified_name for r in selection.results]
    # validateToken is a third of its class: too little of it to merge into it (MERGE_MIN_COVER),
    # so it stands alone, and its lines are shown once (the class, if kept, shows it collapsed).
    shown = [r for r in selection.results if "decoded = decodeJwt(token);" in r.source]
    assert [r.qualified_name for r in shown] == ["TokenService.validateToken"] and names[0] == shown[0].qualified_name
    top = shown[0]
    assert Reason.MERGED_PARENT not in top.reasons and not top.expanded_child_ids
    assert top.header == "// src/auth/tokenService.ts > TokenService.validateToken"
    assert count_tokens(top.header + "\n" + top.source) == top.token_count
    assert set(answer.stage_ms) == {SYNC, RETRIEVE, SELECT} and answer.skipped == {HUBS: "off"}
    assert answer.rerank_provider == "local" and answer.freshness_status == "fresh"
    assert not any(r["stale"] for r in answer_to_dict(answer)["results"])
    spans = {s.name for s in span_exporter.get_finished_spans()}
    assert {"pipeline", "pipeline.sync", "pipeline.retrieve", "pipeline.select"} <= spans


def test_a_query_with_no_answer_is_flagged_and_holds_the_closest_within_the_small_budget(pipeline, stack) -> None:
    for query in ("purple elephant quantum banana", "zzqxNotAName", "?!;"):
        answer = pipeline.run(PipelineRequest(workspace_root=stack["root"], query=query))
        assert answer.verdict.low_confidence and answer.selection is not None, query
        assert answer.selection.max_tokens == LOW_CONFIDENCE_MAX_TOKENS, query
        assert 0 < answer.selection.total_tokens <= LOW_CONFIDENCE_MAX_TOKENS, query


def test_hubs_connect_several_results(pipeline, stack) -> None:
    answer = pipeline.run(PipelineRequest(workspace_root=stack["root"], query="how are tokens validated",
                                          hubs=True, select=False, limit=40))
    assert HUBS in answer.stage_ms
    hubs = [c for c in answer.candidates if c.connected_ids]
    assert hubs, "the sample workspace's token code shares types (JwtPayload, AuthConfig)"
    assert all(len(c.connected_ids) >= 2 for c in hubs)
    added = [c for c in answer.candidates if c.reason is Reason.HUB]
    assert len(added) == answer.hubs_added and all(c.result.provenance == "structure" for c in added)


def test_an_external_reranker_behind_closed_gates_keeps_the_first_stage(pipeline, stack) -> None:
    plain = pipeline.run(PipelineRequest(workspace_root=stack["root"], query="revoke a token", select=False))
    gated = pipeline.run(PipelineRequest(workspace_root=stack["root"], query="revoke a token", select=False,
                                         rerank_provider="llm"))
    # Answered as the rerank service would, without the call (`up` runs no rerank service for it).
    assert RERANK not in gated.stage_ms and RERANK not in gated.skipped
    assert (gated.rerank_provider, gated.rerank_fallback_reason) == ("local", "external_provider_blocked")
    assert [c.result.chunk.id for c in gated.candidates] == [c.result.chunk.id for c in plain.candidates]


def test_dead_optional_services_skip_their_stage(stack, free_port) -> None:
    dead = f"127.0.0.1:{free_port}"
    settings = load_settings()
    # Gates open, so the model reranker is asked for (and its service is needed).
    gates = dataclasses.replace(settings.rerank, external_provider_enabled=True, allow_code_payload_to_external=True)
    settings = dataclasses.replace(settings, retrieval_addr=stack["retrieval_addr"], rerank_addr=dead,
                                   selection_addr=dead, rerank=gates)
    running = Pipeline(settings)
    try:
        answer = running.run(PipelineRequest(workspace_root=stack["root"], query="revoke a token",
                                             rerank_provider="cohere", limit=3))
    finally:
        running.close()
    assert answer.selection is None and len(answer.candidates) == 3
    assert answer.skipped[RERANK].startswith("rerank service not running at")
    assert answer.skipped[SELECT].startswith("selection service not running at")


# A change big enough that its sync runs for seconds: the reference pass over this many new
# files needs the whole program built, and the edited file is written last.
_BIG_CHANGE_FILES = 400


def _slug(answer) -> str:
    return next(c.result.chunk.collapsed_source for c in answer.candidates if c.result.chunk.name == "slugify")


def test_the_gateway_owns_freshness(start_python_service, analysis_server: str, sample_workspace: Path,
                                    tmp_path: Path) -> None:
    """Its own retrieval and embedding services: the big change below keeps them busy for a while,
    which must not slow the other tests' queries."""
    root = tmp_path / "ws"
    shutil.copytree(sample_workspace, root)
    _, embedding = start_python_service("codecompass.embedding", {"CODECOMPASS_EMBEDDING_PROFILE": "minilm"})
    _, retrieval = start_python_service("codecompass.retrieval", {
        "ANALYSIS_ADDR": analysis_server, "EMBEDDING_ADDR": embedding,
        "CODECOMPASS_STATE_DIR": str(tmp_path / "state")})
    base = dataclasses.replace(load_settings(), retrieval_addr=retrieval)

    def pipeline(budget_ms: int) -> Pipeline:
        return Pipeline(dataclasses.replace(base, gateway=dataclasses.replace(base.gateway,
                                                                              freshness_budget_ms=budget_ms)))

    # A budget any edit-sized sync fits in, however loaded the test machine, and one none does.
    quick, hasty = pipeline(20_000), pipeline(1)
    client = RetrievalClient(retrieval)
    query = PipelineRequest(workspace_root=str(root), query="slugify", select=False)
    try:
        for _ in client.index(str(root), wait_for_embeddings=True, timeout_s=300):
            pass
        strings = root / "src" / "utils" / "strings.ts"
        original = strings.read_text()
        strings.write_text(original.replace(".toLowerCase()", ".toLowerCase() /* edit-1 */"))

        # Without the sync stage, the search answers from the index as it stands: the old code.
        unsynced = quick.run(dataclasses.replace(query, sync=False))
        assert unsynced.freshness_status == "unknown" and unsynced.skipped[SYNC] == "off"
        assert "edit-1" not in _slug(unsynced)
        # Within the budget (an edit-sized sync), the answer is fresh.
        fresh = quick.run(query)
        assert fresh.freshness_status == "fresh" and "edit-1" in _slug(fresh)
        assert not any(c.stale for c in fresh.candidates)

        # A big change with a 1 ms budget: the answer comes from the index as it stands, says
        # so, and marks the results of the file not yet synced.
        for i in range(_BIG_CHANGE_FILES):
            (root / "src" / "gen").mkdir(exist_ok=True)
            (root / "src" / "gen" / f"module{i}.ts").write_text(
                f"import {{ slugify }} from '../utils/strings';\n"
                f"export function label{i}(title: string): string {{\n  return slugify(title) + '-{i}';\n}}\n")
        strings.write_text(original.replace(".toLowerCase()", ".toLowerCase() /* edit-2 */"))
        syncing = None
        deadline = time.monotonic() + 60
        while syncing is None and time.monotonic() < deadline:
            answer = hasty.run(query)
            assert answer.freshness_status in ("syncing", "fresh"), answer.freshness_status
            if answer.freshness_status == "fresh":
                break
            if any(c.stale for c in answer.candidates):
                syncing = answer
            time.sleep(0.05)
        assert syncing is not None, "the sync finished before any answer saw it running"
        assert answer.stage_ms[SYNC] < 1000
        slug = next(c for c in syncing.candidates if c.result.chunk.name == "slugify")
        assert slug.stale and "edit-2" not in slug.result.chunk.collapsed_source
        assert all(c.stale == (c.result.chunk.relative_path == "src/utils/strings.ts") for c in syncing.candidates), [
            (c.result.chunk.relative_path, c.stale) for c in syncing.candidates]
        data = answer_to_dict(syncing)
        assert data["metadata"]["freshness_status"] == "syncing" and data["metadata"]["pending_files"] == 1
        assert any(r["stale"] for r in data["results"])

        # The sync goes on in the background and completes: reads alone (no Sync) see it land.
        deadline = time.monotonic() + 120
        while "edit-2" not in _slug(quick.run(dataclasses.replace(query, sync=False))):
            assert time.monotonic() < deadline, "the background sync never wrote the edit"
            time.sleep(0.2)
        done = client.sync(str(root), 0, 300)
        assert done.freshness_status.value == "fresh"
        after = quick.run(query)
        assert after.freshness_status == "fresh" and "edit-2" in _slug(after)
        assert not any(c.stale for c in after.candidates)
        assert client.status(str(root), 30).files >= _BIG_CHANGE_FILES
    finally:
        for closable in (quick, hasty, client):
            closable.close()
