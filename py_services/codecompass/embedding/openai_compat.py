"""External provider: any OpenAI-style `POST {base_url}/embeddings` endpoint (Ollama, vLLM, LM Studio).

`base_url` includes the version prefix, e.g. http://127.0.0.1:11434/v1.
Texts are sent as-is. 429, 5xx, connect errors and timeouts are retried with
exponential backoff (honouring Retry-After); dimensions come from settings or
from the first response. Reached only when both privacy gates are open.
"""

from __future__ import annotations

import random
import threading
import time

import httpx
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

_RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
_BACKOFF_BASE_S = 0.25
_BACKOFF_MAX_S = 8.0
# Unknown servers: stay well inside common request-size limits.
_MAX_CHARS_PER_REQUEST = 400_000


class _Retryable(Exception):
    def __init__(self, final: EmbeddingError, retry_after_s: float | None = None) -> None:
        super().__init__(str(final))
        self.final = final
        self.retry_after_s = retry_after_s


class OpenAICompatibleProvider:
    def __init__(self, *, base_url: str, api_key: str | None, model: str, dimensions: int | None,
                 timeout_s: float, max_retries: int, batch_size: int) -> None:
        self._url = base_url.rstrip("/") + "/embeddings"
        self._api_key = api_key
        self._model = model
        self._dimensions = dimensions
        self._timeout_s = timeout_s
        self._max_retries = max_retries
        self._batch_size = batch_size
        self._client: httpx.Client | None = None
        self._dimensions_lock = threading.Lock()

    def info(self) -> ModelInfo:
        if self._dimensions is None:
            raise ProviderNotReady("openai-compatible: dimensions are not known until the first response")
        return ModelInfo(
            provider="openai-compatible",
            model_id=self._model,
            model_version="api+raw-v1",
            dimensions=self._dimensions,
            # The server decides (and truncates); 0 means "not known to us".
            max_input_tokens=0,
        )

    def warmup(self) -> None:
        headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
        self._client = httpx.Client(timeout=self._timeout_s, headers=headers)
        if self._dimensions is None:
            try:
                self.embed(["dimension probe"], "query")
            except EmbeddingError as exc:
                raise ProviderStartError(f"openai-compatible: cannot learn dimensions from {self._url}: {exc}") from exc

    def embed(self, texts: list[str], input_type: InputType) -> np.ndarray:
        if self._client is None:
            raise ProviderNotReady("openai-compatible: the client is not ready")
        if not texts:
            return np.zeros((0, self._dimensions or 0), dtype=np.float32)
        parts: dict[int, np.ndarray] = {}
        for batch in request_batches([len(t) + 1 for t in texts], self._batch_size, _MAX_CHARS_PER_REQUEST):
            vectors = self._request_with_retries([texts[i] for i in batch])
            for row, index in enumerate(batch):
                parts[index] = vectors[row]
        return np.stack([parts[i] for i in range(len(texts))])

    def _request_with_retries(self, texts: list[str]) -> np.ndarray:
        attempt = 0
        while True:
            try:
                return self._request(texts)
            except _Retryable as retryable:
                if attempt >= self._max_retries:
                    raise retryable.final from None
                delay = min(_BACKOFF_MAX_S, _BACKOFF_BASE_S * 2**attempt) * (0.5 + random.random() / 2)
                if retryable.retry_after_s is not None:
                    delay = min(_BACKOFF_MAX_S, max(delay, retryable.retry_after_s))
                time.sleep(delay)
                attempt += 1

    def _request(self, texts: list[str]) -> np.ndarray:
        payload: dict = {"model": self._model, "input": texts, "encoding_format": "float"}
        if self._dimensions is not None:
            payload["dimensions"] = self._dimensions
        attempts = self._max_retries + 1
        assert self._client is not None, "embed, the only caller, checks the client first"
        try:
            response = self._client.post(self._url, json=payload)
        except httpx.TimeoutException:
            raise _Retryable(ProviderTimeout(
                f"openai-compatible endpoint {self._url} did not answer within {self._timeout_s:g}s "
                f"({attempts} attempts)")) from None
        except httpx.TransportError as exc:
            raise _Retryable(ProviderUnavailable(
                f"cannot reach openai-compatible endpoint {self._url} after {attempts} attempts: "
                f"{redact(str(exc), self._api_key)}")) from None
        status = response.status_code
        if status in _RETRY_STATUSES:
            final: EmbeddingError = (
                ProviderRateLimited(
                    f"openai-compatible endpoint rate limit (HTTP 429) persisted after {attempts} attempts")
                if status == 429
                else ProviderUnavailable(f"openai-compatible endpoint answered HTTP {status} after {attempts} attempts")
            )
            raise _Retryable(final, _retry_after(response))
        if status in (401, 403):
            raise ProviderAuthFailed(
                f"openai-compatible endpoint rejected the credentials (HTTP {status}); "
                "check CODECOMPASS_EMBEDDING_API_KEY"
            )
        if status >= 400:
            detail = redact(response.text[:300], self._api_key)
            raise ProviderRejected(f"openai-compatible endpoint refused the request (HTTP {status}): {detail}")
        return self._parse(response, len(texts))

    def _parse(self, response: httpx.Response, expected: int) -> np.ndarray:
        try:
            items = sorted(response.json()["data"], key=lambda item: item["index"])
            vectors = np.asarray([item["embedding"] for item in items], dtype=np.float32)
        except (ValueError, KeyError, TypeError) as exc:
            raise ProviderBadResponse(f"openai-compatible endpoint sent an unexpected body ({exc})") from None
        if vectors.ndim != 2 or vectors.shape[0] != expected:
            raise ProviderBadResponse(
                f"openai-compatible endpoint sent {vectors.shape[0] if vectors.ndim else 0} vectors "
                f"for {expected} texts"
            )
        with self._dimensions_lock:
            if self._dimensions is None:
                self._dimensions = int(vectors.shape[1])
        if vectors.shape[1] != self._dimensions:
            raise ProviderBadResponse(
                f"openai-compatible endpoint sent {vectors.shape[1]}-dimensional vectors, expected {self._dimensions}"
            )
        return normalize_rows(vectors)


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("Retry-After", "")
    try:
        return max(0.0, float(value))
    except ValueError:
        return None
