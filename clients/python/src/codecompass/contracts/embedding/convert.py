"""The only place embedding domain types meet the generated proto types: the embedding servicer
and its client both convert here."""

from __future__ import annotations

import numpy as np

from codecompass.contracts.embedding.model import EmbedResult, InputType, ModelInfo
from codecompass.v1 import embedding_pb2 as pb

_INPUT_TYPE_FROM_PROTO: dict[pb.InputType, InputType] = {
    # Unspecified is treated as a document, as the contract says.
    pb.INPUT_TYPE_UNSPECIFIED: "document",
    pb.INPUT_TYPE_DOCUMENT: "document",
    pb.INPUT_TYPE_QUERY: "query",
}
_INPUT_TYPE_TO_PROTO: dict[InputType, pb.InputType] = {"document": pb.INPUT_TYPE_DOCUMENT, "query": pb.INPUT_TYPE_QUERY}


class UnknownInputType(ValueError):
    pass


def input_type_from_proto(value: pb.InputType) -> InputType:
    try:
        return _INPUT_TYPE_FROM_PROTO[value]
    except KeyError:
        raise UnknownInputType(f"unknown input_type {value}") from None


def input_type_to_proto(input_type: InputType) -> pb.InputType:
    return _INPUT_TYPE_TO_PROTO[input_type]


def model_info_to_proto(info: ModelInfo) -> pb.ModelInfo:
    return pb.ModelInfo(provider=info.provider, model_id=info.model_id, model_version=info.model_version,
                        dimensions=info.dimensions, max_input_tokens=info.max_input_tokens)


def model_info_from_proto(message: pb.ModelInfo) -> ModelInfo:
    return ModelInfo(provider=message.provider, model_id=message.model_id, model_version=message.model_version,
                     dimensions=message.dimensions, max_input_tokens=message.max_input_tokens)


def embed_request_to_proto(texts: list[str], input_type: InputType) -> pb.EmbedRequest:
    return pb.EmbedRequest(texts=texts, input_type=input_type_to_proto(input_type))


def embed_request_from_proto(request: pb.EmbedRequest) -> tuple[list[str], InputType]:
    return list(request.texts), input_type_from_proto(request.input_type)


def embed_result_to_proto(result: EmbedResult) -> pb.EmbedResponse:
    return pb.EmbedResponse(
        vectors=[pb.Vector(values=row) for row in result.vectors.tolist()],
        model=model_info_to_proto(result.model),
        external_provider_blocked=result.external_provider_blocked,
    )


def embed_result_from_proto(response: pb.EmbedResponse) -> EmbedResult:
    model = model_info_from_proto(response.model)
    vectors = np.array([list(vector.values) for vector in response.vectors], dtype=np.float32)
    return EmbedResult(vectors.reshape(len(response.vectors), model.dimensions), model,
                       response.external_provider_blocked)


def model_info_response_to_proto(info: ModelInfo, external_provider_blocked: bool) -> pb.GetModelInfoResponse:
    return pb.GetModelInfoResponse(model=model_info_to_proto(info), external_provider_blocked=external_provider_blocked)


def model_info_response_from_proto(response: pb.GetModelInfoResponse) -> tuple[ModelInfo, bool]:
    return model_info_from_proto(response.model), response.external_provider_blocked
