"""External provider: Voyage AI (voyage-code-3 by default) through the official `voyageai` client.

Texts are sent as-is (the model is trained on code; no identifier splitting).
Requests respect Voyage's limits: at most 1000 texts and 120k tokens each.
The client retries 429, 502-504 and timeouts with exponential backoff; a
failure after the last retry becomes one domain error with a clean message.
Reached only when both privacy gates are open (see `profiles`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import numpy as np

from codecompass.common.outbound import redact
from codecompass.contracts.embedding.model import InputType, ModelInfo
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
    normalize_rows,
)
from codecompass.embedding.batching import request_batches

if TYPE_CHECKING:
    # Imported in warmup at run time: only a configured Voyage provider loads the client.
    import voyageai

DEFAULT_MODEL = "voyage-code-3"
DEFAULT_DIMENSIONS = 1024
MAX_INPUT_TOKENS = 32_000
MAX_TEXTS_PER_REQUEST = 1000
MAX_TOKENS_PER_REQUEST = 120_000
# Voyage's tokenizer is not available offline; code averages ~3.5-4 characters per
# token, so counting 3 keeps every request under the token limit.
_CHARS_PER_TOKEN = 3


class VoyageProvider:
    def __init__(self, *, api_key: str | None, base_url: str | None, model: str | None, dimensions: int | None,
                 timeout_s: float, max_retries: int) -> None:
        self._api_key = api_key
        self._base_url = base_url
        self._model = model or DEFAULT_MODEL
        self._dimensions = dimensions or DEFAULT_DIMENSIONS
        self._timeout_s = timeout_s
        self._max_retries = max_retries
        self._client: voyageai.Client | None = None

    def info(self) -> ModelInfo:
        return ModelInfo(
            provider="voyage",
            model_id=self._model,
            model_version="api+raw-v1",
            dimensions=self._dimensions,
            max_input_tokens=MAX_INPUT_TOKENS,
        )

    def warmup(self) -> None:
        if not self._api_key:
            raise ProviderStartError("voyage: no API key; set CODECOMPASS_EMBEDDING_API_KEY")
        import voyageai

        # The client logs request bodies (our source code) at debug level.
        logging.getLogger("voyage").setLevel(logging.WARNING)
        # voyageai counts attempts, not retries.
        self._client = voyageai.Client(api_key=self._api_key, max_retries=self._max_retries + 1,
                                       timeout=self._timeout_s, base_url=self._base_url)

    def embed(self, texts: list[str], input_type: InputType) -> np.ndarray:
        if self._client is None:
            raise ProviderNotReady("voyage: the client is not ready")
        out = np.zeros((len(texts), self._dimensions), dtype=np.float32)
        costs = [len(text) // _CHARS_PER_TOKEN + 1 for text in texts]
        for batch in request_batches(costs, MAX_TEXTS_PER_REQUEST, MAX_TOKENS_PER_REQUEST):
            out[batch] = self._embed_request([texts[i] for i in batch], input_type)
        return out

    def _embed_request(self, texts: list[str], input_type: InputType) -> np.ndarray:
        from voyageai import error

        assert self._client is not None, "embed, the only caller, checks the client first"
        try:
            result = self._client.embed(texts, model=self._model, input_type=input_type, truncation=True,
                                        output_dimension=self._dimensions)
        except error.VoyageError as exc:
            raise self._domain_error(exc, error) from None
        vectors = np.asarray(result.embeddings, dtype=np.float32)
        if vectors.shape != (len(texts), self._dimensions):
            raise ProviderBadResponse(
                f"voyage: expected {len(texts)} vectors of {self._dimensions} dimensions, got shape {vectors.shape}"
            )
        return normalize_rows(vectors)

    def _domain_error(self, exc: Exception, error) -> EmbeddingError:
        detail = redact(getattr(exc, "user_message", None) or str(exc), self._api_key)
        attempts = self._max_retries + 1
        if isinstance(exc, error.AuthenticationError):
            return ProviderAuthFailed("voyage rejected the API key (HTTP 401); check CODECOMPASS_EMBEDDING_API_KEY")
        if isinstance(exc, error.RateLimitError):
            return ProviderRateLimited(f"voyage rate limit (HTTP 429) persisted after {attempts} attempts")
        if isinstance(exc, error.Timeout):
            return ProviderTimeout(f"voyage did not answer within {self._timeout_s:g}s ({attempts} attempts)")
        if isinstance(exc, error.InvalidRequestError | error.MalformedRequestError):
            return ProviderRejected(f"voyage refused the request: {detail}")
        return ProviderUnavailable(f"voyage is unavailable after {attempts} attempts: {detail}")
