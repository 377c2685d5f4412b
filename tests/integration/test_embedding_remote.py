"""External providers against local stub servers that speak the Voyage and OpenAI REST shapes."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import grpc
import numpy as np
import pytest

from codecompass.embedding.base import (
    ProviderAuthFailed,
    ProviderRateLimited,
    ProviderStartError,
    ProviderTimeout,
    ProviderUnavailable,
)
from codecompass.embedding.openai_compat import OpenAICompatibleProvider
from codecompass.embedding.voyage import VoyageProvider
from codecompass.v1 import embedding_pb2 as pb
from codecompass.v1 import embedding_pb2_grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures" / "stubs"))
from embedding_api import Reply, StubEmbeddingAPI, vector_for

SECRET = "vk-live-0123456789abcdef"


def unit(vector: np.ndarray) -> np.ndarray:
    return vector / np.linalg.norm(vector)


def voyage(stub: StubEmbeddingAPI, **overrides) -> VoyageProvider:
    options = {"api_key": SECRET, "base_url": stub.base_url, "model": None, "dimensions": stub.dimensions,
               "timeout_s": 2.0, "max_retries": 2} | overrides
    provider = VoyageProvider(**options)
    provider.warmup()
    return provider


def openai(stub: StubEmbeddingAPI, **overrides) -> OpenAICompatibleProvider:
    options = {"base_url": stub.base_url, "api_key": SECRET, "model": "nomic-embed-text", "dimensions": None,
               "timeout_s": 2.0, "max_retries": 2, "batch_size": 64} | overrides
    provider = OpenAICompatibleProvider(**options)
    provider.warmup()
    return provider


def test_voyage_sends_input_type_and_dimension_and_returns_normalized_vectors_in_order():
    with StubEmbeddingAPI(flavor="voyage", dimensions=8, api_key=SECRET) as stub:
        vectors = voyage(stub).embed(["alpha", "beta", "gamma"], "document")
        request = stub.received[-1]
    assert request.body["model"] == "voyage-code-3" and request.body["input_type"] == "document"
    assert request.body["output_dimension"] == 8 and request.body["truncation"] is True
    for row, text in zip(vectors, ["alpha", "beta", "gamma"], strict=True):
        np.testing.assert_allclose(row, unit(vector_for(text, 8)), rtol=1e-5)


def test_voyage_splits_requests_at_1000_texts():
    with StubEmbeddingAPI(flavor="voyage", dimensions=4, api_key=SECRET) as stub:
        vectors = voyage(stub).embed([f"t{i}" for i in range(1001)], "query")
        sizes = [len(r.body["input"]) for r in stub.received]
    assert sizes == [1000, 1]
    np.testing.assert_allclose(vectors[1000], unit(vector_for("t1000", 4)), rtol=1e-5)


def test_voyage_retries_429_then_succeeds():
    with StubEmbeddingAPI(flavor="voyage", dimensions=4, api_key=SECRET) as stub:
        stub.script(Reply(429))
        vectors = voyage(stub).embed(["x"], "query")
        assert len(stub.received) == 2
    np.testing.assert_allclose(vectors[0], unit(vector_for("x", 4)), rtol=1e-5)


def test_voyage_timeout_is_a_clear_timeout_error():
    with StubEmbeddingAPI(flavor="voyage", dimensions=4, api_key=SECRET) as stub:
        stub.script(Reply(delay_s=2.0))
        with pytest.raises(ProviderTimeout, match=r"did not answer within 0.3s \(1 attempts\)"):
            voyage(stub, timeout_s=0.3, max_retries=0).embed(["x"], "query")


def test_voyage_bad_key_never_shows_the_key():
    with (StubEmbeddingAPI(flavor="voyage", dimensions=4, api_key="the-right-key") as stub,
          pytest.raises(ProviderAuthFailed) as caught):
        voyage(stub).embed(["x"], "query")
    assert "401" in str(caught.value) and SECRET not in str(caught.value)


def test_voyage_persistent_5xx_is_unavailable():
    with StubEmbeddingAPI(flavor="voyage", dimensions=4, api_key=SECRET) as stub:
        stub.script(Reply(503), Reply(503))
        with pytest.raises(ProviderUnavailable, match="after 2 attempts"):
            voyage(stub, max_retries=1).embed(["x"], "query")


def test_openai_compatible_learns_dimensions_and_places_vectors_by_index():
    with StubEmbeddingAPI(flavor="openai", dimensions=6, api_key=SECRET) as stub:
        provider = openai(stub)
        assert provider.info().dimensions == 6 and provider.info().model_id == "nomic-embed-text"
        vectors = provider.embed(["one", "two", "three"], "document")
        request = stub.received[-1]
    assert request.headers["Authorization"] == f"Bearer {SECRET}"
    assert request.body == {"model": "nomic-embed-text", "input": ["one", "two", "three"], "encoding_format": "float",
                            "dimensions": 6}
    for row, text in zip(vectors, ["one", "two", "three"], strict=True):
        np.testing.assert_allclose(row, unit(vector_for(text, 6)), rtol=1e-5)


def test_openai_compatible_retries_429_and_5xx_with_backoff_then_succeeds():
    with StubEmbeddingAPI(flavor="openai", dimensions=4) as stub:
        provider = openai(stub, api_key=None, dimensions=4)
        stub.script(Reply(429, headers={"Retry-After": "0"}), Reply(502))
        vectors = provider.embed(["x"], "query")
        assert len(stub.received) == 3
        assert "Authorization" not in stub.received[-1].headers
    assert vectors.shape == (1, 4)


def test_openai_compatible_gives_up_after_max_retries():
    with StubEmbeddingAPI(flavor="openai", dimensions=4) as stub:
        provider = openai(stub, dimensions=4, max_retries=1)
        stub.script(Reply(429), Reply(429))
        with pytest.raises(ProviderRateLimited, match="after 2 attempts"):
            provider.embed(["x"], "query")


def test_openai_compatible_timeout_and_unreachable_endpoint():
    with StubEmbeddingAPI(flavor="openai", dimensions=4) as stub:
        provider = openai(stub, dimensions=4, timeout_s=0.3, max_retries=0)
        stub.script(Reply(delay_s=2.0))
        started = time.monotonic()
        with pytest.raises(ProviderTimeout, match="did not answer within 0.3s"):
            provider.embed(["x"], "query")
        assert time.monotonic() - started < 1.5
        closed_url = stub.base_url
    unreachable = OpenAICompatibleProvider(base_url=closed_url, api_key=None, model="m", dimensions=None,
                                           timeout_s=1, max_retries=0, batch_size=8)
    with pytest.raises(ProviderStartError, match="cannot learn dimensions.*cannot reach"):
        unreachable.warmup()


def test_openai_compatible_bad_key_never_shows_the_key():
    with StubEmbeddingAPI(flavor="openai", dimensions=4, api_key="the-right-key") as stub:
        provider = OpenAICompatibleProvider(base_url=stub.base_url, api_key=SECRET, model="m", dimensions=4,
                                            timeout_s=2, max_retries=0, batch_size=8)
        provider.warmup()
        with pytest.raises(ProviderAuthFailed) as caught:
            provider.embed(["x"], "query")
    assert SECRET not in str(caught.value)


def _gates_open(stub: StubEmbeddingAPI, profile: str) -> dict[str, str]:
    return {
        "CODECOMPASS_EMBEDDING_PROFILE": profile,
        "CODECOMPASS_EMBEDDING_EXTERNAL_PROVIDER_ENABLED": "true",
        "CODECOMPASS_EMBEDDING_ALLOW_CODE_PAYLOAD_TO_EXTERNAL": "true",
        "CODECOMPASS_EMBEDDING_BASE_URL": stub.base_url,
        "CODECOMPASS_EMBEDDING_DIMENSIONS": str(stub.dimensions),
        "CODECOMPASS_EMBEDDING_API_KEY": SECRET,
        "CODECOMPASS_EMBEDDING_MAX_RETRIES": "0",
        "CODECOMPASS_EMBEDDING_TIMEOUT_S": "0.5",
        "LOG_LEVEL": "DEBUG",
    }


def test_service_process_maps_401_to_unauthenticated_and_keeps_the_key_out_of_logs(start_python_service, tmp_path):
    with StubEmbeddingAPI(flavor="voyage", dimensions=4, api_key="the-right-key") as stub:
        _, address = start_python_service("codecompass.embedding", _gates_open(stub, "voyage"))
        with grpc.insecure_channel(address) as channel:
            service = embedding_pb2_grpc.EmbeddingServiceStub(channel)
            info = service.GetModelInfo(pb.GetModelInfoRequest(), timeout=5)
            assert info.model.provider == "voyage" and not info.external_provider_blocked
            with pytest.raises(grpc.RpcError) as caught:
                service.Embed(pb.EmbedRequest(texts=["const secretSauce = 1"]), timeout=10)
        assert stub.received, "the request reached the stub"
    assert caught.value.code() == grpc.StatusCode.UNAUTHENTICATED
    assert SECRET not in caught.value.details()
    logs = "".join(path.read_text() for path in tmp_path.glob("embedding-*.log"))
    assert "embed failed" in logs
    assert SECRET not in logs
    assert "secretSauce" not in logs, "request bodies (source code) are not logged"


def test_service_process_maps_a_slow_endpoint_to_deadline_exceeded(start_python_service):
    with StubEmbeddingAPI(flavor="openai", dimensions=4) as stub:
        env = _gates_open(stub, "openai-compatible") | {"CODECOMPASS_EMBEDDING_MODEL": "nomic-embed-text"}
        _, address = start_python_service("codecompass.embedding", env)
        stub.script(Reply(delay_s=3.0))
        with grpc.insecure_channel(address) as channel, pytest.raises(grpc.RpcError) as caught:
            embedding_pb2_grpc.EmbeddingServiceStub(channel).Embed(pb.EmbedRequest(texts=["x"]), timeout=10)
    assert caught.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED
    assert "did not answer within 0.5s" in caught.value.details()
