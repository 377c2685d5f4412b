"""The retrieval service's proto edge: its messages to and from the domain types in `model`, in
both directions so each has a round trip. Its servicer and its client both convert here; the
analysis messages it reuses (SkippedFile) convert in `codecompass.contracts.analysis.convert`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import fields

from google.protobuf import timestamp_pb2

from codecompass.contracts.analysis.convert import skipped_file_from_proto, skipped_file_to_proto
from codecompass.contracts.chunk_convert import (
    UnknownEnumValue,
    chunk_from_proto,
    chunk_to_proto,
    language_from_proto,
    language_to_proto,
    node_kind_from_proto,
    node_kind_to_proto,
    provenance_from_proto,
    provenance_to_proto,
)
from codecompass.contracts.fields import same_named
from codecompass.contracts.retrieval.filters import Filters
from codecompass.contracts.retrieval.model import (
    FreshnessStatus,
    HubOutcome,
    HubQuery,
    HubResult,
    IndexingStatus,
    IndexPhase,
    IndexProgress,
    IndexStatusReport,
    IndexSummary,
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
from codecompass.policy import shape as q
from codecompass.policy.ranking import ORIGIN_BASE, ORIGIN_CHECKOUT, PRIMARY_VECTORS, STATIC_VECTORS, RankedResult
from codecompass.policy.shape import QueryShape
from codecompass.v1 import retrieval_pb2

_STATUS_TO_PROTO = {
    IndexingStatus.NOT_INDEXED: retrieval_pb2.INDEXING_STATUS_NOT_INDEXED,
    IndexingStatus.INDEXING: retrieval_pb2.INDEXING_STATUS_INDEXING,
    IndexingStatus.READY: retrieval_pb2.INDEXING_STATUS_READY,
    IndexingStatus.FAILED: retrieval_pb2.INDEXING_STATUS_FAILED,
}
_STATUS_FROM_PROTO = {v: k for k, v in _STATUS_TO_PROTO.items()}

_COMPLETENESS_TO_PROTO = {
    ResultCompleteness.COMPLETE: retrieval_pb2.RESULT_COMPLETENESS_COMPLETE,
    ResultCompleteness.PARTIAL: retrieval_pb2.RESULT_COMPLETENESS_PARTIAL,
    ResultCompleteness.TRUNCATED: retrieval_pb2.RESULT_COMPLETENESS_TRUNCATED,
}
_COMPLETENESS_FROM_PROTO = {v: k for k, v in _COMPLETENESS_TO_PROTO.items()}
_VIEW_TO_PROTO = {
    ResultView.FULL: retrieval_pb2.RESULT_VIEW_FULL,
    ResultView.CODE: retrieval_pb2.RESULT_VIEW_CODE,
    ResultView.SUMMARY: retrieval_pb2.RESULT_VIEW_SUMMARY,
}
_VIEW_FROM_PROTO = {v: k for k, v in _VIEW_TO_PROTO.items()} | {retrieval_pb2.RESULT_VIEW_UNSPECIFIED: ResultView.FULL}

_FRESHNESS_TO_PROTO = {
    FreshnessStatus.FRESH: retrieval_pb2.FRESHNESS_STATUS_FRESH,
    FreshnessStatus.SYNCING: retrieval_pb2.FRESHNESS_STATUS_SYNCING,
    FreshnessStatus.NOT_INDEXED: retrieval_pb2.FRESHNESS_STATUS_NOT_INDEXED,
    FreshnessStatus.FAILED: retrieval_pb2.FRESHNESS_STATUS_FAILED,
}
_FRESHNESS_FROM_PROTO = {v: k for k, v in _FRESHNESS_TO_PROTO.items()}

_CHANNEL_TO_PROTO = {
    "": retrieval_pb2.VECTOR_CHANNEL_UNSPECIFIED,
    PRIMARY_VECTORS: retrieval_pb2.VECTOR_CHANNEL_PRIMARY,
    STATIC_VECTORS: retrieval_pb2.VECTOR_CHANNEL_STATIC,
}
_CHANNEL_FROM_PROTO = {v: k for k, v in _CHANNEL_TO_PROTO.items()}
_ORIGIN_TO_PROTO = {
    "": retrieval_pb2.FILE_ORIGIN_UNSPECIFIED,
    ORIGIN_BASE: retrieval_pb2.FILE_ORIGIN_BASE,
    ORIGIN_CHECKOUT: retrieval_pb2.FILE_ORIGIN_CHECKOUT,
}
_ORIGIN_FROM_PROTO = {v: k for k, v in _ORIGIN_TO_PROTO.items()}
_KIND_TO_PROTO = {"checkout": retrieval_pb2.INDEX_KIND_CHECKOUT, "base": retrieval_pb2.INDEX_KIND_BASE}
# UNSPECIFIED: a server from before bases listed only checkouts' indexes.
_KIND_FROM_PROTO = {retrieval_pb2.INDEX_KIND_UNSPECIFIED: "checkout",
                    **{v: k for k, v in _KIND_TO_PROTO.items()}}

_PHASE_TO_PROTO: dict[IndexPhase, retrieval_pb2.IndexPhase] = {
    phase: retrieval_pb2.IndexPhase.Value(f"INDEX_PHASE_{phase.name}") for phase in IndexPhase
}
_PHASE_FROM_PROTO = {v: k for k, v in _PHASE_TO_PROTO.items()}

# Fields a message and its domain type share by name and hold as the same scalar value (`same_named`).
_SYNC_STATS_FIELDS = tuple(f.name for f in fields(SyncStats))
_SYNC_OUTCOME_FIELDS = ("finished", "pending_count", "pending_new_files", "scanning", "error", "duration_ms",
                        "phase_files_done", "phase_files_total", "chunks_written")
_PROGRESS_FIELDS = ("files_done", "files_total", "chunks_done", "embeddings_done", "embeddings_total",
                    "embeddings_per_second", "eta_seconds", "shards_done", "shards_total")
_SHAPE_FIELDS = ("intent_confidence", "path", "phrase", "mentions_tests", "lexical_text", "question")
_RESULT_FIELDS = ("score", "lexical_score", "vector_similarity", "lexical_rank", "semantic_rank", "fusion_score",
                  "workspace_id")
_METADATA_FIELDS = ("semantic_fallback", "semantic_skipped_reason", "semantic_ratio_used", "external_provider_blocked",
                    "embedding_model_id", "embedding_model_version", "search_ms", "total_chunks", "embedded_chunks",
                    "total_candidates", "confidence", "filtered_chunks", "primary_vector_chunks",
                    "static_vector_chunks", "static_model_id", "static_model_version", "primary_unavailable_reason",
                    "base_commit")
_STATUS_FIELDS = ("files", "chunks", "embedded_chunks", "embedding_model_id", "embedding_model_version",
                  "index_format_version", "error", "index_bytes", "static_vector_chunks", "static_model_id",
                  "static_model_version", "workspace_id", "root", "base_commit")


# --- RetrievalService ---


def filters_from_proto(msg: retrieval_pb2.SearchFilters) -> Filters:
    return Filters(
        path_patterns=tuple(msg.path_patterns),
        languages=tuple(language_from_proto(v) for v in msg.languages),
        node_kinds=tuple(node_kind_from_proto(v) for v in msg.node_kinds),
        exclude_tests=msg.exclude_tests,
        only_tests=msg.only_tests,
    )


def filters_to_proto(filters: Filters) -> retrieval_pb2.SearchFilters:
    return retrieval_pb2.SearchFilters(
        path_patterns=list(filters.path_patterns),
        languages=[language_to_proto(v) for v in filters.languages],
        node_kinds=[node_kind_to_proto(v) for v in filters.node_kinds],
        exclude_tests=filters.exclude_tests,
        only_tests=filters.only_tests,
    )


def search_query_from_proto(msg: retrieval_pb2.SearchRequest) -> SearchQuery:
    """Raises FilterError / UnknownEnumValue (both ValueError) for filters that cannot be honoured,
    and ValueError for a shape that cannot be."""
    return SearchQuery(
        workspace_root=msg.workspace_root,
        query=msg.query,
        limit=msg.limit,
        filters=filters_from_proto(msg.filters),
        semantic_ratio=msg.semantic_ratio if msg.HasField("semantic_ratio") else None,
        candidate_pool=msg.candidate_pool,
        view=_view_from_proto(msg.view),
        ranked=msg.ranking != retrieval_pb2.RANKING_MODE_FUSION,
        shape=shape_from_proto(msg.shape, msg.query) if msg.HasField("shape") else None,
        workspace_id=msg.workspace_id,
        workspaces=tuple(WorkspaceRef(w.workspace_root, w.workspace_id) for w in msg.workspaces),
    )


_INTENT_TO_PROTO = {
    q.SYMBOL: retrieval_pb2.QUERY_INTENT_SYMBOL,
    q.PATH: retrieval_pb2.QUERY_INTENT_PATH,
    q.ERROR: retrieval_pb2.QUERY_INTENT_ERROR,
    q.NATURAL_LANGUAGE: retrieval_pb2.QUERY_INTENT_NATURAL_LANGUAGE,
}
_INTENT_FROM_PROTO = {v: k for k, v in _INTENT_TO_PROTO.items()}


def shape_to_proto(shape: QueryShape) -> retrieval_pb2.QueryShape:
    """The shape without its text: the request's query carries that."""
    return retrieval_pb2.QueryShape(
        **same_named(shape, _SHAPE_FIELDS),
        intent=_INTENT_TO_PROTO[shape.intent],
        identifiers=list(shape.identifiers),
        words=list(shape.words),
        name_parts=list(shape.name_parts),
    )


def shape_from_proto(msg: retrieval_pb2.QueryShape, query: str) -> QueryShape:
    """The caller's shape of `query`. Raises ValueError (UnknownEnumValue for an intent this
    service does not know) when it cannot be ranked by: an unset intent, a confidence outside
    [0, 1]."""
    if msg.intent == retrieval_pb2.QUERY_INTENT_UNSPECIFIED:
        raise ValueError("shape.intent must be set (symbol, path, error or natural_language)")
    if msg.intent not in _INTENT_FROM_PROTO:
        raise UnknownEnumValue(f"unknown QueryIntent value {msg.intent}")
    if not 0.0 <= msg.intent_confidence <= 1.0:  # NaN fails too
        raise ValueError(f"shape.intent_confidence must be in [0, 1], got {msg.intent_confidence}")
    return QueryShape(
        **same_named(msg, _SHAPE_FIELDS),
        text=" ".join(query.split()),
        intent=_INTENT_FROM_PROTO[msg.intent],
        identifiers=tuple(msg.identifiers),
        words=tuple(msg.words),
        name_parts=tuple(msg.name_parts),
    )


def _view_from_proto(value: retrieval_pb2.ResultView) -> ResultView:
    try:
        return _VIEW_FROM_PROTO[value]
    except KeyError:
        raise UnknownEnumValue(f"unknown ResultView value {value}") from None


def search_query_to_proto(query: SearchQuery) -> retrieval_pb2.SearchRequest:
    msg = retrieval_pb2.SearchRequest(
        workspace_root=query.workspace_root,
        query=query.query,
        limit=query.limit,
        filters=filters_to_proto(query.filters),
        candidate_pool=query.candidate_pool,
        view=_VIEW_TO_PROTO[query.view],
        ranking=retrieval_pb2.RANKING_MODE_FULL if query.ranked else retrieval_pb2.RANKING_MODE_FUSION,
        workspace_id=query.workspace_id,
        workspaces=[retrieval_pb2.WorkspaceRef(workspace_root=w.workspace_root, workspace_id=w.workspace_id)
                    for w in query.workspaces],
    )
    if query.semantic_ratio is not None:
        msg.semantic_ratio = query.semantic_ratio
    if query.shape is not None:
        msg.shape.CopyFrom(shape_to_proto(query.shape))
    return msg


def sync_stats_to_proto(stats: SyncStats) -> retrieval_pb2.SyncStats:
    return retrieval_pb2.SyncStats(**same_named(stats, _SYNC_STATS_FIELDS))


def sync_stats_from_proto(msg: retrieval_pb2.SyncStats) -> SyncStats:
    return SyncStats(**same_named(msg, _SYNC_STATS_FIELDS))


def sync_request_to_proto(workspace_root: str, budget_ms: int) -> retrieval_pb2.SyncRequest:
    return retrieval_pb2.SyncRequest(workspace_root=workspace_root, budget_ms=budget_ms)


def sync_budget_from_proto(msg: retrieval_pb2.SyncRequest) -> float | None:
    """The budget in seconds; None for 0, which waits until the sync is done."""
    return msg.budget_ms / 1000 if msg.budget_ms else None


def sync_outcome_to_proto(outcome: SyncOutcome) -> retrieval_pb2.SyncResponse:
    msg = retrieval_pb2.SyncResponse(
        **same_named(outcome, _SYNC_OUTCOME_FIELDS),
        freshness_status=_FRESHNESS_TO_PROTO[outcome.freshness_status],
        pending_paths=list(outcome.pending_paths),
        phase=_PHASE_TO_PROTO[outcome.phase] if outcome.phase is not None else retrieval_pb2.INDEX_PHASE_UNSPECIFIED,
    )
    if outcome.stats is not None:
        msg.stats.CopyFrom(sync_stats_to_proto(outcome.stats))
    return msg


def sync_outcome_from_proto(msg: retrieval_pb2.SyncResponse) -> SyncOutcome:
    """Raises UnknownEnumValue for a freshness status this build does not know."""
    try:
        freshness = _FRESHNESS_FROM_PROTO[msg.freshness_status]
    except KeyError:
        raise UnknownEnumValue(f"unknown FreshnessStatus value {msg.freshness_status}") from None
    return SyncOutcome(
        **same_named(msg, _SYNC_OUTCOME_FIELDS),
        freshness_status=freshness,
        stats=sync_stats_from_proto(msg.stats) if msg.HasField("stats") else None,
        pending_paths=tuple(msg.pending_paths),
        phase=_PHASE_FROM_PROTO.get(msg.phase),
    )


def progress_to_proto(progress: IndexProgress) -> retrieval_pb2.IndexWorkspaceResponse:
    msg = retrieval_pb2.IndexWorkspaceResponse(
        phase=_PHASE_TO_PROTO[progress.phase],
        **same_named(progress, _PROGRESS_FIELDS),
    )
    if progress.stats is not None:
        msg.stats.CopyFrom(sync_stats_to_proto(progress.stats))
    msg.skipped.extend(skipped_file_to_proto(s) for s in progress.skipped)
    return msg


def progress_from_proto(msg: retrieval_pb2.IndexWorkspaceResponse) -> IndexProgress:
    return IndexProgress(
        phase=_PHASE_FROM_PROTO[msg.phase],
        **same_named(msg, _PROGRESS_FIELDS),
        stats=sync_stats_from_proto(msg.stats) if msg.HasField("stats") else None,
        skipped=tuple(skipped_file_from_proto(s) for s in msg.skipped),
    )


def _result_to_proto(result: RankedResult, view: ResultView) -> retrieval_pb2.SearchResult:
    chunk = chunk_to_proto(result.chunk, code_view=view is not ResultView.FULL)
    if view is ResultView.SUMMARY:
        chunk.ClearField("collapsed_source")
    return retrieval_pb2.SearchResult(
        chunk=chunk,
        **same_named(result, _RESULT_FIELDS),
        provenance=provenance_to_proto(result.provenance),
        signals={k: v for k, v in result.signals.items() if not k.startswith("_")},
        vector_channel=_CHANNEL_TO_PROTO[result.vector_channel],
        origin=_ORIGIN_TO_PROTO[result.origin],
    )


def _result_from_proto(msg: retrieval_pb2.SearchResult) -> RankedResult:
    return RankedResult(
        chunk=chunk_from_proto(msg.chunk),
        **same_named(msg, _RESULT_FIELDS),
        provenance=provenance_from_proto(msg.provenance),
        signals=dict(msg.signals),
        # A value a newer server added reads as "not said" rather than failing the answer.
        vector_channel=_CHANNEL_FROM_PROTO.get(msg.vector_channel, ""),
        origin=_ORIGIN_FROM_PROTO.get(msg.origin, ""),
    )


def _metadata_to_proto(meta: SearchMetadata) -> retrieval_pb2.SearchMetadata:
    return retrieval_pb2.SearchMetadata(
        indexing_status=_STATUS_TO_PROTO[meta.indexing_status],
        result_completeness=_COMPLETENESS_TO_PROTO[meta.result_completeness],
        **same_named(meta, _METADATA_FIELDS),
        answerability=meta.answerability,
        missing_names=list(meta.missing_names),
        nearest_names=list(meta.nearest_names),
        vector_channels=[_CHANNEL_TO_PROTO[c] for c in meta.vector_channels],
    )


def _metadata_from_proto(msg: retrieval_pb2.SearchMetadata) -> SearchMetadata:
    return SearchMetadata(
        indexing_status=_STATUS_FROM_PROTO[msg.indexing_status],
        result_completeness=_COMPLETENESS_FROM_PROTO[msg.result_completeness],
        **same_named(msg, _METADATA_FIELDS),
        answerability=msg.answerability if msg.HasField("answerability") else None,
        missing_names=tuple(msg.missing_names),
        nearest_names=tuple(msg.nearest_names),
        vector_channels=tuple(c for v in msg.vector_channels if (c := _CHANNEL_FROM_PROTO.get(v, ""))),
    )


def search_outcome_to_proto(
    outcome: SearchOutcome, view: ResultView = ResultView.FULL
) -> retrieval_pb2.SearchResponse:
    return retrieval_pb2.SearchResponse(
        results=[_result_to_proto(r, view) for r in outcome.results], metadata=_metadata_to_proto(outcome.metadata),
        workspaces=[retrieval_pb2.WorkspaceSearchMetadata(workspace_id=w.workspace_id,
                                                          metadata=_metadata_to_proto(w.metadata))
                    for w in outcome.workspaces],
    )


def search_outcome_from_proto(msg: retrieval_pb2.SearchResponse) -> SearchOutcome:
    return SearchOutcome(
        results=tuple(_result_from_proto(r) for r in msg.results), metadata=_metadata_from_proto(msg.metadata),
        workspaces=tuple(WorkspaceSearch(w.workspace_id, _metadata_from_proto(w.metadata)) for w in msg.workspaces),
    )


def hub_query_from_proto(msg: retrieval_pb2.FindHubsRequest) -> HubQuery:
    return HubQuery(
        workspace_root=msg.workspace_root,
        seeds=tuple((seed.chunk_id, seed.score) for seed in msg.seeds),
        max_hubs=msg.max_hubs,
        view=_view_from_proto(msg.view),
        workspace_id=msg.workspace_id,
    )


def hub_query_to_proto(query: HubQuery) -> retrieval_pb2.FindHubsRequest:
    return retrieval_pb2.FindHubsRequest(
        workspace_root=query.workspace_root,
        seeds=[retrieval_pb2.HubSeed(chunk_id=chunk_id, score=score) for chunk_id, score in query.seeds],
        max_hubs=query.max_hubs,
        view=_VIEW_TO_PROTO[query.view],
        workspace_id=query.workspace_id,
    )


def hub_outcome_to_proto(outcome: HubOutcome, view: ResultView = ResultView.FULL) -> retrieval_pb2.FindHubsResponse:
    return retrieval_pb2.FindHubsResponse(
        hubs=[
            retrieval_pb2.Hub(result=_result_to_proto(h.result, view), connected_seed_ids=list(h.connected_seed_ids),
                              outgoing=h.outgoing, incoming=h.incoming)
            for h in outcome.hubs
        ],
        duration_ms=outcome.duration_ms,
    )


def hub_outcome_from_proto(msg: retrieval_pb2.FindHubsResponse) -> HubOutcome:
    return HubOutcome(
        hubs=tuple(
            HubResult(result=_result_from_proto(h.result), connected_seed_ids=tuple(h.connected_seed_ids),
                      outgoing=h.outgoing, incoming=h.incoming)
            for h in msg.hubs
        ),
        duration_ms=msg.duration_ms,
    )


def status_to_proto(report: IndexStatusReport) -> retrieval_pb2.GetIndexStatusResponse:
    return retrieval_pb2.GetIndexStatusResponse(
        indexing_status=_STATUS_TO_PROTO[report.indexing_status],
        **same_named(report, _STATUS_FIELDS),
        last_sync_time=(
            timestamp_pb2.Timestamp(seconds=int(report.last_sync_at), nanos=int(report.last_sync_at % 1 * 1e9))
            if report.last_sync_at is not None
            else None
        ),
        skipped=[skipped_file_to_proto(s) for s in report.skipped],
    )


def status_from_proto(msg: retrieval_pb2.GetIndexStatusResponse) -> IndexStatusReport:
    return IndexStatusReport(
        indexing_status=_STATUS_FROM_PROTO[msg.indexing_status],
        **same_named(msg, _STATUS_FIELDS),
        last_sync_at=(
            msg.last_sync_time.seconds + msg.last_sync_time.nanos / 1e9 if msg.HasField("last_sync_time") else None
        ),
        skipped=tuple(skipped_file_from_proto(s) for s in msg.skipped),
    )


def indexes_to_proto(indexes: Iterable[IndexSummary]) -> retrieval_pb2.ListIndexesResponse:
    return retrieval_pb2.ListIndexesResponse(indexes=[
        retrieval_pb2.IndexSummary(workspace_id=i.workspace_id, key=i.key, root=i.root, host=i.host,
                                   status=status_to_proto(i.status), kind=_KIND_TO_PROTO[i.kind],
                                   base_workspace_id=i.base_workspace_id, used_by=list(i.used_by))
        for i in indexes
    ])


def indexes_from_proto(msg: retrieval_pb2.ListIndexesResponse) -> list[IndexSummary]:
    return [IndexSummary(workspace_id=i.workspace_id, key=i.key, root=i.root, host=i.host,
                         status=status_from_proto(i.status), kind=_KIND_FROM_PROTO.get(i.kind, "checkout"),
                         base_workspace_id=i.base_workspace_id, used_by=tuple(i.used_by)) for i in msg.indexes]
