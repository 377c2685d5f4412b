"""Rerank providers behind one interface: `score(query, texts, top_n) -> {index: score in [0, 1]}`.

A provider scores a subset of the candidates (its top_n, or the LLM's picks);
candidates it leaves out keep their first-stage score. Any failure is raised as
`RerankFailed` with a short reason code; the engine turns it into a fallback,
never an error to the caller. Messages never contain the API key: httpx errors
carry no headers, and provider-supplied text passes through `redact`.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import httpx

from codecompass.common.outbound import ChatFailed, chat_completion, http_failure, redact, unfenced
from codecompass.contracts.rerank.model import (
    REASON_EMPTY,
    REASON_ERROR,
    REASON_INVALID,
    REASON_NETWORK,
    REASON_NOT_CONFIGURED,
    REASON_TIMEOUT,
)
from codecompass.policy.rerank import model_score, scores_by_rank

if TYPE_CHECKING:
    # Imported on first use at run time: only a configured Voyage reranker loads the client.
    import voyageai

VOYAGE_DEFAULT_MODEL = "rerank-2.5"
COHERE_DEFAULT_MODEL = "rerank-v3.5"
COHERE_DEFAULT_BASE_URL = "https://api.cohere.com"
# Seed 001 FR-3: low temperature for a stable order, a compact answer.
LLM_TEMPERATURE = 0.1
LLM_MAX_TOKENS = 200
# A snippet longer than this is cut in the LLM prompt: the head of a chunk (signature,
# docstring) carries most of its relevance, and a long prompt blows the 2 s budget.
LLM_SNIPPET_CHARS = 1500


class RerankFailed(Exception):
    """The provider could not score; `reason` is a short code such as "timeout" or "http_429"."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class Reranker(Protocol):
    name: str

    def score(self, query: str, texts: Sequence[str], top_n: int) -> dict[int, float]: ...


class LocalReranker:
    """Keeps the first-stage scores: the ranking stack already ran in retrieval."""

    name = "local"

    def score(self, query: str, texts: Sequence[str], top_n: int) -> dict[int, float]:
        return {}


def _http_failure(exc: Exception, provider: str, timeout_s: float, api_key: str | None) -> RerankFailed:
    return RerankFailed(*http_failure(exc, provider, timeout_s, api_key))


def _scores_from_results(results: object, count: int, provider: str) -> dict[int, float]:
    """`[{"index", "relevance_score"}]` (Cohere and Voyage) -> {index: score}; bad rows are an error."""
    if not isinstance(results, list):
        raise RerankFailed(REASON_INVALID, f"{provider}: results is not a list")
    scores: dict[int, float] = {}
    for row in results:
        index = row.get("index") if isinstance(row, dict) else None
        value = row.get("relevance_score") if isinstance(row, dict) else None
        if (not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count
                or not isinstance(value, int | float) or isinstance(value, bool)):
            raise RerankFailed(REASON_INVALID, f"{provider}: malformed result row")
        scores[index] = model_score(value)
    return scores


class CohereReranker:
    """Cohere Rerank v3.5 over REST: POST {base}/v2/rerank -> {"results": [{"index", "relevance_score"}]}."""

    name = "cohere"

    def __init__(self, *, api_key: str | None, base_url: str | None, model: str | None, timeout_s: float,
                 transport: httpx.BaseTransport | None = None) -> None:
        self._api_key = api_key
        self._base_url = (base_url or COHERE_DEFAULT_BASE_URL).rstrip("/")
        self._model = model or COHERE_DEFAULT_MODEL
        self._timeout_s = timeout_s
        self._transport = transport

    def score(self, query: str, texts: Sequence[str], top_n: int) -> dict[int, float]:
        if not self._api_key:
            raise RerankFailed(REASON_NOT_CONFIGURED, "cohere: no API key; set CODECOMPASS_RERANK_API_KEY")
        body: dict[str, object] = {"model": self._model, "query": query, "documents": list(texts)}
        if top_n:
            body["top_n"] = top_n
        try:
            with httpx.Client(timeout=self._timeout_s, transport=self._transport) as client:
                response = client.post(f"{self._base_url}/v2/rerank", json=body,
                                       headers={"Authorization": f"Bearer {self._api_key}"})
                response.raise_for_status()
                data = response.json()
        except (httpx.HTTPError, ValueError) as exc:
            if isinstance(exc, ValueError):
                raise RerankFailed(REASON_INVALID, "cohere: response is not JSON") from None
            raise _http_failure(exc, "cohere", self._timeout_s, self._api_key) from None
        if not isinstance(data, dict):
            raise RerankFailed(REASON_INVALID, "cohere: response is not an object")
        return _scores_from_results(data.get("results"), len(texts), "cohere")


class VoyageReranker:
    """Voyage rerank-2.5 through the official `voyageai` client (its base URL is configurable)."""

    name = "voyage"

    def __init__(self, *, api_key: str | None, base_url: str | None, model: str | None, timeout_s: float) -> None:
        self._api_key = api_key
        self._base_url = base_url
        self._model = model or VOYAGE_DEFAULT_MODEL
        self._timeout_s = timeout_s
        self._client: voyageai.Client | None = None

    def _get_client(self) -> voyageai.Client:
        if self._client is None:
            import voyageai

            # The client logs request bodies (our source code) at debug level.
            logging.getLogger("voyage").setLevel(logging.WARNING)
            # One attempt: a retry would not fit the rerank latency budget.
            self._client = voyageai.Client(api_key=self._api_key, max_retries=1, timeout=self._timeout_s,
                                           base_url=self._base_url)
        return self._client

    def score(self, query: str, texts: Sequence[str], top_n: int) -> dict[int, float]:
        if not self._api_key:
            raise RerankFailed(REASON_NOT_CONFIGURED, "voyage: no API key; set CODECOMPASS_RERANK_API_KEY")
        from voyageai import error

        try:
            result = self._get_client().rerank(query, list(texts), model=self._model, top_k=top_n or None,
                                               truncation=True)
        except error.Timeout:
            raise RerankFailed(REASON_TIMEOUT, f"voyage did not answer within {self._timeout_s:g}s") from None
        except error.VoyageError as exc:
            status = getattr(exc, "http_status", None)
            reason = f"http_{status}" if status else REASON_ERROR
            detail = redact(getattr(exc, "user_message", None) or str(exc), self._api_key)
            raise RerankFailed(reason, f"voyage failed: {detail}") from None
        except Exception as exc:  # noqa: BLE001 - the client surfaces transport failures in several shapes
            raise RerankFailed(REASON_NETWORK, f"voyage failed: {redact(str(exc), self._api_key)}") from None
        rows = [{"index": r.index, "relevance_score": r.relevance_score} for r in result.results]
        return _scores_from_results(rows, len(texts), "voyage")


_ARRAY = re.compile(r"\[[^\[\]]*\]")


def parse_indices(content: str, count: int) -> list[int]:
    """The LLM's JSON array of snippet indices, cleaned: out-of-range, duplicate and non-integer
    entries dropped. Raises RerankFailed when there is no JSON array or nothing valid is left."""
    match = _ARRAY.search(unfenced(content))
    if match is None:
        raise RerankFailed(REASON_INVALID, "llm: no JSON array in the answer")
    try:
        values = json.loads(match.group(0))
    except json.JSONDecodeError:
        raise RerankFailed(REASON_INVALID, "llm: the array is not valid JSON") from None
    indices: list[int] = []
    for value in values:
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            continue
        index = int(value)
        if 0 <= index < count and index not in indices:
            indices.append(index)
    if not indices:
        raise RerankFailed(REASON_EMPTY, "llm: no valid index in the answer")
    return indices


def build_prompt(query: str, texts: Sequence[str], max_results: int) -> str:
    """Seed 001's meta-prompt."""
    snippets = "\n---\n".join(f"[{i}]\n{text[:LLM_SNIPPET_CHARS]}\n" for i, text in enumerate(texts))
    return (
        "Given the user's question and code snippets below, rank the snippets by relevance to answering "
        f"the question.\n\nUser Question: {json.dumps(query)}\n\nCode Snippets:\n{snippets}\n"
        "Respond with ONLY a JSON array of the most relevant snippet indices, ordered by relevance "
        "(most relevant first).\nInclude only snippets that are directly useful for answering the question.\n"
        f"Maximum {max_results} snippets.\n\nExample response: [2, 0, 4]"
    )


class LlmReranker:
    """Any OpenAI-compatible chat endpoint: POST {base}/chat/completions, answer = JSON array of indices."""

    name = "llm"

    def __init__(self, *, api_key: str | None, base_url: str | None, model: str | None, timeout_s: float,
                 transport: httpx.BaseTransport | None = None) -> None:
        self._api_key = api_key
        self._base_url = base_url.rstrip("/") if base_url else None
        self._model = model
        self._timeout_s = timeout_s
        self._transport = transport

    def score(self, query: str, texts: Sequence[str], top_n: int) -> dict[int, float]:
        if not self._base_url or not self._model:
            raise RerankFailed(REASON_NOT_CONFIGURED,
                               "llm: set CODECOMPASS_RERANK_BASE_URL and CODECOMPASS_RERANK_MODEL")
        messages = [{"role": "user", "content": build_prompt(query, texts, top_n or len(texts))}]
        try:
            content = chat_completion(base_url=self._base_url, model=self._model, api_key=self._api_key,
                                      messages=messages, temperature=LLM_TEMPERATURE, max_tokens=LLM_MAX_TOKENS,
                                      timeout_s=self._timeout_s, who="llm", transport=self._transport)
        except ChatFailed as exc:
            raise RerankFailed(exc.reason, str(exc)) from None
        indices = parse_indices(content, len(texts))
        return scores_by_rank(indices[:top_n] if top_n else indices)
