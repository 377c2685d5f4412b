"""The only place selection domain types meet the generated proto types: the selection servicer
and its client both convert here."""

from __future__ import annotations

from codecompass.contracts.chunk_convert import (
    UnknownEnumValue,
    chunk_from_proto,
    chunk_to_proto,
    language_from_proto,
    language_to_proto,
    node_kind_from_proto,
    node_kind_to_proto,
    provenance_from_proto,
    provenance_to_proto,
)
from codecompass.contracts.fields import same_named
from codecompass.contracts.selection.model import Candidate, Reason, SelectedResult, SelectOutcome, SelectQuery
from codecompass.v1 import selection_pb2 as pb

_REASON_TO_PROTO = {
    Reason.MATCH: pb.SELECTION_REASON_MATCH,
    Reason.HUB: pb.SELECTION_REASON_HUB,
    Reason.MERGED_PARENT: pb.SELECTION_REASON_MERGED_PARENT,
}
_REASON_FROM_PROTO = {v: k for k, v in _REASON_TO_PROTO.items()}

# Fields a message and its domain type share by name and hold as the same scalar value (`same_named`).
_RESULT_FIELDS = ("chunk_id", "relative_path", "start_line", "end_line", "qualified_name", "score", "relevance", "why",
                  "header", "source", "token_count", "clipped", "lines_omitted")
_OUTCOME_FIELDS = ("total_tokens", "max_tokens", "min_relevance", "below_relevance", "over_budget", "merged",
                   "render_fallback", "render_fallback_reason", "duration_ms")


def _lookup(table: dict, value: int, what: str):
    try:
        return table[value]
    except KeyError:
        raise UnknownEnumValue(f"unknown {what} value {value}") from None


def candidate_reason_from_proto(value: int) -> Reason:
    """A candidate is offered as a MATCH (also when unset) or a HUB; MERGED_PARENT is an outcome."""
    if value == pb.SELECTION_REASON_UNSPECIFIED:
        return Reason.MATCH
    reason = _lookup(_REASON_FROM_PROTO, value, "SelectionReason")
    if reason is Reason.MERGED_PARENT:
        raise UnknownEnumValue("a candidate's reason is MATCH or HUB, not MERGED_PARENT")
    return reason


def query_from_proto(message: pb.SelectRequest) -> SelectQuery:
    """The deprecated query, confidence and focus are not read: relevance arrives per candidate."""
    return SelectQuery(
        workspace_root=message.workspace_root,
        candidates=tuple(
            Candidate(
                chunk=chunk_from_proto(c.chunk),
                score=c.score,
                reason=candidate_reason_from_proto(c.reason),
                provenance=provenance_from_proto(c.provenance),
                connected_ids=tuple(c.connected_ids),
                relevance=c.relevance if c.HasField("relevance") else None,
            )
            for c in message.candidates
        ),
        max_tokens=message.max_tokens,
        min_relevance=message.min_relevance if message.HasField("min_relevance") else None,
        index_fresh=message.index_fresh,
    )


def query_to_proto(query: SelectQuery) -> pb.SelectRequest:
    message = pb.SelectRequest(
        workspace_root=query.workspace_root,
        candidates=[_candidate_to_proto(c) for c in query.candidates],
        max_tokens=query.max_tokens,
        index_fresh=query.index_fresh,
    )
    if query.min_relevance is not None:
        message.min_relevance = query.min_relevance
    return message


def _candidate_to_proto(candidate: Candidate) -> pb.SelectCandidate:
    message = pb.SelectCandidate(
        chunk=chunk_to_proto(candidate.chunk, code_view=True),
        score=candidate.score,
        reason=_REASON_TO_PROTO[candidate.reason],
        provenance=provenance_to_proto(candidate.provenance),
        connected_ids=list(candidate.connected_ids),
    )
    if candidate.relevance is not None:
        message.relevance = candidate.relevance
    return message


def result_to_proto(result: SelectedResult) -> pb.SelectedResult:
    return pb.SelectedResult(
        **same_named(result, _RESULT_FIELDS),
        node_kind=node_kind_to_proto(result.node_kind),
        language=language_to_proto(result.language),
        provenance=provenance_to_proto(result.provenance),
        reasons=[_REASON_TO_PROTO[r] for r in result.reasons],
        expanded_child_ids=list(result.expanded_child_ids),
        connected_ids=list(result.connected_ids),
    )


def result_from_proto(message: pb.SelectedResult) -> SelectedResult:
    return SelectedResult(
        **same_named(message, _RESULT_FIELDS),
        node_kind=node_kind_from_proto(message.node_kind),
        language=language_from_proto(message.language),
        provenance=provenance_from_proto(message.provenance),
        reasons=tuple(_lookup(_REASON_FROM_PROTO, r, "SelectionReason") for r in message.reasons),
        expanded_child_ids=tuple(message.expanded_child_ids),
        connected_ids=tuple(message.connected_ids),
    )


def outcome_to_proto(outcome: SelectOutcome) -> pb.SelectResponse:
    return pb.SelectResponse(
        results=[result_to_proto(r) for r in outcome.results],
        **same_named(outcome, _OUTCOME_FIELDS),
    )


def outcome_from_proto(message: pb.SelectResponse) -> SelectOutcome:
    return SelectOutcome(
        results=tuple(result_from_proto(r) for r in message.results),
        **same_named(message, _OUTCOME_FIELDS),
    )


# --- the analysis service's RenderSymbols -------------------------------------------------------
