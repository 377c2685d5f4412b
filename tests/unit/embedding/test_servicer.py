"""EmbeddingService over real gRPC on 127.0.0.1:0 with a scripted provider: validation and status mapping."""

from __future__ import annotations

import grpc
import numpy as np
import pytest

from codecompass.common.serving import ServiceSpec, start_server
from codecompass.contracts.embedding import convert
from codecompass.contracts.embedding.model import ModelInfo
from codecompass.embedding.base import (
    ProviderAuthFailed,
    ProviderBadResponse,
    ProviderNotReady,
    ProviderRateLimited,
    ProviderRejected,
    ProviderTimeout,
    ProviderUnavailable,
)
from codecompass.embedding.profiles import ProviderChoice
from codecompass.embedding.servicer import MAX_TEXT_CHARS, MAX_TEXTS_PER_REQUEST, EmbeddingServicer, register
from codecompass.v1 import embedding_pb2 as pb
from codecompass.v1 import embedding_pb2_grpc

INFO = ModelInfo("voyage", "voyage-code-3", "api+raw-v1", 4, 32000)


class ScriptedProvider:
    def __init__(self) -> None:
        self.error: Exception | None = None
        self.calls: list[tuple[list[str], str]] = []

    def info(self) -> ModelInfo:
        return INFO

    def warmup(self) -> None:
        return None

    def embed(self, texts, input_type):
        self.calls.append((texts, input_type))
        if self.error is not None:
            raise self.error
        return np.array([[len(t), i, 0, 1] for i, t in enumerate(texts)], dtype=np.float32)


@pytest.fixture(scope="module")
def service():
    provider = ScriptedProvider()
    servicer = EmbeddingServicer(ProviderChoice(provider, "voyage", external_provider_blocked=True))
    running = start_server(ServiceSpec("embedding", register(servicer)), warmup_in_background=False)
    channel = grpc.insecure_channel(running.address)
    yield provider, embedding_pb2_grpc.EmbeddingServiceStub(channel)
    channel.close()
    running.stop(0)


@pytest.fixture
def provider_and_stub(service):
    provider, stub = service
    provider.error = None
    provider.calls.clear()
    return provider, stub


def test_embed_returns_vectors_in_order_with_model_and_gate_flag(provider_and_stub):
    provider, stub = provider_and_stub
    response = stub.Embed(convert.embed_request_to_proto(["a", "bbb", "cc"], "query"), timeout=5)
    result = convert.embed_result_from_proto(response)
    assert result.vectors[:, 0].tolist() == [1, 3, 2]
    assert result.model == INFO and result.external_provider_blocked is True
    assert provider.calls == [(["a", "bbb", "cc"], "query")]


def test_empty_request_is_an_empty_answer_without_calling_the_provider(provider_and_stub):
    provider, stub = provider_and_stub
    result = convert.embed_result_from_proto(stub.Embed(pb.EmbedRequest(), timeout=5))
    assert result.vectors.shape == (0, 4) and result.model == INFO
    assert provider.calls == []


def test_too_many_texts_is_invalid_argument(provider_and_stub):
    _, stub = provider_and_stub
    with pytest.raises(grpc.RpcError) as caught:
        stub.Embed(pb.EmbedRequest(texts=["x"] * (MAX_TEXTS_PER_REQUEST + 1)), timeout=5)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert f"{MAX_TEXTS_PER_REQUEST + 1} > {MAX_TEXTS_PER_REQUEST}" in caught.value.details()


def test_huge_text_is_invalid_argument_naming_it(provider_and_stub):
    _, stub = provider_and_stub
    with pytest.raises(grpc.RpcError) as caught:
        stub.Embed(pb.EmbedRequest(texts=["ok", "x" * (MAX_TEXT_CHARS + 1)]), timeout=5)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert caught.value.details().startswith("texts[1] is")


def test_unknown_input_type_is_invalid_argument(provider_and_stub):
    _, stub = provider_and_stub
    with pytest.raises(grpc.RpcError) as caught:
        stub.Embed(pb.EmbedRequest(texts=["x"], input_type=9), timeout=5)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT


@pytest.mark.parametrize("error,code", [
    (ProviderNotReady("minilm: the model is still loading"), grpc.StatusCode.UNAVAILABLE),
    (ProviderUnavailable("voyage is unavailable after 4 attempts"), grpc.StatusCode.UNAVAILABLE),
    (ProviderTimeout("voyage did not answer within 2s"), grpc.StatusCode.DEADLINE_EXCEEDED),
    (ProviderRateLimited("voyage rate limit (HTTP 429)"), grpc.StatusCode.RESOURCE_EXHAUSTED),
    (ProviderAuthFailed("voyage rejected the API key (HTTP 401)"), grpc.StatusCode.UNAUTHENTICATED),
    (ProviderRejected("voyage refused the request: unknown model"), grpc.StatusCode.FAILED_PRECONDITION),
    (ProviderBadResponse("voyage: expected 1 vectors"), grpc.StatusCode.INTERNAL),
])
def test_provider_errors_map_to_status_codes_with_their_message(provider_and_stub, error, code):
    provider, stub = provider_and_stub
    provider.error = error
    with pytest.raises(grpc.RpcError) as caught:
        stub.Embed(pb.EmbedRequest(texts=["x"]), timeout=5)
    assert caught.value.code() == code
    assert caught.value.details() == str(error)


def test_unexpected_errors_are_internal_without_a_traceback(provider_and_stub):
    provider, stub = provider_and_stub
    provider.error = ZeroDivisionError("boom at line 12")
    with pytest.raises(grpc.RpcError) as caught:
        stub.Embed(pb.EmbedRequest(texts=["x"]), timeout=5)
    assert caught.value.code() == grpc.StatusCode.INTERNAL
    assert "Traceback" not in caught.value.details() and "boom" not in caught.value.details()


def test_get_model_info(provider_and_stub):
    _, stub = provider_and_stub
    info, blocked = convert.model_info_response_from_proto(stub.GetModelInfo(pb.GetModelInfoRequest(), timeout=5))
    assert info == INFO and blocked is True
