"""Proto round trips at the edge of the embedding service."""

from __future__ import annotations

import numpy as np
import pytest

from codecompass.contracts.embedding import convert
from codecompass.contracts.embedding.model import EmbedResult, ModelInfo
from codecompass.v1 import embedding_pb2 as pb

INFO = ModelInfo("minilm", "all-MiniLM-L6-v2", "gt0.1.0+onnx1+split-v1+win256", 3, 256)


def test_model_info_round_trip():
    assert convert.model_info_from_proto(convert.model_info_to_proto(INFO)) == INFO


@pytest.mark.parametrize("input_type", ["document", "query"])
def test_request_round_trip(input_type):
    texts = ["alpha", "", "ünïcode ✓"]
    message = pb.EmbedRequest.FromString(convert.embed_request_to_proto(texts, input_type).SerializeToString())
    assert convert.embed_request_from_proto(message) == (texts, input_type)


def test_unspecified_input_type_means_document_and_unknown_is_rejected():
    assert convert.embed_request_from_proto(pb.EmbedRequest(texts=["x"])) == (["x"], "document")
    with pytest.raises(convert.UnknownInputType, match="unknown input_type 7"):
        convert.input_type_from_proto(7)


def test_result_round_trip_keeps_vectors_order_and_flags():
    vectors = np.array([[0.6, 0.8, 0.0], [0.0, 0.0, 1.0]], dtype=np.float32)
    wire = convert.embed_result_to_proto(EmbedResult(vectors, INFO, True)).SerializeToString()
    back = convert.embed_result_from_proto(pb.EmbedResponse.FromString(wire))
    np.testing.assert_array_equal(back.vectors, vectors)
    assert back.vectors.dtype == np.float32
    assert back.model == INFO and back.external_provider_blocked is True


def test_empty_result_keeps_its_dimensions():
    wire = convert.embed_result_to_proto(EmbedResult(np.zeros((0, 3), np.float32), INFO, False))
    assert convert.embed_result_from_proto(wire).vectors.shape == (0, 3)


def test_model_info_response_round_trip():
    message = convert.model_info_response_to_proto(INFO, True)
    assert convert.model_info_response_from_proto(message) == (INFO, True)
