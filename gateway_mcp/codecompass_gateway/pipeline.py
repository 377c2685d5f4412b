"""The query pipeline: sync -> understand -> retrieve -> rerank -> structure (hubs) -> select.

The gateway decides what runs, in which order and within which time budget; each service
does one thing. Every stage is a span, has its own deadline and can be turned off per
request. Only retrieval is required: a sync, rerank, hub or selection failure skips that stage
(the answer says which and why) instead of failing the query, because a ranked list that
lacks one refinement is still an answer.

Freshness is the gateway's decision, not the search's (a search is a pure read): the sync
stage waits for the index to catch up with the files at most `freshness_budget_ms`; past it
the query answers from the index as it stands, says `freshness_status: syncing`, and marks
each result from a file the sync has not written yet `stale`; the sync finishes in the
background. A query never waits for embeddings.

Understanding (`understanding.py`) reads the query's intent and settles the semantic plan before
retrieval: in `semantic_mode` off or rerank_only retrieval gets a semantic ratio of 0 and never
embeds the query; in off a model reranker is skipped too.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from codecompass.clients.errors import UNAVAILABLE, ServiceError
from codecompass.clients.rerank import RerankClient
from codecompass.clients.retrieval import RetrievalClient
from codecompass.clients.selection import SelectionClient
from codecompass.common.config import Settings
from codecompass.common.logging import get_logger
from codecompass.common.telemetry import tracer
from codecompass.rerank.model import LOCAL, RerankQuery
from codecompass.rerank.model import Candidate as RerankCandidate
from codecompass.retrieval.filters import Filters
from codecompass.retrieval.ranking import RankedResult
from codecompass.retrieval.state import (
    FreshnessStatus,
    HubQuery,
    ResultView,
    SearchMetadata,
    SearchQuery,
    SyncOutcome,
)
from codecompass.selection.model import Candidate as SelectCandidate
from codecompass.selection.model import QueryFocus, Reason, SelectOutcome, SelectQuery
from codecompass_gateway.understanding import QueryUnderstanding, understand

log = get_logger("codecompass.gateway.pipeline")
_tracer = tracer("codecompass.gateway")

SYNC, UNDERSTAND, RETRIEVE, RERANK, HUBS, SELECT = "sync", "understand", "retrieve", "rerank", "hubs", "select"
# freshness_status when the sync stage did not run or its service did not answer: the index
# may or may not match the files.
FRESHNESS_UNKNOWN = "unknown"
# The sync service answers at the budget; this covers the hop (and a workspace's first open).
_SYNC_HOP_S = 2.0
# What a reranker reads of a candidate: where it is, what it is, and the head of its code.
_RERANK_TEXT_CHARS = 2000


@dataclass(frozen=True)
class PipelineRequest:
    workspace_root: str
    query: str
    filters: Filters = field(default_factory=Filters)
    semantic_ratio: float | None = None
    sync: bool = True
    rerank: bool = True
    rerank_provider: str | None = None
    hubs: bool | None = None  # None: the configured default
    select: bool = True
    max_tokens: int | None = None
    min_relevance: float | None = None
    focus: QueryFocus = QueryFocus.AUTO
    # Results when selection is off (a plain ranked list).
    limit: int = 10
    # "off" / "rerank_only" / "hybrid"; None: the gateway's configured mode.
    semantic_mode: str | None = None
    rewrite: bool | None = None  # accepted and reported; rewriting is not built yet


@dataclass(frozen=True)
class Ranked:
    """A candidate as it goes through the stages."""

    result: RankedResult
    score: float
    reason: Reason = Reason.MATCH
    connected_ids: tuple[str, ...] = ()
    rerank_score: float | None = None
    # Its file changed since it was indexed and the sync has not written it yet: the code shown
    # is what the index holds, not what the file says now.
    stale: bool = False


@dataclass(frozen=True)
class PipelineAnswer:
    candidates: tuple[Ranked, ...]  # after every stage that ran, best first
    selection: SelectOutcome | None  # None when selection is off or failed
    metadata: SearchMetadata
    rerank_provider: str = ""
    rerank_fallback: bool = False
    rerank_fallback_reason: str = ""
    hubs_added: int = 0
    stage_ms: dict[str, float] = field(default_factory=dict)
    # Stage -> why it did not run or did not count ("off", or the failure in one line).
    skipped: dict[str, str] = field(default_factory=dict)
    # "fresh" / "syncing" / "not_indexed" / "failed" (FreshnessStatus values), or "unknown"
    # when the sync stage was off or its service did not answer.
    freshness_status: str = FRESHNESS_UNKNOWN
    # What the sync stage learnt (None when it did not run or failed to answer).
    sync: SyncOutcome | None = None
    # The query's intent and the semantic plan the search ran with.
    understanding: QueryUnderstanding | None = None


class Pipeline:
    def __init__(self, settings: Settings) -> None:
        self._settings = settings
        self._gateway = settings.gateway
        self.retrieval = RetrievalClient(settings.retrieval_addr)
        self.rerank = RerankClient(settings.rerank_addr)
        self.selection = SelectionClient(settings.selection_addr)

    def close(self) -> None:
        for client in (self.retrieval, self.rerank, self.selection):
            client.close()

    def run(self, request: PipelineRequest) -> PipelineAnswer:
        g = self._gateway
        stage_ms: dict[str, float] = {}
        skipped: dict[str, str] = {}
        with _tracer.start_as_current_span("pipeline") as span:
            span.set_attribute("codecompass.query_chars", len(request.query))
            sync: SyncOutcome | None = None
            if not request.sync:
                skipped[SYNC] = "off"
            else:
                try:
                    with self._stage(SYNC, stage_ms):
                        sync = self._sync(request)
                except ServiceError as exc:
                    # An unreachable retrieval service fails the search that follows, which
                    # says so itself; one warning per outage is enough.
                    skipped[SYNC] = self._failed(SYNC, exc, quiet=exc.kind == UNAVAILABLE)
                if sync is not None and sync.freshness_status is FreshnessStatus.FAILED:
                    skipped[SYNC] = f"sync failed: {sync.error}"
            freshness = sync.freshness_status.value if sync is not None else FRESHNESS_UNKNOWN
            span.set_attribute("codecompass.freshness_status", freshness)
            stale_paths = frozenset(sync.pending_paths) if sync is not None and not sync.finished else frozenset()

            # A span but no stage time: a pure function of the text, microseconds.
            with _tracer.start_as_current_span(f"pipeline.{UNDERSTAND}"):
                understood = understand(request.query, g, request.semantic_mode, request.semantic_ratio,
                                        request.rewrite)
            span.set_attribute("codecompass.query_intent", understood.intent)
            span.set_attribute("codecompass.semantic_mode", understood.plan.mode)

            with self._stage(RETRIEVE, stage_ms):
                outcome = self.retrieval.search(SearchQuery(
                    workspace_root=request.workspace_root, query=request.query, filters=request.filters,
                    semantic_ratio=understood.plan.ratio_cap,
                    limit=max(g.candidates, request.limit), view=ResultView.CODE,
                ), g.retrieve_timeout_s)
            ranked = mark_stale([Ranked(result=r, score=r.score) for r in outcome.results], stale_paths)
            answer = PipelineAnswer(candidates=(), selection=None, metadata=outcome.metadata,
                                    freshness_status=freshness, sync=sync, understanding=understood)

            provider = request.rerank_provider or self._settings.rerank.provider
            if not request.rerank:
                skipped[RERANK] = "off"
            elif provider != LOCAL and not understood.plan.model_rerank:
                skipped[RERANK] = f"semantic_mode {understood.plan.mode}: no model reranker"
            elif provider == LOCAL:
                # The local reranker is the ranking retrieval already applied: no call needed.
                answer = replace(answer, rerank_provider=LOCAL)
            elif ranked:
                try:
                    with self._stage(RERANK, stage_ms):
                        ranked, answer = self._rerank(request, ranked, answer)
                except ServiceError as exc:
                    skipped[RERANK] = self._failed(RERANK, exc)

            if not (g.hubs if request.hubs is None else request.hubs):
                skipped[HUBS] = "off"
            elif len(ranked) >= 2:
                try:
                    with self._stage(HUBS, stage_ms):
                        ranked, added = self._hubs(request, ranked)
                    ranked = mark_stale(ranked, stale_paths)
                    answer = replace(answer, hubs_added=added)
                except ServiceError as exc:
                    skipped[HUBS] = self._failed(HUBS, exc)

            selection = None
            if not request.select:
                skipped[SELECT] = "off"
            elif ranked:
                try:
                    with self._stage(SELECT, stage_ms):
                        selection = self._select(request, ranked, outcome.metadata.confidence)
                except ServiceError as exc:
                    skipped[SELECT] = self._failed(SELECT, exc)
            keep = ranked if selection is not None else ranked[: request.limit]
            return replace(answer, candidates=tuple(keep), selection=selection, stage_ms=stage_ms, skipped=skipped)

    def _sync(self, request: PipelineRequest) -> SyncOutcome:
        budget_ms = self._gateway.freshness_budget_ms
        timeout_s = budget_ms / 1000 + _SYNC_HOP_S if budget_ms else self._gateway.retrieve_timeout_s
        return self.retrieval.sync(request.workspace_root, budget_ms, timeout_s)

    def _rerank(self, request: PipelineRequest, ranked: list[Ranked], answer: PipelineAnswer
                ) -> tuple[list[Ranked], PipelineAnswer]:
        g = self._gateway
        pool = ranked[: g.rerank_candidates]
        outcome = self.rerank.rerank(RerankQuery(
            query=request.query,
            candidates=tuple(RerankCandidate(id=c.result.chunk.id, text=rerank_text(c.result), first_stage_score=c.score)
                             for c in pool),
            top_n=min(request.limit, len(pool)),
            provider=request.rerank_provider or self._settings.rerank.provider,
        ), g.rerank_timeout_s)
        by_id = {c.result.chunk.id: c for c in pool}
        reranked = [replace(by_id[s.id], score=s.final_score, rerank_score=s.rerank_score)
                    for s in outcome.scores if s.id in by_id]
        seen = {c.result.chunk.id for c in reranked}
        reranked += [c for c in ranked if c.result.chunk.id not in seen]
        return reranked, replace(answer, rerank_provider=outcome.provider, rerank_fallback=outcome.fallback,
                                 rerank_fallback_reason=outcome.fallback_reason)

    def _hubs(self, request: PipelineRequest, ranked: list[Ranked]) -> tuple[list[Ranked], int]:
        g = self._gateway
        seeds = tuple((c.result.chunk.id, c.score) for c in ranked[: g.hub_seeds])
        outcome = self.retrieval.find_hubs(HubQuery(workspace_root=request.workspace_root, seeds=seeds,
                                                    view=ResultView.CODE), g.hubs_timeout_s)
        index = {c.result.chunk.id: i for i, c in enumerate(ranked)}
        out = list(ranked)
        added = 0
        for hub in outcome.hubs:
            hub_id = hub.result.chunk.id
            if hub_id in index:
                # Already a candidate: it keeps its own evidence and gains the hub's.
                here = out[index[hub_id]]
                out[index[hub_id]] = replace(here, score=max(here.score, hub.result.score),
                                             connected_ids=hub.connected_seed_ids)
            else:
                out.append(Ranked(result=hub.result, score=hub.result.score, reason=Reason.HUB,
                                  connected_ids=hub.connected_seed_ids))
                added += 1
        out.sort(key=lambda c: -c.score)
        return out, added

    def _select(self, request: PipelineRequest, ranked: list[Ranked], confidence: float) -> SelectOutcome:
        g = self._gateway
        offers = tuple(
            SelectCandidate(chunk=c.result.chunk, score=c.score, reason=c.reason, provenance=c.result.provenance,
                  connected_ids=c.connected_ids)
            for c in ranked[: g.select_candidates]
        )
        return self.selection.select(SelectQuery(
            workspace_root=request.workspace_root, query=request.query, candidates=offers,
            max_tokens=request.max_tokens or 0, min_relevance=request.min_relevance, confidence=confidence,
            focus=request.focus,
        ), g.select_timeout_s)

    @contextmanager
    def _stage(self, name: str, stage_ms: dict[str, float]) -> Iterator[None]:
        started = time.perf_counter()
        with _tracer.start_as_current_span(f"pipeline.{name}"):
            try:
                yield
            finally:
                stage_ms[name] = round((time.perf_counter() - started) * 1000, 3)

    @staticmethod
    def _failed(stage: str, exc: ServiceError, quiet: bool = False) -> str:
        (log.info if quiet else log.warning)("pipeline stage failed; answering without it",
                    extra={"stage": stage, "service": exc.service, "kind": exc.kind, "detail": str(exc)})
        return exc.user_message()


def mark_stale(ranked: list[Ranked], stale_paths: frozenset[str]) -> list[Ranked]:
    """Flag the candidates whose file the sync has not written yet."""
    if not stale_paths:
        return ranked
    return [replace(c, stale=True) if c.result.chunk.relative_path in stale_paths else c for c in ranked]


def rerank_text(result: RankedResult) -> str:
    chunk = result.chunk
    head = f"// {chunk.relative_path} > {chunk.qualified_name}\n"
    return head + chunk.collapsed_source[:_RERANK_TEXT_CHARS]
