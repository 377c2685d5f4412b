"""Round trips through the retrieval service's proto edge."""

from __future__ import annotations

import dataclasses

import pytest

from codecompass.common.chunks import Chunk, Language, NodeKind, SymbolReference
from codecompass.contracts.analysis import convert as analysis_convert
from codecompass.contracts.analysis.model import ChunkedFile, FileEntry, FileStatus, ScanResult, SkippedFile
from codecompass.contracts.retrieval import convert
from codecompass.contracts.retrieval.filters import Filters
from codecompass.contracts.retrieval.model import (
    FreshnessStatus,
    IndexingStatus,
    IndexPhase,
    IndexProgress,
    IndexStatusReport,
    ResultCompleteness,
    ResultView,
    SearchMetadata,
    SearchOutcome,
    SearchQuery,
    SyncOutcome,
    SyncStats,
    WorkspaceRef,
    WorkspaceSearch,
)
from codecompass.policy.ranking import RankedResult as HybridResult
from codecompass.policy.shape import analyze
from codecompass.v1 import analysis_pb2, retrieval_pb2

CHUNK = Chunk(
    id="c1",
    snippet_hash="s1",
    relative_path="src/a.ts",
    language=Language.TSX,
    node_kind=NodeKind.METHOD,
    name="validateToken",
    qualified_name="TokenService.validateToken",
    parent_id="c0",
    child_ids=("c2",),
    depth=1,
    signature="validateToken(t: string): boolean",
    full_source="validateToken(t) {}",
    collapsed_source="validateToken(t) {}",
    start_line=3,
    end_line=9,
    jsdoc="/** v */",
    jsdoc_start_line=2,
    relevant_imports=("import x from 'y';",),
    is_test=False,
    embedding_text="[TSX] ...",
    references=(SymbolReference("Jwt", "interface Jwt", "src/b.ts", "c9"),),
    embedding_token_count=12,
)
STATS = SyncStats(1, 2, 3, 4, 5, 6, 7, 8, 9, 10.5)


def _wire(message):
    return type(message).FromString(message.SerializeToString())


def test_scan_result_round_trip() -> None:
    scan = ScanResult(
        files=(FileEntry("src/a.ts", 10, 123, "h", Language.TYPESCRIPT),),
        added=("src/a.ts",),
        changed=("src/b.ts",),
        removed=("src/c.ts",),
        skipped=(SkippedFile("min.js", "minified", "longest line 9000"), SkippedFile("x.ts", "symlink_loop")),
        duration_ms=3.5,
        chunker_version="v9",
        watch_token="a1b2.7.1700000000000.k",
    )
    assert analysis_convert.scan_result_from_proto(_wire(analysis_convert.scan_result_to_proto(scan))) == scan
    unchanged = ScanResult((), (), (), (), (), 0.0, "v9", watch_token="t", unchanged=True)
    assert analysis_convert.scan_result_from_proto(_wire(analysis_convert.scan_result_to_proto(unchanged))) == unchanged
    request = analysis_convert.scan_request_to_proto("/ws", scan.files, "a1b2.7.1700000000000.k")
    assert _wire(request).unchanged_since == "a1b2.7.1700000000000.k"
    assert [analysis_convert.file_entry_from_proto(f) for f in _wire(request).previous] == list(scan.files)


@pytest.mark.parametrize("status", list(FileStatus))
def test_chunked_file_round_trip(status: FileStatus) -> None:
    chunked = ChunkedFile("src/a.ts", status, (CHUNK,), "h", 5, 6, "binary" if status == FileStatus.SKIPPED else "", "",
                          line_count=12,
                          diagnostics=("3:1 ';' expected",) if status == FileStatus.SYNTAX_ERRORS else ())
    assert analysis_convert.chunked_file_from_proto(_wire(analysis_convert.chunked_file_to_proto(chunked))) == chunked


@pytest.mark.parametrize("ratio", [None, 0.0, 0.75])
def test_search_query_round_trip(ratio: float | None) -> None:
    query = SearchQuery(
        workspace_root="/ws",
        query="validate token",
        limit=7,
        filters=Filters(
            path_patterns=("src/auth", "**/*.ts"),
            languages=(Language.TSX,),
            node_kinds=(NodeKind.CLASS, NodeKind.FUNCTION),
            exclude_tests=True,
        ),
        semantic_ratio=ratio,
    )
    assert convert.search_query_from_proto(_wire(convert.search_query_to_proto(query))) == query
    # Several workspaces, each named by its root or its id.
    several = dataclasses.replace(query, workspace_root="", workspaces=(WorkspaceRef(workspace_root="/a"),
                                                                       WorkspaceRef(workspace_id="local:/b")))
    assert convert.search_query_from_proto(_wire(convert.search_query_to_proto(several))) == several


@pytest.mark.parametrize("query", ["validateToken", "src/auth/token.ts", 'throws "token expired"',
                                   "how are tests of the token checked"])
def test_search_query_round_trip_keeps_the_callers_shape(query: str) -> None:
    sent = SearchQuery(workspace_root="/ws", query=query, shape=analyze(query))
    message = _wire(convert.search_query_to_proto(sent))
    assert message.HasField("shape") and message.shape.intent != retrieval_pb2.QUERY_INTENT_UNSPECIFIED
    assert convert.search_query_from_proto(message) == sent
    plain = retrieval_pb2.SearchRequest(workspace_root="/ws", query=query)
    assert convert.search_query_from_proto(plain).shape is None  # a plain client: judged by retrieval


@pytest.mark.parametrize(("shape", "message"), [
    (retrieval_pb2.QueryShape(), "shape.intent must be set"),
    (retrieval_pb2.QueryShape(intent=99), "unknown QueryIntent value 99"),
    (retrieval_pb2.QueryShape(intent=retrieval_pb2.QUERY_INTENT_SYMBOL, intent_confidence=1.5),
     r"shape.intent_confidence must be in \[0, 1\], got 1.5"),
    (retrieval_pb2.QueryShape(intent=retrieval_pb2.QUERY_INTENT_SYMBOL, intent_confidence=float("nan")),
     "shape.intent_confidence must be in"),
])
def test_a_shape_that_cannot_be_ranked_by_is_a_value_error(shape, message: str) -> None:
    request = retrieval_pb2.SearchRequest(workspace_root="/ws", query="x", shape=shape)
    with pytest.raises(ValueError, match=message):
        convert.search_query_from_proto(request)


def test_search_query_with_a_bad_glob_is_a_value_error() -> None:
    request = retrieval_pb2.SearchRequest(
        workspace_root="/ws", query="x", filters=retrieval_pb2.SearchFilters(path_patterns=["src/[ab"])
    )
    with pytest.raises(ValueError):
        convert.search_query_from_proto(request)


@pytest.mark.parametrize("status", list(IndexingStatus))
@pytest.mark.parametrize("completeness", list(ResultCompleteness))
def test_search_outcome_round_trip(status: IndexingStatus, completeness: ResultCompleteness) -> None:
    results = tuple(
        HybridResult(
            chunk=CHUNK,
            score=0.5,
            lexical_score=0.25,
            vector_similarity=-0.5,
            provenance=p,
            lexical_rank=1 if p != "semantic" else 0,
            semantic_rank=2 if p != "lexical" else 0,
            vector_channel={"lexical": "", "semantic": "static", "hybrid": "primary"}[p],
            workspace_id={"lexical": "local:/a", "semantic": "local:/b", "hybrid": ""}[p],
        )
        for p in ("lexical", "semantic", "hybrid")
    )
    metadata = SearchMetadata(
        indexing_status=status,
        result_completeness=completeness,
        semantic_fallback=True,
        semantic_skipped_reason="embedding_unavailable",
        semantic_ratio_used=0.25,
        external_provider_blocked=True,
        embedding_model_id="m",
        embedding_model_version="v",
        search_ms=2.5,
        total_chunks=10,
        embedded_chunks=4,
        vector_channels=("primary", "static"),
        primary_vector_chunks=4,
        static_vector_chunks=6,
        static_model_id="code-static",
        static_model_version="m2v-abc",
        primary_unavailable_reason="embedding_unavailable",
    )
    outcome = SearchOutcome(results=results, metadata=metadata)
    assert convert.search_outcome_from_proto(_wire(convert.search_outcome_to_proto(outcome))) == outcome
    other = dataclasses.replace(metadata, total_chunks=3)
    several = SearchOutcome(results=results, metadata=metadata,
                            workspaces=(WorkspaceSearch("local:/a", metadata), WorkspaceSearch("local:/b", other)))
    assert convert.search_outcome_from_proto(_wire(convert.search_outcome_to_proto(several))) == several


@pytest.mark.parametrize(("view", "left_out"), [
    (ResultView.FULL, ()),
    (ResultView.CODE, ("full_source", "embedding_text", "references")),
    (ResultView.SUMMARY, ("full_source", "embedding_text", "references", "collapsed_source")),
])
def test_a_view_leaves_out_what_it_says(view: ResultView, left_out: tuple[str, ...]) -> None:
    result = HybridResult(chunk=CHUNK, score=0.5, lexical_score=0.25, vector_similarity=0.5, provenance="hybrid",
                          lexical_rank=1, semantic_rank=2)
    metadata = SearchMetadata(IndexingStatus.READY, ResultCompleteness.COMPLETE, False, "", 0.5, False, "m", "v")
    outcome = SearchOutcome(results=(result,), metadata=metadata)
    chunk = convert.search_outcome_from_proto(_wire(convert.search_outcome_to_proto(outcome, view))).results[0].chunk
    empty = {"references": ()}
    assert chunk == dataclasses.replace(CHUNK, **{name: empty.get(name, "") for name in left_out})


@pytest.mark.parametrize("freshness", list(FreshnessStatus))
def test_sync_outcome_round_trip(freshness: FreshnessStatus) -> None:
    for outcome in (
        SyncOutcome(finished=True, freshness_status=freshness, stats=STATS, duration_ms=12.5),
        SyncOutcome(finished=False, freshness_status=freshness, pending_paths=("src/a.ts", "src/b.ts"),
                    pending_count=3, pending_new_files=4, scanning=True, error="analysis service unreachable",
                    duration_ms=300.0),
    ):
        assert convert.sync_outcome_from_proto(_wire(convert.sync_outcome_to_proto(outcome))) == outcome


def test_sync_request_budget_zero_waits_until_done() -> None:
    assert convert.sync_budget_from_proto(_wire(convert.sync_request_to_proto("/ws", 0))) is None
    request = _wire(convert.sync_request_to_proto("/ws", 250))
    assert (request.workspace_root, convert.sync_budget_from_proto(request)) == ("/ws", 0.25)


def test_an_unknown_freshness_status_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        convert.sync_outcome_from_proto(retrieval_pb2.SyncResponse(freshness_status=99))
    with pytest.raises(ValueError):
        convert.sync_outcome_from_proto(retrieval_pb2.SyncResponse())


@pytest.mark.parametrize("phase", list(IndexPhase))
def test_progress_round_trip(phase: IndexPhase) -> None:
    for stats in (None, STATS):
        progress = IndexProgress(phase, 1, 2, 3, 4, 5, 6.5, -1.0, stats, shards_done=7, shards_total=9)
        assert convert.progress_from_proto(_wire(convert.progress_to_proto(progress))) == progress


def test_status_round_trip() -> None:
    report = IndexStatusReport(IndexingStatus.FAILED, 3, 30, 20, "m", "v", "format=1;chunker=x", "boom", 4096,
                               static_vector_chunks=30, static_model_id="code-static", static_model_version="m2v-abc")
    assert convert.status_from_proto(_wire(convert.status_to_proto(report))) == report


def test_every_skip_reason_survives_a_round_trip() -> None:
    for value in analysis_pb2.SkipReason.values():
        name = analysis_convert._skip_reason_name(value)
        assert analysis_convert._skip_reason_value(name) == value
