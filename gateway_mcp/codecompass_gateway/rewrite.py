"""Query rewriting (seed 002, issue 9 section 4): a question in words becomes search terms in
the code's own vocabulary, plus what the question is about (implementation, tests or both).

When: never for a code-shaped query (a dotted name, a camelCase or snake_case identifier, a
path) or one of fewer than three content words, which the lexical channel already answers
well; for a question-like or stop-word-heavy query (the heuristic, `should_rewrite` in
`codecompass.policy.rewrite`); always when the caller forces it; and as a fallback when the
query as given found nothing. The LLM is in the hot path only then, and any failure leaves the
query as given: the answer's `metadata.rewrite` says why, the user never sees an error.

Where the LLM comes from, in the issue's order:
1. Sampling through the connected MCP client (`sampling.py`): the agent's own model, when the
   connection speaks a 2025 (handshake) revision and the client declared the sampling
   capability. The 2026-07-28 revision deprecates server-to-client sampling on new
   connections, so a client on it is never asked.
2. A configured OpenAI-compatible chat endpoint (`gateway.rewrite_base_url` + `rewrite_model`;
   Ollama and vLLM expose one), the key from CODECOMPASS_REWRITE_API_KEY only.
3. Otherwise no rewrite.

The vocabulary in the prompt is the qualified names of the first search's results: the names
the index already associates with the question, at no extra RPC, bounded so a prompt stays small.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit

import httpx

from codecompass.common.config import GatewaySettings
from codecompass.common.hosts import is_loopback
from codecompass.common.outbound import INVALID, ChatFailed, chat_completion, unfenced

SOURCE_CHAT = "openai_compatible"
SOURCE_SAMPLING = "mcp_sampling"
FOCUS_VALUES = ("implementation", "tests", "all")
# Why a rewrite was tried.
FORCED, HEURISTIC, ZERO_RESULTS = "forced", "heuristic", "zero_results"
# Reason codes of a rewrite that did not happen (the message after the colon says more).
NOT_CONFIGURED = "not_configured"
EXTERNAL_BLOCKED = "external_blocked"

MIN_TERMS, MAX_TERMS = 3, 8
MAX_TERM_CHARS = 80
# The vocabulary the prompt carries: at most this many names, this many characters in all.
VOCABULARY_NAMES = 80
VOCABULARY_CHARS = 2400
TEMPERATURE = 0.1
MAX_ANSWER_TOKENS = 200
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


class RewriteFailed(Exception):
    """No rewrite: `reason` is a short code ("timeout", "http_500", "invalid_response", …)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class RewrittenQuery:
    terms: tuple[str, ...]
    focus: str  # one of FOCUS_VALUES


@dataclass(frozen=True)
class RewriteOutcome:
    """What the answer reports as `metadata.rewrite`."""

    requested: bool | None
    applied: bool = False
    source: str | None = None
    terms: tuple[str, ...] = ()
    focus: str | None = None
    trigger: str | None = None  # forced / heuristic / zero_results; None when not tried
    reason: str = ""
    # Results the rewritten search added that the original search did not find.
    added: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"requested": self.requested, "applied": self.applied, "source": self.source,
                "terms": list(self.terms), "focus": self.focus, "trigger": self.trigger, "reason": self.reason,
                "added": self.added}


def vocabulary_of(names: Iterable[str], limit: int = VOCABULARY_NAMES, max_chars: int = VOCABULARY_CHARS
                  ) -> list[str]:
    """Distinct non-empty names in order, at most `limit` of them and `max_chars` in all."""
    out: list[str] = []
    seen: set[str] = set()
    used = 0
    for name in names:
        name = name.strip()
        if not name or name in seen or len(name) > MAX_TERM_CHARS:
            continue
        if len(out) >= limit or used + len(name) + 2 > max_chars:
            break
        seen.add(name)
        out.append(name)
        used += len(name) + 2
    return out


def build_messages(query: str, vocabulary: Sequence[str]) -> list[dict[str, str]]:
    """Seed 002's prompt: a system message with the workspace's names, the query as the user's."""
    names = ", ".join(vocabulary_of(vocabulary))
    known = f"Symbols in this codebase that may be relevant:\n{names}\n\n" if names else ""
    system = (
        "You are a code search assistant. Given a natural language question about a codebase, return JSON "
        "with search terms a developer would use to find the relevant code.\n\n"
        f"{known}"
        'Return ONLY valid JSON:\n{"terms": ["term1", "term2", ...], "focus": "implementation"|"tests"|"all"}\n\n'
        "Rules:\n"
        f"- terms: {MIN_TERMS}-{MAX_TERMS} search terms, preferring actual symbol names from the codebase\n"
        '- focus: "implementation" if asking how code works, "tests" if asking about testing, "all" if unclear\n'
        "- No explanations, just JSON"
    )
    return [{"role": "system", "content": system}, {"role": "user", "content": query}]


def parse_rewrite(content: str) -> RewrittenQuery:
    """The LLM's JSON object, cleaned: fenced or bare, terms as distinct short strings (at most
    MAX_TERMS), focus one of FOCUS_VALUES ("all" when missing or unknown). Raises RewriteFailed
    when there is no object, `terms` is not a list, or no usable term is left."""
    match = _OBJECT.search(unfenced(content))
    if match is None:
        raise RewriteFailed(INVALID, "no JSON object in the answer")
    try:
        data = json.loads(match.group(0))
    except json.JSONDecodeError:
        raise RewriteFailed(INVALID, "the answer is not valid JSON") from None
    if not isinstance(data, dict) or not isinstance(data.get("terms"), list):
        raise RewriteFailed(INVALID, "the answer has no `terms` list")
    terms: list[str] = []
    for term in data["terms"]:
        if not isinstance(term, str):
            continue
        term = " ".join(term.split())
        if term and len(term) <= MAX_TERM_CHARS and term.lower() not in (t.lower() for t in terms):
            terms.append(term)
    if not terms:
        raise RewriteFailed(INVALID, "no usable term in the answer")
    focus = data.get("focus")
    focus = focus.strip().lower() if isinstance(focus, str) else "all"
    return RewrittenQuery(terms=tuple(terms[:MAX_TERMS]), focus=focus if focus in FOCUS_VALUES else "all")


class Rewriter(Protocol):
    """An LLM source for rewriting; `source` names it in metadata.rewrite."""

    source: str

    def rewrite(self, query: str, vocabulary: Sequence[str]) -> RewrittenQuery: ...


# (system prompt, user message) -> the model's text; raises RewriteFailed.
Ask = Callable[[str, str], str]


class SamplingRewriter:
    """The connected MCP client's model, asked through sampling (see `sampling.py`)."""

    source = SOURCE_SAMPLING

    def __init__(self, ask: Ask) -> None:
        self._ask = ask

    def rewrite(self, query: str, vocabulary: Sequence[str]) -> RewrittenQuery:
        system, user = (m["content"] for m in build_messages(query, vocabulary))
        return parse_rewrite(self._ask(system, user))


def is_loopback_url(url: str) -> bool:
    """Whether `url`'s host is this machine (localhost or a loopback address)."""
    host = urlsplit(url).hostname or ""
    return host.endswith(".localhost") or is_loopback(host)


class ChatRewriter:
    """Any OpenAI-compatible chat endpoint: POST {base}/chat/completions."""

    source = SOURCE_CHAT

    def __init__(self, *, base_url: str | None, model: str | None, api_key: str | None, timeout_s: float,
                 allow_remote: bool = False, transport: httpx.BaseTransport | None = None) -> None:
        self._base_url = base_url.rstrip("/") if base_url else None
        self._model = model
        self._api_key = api_key
        self._timeout_s = timeout_s
        self._allow_remote = allow_remote
        self._transport = transport

    @classmethod
    def from_settings(cls, settings: GatewaySettings) -> ChatRewriter | None:
        """None when no endpoint is configured (rewriting is then inert)."""
        if not settings.rewrite_base_url or not settings.rewrite_model:
            return None
        return cls(base_url=settings.rewrite_base_url, model=settings.rewrite_model,
                   api_key=settings.rewrite_api_key, timeout_s=settings.rewrite_timeout_s,
                   allow_remote=settings.rewrite_allow_remote)

    def rewrite(self, query: str, vocabulary: Sequence[str]) -> RewrittenQuery:
        if not self._base_url or not self._model:
            raise RewriteFailed(NOT_CONFIGURED, "set CODECOMPASS_GATEWAY_REWRITE_BASE_URL and _MODEL")
        if not self._allow_remote and not is_loopback_url(self._base_url):
            raise RewriteFailed(EXTERNAL_BLOCKED, f"{self._base_url} is not on this machine and would receive the "
                                "query and symbol names; set gateway.rewrite_allow_remote: true to allow it")
        try:
            content = chat_completion(base_url=self._base_url, model=self._model, api_key=self._api_key,
                                      messages=build_messages(query, vocabulary), temperature=TEMPERATURE,
                                      max_tokens=MAX_ANSWER_TOKENS, timeout_s=self._timeout_s,
                                      who="the rewrite LLM", transport=self._transport)
        except ChatFailed as exc:
            raise RewriteFailed(exc.reason, str(exc)) from None
        return parse_rewrite(content)
