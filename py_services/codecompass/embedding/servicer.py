"""gRPC EmbeddingService: validate, call the provider, map errors to status codes."""

from __future__ import annotations

import time

import grpc
import numpy as np

from codecompass.common.logging import get_logger
from codecompass.common.serving import NO_RETRY
from codecompass.common.telemetry import EMBEDDING_QUEUE_DEPTH, tracer
from codecompass.contracts.embedding import convert
from codecompass.contracts.embedding.model import EmbedResult
from codecompass.embedding.base import (
    EmbeddingError,
    ProviderAuthFailed,
    ProviderBadResponse,
    ProviderNotReady,
    ProviderRateLimited,
    ProviderRejected,
    ProviderStartError,
    ProviderTimeout,
    ProviderUnavailable,
)
from codecompass.embedding.profiles import ProviderChoice
from codecompass.v1 import embedding_pb2_grpc

log = get_logger("codecompass.embedding.servicer")

SERVICE_NAME = "codecompass.v1.EmbeddingService"
# A sync sends a few hundred texts per call; these bounds stop a runaway caller
# from pinning the model (or memory) for minutes inside one RPC.
MAX_TEXTS_PER_REQUEST = 2048
MAX_TEXT_CHARS = 256 * 1024

_STATUS_BY_ERROR: tuple[tuple[type[EmbeddingError], grpc.StatusCode], ...] = (
    (ProviderNotReady, grpc.StatusCode.UNAVAILABLE),
    (ProviderUnavailable, grpc.StatusCode.UNAVAILABLE),
    (ProviderStartError, grpc.StatusCode.UNAVAILABLE),
    (ProviderTimeout, grpc.StatusCode.DEADLINE_EXCEEDED),
    (ProviderRateLimited, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (ProviderAuthFailed, grpc.StatusCode.UNAUTHENTICATED),
    (ProviderRejected, grpc.StatusCode.FAILED_PRECONDITION),
    (ProviderBadResponse, grpc.StatusCode.INTERNAL),
)


# Failures the provider's own client has retried (embedding.max_retries) or that no retry cures: a
# caller's service config must not multiply them (common/serving.NO_RETRY). Not ProviderNotReady: a
# model still loading is worth the caller's next attempt.
_NOT_RETRIED = (ProviderUnavailable, ProviderStartError)


def _abort(context: grpc.ServicerContext, exc: EmbeddingError) -> None:
    if isinstance(exc, _NOT_RETRIED):
        context.set_trailing_metadata(NO_RETRY)
    context.abort(status_for(exc), str(exc))


def status_for(error: EmbeddingError) -> grpc.StatusCode:
    for error_type, code in _STATUS_BY_ERROR:
        if isinstance(error, error_type):
            return code
    return grpc.StatusCode.INTERNAL


def validation_problem(texts: list[str]) -> str | None:
    if len(texts) > MAX_TEXTS_PER_REQUEST:
        return f"too many texts: {len(texts)} > {MAX_TEXTS_PER_REQUEST} per request; split the batch"
    for index, text in enumerate(texts):
        if len(text) > MAX_TEXT_CHARS:
            return f"texts[{index}] is {len(text)} characters; the limit is {MAX_TEXT_CHARS}"
    return None


class EmbeddingServicer(embedding_pb2_grpc.EmbeddingServiceServicer):
    def __init__(self, choice: ProviderChoice) -> None:
        self._provider = choice.provider
        self._blocked = choice.external_provider_blocked
        self._tracer = tracer("codecompass.embedding")

    def Embed(self, request, context):
        try:
            texts, input_type = convert.embed_request_from_proto(request)
        except convert.UnknownInputType as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))
        problem = validation_problem(texts)
        if problem is not None:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, problem)
        started = time.monotonic()
        # The texts waiting here (for the model, which runs one batch at a time, or for a remote
        # provider): what a busy embedding service has in hand, the number to scale it by.
        queued = {"codecompass.embedding.input_type": input_type}
        EMBEDDING_QUEUE_DEPTH.add(len(texts), queued)
        with self._tracer.start_as_current_span("embedding.embed") as span:
            span.set_attribute("codecompass.embedding.texts", len(texts))
            span.set_attribute("codecompass.embedding.input_type", input_type)
            try:
                info = self._provider.info()
                span.set_attribute("codecompass.embedding.provider", info.provider)
                span.set_attribute("codecompass.embedding.model", info.model_id)
                vectors = (self._provider.embed(texts, input_type) if texts
                           else np.zeros((0, info.dimensions), dtype=np.float32))
            except EmbeddingError as exc:
                code = status_for(exc)
                span.set_attribute("codecompass.embedding.error", code.name)
                log.warning("embed failed", extra={"code": code.name, "error": str(exc), "texts": len(texts)})
                _abort(context, exc)
            except Exception:
                log.exception("embed failed unexpectedly", extra={"texts": len(texts)})
                context.abort(grpc.StatusCode.INTERNAL, "embedding failed with an internal error; see the service log")
            finally:
                EMBEDDING_QUEUE_DEPTH.add(-len(texts), queued)
        log.debug("embedded", extra={"texts": len(texts), "input_type": input_type,
                                     "ms": round((time.monotonic() - started) * 1000, 1)})
        return convert.embed_result_to_proto(EmbedResult(vectors, info, self._blocked))

    def GetModelInfo(self, request, context):
        try:
            info = self._provider.info()
        except EmbeddingError as exc:
            _abort(context, exc)
        return convert.model_info_response_to_proto(info, self._blocked)


def register(servicer: EmbeddingServicer):
    def add(server: grpc.Server) -> list[str]:
        embedding_pb2_grpc.add_EmbeddingServiceServicer_to_server(servicer, server)
        return [SERVICE_NAME]

    return add
