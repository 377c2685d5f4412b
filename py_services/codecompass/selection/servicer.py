"""gRPC SelectionService: validate, run the engine, convert. A rendering failure is a fallback, not an error."""

from __future__ import annotations

import math
import os

import grpc

from codecompass.common.logging import get_logger
from codecompass.common.telemetry import tracer
from codecompass.contracts.chunk_convert import UnknownEnumValue
from codecompass.contracts.selection import convert
from codecompass.contracts.selection.model import SelectQuery
from codecompass.selection.engine import SelectionEngine
from codecompass.v1 import selection_pb2_grpc

log = get_logger("codecompass.selection.servicer")

SERVICE_NAME = "codecompass.v1.SelectionService"
# A selection takes the tens of candidates a search ranks; rendering each costs a spec or two in
# one RenderSymbols call, so this bound keeps a runaway caller from rendering a whole index.
MAX_CANDIDATES = 1000


def validation_problem(query: SelectQuery) -> str | None:
    if not query.workspace_root or not os.path.isabs(query.workspace_root):
        return f"workspace_root must be an absolute path, got {query.workspace_root!r}"
    if len(query.candidates) > MAX_CANDIDATES:
        return f"too many candidates: {len(query.candidates)} > {MAX_CANDIDATES} per request"
    if query.min_relevance is not None and not 0.0 <= query.min_relevance <= 1.0:
        return f"min_relevance must be in [0, 1], got {query.min_relevance}"
    seen: set[str] = set()
    for index, candidate in enumerate(query.candidates):
        if not candidate.chunk.id:
            return f"candidates[{index}].chunk.id is empty"
        if candidate.chunk.id in seen:
            return f"candidates[{index}]: chunk {candidate.chunk.id} is offered twice"
        seen.add(candidate.chunk.id)
        if not math.isfinite(candidate.score) or candidate.score < 0:
            return f"candidates[{index}].score must be a finite number >= 0, got {candidate.score}"
        if candidate.relevance is not None and not 0.0 <= candidate.relevance <= 1.0:  # NaN fails too
            return f"candidates[{index}].relevance must be in [0, 1], got {candidate.relevance}"
    return None


class SelectionServicer(selection_pb2_grpc.SelectionServiceServicer):
    def __init__(self, engine: SelectionEngine) -> None:
        self._engine = engine
        self._tracer = tracer("codecompass.selection")

    def Select(self, request, context):
        try:
            query = convert.query_from_proto(request)
        except UnknownEnumValue as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        problem = validation_problem(query)
        if problem is not None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, problem)
        with self._tracer.start_as_current_span("selection.select") as span:
            span.set_attribute("codecompass.selection.candidates", len(query.candidates))
            span.set_attribute("codecompass.selection.index_fresh", query.index_fresh)
            outcome = self._engine.select(query)
            span.set_attribute("codecompass.selection.results", len(outcome.results))
            span.set_attribute("codecompass.selection.total_tokens", outcome.total_tokens)
            span.set_attribute("codecompass.selection.max_tokens", outcome.max_tokens)
            # What the gate and the budget dropped, and the children folded into a parent.
            span.set_attribute("codecompass.selection.below_relevance", outcome.below_relevance)
            span.set_attribute("codecompass.selection.over_budget", outcome.over_budget)
            span.set_attribute("codecompass.selection.merged", outcome.merged)
            span.set_attribute("codecompass.selection.render_fallback", outcome.render_fallback)
            if outcome.render_fallback_reason:
                span.set_attribute("codecompass.selection.render_fallback_reason", outcome.render_fallback_reason)
        log.debug("selected", extra={"candidates": len(query.candidates), "results": len(outcome.results),
                                     "below_relevance": outcome.below_relevance, "over_budget": outcome.over_budget,
                                     "merged": outcome.merged, "total_tokens": outcome.total_tokens,
                                     "render_fallback_reason": outcome.render_fallback_reason,
                                     "ms": round(outcome.duration_ms, 1)})
        return convert.outcome_to_proto(outcome)


def register(servicer: SelectionServicer):
    def add(server: grpc.Server) -> list[str]:
        selection_pb2_grpc.add_SelectionServiceServicer_to_server(servicer, server)
        return [SERVICE_NAME]

    return add
