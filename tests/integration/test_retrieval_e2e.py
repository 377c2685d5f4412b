"""Retrieval end to end: real Node analysis service, real embedding service (minilm) and the
retrieval service, each its own process, talking gRPC on 127.0.0.1."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

from codecompass.v1 import retrieval_pb2, retrieval_pb2_grpc

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def embedding_addr(start_python_service_session) -> str:
    _, address = start_python_service_session("codecompass.embedding", {"CODECOMPASS_EMBEDDING_PROFILE": "minilm"})
    return address


@pytest.fixture
def retrieval(
    start_python_service, analysis_server: str, embedding_addr: str, tmp_path: Path
) -> Iterator[retrieval_pb2_grpc.RetrievalServiceStub]:
    _, address = start_python_service(
        "codecompass.retrieval",
        {
            "ANALYSIS_ADDR": analysis_server,
            "EMBEDDING_ADDR": embedding_addr,
            "CODECOMPASS_STATE_DIR": str(tmp_path / "state"),
        },
    )
    channel = grpc.insecure_channel(address)
    yield retrieval_pb2_grpc.RetrievalServiceStub(channel)
    channel.close()


@pytest.fixture
def workspace(sample_workspace: Path, tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(sample_workspace, root)
    return root


def _search(stub, root: Path, query: str, **kwargs) -> retrieval_pb2.SearchResponse:
    return stub.Search(retrieval_pb2.SearchRequest(workspace_root=str(root), query=query, **kwargs), timeout=60)


def _sync(stub, root: Path, budget_ms: int = 0) -> retrieval_pb2.SyncResponse:
    return stub.Sync(retrieval_pb2.SyncRequest(workspace_root=str(root), budget_ms=budget_ms), timeout=120)


def test_index_search_edit_delete(retrieval, workspace: Path) -> None:
    progress = list(
        retrieval.IndexWorkspace(
            retrieval_pb2.IndexWorkspaceRequest(workspace_root=str(workspace), wait_for_embeddings=True), timeout=300
        )
    )
    phases = [p.phase for p in progress]
    assert phases[0] == retrieval_pb2.INDEX_PHASE_SCANNING and phases[-1] == retrieval_pb2.INDEX_PHASE_DONE
    final = progress[-1]
    assert final.stats.files_added >= 10 and final.stats.chunks_upserted > 0

    response = _search(retrieval, workspace, "validate token")
    top = [r.chunk.qualified_name for r in response.results[:3]]
    assert any(name.endswith("validateToken") for name in top), top
    meta = response.metadata
    assert meta.indexing_status == retrieval_pb2.INDEXING_STATUS_READY
    assert meta.result_completeness == retrieval_pb2.RESULT_COMPLETENESS_COMPLETE
    assert meta.embedding_model_id and meta.total_chunks == meta.embedded_chunks > 0
    synced = _sync(retrieval, workspace)
    assert synced.finished and synced.freshness_status == retrieval_pb2.FRESHNESS_STATUS_FRESH
    assert synced.stats.files_changed == 0 and synced.stats.chunks_upserted == 0 and not synced.pending_paths

    strings = workspace / "src" / "utils" / "strings.ts"
    strings.write_text(
        strings.read_text() + "\nexport function reverseWords(text: string): string {\n"
        "  return text.split(' ').reverse().join(' ');\n}\n"
    )
    # A search is a read: without a Sync it answers from the index as it stands.
    response = _search(retrieval, workspace, "reverseWords")
    assert all(r.chunk.name != "reverseWords" for r in response.results)
    synced = _sync(retrieval, workspace)
    assert synced.freshness_status == retrieval_pb2.FRESHNESS_STATUS_FRESH and synced.stats.files_changed == 1
    response = _search(retrieval, workspace, "reverseWords")
    assert response.results[0].chunk.name == "reverseWords"

    (workspace / "src" / "auth" / "tokenService.ts").unlink()
    assert any(r.chunk.relative_path == "src/auth/tokenService.ts"
               for r in _search(retrieval, workspace, "validate token").results)
    synced = _sync(retrieval, workspace)
    assert synced.stats.files_removed == 1 and synced.stats.chunks_deleted > 0
    response = _search(retrieval, workspace, "validate token")
    assert all(r.chunk.relative_path != "src/auth/tokenService.ts" for r in response.results)

    status = retrieval.GetIndexStatus(retrieval_pb2.GetIndexStatusRequest(workspace_root=str(workspace)), timeout=30)
    assert status.chunks == response.metadata.total_chunks and status.index_bytes > 0


def test_a_search_of_a_never_indexed_workspace_is_not_indexed_and_starts_nothing(retrieval, workspace: Path) -> None:
    response = _search(retrieval, workspace, "validate token")
    assert not response.results
    assert response.metadata.indexing_status == retrieval_pb2.INDEXING_STATUS_NOT_INDEXED
    status = retrieval.GetIndexStatus(retrieval_pb2.GetIndexStatusRequest(workspace_root=str(workspace)), timeout=30)
    assert status.indexing_status == retrieval_pb2.INDEXING_STATUS_NOT_INDEXED and status.files == 0
    # Sync is what indexes it.
    synced = _sync(retrieval, workspace)
    assert synced.freshness_status == retrieval_pb2.FRESHNESS_STATUS_FRESH and synced.stats.files_added >= 10
    assert _search(retrieval, workspace, "validate token").results


def test_bad_roots_get_clear_status_codes(retrieval, tmp_path: Path) -> None:
    cases = (
        ("relative/ws", grpc.StatusCode.INVALID_ARGUMENT),
        ("", grpc.StatusCode.INVALID_ARGUMENT),
        (str(tmp_path / "missing"), grpc.StatusCode.NOT_FOUND),
    )
    for root, code in cases:
        with pytest.raises(grpc.RpcError) as err:
            retrieval.GetIndexStatus(retrieval_pb2.GetIndexStatusRequest(workspace_root=root), timeout=30)
        assert err.value.code() == code
        assert "Traceback" not in (err.value.details() or "")
        with pytest.raises(grpc.RpcError) as err:
            retrieval.Sync(retrieval_pb2.SyncRequest(workspace_root=root), timeout=30)
        assert err.value.code() == code


def test_the_analysis_service_answers_an_unchanged_workspace_from_its_folder_watch(
    analysis_server: str, workspace: Path
) -> None:
    """The scan contract over the wire: a token for a walked workspace, "unchanged" with nothing
    listed while nothing changes, the edited file alone read again after an edit made in the same
    breath as the request (both asked without the catalog), and a walk after a new file (the
    service asks for the catalog first)."""
    from codecompass.clients.analysis import AnalysisClient

    client = AnalysisClient(analysis_server, timeout_s=30)
    first = client.scan(str(workspace), list, version=1)
    if not first.watch_token:
        pytest.skip("the analysis service does not watch folders on this file system or platform")
    # While nothing changes the catalog is not even built: the first request goes without it.
    same = client.scan(str(workspace), lambda: pytest.fail("the catalog was asked for"), version=2,
                       unchanged_since=first.watch_token)
    assert same.unchanged and same.files == () and same.watch_token == first.watch_token
    strings = workspace / "src" / "utils" / "strings.ts"
    token, previous = first.watch_token, first.files
    for i in range(5):
        strings.write_text(strings.read_text() + f"\nexport const edit{i} = {i};\n")
        scan = client.scan(str(workspace), lambda: pytest.fail("the catalog was asked for after an edit"),
                           version=(3, i), unchanged_since=token)
        assert not scan.unchanged and scan.changed == ("src/utils/strings.ts",), i
        assert [f.relative_path for f in scan.files] == [f.relative_path for f in previous], i
        token, previous = scan.watch_token, scan.files
    (workspace / "src" / "utils" / "added.ts").write_text("export const added = 1;\n")
    walked = client.scan(str(workspace), lambda: previous, version=4, unchanged_since=token)
    assert walked.added == ("src/utils/added.ts",) and walked.changed == ()


def test_syncs_of_an_unchanged_workspace_write_nothing_and_an_edit_right_before_a_sync_is_indexed(
    retrieval, workspace: Path
) -> None:
    assert _sync(retrieval, workspace).stats.files_added >= 10
    for _ in range(3):
        synced = _sync(retrieval, workspace)
        assert synced.freshness_status == retrieval_pb2.FRESHNESS_STATUS_FRESH
        assert (synced.stats.files_changed, synced.stats.chunks_upserted) == (0, 0)
    strings = workspace / "src" / "utils" / "strings.ts"
    for i in range(3):
        strings.write_text(strings.read_text() + f"\nexport function freshEdit{i}(): number {{\n  return {i};\n}}\n")
        synced = _sync(retrieval, workspace)
        assert synced.stats.files_changed == 1, i
        assert _search(retrieval, workspace, f"freshEdit{i}").results[0].chunk.name == f"freshEdit{i}"
