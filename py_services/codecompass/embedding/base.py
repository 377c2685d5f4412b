"""The provider interface every embedding backend implements, and its errors.

Errors are domain exceptions; the servicer maps each class to one gRPC status
code, so a provider never decides wire behaviour and never leaks a traceback.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from codecompass.contracts.embedding.model import InputType, ModelInfo


class Provider(Protocol):
    def info(self) -> ModelInfo:
        """Identity of the model; valid after warmup (remote dimensions may be learned then)."""

    def warmup(self) -> None:
        """Load the model or check the endpoint; raises ProviderStartError when it cannot run."""

    def embed(self, texts: list[str], input_type: InputType) -> np.ndarray:
        """(len(texts), dimensions) float32, L2-normalized, in input order."""


class EmbeddingError(Exception):
    """Base of provider failures; the message is safe to send to a client."""


class ProviderStartError(EmbeddingError):
    """The provider cannot run at all (missing engine, missing key, bad endpoint)."""


class ProviderNotReady(EmbeddingError):
    """Embed was called before warmup finished."""


class ProviderUnavailable(EmbeddingError):
    """Connection failed or the provider kept answering 5xx after retries."""


class ProviderTimeout(EmbeddingError):
    """The provider did not answer within the configured timeout."""


class ProviderRateLimited(EmbeddingError):
    """The provider kept answering 429 after retries."""


class ProviderAuthFailed(EmbeddingError):
    """The provider rejected the API key."""


class ProviderRejected(EmbeddingError):
    """The provider refused the request itself (unknown model, malformed input)."""


class ProviderBadResponse(EmbeddingError):
    """The provider answered with something that is not the vectors we asked for."""


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    """L2-normalize each row as float32; zero rows stay zero instead of becoming NaN."""
    vectors = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


