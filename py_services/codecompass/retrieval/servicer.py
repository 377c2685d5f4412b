"""RetrievalService gRPC handlers: convert, call the engine, map domain errors to status codes."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import grpc
from opentelemetry import trace

from codecompass.clients.errors import UPSTREAM_KEY
from codecompass.common.serving import NO_RETRY
from codecompass.common.telemetry import tracer
from codecompass.contracts.retrieval import convert
from codecompass.contracts.retrieval.errors import (
    AnalysisFailed,
    DependencyUnavailable,
    EmbeddingFailed,
    IndexNotFound,
    InvalidQuery,
    InvalidWorkspace,
    RetrievalError,
    WorkspaceNotFound,
    WrongRole,
)
from codecompass.contracts.retrieval.model import HubOutcome, SearchOutcome, SyncOutcome
from codecompass.retrieval.engine import RetrievalEngine
from codecompass.retrieval.index.shard.plan import ShardFailed
from codecompass.v1 import retrieval_pb2, retrieval_pb2_grpc

SERVICE_NAME = "codecompass.v1.RetrievalService"
# What a Sync keeps of its caller's deadline to build and send its answer.
_DEADLINE_MARGIN_S = 0.05
# What an IndexWorkspace waiting for shard workers keeps of its caller's deadline to end the
# plan (a write to the index) and say which workers never reported, rather than time out.
_SHARD_WAIT_MARGIN_S = 2.0

_STATUS_OF = (
    (InvalidWorkspace, grpc.StatusCode.INVALID_ARGUMENT),
    (InvalidQuery, grpc.StatusCode.INVALID_ARGUMENT),
    (WorkspaceNotFound, grpc.StatusCode.NOT_FOUND),
    (IndexNotFound, grpc.StatusCode.NOT_FOUND),
    (WrongRole, grpc.StatusCode.FAILED_PRECONDITION),
    (DependencyUnavailable, grpc.StatusCode.UNAVAILABLE),
    (AnalysisFailed, grpc.StatusCode.INTERNAL),
    (EmbeddingFailed, grpc.StatusCode.INTERNAL),
    # A sharded index stopped (a worker failed, never came, the caller left): nothing committed.
    (ShardFailed, grpc.StatusCode.ABORTED),
)


def _abort(context: grpc.ServicerContext, exc: Exception) -> None:
    if isinstance(exc, DependencyUnavailable):
        # This service is up; a caller must not report it as the one that is down, nor retry a call
        # the dependency's own client has retried.
        context.set_trailing_metadata(((UPSTREAM_KEY, "1"), *NO_RETRY))
    for kind, code in _STATUS_OF:
        if isinstance(exc, kind):
            context.abort(code, str(exc))
    raise exc


def _record_search(span: trace.Span, outcome: SearchOutcome) -> None:
    """What the first stage found and how: the numbers a slow or empty answer is explained by."""
    meta = outcome.metadata
    span.set_attribute("codecompass.retrieval.results", len(outcome.results))
    span.set_attribute("codecompass.retrieval.candidates", meta.total_candidates)
    span.set_attribute("codecompass.retrieval.chunks", meta.total_chunks)
    span.set_attribute("codecompass.retrieval.semantic_ratio", meta.semantic_ratio_used)
    span.set_attribute("codecompass.retrieval.vector_channels", list(meta.vector_channels))
    span.set_attribute("codecompass.retrieval.confidence", meta.confidence)
    if meta.answerability is not None:
        span.set_attribute("codecompass.retrieval.answerability", meta.answerability)
    span.set_attribute("codecompass.retrieval.indexing_status", meta.indexing_status.value)
    span.set_attribute("codecompass.retrieval.completeness", meta.result_completeness.value)
    span.set_attribute("codecompass.retrieval.embedding_model", meta.embedding_model_id)
    if meta.semantic_skipped_reason:
        span.set_attribute("codecompass.retrieval.semantic_skipped_reason", meta.semantic_skipped_reason)


def _record_sync(span: trace.Span, outcome: SyncOutcome) -> None:
    span.set_attribute("codecompass.retrieval.freshness_status", outcome.freshness_status.value)
    span.set_attribute("codecompass.retrieval.sync_finished", outcome.finished)
    span.set_attribute("codecompass.retrieval.pending_files", outcome.pending_count)


def _record_hubs(span: trace.Span, seeds: int, outcome: HubOutcome) -> None:
    span.set_attribute("codecompass.retrieval.seeds", seeds)
    span.set_attribute("codecompass.retrieval.hubs", len(outcome.hubs))


class RetrievalServicer(retrieval_pb2_grpc.RetrievalServiceServicer):
    def __init__(self, engine: RetrievalEngine) -> None:
        self._engine = engine
        self._tracer = tracer("codecompass.retrieval")

    def IndexWorkspace(
        self, request: retrieval_pb2.IndexWorkspaceRequest, context: grpc.ServicerContext
    ) -> Iterator[retrieval_pb2.IndexWorkspaceResponse]:
        remaining = context.time_remaining()
        wait_s = None if remaining is None else max(remaining - _SHARD_WAIT_MARGIN_S, 0.0)
        # Set when the call ends, cancelled included: a wait for shard workers stops with it.
        gone = threading.Event()
        context.add_callback(gone.set)
        try:
            for progress in self._engine.index(request.workspace_root, wait_for_embeddings=request.wait_for_embeddings,
                                               force=request.force, workspace_id=request.workspace_id,
                                               workers=request.workers, wait_s=wait_s, cancelled=gone):
                yield convert.progress_to_proto(progress)
        except RetrievalError as exc:
            _abort(context, exc)

    def Search(
        self, request: retrieval_pb2.SearchRequest, context: grpc.ServicerContext
    ) -> retrieval_pb2.SearchResponse:
        try:
            query = convert.search_query_from_proto(request)
        except ValueError as exc:  # filters that cannot be honoured: bad glob, unknown enum value
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"invalid request: {exc}")
        with self._tracer.start_as_current_span("retrieval.search") as span:
            try:
                outcome = self._engine.search(query)
            except RetrievalError as exc:
                _abort(context, exc)
            _record_search(span, outcome)
        return convert.search_outcome_to_proto(outcome, query.view)

    def Sync(self, request: retrieval_pb2.SyncRequest, context: grpc.ServicerContext) -> retrieval_pb2.SyncResponse:
        budget_s = convert.sync_budget_from_proto(request)
        remaining = context.time_remaining()
        if remaining is not None:
            # Answer (still syncing) just before the caller gives up, rather than let the
            # call fail with DEADLINE_EXCEEDED and lose what it would have said.
            cap = max(remaining - _DEADLINE_MARGIN_S, 0.0)
            budget_s = cap if budget_s is None else min(budget_s, cap)
        with self._tracer.start_as_current_span("retrieval.sync") as span:
            try:
                outcome = self._engine.sync(request.workspace_root, budget_s, force=request.force,
                                            workspace_id=request.workspace_id)
            except RetrievalError as exc:
                _abort(context, exc)
            _record_sync(span, outcome)
        return convert.sync_outcome_to_proto(outcome)

    def FindHubs(
        self, request: retrieval_pb2.FindHubsRequest, context: grpc.ServicerContext
    ) -> retrieval_pb2.FindHubsResponse:
        try:
            query = convert.hub_query_from_proto(request)
        except ValueError as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"invalid request: {exc}")
        with self._tracer.start_as_current_span("retrieval.find_hubs") as span:
            try:
                outcome = self._engine.find_hubs(query)
            except RetrievalError as exc:
                _abort(context, exc)
            _record_hubs(span, len(query.seeds), outcome)
        return convert.hub_outcome_to_proto(outcome, query.view)

    def GetIndexStatus(
        self, request: retrieval_pb2.GetIndexStatusRequest, context: grpc.ServicerContext
    ) -> retrieval_pb2.GetIndexStatusResponse:
        try:
            report = self._engine.status(request.workspace_root, request.workspace_id)
        except RetrievalError as exc:
            _abort(context, exc)
        return convert.status_to_proto(report)

    def ListIndexes(
        self, request: retrieval_pb2.ListIndexesRequest, context: grpc.ServicerContext
    ) -> retrieval_pb2.ListIndexesResponse:
        try:
            indexes = self._engine.list_indexes()
        except RetrievalError as exc:
            _abort(context, exc)
        return convert.indexes_to_proto(indexes)

    def DropIndex(
        self, request: retrieval_pb2.DropIndexRequest, context: grpc.ServicerContext
    ) -> retrieval_pb2.DropIndexResponse:
        try:
            workspace_id, freed = self._engine.drop(request.workspace_root, request.workspace_id)
        except RetrievalError as exc:
            _abort(context, exc)
        return retrieval_pb2.DropIndexResponse(workspace_id=workspace_id, bytes_freed=freed)


def register(server: grpc.Server, engine: RetrievalEngine) -> list[str]:
    retrieval_pb2_grpc.add_RetrievalServiceServicer_to_server(RetrievalServicer(engine), server)
    return [SERVICE_NAME]
