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

Understanding (`understanding.py`) judges the query's shape once and settles the semantic plan
before retrieval: the shape goes with the search, so retrieval ranks by the same intent; in
`semantic_mode` off or rerank_only retrieval gets a semantic ratio of 0 and never embeds the query;
in off a model reranker is skipped too.

Scores change in one place, the policy package (`codecompass.policy`), which this module calls: a
model reranker's raw scores are blended with the first stage's (`policy.blend`), and each candidate
offered to selection carries the relevance the policy gives it (`policy.relevance`: the search's
confidence, the score relative to the best, focus); selection only gates, merges, renders and
budgets. The answer's confidence is judged once, over the whole ranking (`policy.confidence`), against
one threshold (the request's min_relevance, else gateway.confidence_threshold), so that semantic_search's
gate and search_code's `low_confidence` agree; the verdict the reader is told is the gate's own rule
(`policy.selection.judge`) on what was sent.

Rewriting (`rewrite.py`, seed 002) follows the first search: when the caller forces it, the
heuristic calls for it, or the query found nothing, an LLM turns the query into code terms; the
terms are searched as a second query, merged with the first results (the higher score of a
chunk wins), and the focus the LLM read (implementation / tests) applies unless the caller set
one. A failed rewrite leaves the first results as they are and says why.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from opentelemetry import trace

from codecompass.clients.channel import Locate, address_for
from codecompass.clients.errors import INVALID, UNAVAILABLE, ServiceError
from codecompass.clients.rerank import RerankClient
from codecompass.clients.retrieval import RetrievalClient
from codecompass.clients.selection import SelectionClient
from codecompass.common import names
from codecompass.common.config import GatewaySettings, Settings
from codecompass.common.logging import get_logger
from codecompass.common.telemetry import tracer
from codecompass.contracts.rerank.model import LOCAL, REASON_BLOCKED, RerankQuery
from codecompass.contracts.rerank.model import Candidate as RerankCandidate
from codecompass.contracts.retrieval.filters import Filters
from codecompass.contracts.retrieval.model import (
    FreshnessStatus,
    HubQuery,
    IndexPhase,
    ResultView,
    SearchMetadata,
    SearchOutcome,
    SearchQuery,
    SyncOutcome,
)
from codecompass.contracts.selection.model import Candidate as SelectCandidate
from codecompass.contracts.selection.model import Reason, SelectOutcome, SelectQuery
from codecompass.policy import shape as q
from codecompass.policy.blend import rerank_blend
from codecompass.policy.confidence import AnswerConfidence, Unmatched, answer_confidence, unmatched
from codecompass.policy.merge import merge_results
from codecompass.policy.ranking import RankedResult
from codecompass.policy.relevance import QueryFocus, focused_scores, relevance, resolve_focus
from codecompass.policy.rewrite import should_rewrite
from codecompass.policy.selection import Verdict, answer_budget, judge
from codecompass_gateway.rewrite import (
    FORCED,
    HEURISTIC,
    ZERO_RESULTS,
    ChatRewriter,
    RewriteFailed,
    RewriteOutcome,
    Rewriter,
    vocabulary_of,
)
from codecompass_gateway.understanding import QueryUnderstanding, settled, understand

log = get_logger("codecompass.gateway.pipeline")
_tracer = tracer("codecompass.gateway")

SYNC, UNDERSTAND, RETRIEVE, REWRITE, RERANK, HUBS, SELECT = (
    "sync", "understand", "retrieve", "rewrite", "rerank", "hubs", "select")
# The rewrite LLM's focus as selection's.
_FOCUS = {"implementation": QueryFocus.IMPLEMENTATION, "tests": QueryFocus.TESTS, "all": QueryFocus.NONE}
# freshness_status when the sync stage did not run or its service did not answer: the index
# may or may not match the files.
FRESHNESS_UNKNOWN = "unknown"
# The sync service answers at the budget; this covers the hop (and a workspace's first open).
_SYNC_HOP_S = 2.0
# The least budget a sync can be given (0 asks it to finish): it answers with what is pending now.
_AT_ONCE_MS = 1
# What a reranker reads of a candidate: where it is, what it is, and the head of its code.
_RERANK_TEXT_CHARS = 2000
# An answer's confidence and verdict before anything is ranked (`run` sets both on every answer it
# returns): nothing matched, so nothing is sure.
NO_CONFIDENCE = answer_confidence([], [], 0.0)
NO_ANSWER = judge(NO_CONFIDENCE.composite, GatewaySettings.confidence_threshold)
# Searches that run alongside their query's sync (see `Pipeline.run`): one per query in flight,
# each mostly waiting on the retrieval service.
_HEAD_STARTS = ThreadPoolExecutor(max_workers=32, thread_name_prefix="pipeline-search")


@dataclass(frozen=True)
class PipelineRequest:
    workspace_root: str
    query: str
    filters: Filters = field(default_factory=Filters)
    semantic_ratio: float | None = None
    sync: bool = True
    # The workspace's first index is still being written (the gateway's background indexer says
    # so): a sync could only wait out its budget behind that build, so it answers at once with
    # what is pending (300 ms off every answer while a workspace is first indexed).
    building: bool = False
    rerank: bool = True
    rerank_provider: str | None = None
    hubs: bool | None = None  # None: the configured default
    select: bool = True
    max_tokens: int | None = None
    # The confidence an answer must reach not to be low-confidence: selection's relevance gate, and
    # the threshold a ranked list (selection off) is flagged against, so that both tools judge by
    # one number. None: gateway.confidence_threshold.
    min_relevance: float | None = None
    focus: QueryFocus = QueryFocus.AUTO
    # Results when selection is off (a plain ranked list).
    limit: int = 10
    # "off" / "rerank_only" / "hybrid"; None: the gateway's configured mode.
    semantic_mode: str | None = None
    # True: rewrite with the LLM; None: when the heuristic or a zero-result answer calls for it;
    # False: never.
    rewrite: bool | None = None
    # An LLM this call may rewrite with ahead of the configured endpoint: the connected MCP
    # client's model, when its connection allows sampling.
    rewriter: Rewriter | None = None


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
    # The focus relevance was judged with (never AUTO): the request's, the rewrite's, else the shape's.
    focus: QueryFocus = QueryFocus.IMPLEMENTATION
    # How sure the answer is, judged once over the whole ranking (after rerank and hubs): what both
    # tools report and what each candidate's relevance, and so the gate, is built on.
    confidence: AnswerConfidence = NO_CONFIDENCE
    # The verdict the reader is told: the gate's on the relevances sent when selection ran, else
    # the same rule on the answer's confidence.
    verdict: Verdict = NO_ANSWER


class Pipeline:
    def __init__(self, settings: Settings, locate: Locate | None = None) -> None:
        self._settings = settings
        self._gateway = settings.gateway
        # `locate`: where each service is at each call (the local runtime), else the settings' addresses.
        self.retrieval = RetrievalClient(address_for(names.RETRIEVAL, settings.retrieval_addr, locate))
        # The index writer's own client where the roles run apart (WRITER_ADDR); see `writer`.
        self._writer = RetrievalClient(settings.writer_addr) if settings.writer_addr else None
        self.rerank = RerankClient(address_for(names.RERANK, settings.rerank_addr, locate))
        self.selection = SelectionClient(address_for(names.SELECTION, settings.selection_addr, locate))
        # None: no endpoint configured, rewriting is inert.
        self.rewriter: ChatRewriter | None = ChatRewriter.from_settings(settings.gateway)

    @property
    def writer(self) -> RetrievalClient:
        """Where syncs go: the index writer; the retrieval client itself unless the roles run apart."""
        return self._writer or self.retrieval

    def close(self) -> None:
        for client in (self.retrieval, self.rerank, self.selection, self._writer):
            if client is not None:
                client.close()

    def run(self, request: PipelineRequest) -> PipelineAnswer:
        g = self._gateway
        stage_ms: dict[str, float] = {}
        skipped: dict[str, str] = {}
        with _tracer.start_as_current_span("pipeline") as span:
            span.set_attribute("codecompass.query_chars", len(request.query))
            # A span but no stage time: a pure function of the text, microseconds.
            with _tracer.start_as_current_span(f"pipeline.{UNDERSTAND}"):
                understood = understand(request.query, g, request.semantic_mode, request.semantic_ratio,
                                        request.rewrite)
            span.set_attribute("codecompass.query_intent", understood.intent)
            span.set_attribute("codecompass.semantic_mode", understood.plan.mode)
            query = SearchQuery(
                workspace_root=request.workspace_root, query=request.query, filters=request.filters,
                semantic_ratio=understood.plan.ratio_cap,
                limit=max(g.candidates, request.limit), view=ResultView.CODE, shape=understood.shape,
            )

            # The search starts with the sync, not after it: when the sync writes nothing (the
            # usual case, the analysis service's folder watch answering at once) the index the
            # search read is the fresh one and its answer stands; when it wrote anything, failed,
            # or is still writing, the search runs again after it, as it would have without the
            # head start.
            head_start: Future[SearchOutcome] | None = None
            # Its own stage time: a dropped head start that ends late must not overwrite the answer's.
            head_start_ms: dict[str, float] = {}
            sync: SyncOutcome | None = None
            if not request.sync:
                skipped[SYNC] = "off"
            else:
                head_start = _HEAD_STARTS.submit(contextvars.copy_context().run, self._search, query, head_start_ms)
                try:
                    with self._stage(SYNC, stage_ms):
                        sync = self._sync(request)
                except ServiceError as exc:
                    if exc.kind == INVALID:
                        # A workspace the service will not index (`/`, the home folder, one far
                        # above the size limits): an empty "not indexed" answer would hide why.
                        raise
                    # An unreachable retrieval service fails the search that follows, which
                    # says so itself; one warning per outage is enough.
                    skipped[SYNC] = self._failed(SYNC, exc, quiet=exc.kind == UNAVAILABLE)
                if sync is not None and sync.freshness_status is FreshnessStatus.FAILED:
                    skipped[SYNC] = f"sync failed: {sync.error}"
            freshness = sync.freshness_status.value if sync is not None else FRESHNESS_UNKNOWN
            span.set_attribute("codecompass.freshness_status", freshness)
            stale_paths = frozenset(sync.pending_paths) if sync is not None and not sync.finished else frozenset()

            # While the first index is written the sync answers at once, unfinished, and a search
            # after it would read the same growing index the head start read: that answer stands.
            building = request.building and sync is not None and not sync.finished
            if head_start is not None and (sync is None or wrote_nothing(sync) or building):
                outcome = head_start.result()
                stage_ms.update(head_start_ms)
            else:
                # The head start read the index before the sync's writes (its answer, or its
                # failure, is dropped).
                outcome = self._search(query, stage_ms)
            ranked = [Ranked(result=r, score=r.score) for r in outcome.results]
            ranked, rewritten = self._rewrite(request, understood, ranked, stage_ms)
            understood = settled(replace(understood, rewrite=rewritten.to_dict()),
                                 {name for r in outcome.results for name in (r.chunk.name, r.chunk.qualified_name)})
            span.set_attribute("codecompass.rewrite_applied", rewritten.applied)
            if rewritten.applied and request.focus is QueryFocus.AUTO and rewritten.focus in _FOCUS:
                request = replace(request, focus=_FOCUS[rewritten.focus])
            ranked = mark_stale(ranked, stale_paths)
            focus = resolve_focus(request.focus, understood.shape)
            answer = PipelineAnswer(candidates=(), selection=None, metadata=outcome.metadata,
                                    freshness_status=freshness, sync=sync, understanding=understood, focus=focus)

            provider = request.rerank_provider or self._settings.rerank.provider
            if not request.rerank:
                skipped[RERANK] = "off"
            elif provider != LOCAL and not understood.plan.model_rerank:
                skipped[RERANK] = f"semantic_mode {understood.plan.mode}: no model reranker"
            elif provider == LOCAL:
                # The local reranker is the ranking retrieval already applied: no call needed.
                answer = replace(answer, rerank_provider=LOCAL)
            elif not self._settings.rerank.needs_service:
                # Both privacy gates closed: the rerank service would answer "blocked" without a
                # call, and `up` does not run it for that; the same answer, here.
                answer = replace(answer, rerank_provider=LOCAL, rerank_fallback_reason=REASON_BLOCKED)
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

            confidence = answer_confidence([c.result for c in ranked], [c.score for c in ranked],
                                           outcome.metadata.confidence, outcome.metadata.answerability)
            threshold = g.confidence_threshold if request.min_relevance is None else request.min_relevance
            verdict = judge(confidence.composite, threshold)
            selection = None
            if not request.select:
                skipped[SELECT] = "off"
            elif ranked:
                try:
                    with self._stage(SELECT, stage_ms):
                        why = unmatched(understood.shape.text, outcome.metadata.missing_names,
                                        confidence.words_matched, True)
                        selection, verdict = self._select(request, ranked, confidence, threshold, focus, why,
                                                          understood.shape.name_lookup, index_fresh(sync, building))
                except ServiceError as exc:
                    skipped[SELECT] = self._failed(SELECT, exc)
            if selection is None and rewritten.applied:
                # No selection to apply the rewrite's focus: the ranked list takes it. Only a focus
                # someone set (the caller or the rewrite): the shape's is already in the ranking's
                # test penalty.
                focused = focused_scores([c.score for c in ranked], [c.result.chunk for c in ranked], request.focus)
                ranked = sorted((replace(c, score=score) for c, score in zip(ranked, focused, strict=True)),
                                key=lambda c: -c.score)
            keep = ranked if selection is not None else ranked[: request.limit]
            answer = replace(answer, candidates=tuple(keep), selection=selection, stage_ms=stage_ms, skipped=skipped,
                             confidence=confidence, verdict=verdict)
            record_answer(span, answer, candidates=len(ranked))
            return answer

    def _rewrite(self, request: PipelineRequest, understood: QueryUnderstanding, ranked: list[Ranked],
                 stage_ms: dict[str, float]) -> tuple[list[Ranked], RewriteOutcome]:
        """Rewrite when asked or called for, search the terms, merge; any failure keeps `ranked`."""
        g = self._gateway
        requested = request.rewrite
        if requested is False:
            return ranked, RewriteOutcome(requested, reason="off for this request")
        if not g.rewrite_enabled:
            return ranked, RewriteOutcome(requested, reason="disabled by configuration (gateway.rewrite_enabled)")
        wanted, why = should_rewrite(understood.shape)
        if requested:
            trigger = FORCED
        elif wanted:
            trigger = HEURISTIC
        elif not ranked:
            trigger = ZERO_RESULTS
        else:
            return ranked, RewriteOutcome(requested, reason=f"not needed: {why}")
        rewriter = request.rewriter or self.rewriter
        if rewriter is None:
            return ranked, RewriteOutcome(requested, trigger=trigger, reason=(
                "no LLM source: the MCP client offers no sampling (a 2025 protocol revision and the sampling "
                "capability are needed), and no chat endpoint is configured "
                "(CODECOMPASS_GATEWAY_REWRITE_BASE_URL and CODECOMPASS_GATEWAY_REWRITE_MODEL)"))
        source = rewriter.source
        try:
            with self._stage(REWRITE, stage_ms):
                vocabulary = vocabulary_of(c.result.chunk.qualified_name for c in ranked)
                terms = rewriter.rewrite(request.query, vocabulary)
                text = " ".join(terms.terms)
                extra = self.retrieval.search(SearchQuery(
                    workspace_root=request.workspace_root, query=text, filters=request.filters,
                    semantic_ratio=understood.plan.ratio_cap,
                    limit=max(g.candidates, request.limit), view=ResultView.CODE, shape=q.analyze(text),
                ), g.retrieve_timeout_s)
        except RewriteFailed as exc:
            log.info("query rewrite failed; searching the query as given", extra={"reason": exc.reason})
            return ranked, RewriteOutcome(requested, source=source, trigger=trigger, reason=f"{exc.reason}: {exc}")
        except ServiceError as exc:
            return ranked, RewriteOutcome(requested, source=source, trigger=trigger,
                                          reason=f"the rewritten search failed: {self._failed(REWRITE, exc)}")
        merged, added = merge_results(ranked, [Ranked(result=r, score=r.score) for r in extra.results],
                                      key=lambda c: c.result.chunk.id, score=lambda c: c.score)
        return merged, RewriteOutcome(requested, applied=True, source=source, terms=terms.terms, focus=terms.focus,
                                      trigger=trigger, reason=f"{trigger}: searched the terms and merged", added=added)

    def _search(self, query: SearchQuery, stage_ms: dict[str, float]) -> SearchOutcome:
        with self._stage(RETRIEVE, stage_ms):
            return self.retrieval.search(query, self._gateway.retrieve_timeout_s)

    def _sync(self, request: PipelineRequest) -> SyncOutcome:
        budget_ms = _AT_ONCE_MS if request.building else self._gateway.freshness_budget_ms
        timeout_s = budget_ms / 1000 + _SYNC_HOP_S if budget_ms else self._gateway.retrieve_timeout_s
        return self.writer.sync(request.workspace_root, budget_ms, timeout_s)

    def _rerank(self, request: PipelineRequest, ranked: list[Ranked], answer: PipelineAnswer
                ) -> tuple[list[Ranked], PipelineAnswer]:
        g = self._gateway
        pool = ranked[: g.rerank_candidates]
        outcome = self.rerank.rerank(RerankQuery(
            query=request.query,
            candidates=tuple(RerankCandidate(id=c.result.chunk.id, text=rerank_text(c.result)) for c in pool),
            top_n=min(request.limit, len(pool)),
            provider=request.rerank_provider or self._settings.rerank.provider,
        ), g.rerank_timeout_s)
        # The service returns raw model scores; the blend is the policy's. A candidate the model
        # did not score keeps its first-stage score, and ties keep the first-stage order.
        model_score = {s.id: s.rerank_score for s in outcome.scores}
        weight = self._settings.rerank.weight
        reranked = sorted((replace(c, score=rerank_blend(c.score, model_score.get(c.result.chunk.id), weight),
                                   rerank_score=model_score.get(c.result.chunk.id)) for c in pool),
                          key=lambda c: -c.score)
        reranked += ranked[len(pool):]
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

    def _select(self, request: PipelineRequest, ranked: list[Ranked], confidence: AnswerConfidence,
                threshold: float, focus: QueryFocus, why: Unmatched | None,
                name_lookup: bool, fresh: bool) -> tuple[SelectOutcome, Verdict]:
        """The selected answer, and the gate's verdict on it: the policy's own rule on the relevances
        sent and the gate the service applied, so what the reader is told is what was decided. The
        budget asked for is the policy's (`answer_budget`): small for a question likely without an
        answer here (`why`: the search can tell why nothing matches). `fresh`: every candidate's
        chunk is as its file is (`index_fresh`), so selection may render from the index."""
        g = self._gateway
        offered = ranked[: g.select_candidates]
        # Built on the composite confidence the agent is shown (answer.py), so that the gate keeps an
        # answer flagged low_confidence to its small budget and gives a confident one its whole one.
        relevances = relevance([c.score for c in offered], [c.result.chunk for c in offered], confidence.composite,
                               focus)
        offers = tuple(
            SelectCandidate(chunk=c.result.chunk, score=c.score, reason=c.reason, provenance=c.result.provenance,
                            connected_ids=c.connected_ids, relevance=value)
            for c, value in zip(offered, relevances, strict=True)
        )
        outcome = self.selection.select(SelectQuery(
            workspace_root=request.workspace_root, candidates=offers,
            max_tokens=answer_budget(request.max_tokens or 0, judge(max(relevances, default=0.0), threshold),
                                     confidence.answerability, why, name_lookup),
            min_relevance=threshold,
            index_fresh=fresh,
        ), g.select_timeout_s)
        return outcome, judge(max(relevances, default=0.0), outcome.min_relevance)

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


def record_answer(span: trace.Span, answer: PipelineAnswer, candidates: int) -> None:
    """The answer's shape on the pipeline span: how many candidates the stages weighed, who
    reranked them, what selection kept, and which stages did not run and why."""
    span.set_attribute("codecompass.candidates", candidates)
    span.set_attribute("codecompass.rerank_provider", answer.rerank_provider)
    if answer.rerank_fallback_reason:
        span.set_attribute("codecompass.rerank_fallback_reason", answer.rerank_fallback_reason)
    span.set_attribute("codecompass.hubs_added", answer.hubs_added)
    selected = answer.selection.results if answer.selection is not None else answer.candidates
    span.set_attribute("codecompass.results", len(selected))
    if answer.selection is not None:
        span.set_attribute("codecompass.total_tokens", answer.selection.total_tokens)
    if answer.skipped:
        span.set_attribute("codecompass.skipped_stages", [f"{stage}: {why}" for stage, why in answer.skipped.items()])


def wrote_nothing(sync: SyncOutcome) -> bool:
    """Whether a sync left the index as it was: finished, not failed, and no file or chunk written."""
    stats = sync.stats
    return (sync.finished and sync.freshness_status is FreshnessStatus.FRESH and stats is not None
            and not (stats.files_added or stats.files_changed or stats.files_removed
                     or stats.chunks_upserted or stats.chunks_deleted))


def index_fresh(sync: SyncOutcome | None, building: bool = False) -> bool:
    """Whether this query's candidates are as their files are: its sync finished with every file
    written as it was when the call came, and every search of the query read the index after that
    (a head start only when the sync wrote nothing). Then a symbol's stored rendering is the one
    the analysis service would make, and selection skips the round trip for it. A sync that is
    off, failed, unanswered or still writing (its pending paths are capped, so the rest are not
    known to be current) leaves every rendering to the analysis service, which reads the files.
    An edit in the milliseconds between the sync and the selection shows in the next answer, as
    it does in the search's.

    `building` (the workspace's first index is being written): every chunk in it was written by
    that build from the file as it read it moments before, so while the sync knows of no file
    the index holds an older version of (none pending as stale, its plan made), a stored
    rendering is as current as the analysis service's, which would parse every file of the
    answer again while the build's chunking holds the cores (0.4-0.7 s of a cold first answer).
    That is known once the build has planned its files (it reports a phase past scanning);
    `scanning` speaks of the sync queued behind the build, which plans only when the build ends.
    A file edited during the build is seen by the sync after it, as in any answer meanwhile."""
    if sync is None:
        return False
    if building and not sync.finished:
        return (sync.freshness_status is FreshnessStatus.SYNCING and sync.phase not in (None, IndexPhase.SCANNING)
                and sync.pending_count == 0 and not sync.pending_paths)
    return sync.finished and sync.freshness_status is FreshnessStatus.FRESH


def mark_stale(ranked: list[Ranked], stale_paths: frozenset[str]) -> list[Ranked]:
    """Flag the candidates whose file the sync has not written yet."""
    if not stale_paths:
        return ranked
    return [replace(c, stale=True) if c.result.chunk.relative_path in stale_paths else c for c in ranked]


def rerank_text(result: RankedResult) -> str:
    chunk = result.chunk
    head = f"// {chunk.relative_path} > {chunk.qualified_name}\n"
    return head + chunk.collapsed_source[:_RERANK_TEXT_CHARS]
