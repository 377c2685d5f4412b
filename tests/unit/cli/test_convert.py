"""The CLI's proto edge: requests from arguments, printable values from responses."""

from __future__ import annotations

import pytest

from codecompass.cli.convert import (
    SYNC_FIELDS,
    chunk_files_request,
    file_chunks_from_proto,
    index_progress_from_proto,
    search_request,
    search_response_to_dict,
    sync_stats_to_dict,
)
from codecompass.common.chunk_convert import chunk_from_proto, chunk_to_proto
from codecompass.common.chunks import Chunk, Language, NodeKind
from codecompass.v1 import analysis_pb2, chunk_pb2, retrieval_pb2

CHUNK = Chunk(
    id="c1", snippet_hash="s", relative_path="a.ts", language=Language.TSX,
    node_kind=NodeKind.COMPONENT, name="LoginForm", qualified_name="LoginForm", parent_id="", child_ids=("c2",),
    depth=0, signature="function LoginForm(props)", full_source="x", collapsed_source="x", start_line=3,
    end_line=9, jsdoc="", jsdoc_start_line=0, relevant_imports=(), is_test=False, embedding_text="e",
)


def test_chunk_files_response_becomes_file_chunks() -> None:
    msg = analysis_pb2.ChunkFilesResponse(
        relative_path="a.ts", status=analysis_pb2.FILE_STATUS_SYNTAX_ERRORS, diagnostics=["3:1 ';' expected"],
        chunks=[chunk_to_proto(CHUNK)], line_count=12)
    result = file_chunks_from_proto(msg)
    assert (result.status, result.skip_reason, result.line_count) == ("syntax_errors", "", 12)
    assert result.diagnostics == ("3:1 ';' expected",)
    assert result.chunks == (CHUNK,)


def test_skipped_file_keeps_reason_and_detail() -> None:
    msg = analysis_pb2.ChunkFilesResponse(
        relative_path="vendor.min.js", status=analysis_pb2.FILE_STATUS_SKIPPED,
        skip_reason=analysis_pb2.SKIP_REASON_MINIFIED, skip_detail="longest line 48213 chars")
    result = file_chunks_from_proto(msg)
    assert (result.status, result.skip_reason, result.skip_detail) == (
        "skipped", "minified", "longest line 48213 chars")


def test_chunk_files_request_carries_every_argument() -> None:
    request = chunk_files_request("/ws", ["src"], True)
    assert (request.workspace_root, list(request.paths), request.include_references) == ("/ws", ["src"], True)


def test_index_progress_maps_unknown_eta_to_none_and_keeps_stats() -> None:
    running = index_progress_from_proto(retrieval_pb2.IndexWorkspaceResponse(
        phase=retrieval_pb2.INDEX_PHASE_EMBEDDING, eta_seconds=-1, embeddings_done=5, embeddings_total=9))
    assert running.phase == "embedding" and running.eta_seconds is None and running.stats is None
    done = index_progress_from_proto(retrieval_pb2.IndexWorkspaceResponse(
        phase=retrieval_pb2.INDEX_PHASE_DONE, stats=retrieval_pb2.SyncStats(files_added=2)))
    assert done.phase == "done" and done.eta_seconds == 0 and done.stats["files_added"] == 2


def test_sync_stats_dict_has_every_proto_field() -> None:
    assert set(SYNC_FIELDS) == {f.name for f in retrieval_pb2.SyncStats.DESCRIPTOR.fields}
    stats = retrieval_pb2.SyncStats(**{name: 3 for name in SYNC_FIELDS})
    assert sync_stats_to_dict(stats) == {name: 3 for name in SYNC_FIELDS}


def test_search_request_sets_semantic_ratio_only_when_given() -> None:
    plain = search_request("/ws", "q")
    assert not plain.HasField("semantic_ratio") and plain.limit == 0
    tuned = search_request("/ws", "q", limit=3, kinds=["class"], semantic_ratio=0.0, skip_sync=True)
    assert tuned.HasField("semantic_ratio") and tuned.semantic_ratio == 0.0
    assert list(tuned.filters.node_kinds) == [chunk_pb2.NODE_KIND_CLASS] and tuned.skip_sync


def test_search_request_refuses_an_unknown_kind() -> None:
    with pytest.raises(ValueError):
        search_request("/ws", "q", kinds=["widget"])


def test_search_response_dict_uses_lowercase_enum_names_and_keeps_chunk_fields() -> None:
    response = retrieval_pb2.SearchResponse(
        results=[retrieval_pb2.SearchResult(chunk=chunk_to_proto(CHUNK), score=0.5,
                                            provenance=retrieval_pb2.PROVENANCE_LEXICAL)],
        metadata=retrieval_pb2.SearchMetadata(
            indexing_status=retrieval_pb2.INDEXING_STATUS_INDEXING,
            result_completeness=retrieval_pb2.RESULT_COMPLETENESS_PARTIAL,
            semantic_fallback=True, semantic_skipped_reason="lexical_short_circuit"))
    data = search_response_to_dict(response)
    (result,) = data["results"]
    assert result["provenance"] == "lexical" and result["kind"] == "component"
    assert (result["path"], result["start_line"], result["end_line"], result["id"]) == ("a.ts", 3, 9, "c1")
    assert chunk_from_proto(response.results[0].chunk) == CHUNK
    meta = data["metadata"]
    assert (meta["indexing_status"], meta["result_completeness"]) == ("indexing", "partial")
    assert meta["semantic_fallback"] and meta["semantic_skipped_reason"] == "lexical_short_circuit"
    assert set(meta["sync"]) == set(SYNC_FIELDS)
