"""Domain types of the embedding service's messages: the model a provider runs (`ModelInfo`), the
identity the retrieval service keys vectors by (`EmbeddingModel`), and an embedding's result."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

import numpy as np

InputType = Literal["document", "query"]
ModelT = TypeVar("ModelT")


@dataclass(frozen=True)
class ModelInfo:
    """Identity of the vectors a provider produces; vectors are only comparable when all fields match."""

    provider: str
    model_id: str
    model_version: str
    dimensions: int
    max_input_tokens: int


@dataclass(frozen=True, eq=False)
class EmbedResult(Generic[ModelT]):
    """Vectors (n, d) float32 in input order, the model that made them, and whether a gate blocked another.

    The one result type of an embedding, on both sides of the wire. The model is named as its holder
    names models: the service by its `ModelInfo` (input window included), the retrieval service's
    client by the index's `EmbeddingModel` (the identity its vectors are keyed by, which the input
    window is no part of).
    """

    vectors: np.ndarray
    model: ModelT
    external_provider_blocked: bool


@dataclass(frozen=True)
class EmbeddingModel:
    provider: str
    model_id: str
    model_version: str
    dimensions: int

    def __post_init__(self) -> None:
        if self.dimensions <= 0:
            raise ValueError(f"embedding dimensions must be positive, got {self.dimensions}")

    def identity(self) -> str:
        return f"{self.provider}/{self.model_id}@{self.model_version}/{self.dimensions}"
