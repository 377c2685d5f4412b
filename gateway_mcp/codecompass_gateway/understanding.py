"""Query understanding: the pipeline's second stage (issue 9, section 4), before retrieval.

- The intent (`symbol` / `path` / `error` / `natural_language`) and how sure it is come from
  `policy.shape.analyze`, the one judge of a query's shape; this module only reads it.
- The semantic plan (`policy.semantic.semantic_plan`): which `semantic_mode` applies and the
  semantic ratio cap retrieval gets; the ranking policy lowers the cap by intent in retrieval.
  The shape judged here is sent with the search, so retrieval reads the same intent.
- An escalation hint when the intent is unsure, and the suggested next call when an answer's
  confidence is low: both name our real tools with real arguments, and both are deterministic
  (the same query and answer give the same text), so an agent can act on them and tests can pin
  them down.

Query rewriting (seed 002) is decided after the first search (`rewrite.py`, run by the pipeline,
which replaces `rewrite` with what happened); until then it reads "not decided yet".
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import Any

from codecompass.common.config import GatewaySettings
from codecompass.common.identifiers import identifier_parts
from codecompass.policy import shape as q
from codecompass.policy.confidence import AnswerConfidence
from codecompass.policy.selection import judge
from codecompass.policy.semantic import SemanticPlan, semantic_plan
from codecompass.policy.shape import REQUEST_WORDS, QueryShape

# The most content words a narrower query keeps.
_NARROW_WORDS = 4


@dataclass(frozen=True)
class QueryUnderstanding:
    shape: QueryShape
    plan: SemanticPlan
    escalation_hint: str | None = None
    rewrite: dict[str, Any] = field(default_factory=dict)

    @property
    def intent(self) -> str:
        return self.shape.intent

    @property
    def intent_confidence(self) -> float:
        return self.shape.intent_confidence


def understand(query: str, settings: GatewaySettings, mode: str | None = None, requested_ratio: float | None = None,
               rewrite: bool | None = None) -> QueryUnderstanding:
    shape = q.analyze(query)
    hint = escalation_hint(shape) if shape.intent_confidence < settings.intent_confidence_threshold else None
    return QueryUnderstanding(shape=shape, plan=semantic_plan(mode, settings.semantic_mode, requested_ratio),
                              escalation_hint=hint, rewrite=rewrite_status(rewrite))


def rewrite_status(requested: bool | None) -> dict[str, Any]:
    """The rewrite report before the pipeline decides (the shape `RewriteOutcome.to_dict` fills)."""
    return {"requested": requested, "applied": False, "source": None, "terms": [], "focus": None, "trigger": None,
            "reason": "not decided yet", "added": 0}


def settled(understood: QueryUnderstanding, found_names: Collection[str]) -> QueryUnderstanding:
    """The understanding once the search has answered, with `found_names` the names and qualified
    names of what it found: a query read as a name it gave exactly as declared is not told to
    give the name exactly; the rest of the advice stands."""
    shape = understood.shape
    if understood.escalation_hint is None or shape.intent != q.SYMBOL or not shape.identifiers:
        return understood
    if shape.identifiers[0] not in found_names:
        return understood
    return replace(understood, escalation_hint=escalation_hint(shape, named_exactly=True))


def call_text(tool: str, arguments: dict[str, Any]) -> str:
    """`tool(name="value", …)`, the way a suggestion names a call (in the query's own letters:
    an agent copies it, and `\u8cfc` is not what it typed)."""
    return f"{tool}(" + ", ".join(f"{k}={json.dumps(v, ensure_ascii=False)}" for k, v in arguments.items()) + ")"


def _words_of(identifier: str) -> str:
    return " ".join(p for p in identifier_parts(identifier.rsplit(".", 1)[-1]) if p) or identifier


def _content_words(shape: QueryShape) -> list[str]:
    return [w for w in shape.words if w not in REQUEST_WORDS and len(w) >= 3]


def escalation_hint(shape: QueryShape, named_exactly: bool = False) -> str:
    """What to do when the intent is unsure: how to ask so the other reading wins (`named_exactly`:
    the name read is one the index declares, so asking for it exactly is what was done)."""
    confidence = f"{shape.intent_confidence:.2f}"
    if shape.intent == q.PATH:
        return (f"read as a file path ({shape.path}) at {confidence}: for that file's outline call "
                f"{call_text('read_symbol', {'symbol': shape.path})}; to search by meaning, ask without the path")
    if shape.intent == q.SYMBOL:
        name = shape.identifiers[0] if shape.identifiers else shape.text
        topic = (f"for a topic, ask a question in words "
                 f"({call_text('semantic_search', {'query': 'how does ' + _words_of(name) + ' work'})})")
        if named_exactly:
            return f"read as the symbol name {name} at {confidence}, which the index declares: {topic}"
        return (f"read as a symbol name at {confidence}: for its definition give the name exactly as declared "
                f"({call_text('search_code', {'query': name})}); {topic}")
    if shape.intent == q.ERROR:
        return (f"read as an error message at {confidence}: quote the exact text of the message to match it "
                "verbatim, or ask in words what fails (semantic_search)")
    return (f"read as natural language at {confidence}: name the identifier if you know it "
            f"(search_code with the exact name), or ask a complete question (semantic_search)")


@dataclass(frozen=True)
class BestResult:
    """What a suggestion needs of the best result."""

    qualified_name: str
    name: str
    path: str
    kind: str = ""
    # Some result was found by the words of the query (the full-text, name or path channel);
    # False when only the vector channel answered, i.e. the query's words occur nowhere.
    words_matched: bool = True


def suggested_action(shape: QueryShape, best: BestResult | None, indexing_status: str,
                     missing: tuple[str, ...] = (), nearest: tuple[str, ...] = ()) -> tuple[str, dict[str, Any]]:
    """The next call for a low-confidence answer, as text and as `{"tool", "arguments", "why"}`.

    In order: an index that is not ready is the likeliest cause; a file the query names is read
    directly; words that occur nowhere (no result, or only vector neighbours) call for other
    words, not for reading a neighbour; a name the index defines is followed through the type
    checker; a name it does not define is searched by its words; a sentence is narrowed to its
    identifiers or content words; and when nothing narrower exists, the best candidate is read to
    judge it."""
    if indexing_status != "ready":
        return _action("index_status", {}, f"the index is {indexing_status.replace('_', ' ')}: results may be "
                                           "missing until it is ready")
    if shape.path:
        return _action("read_symbol", {"symbol": shape.path}, "the query names this file: read its outline")
    if missing and nearest:
        return _action("search_code", {"query": nearest[0]},
                       f"nothing in the index is named {', '.join(missing)}; the nearest names are "
                       f"{', '.join(nearest)}")
    if best is None or not best.words_matched:
        if shape.identifiers:
            return _action("semantic_search", {"query": _words_of(shape.identifiers[0])},
                           "nothing matched the name: search by the words it is made of")
        return _action("index_status", {}, "none of the query's words occur in the index: check it covers the "
                                           "code you expect, then try the names you expect to find")
    identifiers = {i.lower() for i in shape.identifiers}
    defines = best.name.lower() in identifiers or best.qualified_name.lower() in identifiers
    if shape.intent == q.SYMBOL and defines:
        return _action("codebase_trace", {"symbol": best.qualified_name, "direction": "references",
                                          "path": best.path},
                       "the best result defines the name: see where it is used to confirm it is the one meant")
    if shape.intent == q.SYMBOL and shape.identifiers:
        return _action("semantic_search", {"query": _words_of(shape.identifiers[0])},
                       "no definition has that exact name: search by the words it is made of")
    if shape.identifiers:
        narrower = " ".join(shape.identifiers[:_NARROW_WORDS])
        return _action("search_code", {"query": narrower}, "search the names the question mentions")
    words = _content_words(shape)[:_NARROW_WORDS]
    narrower = " ".join(words)
    if len(words) >= 2 and narrower.lower() != shape.text.lower():
        return _action("semantic_search", {"query": narrower}, "a narrower query: the question's content words")
    if best.kind == "module":  # a file's top-level code: its outline shows what the file holds
        return _action("read_symbol", {"symbol": best.path}, "read the best candidate's file outline to judge it")
    return _action("read_symbol", {"symbol": best.qualified_name, "path": best.path},
                   "read the best candidate to judge whether it answers the question")


def _action(tool: str, arguments: dict[str, Any], why: str) -> tuple[str, dict[str, Any]]:
    return f"{call_text(tool, arguments)} — {why}", {"tool": tool, "arguments": arguments, "why": why}


@dataclass(frozen=True)
class ConfidenceGuidance:
    """Seed 004 FR-712/721: the composite confidence of an answer and what to do when it is low."""

    confidence: float  # composite, in [0, 1]
    calibrated: float  # retrieval's calibrated P(the first result is right)
    top_score: float
    score_margin: float
    channel_agreement: float | None  # None when only one channel found the best results
    threshold: float
    low_confidence: bool
    suggested_action: str | None
    suggested_call: dict[str, Any] | None


def guidance_of(shape: QueryShape, confidence: AnswerConfidence, best: BestResult | None, threshold: float,
                indexing_status: str, missing: tuple[str, ...] = (), nearest: tuple[str, ...] = ()
                ) -> ConfidenceGuidance:
    """The guidance for an answer whose confidence was judged over its whole ranking (the
    pipeline's `PipelineAnswer.confidence`), low by the gate's own rule (`policy.selection.judge`);
    `best` is the first result as a suggestion names it, `missing` the exact names the query typed
    that the index lacks, `nearest` its closest names."""
    low = judge(confidence.composite, threshold).low_confidence
    action, call = suggested_action(shape, best, indexing_status, missing, nearest) if low else (None, None)
    return ConfidenceGuidance(confidence=confidence.composite, calibrated=confidence.calibrated,
                              top_score=confidence.top_score, score_margin=confidence.margin,
                              channel_agreement=confidence.agreement, threshold=threshold, low_confidence=low,
                              suggested_action=action, suggested_call=call)
