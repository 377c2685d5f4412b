"""A pipeline answer as a typed value, built once (`search_answer`): what semantic_search and the
CLI present (`present`, `codecompass_cli.render`) and, as plain data (`SearchAnswer.to_dict`), what
`codecompass search --json` prints and semantic_search returns as structured content. One shape for
every caller. Beside it, search_code's typed answer (`CodeSearchAnswer`, seed 003's ranked list),
built once (`code_search_answer`), read by `present` and, as data (`to_dict`), the contract's JSON."""

from __future__ import annotations

import dataclasses
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from codecompass.contracts.retrieval.model import FreshnessStatus, SyncOutcome
from codecompass.contracts.selection.model import SelectedResult, SelectOutcome
from codecompass.policy.confidence import Unmatched, unmatched
from codecompass.policy.ranking import SKIP_RATIO_ZERO
from codecompass.policy.relevance import QueryFocus
from codecompass.policy.selection import Verdict
from codecompass_gateway.pipeline import SYNC, PipelineAnswer, Ranked
from codecompass_gateway.understanding import BestResult, ConfidenceGuidance, QueryUnderstanding, guidance_of

# Seed 003: the version of the search_code contract (fields, meanings) this gateway speaks.
PROTOCOL_VERSION = "1.0"
# `ref` as the answer reports it: the files as they are on disk, uncommitted edits included.
WORKING_TREE = "working_tree"


def clip_code(code: str, max_lines: int) -> tuple[str, int]:
    """The first `max_lines` lines of `code` and how many were left out: a symbol with nothing
    to collapse (a 40k-line generated function) is never pasted whole."""
    lines = code.splitlines()
    if max_lines <= 0 or len(lines) <= max_lines:
        return code, 0
    return "\n".join(lines[:max_lines]), len(lines) - max_lines


@dataclass(frozen=True)
class SelectedItem:
    """One piece of selected context: code rendered within the budget, and why it was kept."""

    path: str
    start_line: int
    end_line: int
    qualified_name: str
    kind: str
    language: str
    id: str
    score: float
    relevance: float
    provenance: str
    reasons: tuple[str, ...]
    why: str
    header: str
    code: str
    tokens: int
    expanded_child_ids: tuple[str, ...]
    clipped: bool
    lines_omitted: int
    connected_ids: tuple[str, ...]
    stale: bool


@dataclass(frozen=True)
class RankedItem:
    """One result of the ranked list (selection did not run): its stored code and its scores."""

    path: str
    start_line: int
    end_line: int
    qualified_name: str
    kind: str
    id: str
    score: float
    first_stage_score: float
    rerank_score: float | None
    reason: str
    connected_ids: tuple[str, ...]
    lexical_score: float
    vector_similarity: float
    # Whose vectors gave vector_similarity: "primary", "static", or "" (not found semantically).
    vector_channel: str
    fusion_score: float
    provenance: str
    signals: Mapping[str, float]
    signature: str
    code: str
    code_lines_omitted: int
    stale: bool


@dataclass(frozen=True)
class SelectionReport:
    """How selection filled the budget. `focus`: the one the gateway judged relevance with
    (selection applies none of its own)."""

    total_tokens: int
    # The budget the answer was filled within: a low-confidence answer's is the small one.
    max_tokens: int
    min_relevance: float
    # The best relevance sent, which the gate compared with min_relevance.
    best_relevance: float
    # What a confident answer kept candidates down to: relevance (not score) at or above it; 0
    # when no tail was cut (every candidate that matched).
    relevance_floor: float
    focus: str
    below_relevance: int
    over_budget: int
    merged: int
    render_fallback: bool
    render_fallback_reason: str
    duration_ms: float


@dataclass(frozen=True)
class IndexingProgress:
    """How far a sync still running is (a cold index's first pass above all): what the answer
    could search is what it had written."""

    phase: str
    files_done: int
    files_total: int
    chunks_written: int


@dataclass(frozen=True)
class UnderstandingReport:
    """The query's intent and the semantic plan the search ran with."""

    query_intent: str
    query_intent_confidence: float
    intent_escalation_hint: str | None
    semantic_mode: str
    semantic_ratio_cap: float | None
    semantic_ratio_source: str
    rewrite: Mapping[str, Any]


@dataclass(frozen=True)
class AnswerMetadata:
    """Retrieval's metadata, the answer's confidence and verdict, freshness, the stages; as data,
    one flat object (the understanding's fields last, when the stage ran)."""

    indexing_status: str
    result_completeness: str
    # Retrieval's calibrated confidence; `answer_confidence` is the answer's own (composite), what
    # the gate and search_code judge against confidence_threshold.
    confidence: float
    answerability: float | None
    semantic_fallback: bool
    semantic_skipped_reason: str
    semantic_ratio_used: float
    external_provider_blocked: bool
    embedding_model_id: str
    embedding_model_version: str
    search_ms: float
    total_chunks: int
    embedded_chunks: int
    total_candidates: int
    missing_names: tuple[str, ...]
    nearest_names: tuple[str, ...]
    filtered_chunks: int
    vector_channels: tuple[str, ...]
    primary_vector_chunks: int
    static_vector_chunks: int
    static_model_id: str
    static_model_version: str
    primary_unavailable_reason: str
    answer_confidence: float
    confidence_threshold: float
    low_confidence: bool
    low_confidence_reason: str | None
    freshness_status: str
    # Set when freshness_status is failed or unknown for a reason other than "off".
    freshness_reason: str
    sync_ms: float
    # What the sync changed, when it finished within the budget.
    sync: Mapping[str, Any] | None
    # Files changed or removed whose new state was not yet written when the query was answered
    # (their results are marked stale), and new files not yet fully written.
    pending_files: int
    pending_new_files: int
    # False while the sync had not yet listed the files: some stale results may be unmarked.
    pending_known: bool
    indexing_progress: IndexingProgress | None
    rerank_provider: str
    rerank_fallback: bool
    rerank_fallback_reason: str
    hubs_added: int
    stage_ms: Mapping[str, float]
    skipped_stages: Mapping[str, str]
    understanding: UnderstandingReport | None

    def to_dict(self) -> dict[str, Any]:
        data = _plain(self)
        understood = data.pop("understanding")
        return {**data, **(understood or {})}


@dataclass(frozen=True)
class SearchAnswer:
    """`results` is the selected context when selection ran (then `selection` says how), else the
    ranked list."""

    results: tuple[SelectedItem | RankedItem, ...]
    selection: SelectionReport | None
    metadata: AnswerMetadata

    def to_dict(self) -> dict[str, Any]:
        return {"results": [_plain(r) for r in self.results], "selection": _plain(self.selection),
                "metadata": self.metadata.to_dict()}


def _plain(value: Any) -> Any:
    """A typed answer's part as JSON data: a dataclass as an object of its fields in order, a tuple
    as a list, a mapping as a dict of the same values (the rewrite report, the sync's stats)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple):
        return [_plain(item) for item in value]
    if isinstance(value, Mapping):
        return dict(value)
    return value


def item_to_dict(item: SelectedItem | RankedItem) -> dict[str, Any]:
    """One result as `SearchAnswer.to_dict` writes it."""
    data: dict[str, Any] = _plain(item)
    return data


def _selected(result: SelectedResult, stale: bool) -> SelectedItem:
    return SelectedItem(
        path=result.relative_path, start_line=result.start_line, end_line=result.end_line,
        qualified_name=result.qualified_name, kind=result.node_kind.value, language=result.language.value,
        id=result.chunk_id, score=round(result.score, 6), relevance=round(result.relevance, 6),
        provenance=result.provenance, reasons=tuple(r.value for r in result.reasons), why=result.why,
        header=result.header, code=result.source, tokens=result.token_count,
        expanded_child_ids=tuple(result.expanded_child_ids), clipped=result.clipped,
        lines_omitted=result.lines_omitted, connected_ids=tuple(result.connected_ids), stale=stale,
    )


def _ranked(item: Ranked, max_code_lines: int) -> RankedItem:
    r = item.result
    chunk = r.chunk
    code, omitted = clip_code(chunk.collapsed_source, max_code_lines)
    return RankedItem(
        path=chunk.relative_path, start_line=chunk.start_line, end_line=chunk.end_line,
        qualified_name=chunk.qualified_name, kind=chunk.node_kind.value, id=chunk.id, score=round(item.score, 6),
        first_stage_score=round(r.score, 6),
        rerank_score=None if item.rerank_score is None else round(item.rerank_score, 6),
        reason=item.reason.value, connected_ids=tuple(item.connected_ids), lexical_score=round(r.lexical_score, 6),
        vector_similarity=round(r.vector_similarity, 6), vector_channel=r.vector_channel,
        fusion_score=round(r.fusion_score, 6), provenance=r.provenance,
        signals={name: round(value, 4) for name, value in sorted(r.signals.items()) if not name.startswith("_")},
        signature=chunk.signature, code=code, code_lines_omitted=omitted, stale=item.stale,
    )


def _selection(outcome: SelectOutcome, focus: QueryFocus, verdict: Verdict) -> SelectionReport:
    """`verdict`: the gate's on the relevances the gateway sent."""
    return SelectionReport(
        total_tokens=outcome.total_tokens, max_tokens=outcome.max_tokens, min_relevance=outcome.min_relevance,
        best_relevance=round(verdict.best, 6), relevance_floor=round(verdict.floor, 6), focus=focus.value,
        below_relevance=outcome.below_relevance, over_budget=outcome.over_budget, merged=outcome.merged,
        render_fallback=outcome.render_fallback, render_fallback_reason=outcome.render_fallback_reason,
        duration_ms=round(outcome.duration_ms, 3),
    )


def _metadata(answer: PipelineAnswer) -> AnswerMetadata:
    meta, sync = answer.metadata, answer.sync
    return AnswerMetadata(
        indexing_status=meta.indexing_status.value, result_completeness=meta.result_completeness.value,
        confidence=round(meta.confidence, 4),
        answerability=None if meta.answerability is None else round(meta.answerability, 4),
        semantic_fallback=meta.semantic_fallback, semantic_skipped_reason=meta.semantic_skipped_reason,
        semantic_ratio_used=round(meta.semantic_ratio_used, 6),
        external_provider_blocked=meta.external_provider_blocked, embedding_model_id=meta.embedding_model_id,
        embedding_model_version=meta.embedding_model_version, search_ms=round(meta.search_ms, 3),
        total_chunks=meta.total_chunks, embedded_chunks=meta.embedded_chunks,
        total_candidates=meta.total_candidates, missing_names=tuple(meta.missing_names),
        nearest_names=tuple(meta.nearest_names), filtered_chunks=meta.filtered_chunks,
        vector_channels=tuple(meta.vector_channels), primary_vector_chunks=meta.primary_vector_chunks,
        static_vector_chunks=meta.static_vector_chunks, static_model_id=meta.static_model_id,
        static_model_version=meta.static_model_version, primary_unavailable_reason=meta.primary_unavailable_reason,
        answer_confidence=round(answer.confidence.composite, 4), confidence_threshold=answer.verdict.threshold,
        low_confidence=answer.verdict.low_confidence,
        low_confidence_reason=low_confidence_reason(answer) if answer.verdict.low_confidence else None,
        freshness_status=answer.freshness_status, freshness_reason=freshness_reason(answer),
        sync_ms=answer.stage_ms.get(SYNC, 0.0),
        sync=dataclasses.asdict(sync.stats) if sync is not None and sync.stats is not None else None,
        pending_files=sync.pending_count if sync is not None and not sync.finished else 0,
        pending_new_files=sync.pending_new_files if sync is not None and not sync.finished else 0,
        pending_known=not (sync is not None and sync.scanning), indexing_progress=_progress(sync),
        rerank_provider=answer.rerank_provider, rerank_fallback=answer.rerank_fallback,
        rerank_fallback_reason=answer.rerank_fallback_reason, hubs_added=answer.hubs_added,
        stage_ms=dict(answer.stage_ms), skipped_stages=dict(answer.skipped),
        understanding=_understanding(answer.understanding) if answer.understanding is not None else None,
    )


def semantic_channels_line(meta: AnswerMetadata) -> str:
    """Which vectors answered a search, e.g. "semantic: code-static for 31,200 chunks, minilm for
    4,100 (still embedding)"; empty when no vector channel ran. Shared by the CLI and the gateway."""
    parts = []
    if "static" in meta.vector_channels:
        parts.append(f"{meta.static_model_id or 'static'} for {meta.static_vector_chunks:,} chunks")
    primary = meta.embedding_model_id or "the primary model"
    if "primary" in meta.vector_channels:
        still = " (still embedding)" if meta.embedded_chunks < meta.total_chunks else ""
        parts.append(f"{primary} for {meta.primary_vector_chunks:,}{still}")
    if not parts:
        return ""
    line = "semantic: " + ", ".join(parts)
    if reason := meta.primary_unavailable_reason:
        line += f" ({primary} unavailable: {reason})"
    return line


def freshness_reason(answer: PipelineAnswer) -> str:
    """Why the index may not match the files, in one line; empty when it does (or is catching up)."""
    sync = answer.sync
    if sync is not None and sync.freshness_status is FreshnessStatus.FAILED:
        return (f"the files could not be checked for changes ({sync.error}): results come from the index as "
                "the last successful sync left it")
    if sync is None and answer.skipped.get(SYNC, "off") != "off":
        return f"the index was not synced ({answer.skipped[SYNC]}): results come from the index as it stands"
    return ""


def _progress(sync: SyncOutcome | None) -> IndexingProgress | None:
    if sync is None or sync.finished or sync.phase is None:
        return None
    return IndexingProgress(phase=sync.phase.value, files_done=sync.phase_files_done,
                            files_total=sync.phase_files_total, chunks_written=sync.chunks_written)


def _selected_stale(answer: PipelineAnswer) -> Callable[[SelectedResult], bool]:
    """A selected result is stale when the candidate it came from is (its chunk id maps back to
    it), or when it comes from a file the sync has not written (a merged parent is no candidate)."""
    stale_ids = {c.result.chunk.id for c in answer.candidates if c.stale}
    sync = answer.sync
    stale_paths = frozenset(sync.pending_paths) if sync is not None and not sync.finished else frozenset()
    return lambda r: r.chunk_id in stale_ids or r.relative_path in stale_paths


def search_answer(answer: PipelineAnswer, max_code_lines: int = 0) -> SearchAnswer:
    """The answer to present; `max_code_lines` clips a ranked result's code (0: whole)."""
    if answer.selection is not None:
        is_stale = _selected_stale(answer)
        selected = tuple(_selected(r, is_stale(r)) for r in answer.selection.results)
        return SearchAnswer(results=selected, selection=_selection(answer.selection, answer.focus, answer.verdict),
                            metadata=_metadata(answer))
    return SearchAnswer(results=tuple(_ranked(c, max_code_lines) for c in answer.candidates), selection=None,
                        metadata=_metadata(answer))


def answer_to_dict(answer: PipelineAnswer, max_code_lines: int = 0) -> dict[str, Any]:
    """The answer as data: `codecompass search --json`, and semantic_search's structured content."""
    return search_answer(answer, max_code_lines).to_dict()


def _understanding(understood: QueryUnderstanding) -> UnderstandingReport:
    plan = understood.plan
    return UnderstandingReport(
        query_intent=understood.intent, query_intent_confidence=round(understood.intent_confidence, 4),
        intent_escalation_hint=understood.escalation_hint, semantic_mode=plan.mode,
        semantic_ratio_cap=plan.ratio_cap, semantic_ratio_source=plan.ratio_source, rewrite=understood.rewrite,
    )


# --- search_code -------------------------------------------------------------------------------
# Seed 003's answer: each field is named as the JSON key it becomes, in the contract's order (the
# order `to_dict` writes), so that the structured content stays the contract clients parse.


@dataclass(frozen=True)
class CodeResult:
    """One result of the ranked list (plus `stale`, ours)."""

    path: str
    line_start: int
    line_end: int
    kind: str
    name: str
    qualified_name: str
    language: str
    score: float
    # The head of the collapsed code, clipped by lines and characters (`snippet_of`).
    snippet: str
    provenance: str
    stale: bool


@dataclass(frozen=True)
class CodeSearchMetadata:
    """Every metadata field of the contract, then ours (from `primary_unavailable_reason` on, with
    `missing_names`, `nearest_names` and `filtered_chunks` among them)."""

    codecompass_protocol_version: str
    # fresh | stale | syncing: what seed 003 knows (`contract_freshness`); ours is freshness_detail.
    freshness_status: str
    indexing_status: str
    # complete | partial, or truncated when the response cap dropped results.
    result_completeness: str
    ref: str
    semantic_mode: str
    semantic_enabled: bool
    semantic_ratio_used: float
    semantic_triggered: bool
    semantic_skipped_reason: str | None
    external_provider_blocked: bool
    # Only when the semantic channel ran: the model that answered.
    embedding_model_version: str | None
    rerank_provider: str
    rerank_fallback: bool
    low_confidence: bool
    # Set exactly when low_confidence is: the next call, in words (suggested_call as data).
    suggested_action: str | None
    confidence_threshold: float
    top_score: float
    score_margin: float
    # None when only one channel found the best results.
    channel_agreement: float | None
    query_intent_confidence: float
    intent_escalation_hint: str | None
    semantic_fallback: bool
    # Ours: the primary model could not embed the query (its service down, say), so the semantic
    # channel answered with static vectors alone; not a fallback to lexical.
    primary_unavailable_reason: str | None
    trace_id: str
    # Names typed that the index lacks, and its closest ones.
    missing_names: tuple[str, ...]
    nearest_names: tuple[str, ...]
    filtered_chunks: int
    # Why the answer is low-confidence, as its text's first line says.
    low_confidence_reason: str | None
    # The answer's composite confidence (what is judged against confidence_threshold); retrieval's
    # calibrated one beside it.
    confidence: float
    retrieval_confidence: float
    suggested_call: Mapping[str, Any] | None
    # The gateway's own status (fresh, syncing, failed, not_indexed, unknown), which
    # freshness_status maps onto seed 003's three.
    freshness_detail: str
    rerank_fallback_reason: str | None
    rewrite: Mapping[str, Any]
    stage_ms: Mapping[str, float]
    skipped_stages: Mapping[str, str]


@dataclass(frozen=True)
class CodeSearchAnswer:
    """The ranked list as search_code returns it (`code_search_answer`); `results` best first."""

    results: tuple[CodeResult, ...]
    query_intent: str
    total_candidates: int
    metadata: CodeSearchMetadata

    def to_dict(self) -> dict[str, Any]:
        """Seed 003's JSON: search_code's structured content."""
        return _plain(self)


def snippet_of(code: str, max_lines: int, max_line_chars: int) -> str:
    """The head of a result's collapsed code: at most `max_lines` lines, each at most
    `max_line_chars`, and a last line saying how many lines were left out."""
    clipped, omitted = clip_code(code, max_lines)
    lines = [line if len(line) <= max_line_chars else line[: max_line_chars - 1] + "…"
             for line in clipped.splitlines()]
    if omitted:
        lines.append(f"… {omitted} more lines")
    return "\n".join(lines)


def _code_result(item: Ranked, max_lines: int, max_line_chars: int) -> CodeResult:
    chunk = item.result.chunk
    return CodeResult(
        path=chunk.relative_path, line_start=chunk.start_line, line_end=chunk.end_line, kind=chunk.node_kind.value,
        name=chunk.name, qualified_name=chunk.qualified_name, language=chunk.language.value,
        score=round(item.score, 6), snippet=snippet_of(chunk.collapsed_source, max_lines, max_line_chars),
        provenance=item.result.provenance, stale=item.stale,
    )


def contract_freshness(status: str) -> str:
    """Seed 003 knows fresh | stale | syncing: an index the sync did not confirm (it failed, did
    not run, or has not written a file yet) is reported stale."""
    return status if status in ("fresh", "syncing") else "stale"


def guidance_for(answer: PipelineAnswer, threshold: float) -> ConfidenceGuidance:
    """The guidance on an answer's confidence (judged over its whole ranking) against `threshold`."""
    understood = answer.understanding
    assert understood is not None, "search_code runs the understanding stage"
    best = None
    if answer.candidates:
        chunk = answer.candidates[0].result.chunk
        best = BestResult(qualified_name=chunk.qualified_name, name=chunk.name, path=chunk.relative_path,
                          kind=chunk.node_kind.value, words_matched=answer.confidence.words_matched)
    meta = answer.metadata
    return guidance_of(understood.shape, answer.confidence, best, threshold, meta.indexing_status.value,
                    meta.missing_names, meta.nearest_names)


def low_confidence_reason(answer: PipelineAnswer) -> str | None:
    """Why an answer holds no confident match, as a clause for the first line of its text; None
    when there is nothing more to say than that. Judged from what was searched and what matched: a
    filter that matched no code, a query with nothing to search by (no letters or digits: emoji,
    punctuation, invisible characters), names the index lacks, words no code matches (only the
    vector channel answered): `policy.confidence.unmatched`, which also holds such an answer to
    its small budget."""
    meta = answer.metadata
    if not answer.candidates and meta.total_chunks and meta.filtered_chunks == 0:
        return "the filters matched no indexed code"
    text = answer.understanding.shape.text if answer.understanding is not None else ""
    why = unmatched(text, meta.missing_names, answer.confidence.words_matched, bool(answer.candidates))
    if why is Unmatched.MISSING_NAMES:
        nearest = f" (nearest: {', '.join(meta.nearest_names)})" if meta.nearest_names else ""
        return f"nothing in the index is named {', '.join(meta.missing_names)}{nearest}"
    return _UNMATCHED_CLAUSES.get(why) if why is not None else None


_UNMATCHED_CLAUSES = {
    Unmatched.NOTHING_TO_SEARCH: "it has no letters or digits to search by",
    Unmatched.NO_WORDS: "no code matches its words",
}


# Longer queries are cut in the first line: it names the query, it need not repeat a paragraph.
QUERY_SHOWN_CHARS = 80


def shown_query(query: str) -> str:
    """The query as the first line quotes it: whitespace collapsed, cut at QUERY_SHOWN_CHARS, and
    characters that print as nothing (zero-width, control, format) written as \\uXXXX, so that a
    query of only those is seen for what it is rather than as ""."""
    text = " ".join(query.split())
    if len(text) > QUERY_SHOWN_CHARS:
        text = text[: QUERY_SHOWN_CHARS - 1] + "…"
    return "".join(f"\\u{ord(ch):04x}" if unicodedata.category(ch) in _INVISIBLE else ch for ch in text)


_INVISIBLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})


def no_confident_match(query: str, reason: str | None, has_results: bool) -> str:
    """The first line of a low-confidence answer's text, the same in semantic_search, search_code
    and the CLI: many agents read only the text, so the doubt is said there, before any code."""
    if not has_results:
        return f'No confident match for "{shown_query(query)}" — {reason or "nothing in the index matched it"}.'
    return f'No confident match for "{shown_query(query)}" — {reason + "; " if reason else ""}the closest code follows.'


def code_search_answer(answer: PipelineAnswer, *, threshold: float, trace_id: str, max_lines: int,
                       max_line_chars: int) -> CodeSearchAnswer:
    """Seed 003's `search_code` answer; `max_lines` and `max_line_chars` clip each snippet."""
    understood = answer.understanding
    assert understood is not None, "search_code runs the understanding stage"
    meta = answer.metadata
    plan = understood.plan
    guidance = guidance_for(answer, threshold)
    triggered = meta.semantic_ratio_used > 0
    skipped_reason = None if triggered else (plan.skipped_reason or meta.semantic_skipped_reason or None)
    agreement = guidance.channel_agreement
    return CodeSearchAnswer(
        results=tuple(_code_result(c, max_lines, max_line_chars) for c in answer.candidates),
        query_intent=understood.intent,
        total_candidates=meta.total_candidates,
        metadata=CodeSearchMetadata(
            codecompass_protocol_version=PROTOCOL_VERSION,
            freshness_status=contract_freshness(answer.freshness_status),
            indexing_status=meta.indexing_status.value,
            result_completeness=meta.result_completeness.value,
            ref=WORKING_TREE,
            semantic_mode=plan.mode,
            # A cap of 0 from retrieval's own default (the request set none) disables it too.
            semantic_enabled=plan.enabled and meta.semantic_skipped_reason != SKIP_RATIO_ZERO,
            semantic_ratio_used=round(meta.semantic_ratio_used, 6),
            semantic_triggered=triggered,
            semantic_skipped_reason=skipped_reason,
            external_provider_blocked=meta.external_provider_blocked,
            embedding_model_version=(meta.embedding_model_version or None) if triggered else None,
            rerank_provider=answer.rerank_provider or "none",
            rerank_fallback=answer.rerank_fallback,
            low_confidence=guidance.low_confidence,
            suggested_action=guidance.suggested_action,
            confidence_threshold=threshold,
            top_score=round(guidance.top_score, 6),
            score_margin=round(guidance.score_margin, 6),
            channel_agreement=None if agreement is None else round(agreement, 4),
            query_intent_confidence=round(understood.intent_confidence, 4),
            intent_escalation_hint=understood.escalation_hint,
            semantic_fallback=meta.semantic_fallback,
            primary_unavailable_reason=meta.primary_unavailable_reason or None,
            trace_id=trace_id,
            missing_names=tuple(meta.missing_names),
            nearest_names=tuple(meta.nearest_names),
            filtered_chunks=meta.filtered_chunks,
            low_confidence_reason=low_confidence_reason(answer) if guidance.low_confidence else None,
            confidence=round(guidance.confidence, 4),
            retrieval_confidence=round(guidance.calibrated, 4),
            suggested_call=guidance.suggested_call,
            freshness_detail=answer.freshness_status,
            rerank_fallback_reason=answer.rerank_fallback_reason or None,
            rewrite=understood.rewrite,
            stage_ms=dict(answer.stage_ms),
            skipped_stages=dict(answer.skipped),
        ),
    )
