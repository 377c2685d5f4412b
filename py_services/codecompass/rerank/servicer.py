"""gRPC RerankService: validate, run the engine, convert. A provider failure is a fallback, not an error."""

from __future__ import annotations

import time

import grpc

from codecompass.common.logging import get_logger
from codecompass.common.telemetry import tracer
from codecompass.contracts.rerank import convert
from codecompass.contracts.rerank.model import RerankQuery, UnknownProvider
from codecompass.rerank.engine import RerankEngine
from codecompass.v1 import rerank_pb2_grpc

log = get_logger("codecompass.rerank.servicer")

SERVICE_NAME = "codecompass.v1.RerankService"
# Rerankers take tens of candidates (Cohere caps a request at 1000 documents);
# these bounds stop a runaway caller from shipping a whole index per call.
MAX_DOCUMENTS = 1000
MAX_TEXT_CHARS = 64 * 1024


def validation_problem(query: RerankQuery) -> str | None:
    if len(query.candidates) > MAX_DOCUMENTS:
        return f"too many documents: {len(query.candidates)} > {MAX_DOCUMENTS} per request"
    for index, candidate in enumerate(query.candidates):
        if len(candidate.text) > MAX_TEXT_CHARS:
            return f"documents[{index}].text is {len(candidate.text)} characters; the limit is {MAX_TEXT_CHARS}"
    return None


class RerankServicer(rerank_pb2_grpc.RerankServiceServicer):
    def __init__(self, engine: RerankEngine) -> None:
        self._engine = engine
        self._tracer = tracer("codecompass.rerank")

    def Rerank(self, request, context):
        query = convert.query_from_proto(request)
        problem = validation_problem(query)
        if problem is not None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, problem)
        started = time.monotonic()
        with self._tracer.start_as_current_span("rerank.rerank") as span:
            span.set_attribute("codecompass.rerank.documents", len(query.candidates))
            span.set_attribute("codecompass.rerank.top_n", query.top_n)
            try:
                outcome = self._engine.rerank(query)
            except UnknownProvider as exc:
                context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
            span.set_attribute("codecompass.rerank.provider", outcome.provider)
            span.set_attribute("codecompass.rerank.fallback", outcome.fallback)
            if outcome.fallback_reason:
                span.set_attribute("codecompass.rerank.fallback_reason", outcome.fallback_reason)
        log.debug("reranked", extra={"documents": len(query.candidates), "provider": outcome.provider,
                                     "fallback_reason": outcome.fallback_reason,
                                     "ms": round((time.monotonic() - started) * 1000, 1)})
        return convert.outcome_to_proto(outcome)


def register(servicer: RerankServicer):
    def add(server: grpc.Server) -> list[str]:
        rerank_pb2_grpc.add_RerankServiceServicer_to_server(servicer, server)
        return [SERVICE_NAME]

    return add
