"""Calls to external HTTP providers, in one place: how a failure is named, how a secret is kept
out of every message, and the one OpenAI-compatible chat call the LLM reranker and the query
rewriter both make (Ollama, vLLM and hosted APIs expose the same `/chat/completions`)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import httpx

TIMEOUT = "timeout"
NETWORK = "network_error"
INVALID = "invalid_response"
ERROR = "provider_error"

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)


def redact(message: str, secret: str | None) -> str:
    """Remove a secret from text that may reach a client or a log (servers sometimes echo headers)."""
    if secret and len(secret) >= 4:
        return message.replace(secret, "***")
    return message


def http_failure(exc: Exception, who: str, timeout_s: float, secret: str | None) -> tuple[str, str]:
    """(reason code, one-line message) for an httpx failure; reasons are TIMEOUT, http_<status>,
    NETWORK or ERROR."""
    if isinstance(exc, httpx.TimeoutException):
        return TIMEOUT, f"{who} did not answer within {timeout_s:g}s"
    if isinstance(exc, httpx.HTTPStatusError):
        status = exc.response.status_code
        return f"http_{status}", f"{who} answered HTTP {status}"
    if isinstance(exc, httpx.TransportError):
        return NETWORK, f"{who} unreachable: {redact(str(exc), secret)}"
    return ERROR, f"{who} failed: {redact(str(exc), secret)}"


class ChatFailed(Exception):
    """A chat call gave no usable text; `reason` is one of the codes above."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def chat_completion(*, base_url: str, model: str, api_key: str | None, messages: Sequence[dict[str, str]],
                    temperature: float, max_tokens: int, timeout_s: float, who: str,
                    transport: httpx.BaseTransport | None = None) -> str:
    """The assistant's text of one POST {base_url}/chat/completions; raises ChatFailed."""
    body = {"model": model, "messages": list(messages), "temperature": temperature, "max_tokens": max_tokens}
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    try:
        with httpx.Client(timeout=timeout_s, transport=transport) as client:
            response = client.post(f"{base_url.rstrip('/')}/chat/completions", json=body, headers=headers)
            response.raise_for_status()
            content = response.json()["choices"][0]["message"]["content"]
    except httpx.HTTPError as exc:
        raise ChatFailed(*http_failure(exc, who, timeout_s, api_key)) from None
    except (ValueError, KeyError, IndexError, TypeError):
        raise ChatFailed(INVALID, f"{who}: not a chat completion response") from None
    if not isinstance(content, str):
        raise ChatFailed(INVALID, f"{who}: the message has no text content")
    return content


def unfenced(content: str) -> str:
    """The inside of a markdown code fence when the answer has one (models often add it), else all."""
    fenced = _FENCE.search(content)
    return fenced.group(1) if fenced else content
