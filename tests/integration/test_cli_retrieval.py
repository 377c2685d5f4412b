"""`codecompass index` and `search` against a real in-process RetrievalService gRPC server.

The fake answers with canned messages and records the requests, so these
tests pin the CLI's side of the contract: arguments -> request, response ->
printed text and JSON.
"""

from __future__ import annotations

from pathlib import Path

import grpc
import pytest

from codecompass.common.chunks import Chunk, Language, NodeKind
from codecompass.common.config import GatewaySettings
from codecompass.common.serving import RunningServer, ServiceSpec, start_server
from codecompass.contracts.chunk_convert import chunk_to_proto
from codecompass.v1 import analysis_pb2, chunk_pb2, retrieval_pb2, retrieval_pb2_grpc


def _chunk(name: str, kind: NodeKind, start: int, end: int) -> Chunk:
    return Chunk(
        id=f"id-{name}", snippet_hash="h",
        relative_path="src/auth/tokenService.ts", language=Language.TYPESCRIPT, node_kind=kind, name=name,
        qualified_name=f"TokenService.{name}", parent_id="", child_ids=(), depth=1,
        signature=f"{name}(token: string): ValidationResult", full_source="",
        collapsed_source="\n".join([f"{name}(token: string): ValidationResult {{"]
                                   + [f"  step{i}();" for i in range(end - start - 1)] + ["}"]),
        start_line=start, end_line=end, jsdoc="", jsdoc_start_line=0, relevant_imports=(), is_test=False,
        embedding_text="",
    )


class FakeRetrieval(retrieval_pb2_grpc.RetrievalServiceServicer):
    def __init__(self) -> None:
        self.requests: list = []

    def IndexWorkspace(self, request, context):
        self.requests.append(request)
        if not Path(request.workspace_root).is_absolute():
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, "workspace_root must be absolute")
        yield retrieval_pb2.IndexWorkspaceResponse(phase=retrieval_pb2.INDEX_PHASE_SCANNING, eta_seconds=-1)
        yield retrieval_pb2.IndexWorkspaceResponse(
            phase=retrieval_pb2.INDEX_PHASE_CHUNKING, files_done=10, files_total=17, chunks_done=80, eta_seconds=1.5)
        yield retrieval_pb2.IndexWorkspaceResponse(
            phase=retrieval_pb2.INDEX_PHASE_EMBEDDING, files_done=17, files_total=17, chunks_done=120,
            embeddings_done=60, embeddings_total=120, embeddings_per_second=75.0, eta_seconds=0.8)
        yield retrieval_pb2.IndexWorkspaceResponse(
            phase=retrieval_pb2.INDEX_PHASE_DONE, files_done=17, files_total=17, chunks_done=120,
            embeddings_done=120, embeddings_total=120, embeddings_per_second=80.0, eta_seconds=0,
            stats=retrieval_pb2.SyncStats(files_added=17, files_skipped=1, chunks_upserted=120, chunks_embedded=118,
                                          embeddings_reused=2, duration_ms=1500.0),
            skipped=[analysis_pb2.SkippedFile(relative_path="vendor/app.min.js",
                                              reason=analysis_pb2.SKIP_REASON_MINIFIED,
                                              detail="longest line 48213 chars")])

    def Sync(self, request, context):
        self.requests.append(request)
        return retrieval_pb2.SyncResponse(
            finished=True, freshness_status=retrieval_pb2.FRESHNESS_STATUS_FRESH, duration_ms=12.5,
            stats=retrieval_pb2.SyncStats(files_changed=1, chunks_upserted=3, duration_ms=12.5))

    def searches(self) -> list[retrieval_pb2.SearchRequest]:
        return [r for r in self.requests if isinstance(r, retrieval_pb2.SearchRequest)]

    def Search(self, request, context):
        self.requests.append(request)
        return retrieval_pb2.SearchResponse(
            results=[
                retrieval_pb2.SearchResult(
                    chunk=chunk_to_proto(_chunk("validateToken", NodeKind.METHOD, 48, 70)), score=0.91,
                    lexical_score=0.8, vector_similarity=0.72, provenance=retrieval_pb2.PROVENANCE_HYBRID,
                    lexical_rank=1, semantic_rank=2, fusion_score=0.7, signals={"definition": 1.0},
                    vector_channel=retrieval_pb2.VECTOR_CHANNEL_PRIMARY),
                retrieval_pb2.SearchResult(
                    chunk=chunk_to_proto(_chunk("isExpired", NodeKind.METHOD, 78, 80)), score=0.4,
                    vector_similarity=0.61, provenance=retrieval_pb2.PROVENANCE_SEMANTIC, semantic_rank=1),
            ],
            metadata=retrieval_pb2.SearchMetadata(
                indexing_status=retrieval_pb2.INDEXING_STATUS_READY,
                result_completeness=retrieval_pb2.RESULT_COMPLETENESS_COMPLETE,
                semantic_ratio_used=0.5, embedding_model_id="minilm", embedding_model_version="1",
                search_ms=30.25, total_chunks=120, embedded_chunks=120, confidence=0.9),
        )


@pytest.fixture
def fake_retrieval(monkeypatch: pytest.MonkeyPatch) -> tuple[FakeRetrieval, RunningServer]:
    servicer = FakeRetrieval()

    def register(server: grpc.Server) -> list[str]:
        retrieval_pb2_grpc.add_RetrievalServiceServicer_to_server(servicer, server)
        return ["codecompass.v1.RetrievalService"]

    running = start_server(ServiceSpec("retrieval", register))
    running.wait_until_serving(5)
    monkeypatch.setenv("RETRIEVAL_ADDR", running.address)
    yield servicer, running
    running.stop(0)


def test_search_json_is_one_object_with_results_and_metadata(fake_retrieval, run_cli, sample_workspace) -> None:
    servicer, _ = fake_retrieval
    result = run_cli("search", str(sample_workspace), "validate jwt", "--json", "--limit", "5", "--no-select",
                     "--kind", "method", "--kind", "function", "--path", "src/auth/**", "--no-tests")
    assert result.code == 0, result.err
    (payload,) = result.json_lines()
    first = payload["results"][0]
    assert first == {
        "path": "src/auth/tokenService.ts", "start_line": 48, "end_line": 70,
        "qualified_name": "TokenService.validateToken", "kind": "method", "score": pytest.approx(0.91),
        "first_stage_score": pytest.approx(0.91), "rerank_score": None, "reason": "match", "connected_ids": [],
        "lexical_score": pytest.approx(0.8), "vector_similarity": pytest.approx(0.72), "provenance": "hybrid",
        "id": "id-validateToken", "signature": "validateToken(token: string): ValidationResult",
        "fusion_score": pytest.approx(0.7), "signals": {"definition": 1.0}, "vector_channel": "primary",
        "code": first["code"], "code_lines_omitted": 0, "stale": False,
    }
    assert payload["selection"] is None
    # The code comes with the result, whole up to --max-lines (80 by default).
    assert first["code"].startswith("validateToken(token: string): ValidationResult {")
    assert len(first["code"].splitlines()) == 23
    assert payload["results"][1]["provenance"] == "semantic"
    meta = payload["metadata"]
    assert meta["indexing_status"] == "ready" and meta["result_completeness"] == "complete"
    assert meta["semantic_fallback"] is False and meta["external_provider_blocked"] is False
    assert meta["embedding_model_id"] == "minilm" and meta["embedding_model_version"] == "1"
    # The pipeline synced first (within the freshness budget), then searched.
    assert meta["freshness_status"] == "fresh" and meta["sync"]["files_changed"] == 1
    assert meta["sync_ms"] >= 0 and meta["search_ms"] == 30.25
    assert (meta["total_chunks"], meta["embedded_chunks"]) == (120, 120)
    assert meta["rerank_provider"] == "local" and meta["skipped_stages"] == {"hubs": "off", "select": "off"}

    # The sync wrote (files_changed 1): the search sent beside it read the index before its writes, so
    # the answer is the search sent after it.
    (sync,) = [r for r in servicer.requests if isinstance(r, retrieval_pb2.SyncRequest)]
    request = servicer.requests[-1]
    assert len(servicer.requests) == 3 and isinstance(request, retrieval_pb2.SearchRequest)
    assert sync.budget_ms == 300
    assert request.workspace_root == sync.workspace_root == str(sample_workspace.resolve())
    # The pipeline asks for the candidates its later stages read, whatever the list shows.
    assert request.query == "validate jwt" and request.limit == GatewaySettings().candidates == 60
    assert list(request.filters.node_kinds) == [chunk_pb2.NODE_KIND_METHOD, chunk_pb2.NODE_KIND_FUNCTION]
    assert list(request.filters.path_patterns) == ["src/auth/**"]
    assert request.filters.exclude_tests is True
    assert not request.HasField("semantic_ratio")


def test_search_human_output_lists_ranked_symbols(fake_retrieval, run_cli, sample_workspace) -> None:
    servicer, _ = fake_retrieval
    result = run_cli("search", str(sample_workspace), "token expiry", "--semantic-ratio", "0.2", "--no-sync",
                     "--no-select")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith(" 1. 0.910  src/auth/tokenService.ts:48-70  TokenService.validateToken  (method)")
    assert "hybrid" in lines[1] and "lexical 0.800" in lines[1]
    assert "    // src/auth/tokenService.ts > TokenService.validateToken" in lines
    assert "    validateToken(token: string): ValidationResult {" in lines
    assert lines[-1].startswith("-- index ready") and "120/120 embedded" in lines[-1]
    # --no-sync: no Sync call, only the search (which never syncs).
    (request,) = servicer.requests
    assert isinstance(request, retrieval_pb2.SearchRequest) and request.semantic_ratio == pytest.approx(0.2)


def test_search_clips_long_code_with_a_pointer_to_the_rest(fake_retrieval, run_cli, sample_workspace) -> None:
    result = run_cli("search", str(sample_workspace), "token expiry", "--max-lines", "5", "--no-select")
    assert result.code == 0, result.err
    assert "    /* … 18 more lines: src/auth/tokenService.ts:48-70 */" in result.out.splitlines()
    (request, *_) = fake_retrieval[0].searches()
    assert request.view == retrieval_pb2.RESULT_VIEW_CODE


def test_a_dead_selection_service_leaves_the_ranked_list(fake_retrieval, run_cli, sample_workspace, monkeypatch,
                                                         free_port) -> None:
    monkeypatch.setenv("SELECTION_ADDR", f"127.0.0.1:{free_port}")
    result = run_cli("search", str(sample_workspace), "token expiry", "--json")
    assert result.code == 0, result.err
    (payload,) = result.json_lines()
    assert payload["selection"] is None
    assert [r["qualified_name"] for r in payload["results"]] == ["TokenService.validateToken", "TokenService.isExpired"]
    assert payload["metadata"]["skipped_stages"]["select"].startswith("selection service not running at 127.0.0.1:")


def test_index_shows_progress_on_stderr_and_a_summary(fake_retrieval, run_cli, sample_workspace) -> None:
    servicer, _ = fake_retrieval
    result = run_cli("index", str(sample_workspace))
    assert result.code == 0, result.err
    assert "chunking   files 10/17  chunks 80" in result.err
    assert "embedded 60/120  75.0 emb/s" in result.err
    assert "indexed " in result.out
    assert "17 added, 0 changed, 0 removed, 1 skipped (1 minified)" in result.out
    assert "118 embedded, 2 reused" in result.out
    (request,) = servicer.requests
    assert request.wait_for_embeddings is True
    assert run_cli("index", str(sample_workspace), "--no-wait").code == 0
    assert servicer.requests[-1].wait_for_embeddings is False


def test_a_stopped_service_is_a_one_line_error(fake_retrieval, run_cli, sample_workspace) -> None:
    _, running = fake_retrieval
    running.stop(0)
    result = run_cli("search", str(sample_workspace), "anything")
    assert result.code == 1
    assert result.err.strip() == (f"codecompass: retrieval service not running at {running.address}; "
                                  "run `codecompass up`")


def test_bad_arguments_fail_before_any_call(fake_retrieval, run_cli, tmp_path) -> None:
    servicer, _ = fake_retrieval
    missing = run_cli("search", str(tmp_path / "missing"), "q")
    assert missing.code == 2 and "no such file or folder" in missing.err
    a_file = tmp_path / "a.ts"
    a_file.write_text("export const a = 1;\n")
    assert run_cli("index", str(a_file)).code == 2
    with pytest.raises(SystemExit) as excinfo:
        run_cli("search", str(tmp_path), "q", "--kind", "widget")
    assert excinfo.value.code == 2
    assert servicer.requests == []
