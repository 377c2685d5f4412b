"""Our own models' profiles (code-static, code-small) through real `python -m codecompass.embedding` processes,
each with its committed model: one process per profile for the module."""

from __future__ import annotations

import grpc
import numpy as np
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from tests.fixtures.embedding import CSS_CHUNK, JWT_CHUNK, QUERY, embed

from codecompass.contracts.embedding import convert
from codecompass.embedding.minilm import MiniLMProvider, code_small
from codecompass.embedding.static import DEFAULT_MODEL_DIR, weights_hash
from codecompass.v1 import embedding_pb2 as pb
from codecompass.v1 import embedding_pb2_grpc


@pytest.fixture(scope="module")
def address(start_python_service_session) -> str:
    _, address = start_python_service_session("codecompass.embedding", {"CODECOMPASS_EMBEDDING_PROFILE": "code-static"})
    return address


@pytest.fixture(scope="module")
def stub(address):
    with grpc.insecure_channel(address) as channel:
        yield embedding_pb2_grpc.EmbeddingServiceStub(channel)


def test_the_service_serves_the_committed_model_under_its_own_identity(address, stub):
    with grpc.insecure_channel(address) as channel:
        response = health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="codecompass.v1.EmbeddingService"), timeout=5)
        assert response.status == health_pb2.HealthCheckResponse.SERVING
    info, blocked = convert.model_info_response_from_proto(stub.GetModelInfo(pb.GetModelInfoRequest(), timeout=5))
    assert (info.provider, info.model_id, info.dimensions, blocked) == ("code-static", "code-static", 256, False)
    assert info.model_version.startswith(f"m2v-{weights_hash(DEFAULT_MODEL_DIR)}+split-v1")


def test_a_query_finds_the_chunk_that_answers_it(stub):
    documents = embed(stub, [CSS_CHUNK, JWT_CHUNK], "document")
    query = embed(stub, [QUERY], "query")
    assert documents.vectors.shape == (2, 256) and documents.model.provider == "code-static"
    np.testing.assert_allclose(np.linalg.norm(documents.vectors, axis=1), 1.0, rtol=1e-5)
    css, jwt = documents.vectors @ query.vectors[0]
    assert jwt > css + 0.1, (jwt, css)


def test_identifiers_mean_their_words_and_batches_change_nothing(stub):
    texts = ["parseHttpHeaderValue", "parse http header value", "renderSidebarMenu", "", JWT_CHUNK]
    batched = embed(stub, texts, "document").vectors
    assert batched[0] @ batched[1] > 0.9999 and batched[0] @ batched[2] < 0.8
    for index, text in enumerate(texts):
        np.testing.assert_array_equal(embed(stub, [text], "document").vectors[0], batched[index])


@pytest.fixture(scope="module")
def code_small_stub(start_python_service_session):
    _, address = start_python_service_session("codecompass.embedding", {"CODECOMPASS_EMBEDDING_PROFILE": "code-small"})
    with grpc.insecure_channel(address) as channel:
        yield embedding_pb2_grpc.EmbeddingServiceStub(channel)


@pytest.fixture(scope="module")
def local():
    provider = MiniLMProvider(spec=code_small())
    provider.warmup()
    return provider


def test_code_small_serves_its_committed_onnx_model_under_its_weights_hash(code_small_stub, local):
    info, blocked = convert.model_info_response_from_proto(
        code_small_stub.GetModelInfo(pb.GetModelInfoRequest(), timeout=5))
    assert (info.provider, info.model_id, info.dimensions, blocked) == ("code-small", "code-small", 384, False)
    assert info.model_version == local.info().model_version and info.model_version.startswith("cs-")


def test_code_small_ranks_the_answer_first_and_matches_the_in_process_model(code_small_stub, local):
    documents = embed(code_small_stub, [CSS_CHUNK, JWT_CHUNK], "document")
    query = embed(code_small_stub, [QUERY], "query")
    assert documents.vectors.shape == (2, 384) and documents.model.provider == "code-small"
    css, jwt = documents.vectors @ query.vectors[0]
    assert jwt > css + 0.1, (jwt, css)
    np.testing.assert_allclose(documents.vectors, local.embed([CSS_CHUNK, JWT_CHUNK], "document"), atol=1e-5)
