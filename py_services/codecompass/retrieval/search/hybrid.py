"""The first stage: gather candidates from every channel, then hand them to the ranking policy.

Channels (all raw features; `ranking.py` decides what they are worth):
- full text: BM25 over identifier-split text;
- names: chunks whose name or qualified name is an identifier the query typed;
- paths: chunks of the file a path-shaped query names;
- vectors: cosine similarity to the query's embedding, when the semantic ratio allows, in up
  to two vector channels: the primary model's vectors, and the static model's for the chunks
  that have no primary vector yet (or for every chunk, when the primary model could not embed
  the query). A chunk is searched by one channel only, so each chunk uses whichever vector it
  has, the primary one first.

`semantic_ratio` is a ceiling, not a fixed weight (seed 004, FR-703/FR-717); the ranking
policy lowers it by intent (`ranking.semantic_weight`). A ratio of 1.0 means the vector
channel alone.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from codecompass.common.records import evolve
from codecompass.contracts.retrieval.filters import Filters
from codecompass.policy import shape as q
from codecompass.policy.confidence import (
    answerability,
    confidence,
    confidence_features,
    exact_identifiers,
    missing_names,
    nearest_names,
)
from codecompass.policy.ranking import (
    DEFAULT_POLICY,
    PRIMARY_VECTORS,
    STATIC_VECTORS,
    Candidate,
    RankedResult,
    RankingPolicy,
    Reranker,
    is_truncated,
    rank,
    semantic_weight,
)
from codecompass.policy.shape import QueryShape
from codecompass.retrieval.search.chunk_reader import ChunkReader, DimensionMismatch, ScoredChunk

SKIP_NO_VECTORS = "no_vectors"
SKIP_DIMENSION_MISMATCH = "dimension_mismatch"
SKIP_EMBEDDING_UNAVAILABLE = "embedding_unavailable"

_log = logging.getLogger(__name__)
# Shared by all searches in the process; bounded so concurrent queries cannot oversubscribe
# the CPU with vector scans.
_EXECUTOR = ThreadPoolExecutor(max_workers=4, thread_name_prefix="hybrid-vector")


@dataclass(frozen=True)
class HybridOutcome:
    results: list[RankedResult]
    semantic_ratio_used: float
    semantic_skipped_reason: str | None
    shape: QueryShape
    # Distinct candidates the channels produced, before the limit.
    total_candidates: int
    # Candidates past the limit that scored at least half the best: the limit cut answers.
    truncated: bool
    # The calibrated models' answers, and the evidence they were judged from.
    confidence: float = 0.0  # P(the first result is right)
    answerability: float = 0.0  # P(a right result is among the first ten)
    confidence_features: dict[str, float] = field(default_factory=dict)
    # Exact identifiers the query typed that no chunk is named, and the index's closest names.
    missing_names: tuple[str, ...] = ()
    nearest_names: tuple[str, ...] = ()
    # The vector channels the semantic search ran on (PRIMARY_VECTORS first); empty when skipped.
    vector_channels: tuple[str, ...] = ()


def hybrid_search(
    store: ChunkReader,
    query: str,
    *,
    query_vector: np.ndarray | None,
    filters: Filters,
    limit: int,
    semantic_ratio: float,
    candidate_pool: int = 40,
    policy: RankingPolicy = DEFAULT_POLICY,
    unavailable_reason: str = SKIP_EMBEDDING_UNAVAILABLE,
    static_query_vector: np.ndarray | None = None,
    shape: QueryShape | None = None,
    model: Reranker | None = None,
    lexical: LexicalCandidates | None = None,
) -> HybridOutcome:
    """Ranked results for `query`.

    `query_vector` None means the query could not be embedded by the primary model;
    `unavailable_reason` says why (reported as `semantic_skipped_reason` when no channel can
    answer). `static_query_vector` (the static model's embedding of the query; None: no static
    channel) searches the rows without a primary vector, or every row when `query_vector` is
    None. A query vector from another model (wrong dimensions) falls back to lexical with
    reason "dimension_mismatch". When every row with a static vector has a primary one too, the
    static query vector only gives the learned ranker its second cosine.

    `model` (the learned ranker) reorders the hand-set stack's list; it reads every candidate's
    cosine to each query vector and its in-degree in the reference graph, fetched here.
    `lexical`: the text channels' candidates (`lexical_candidates`) when the caller gathered them
    already, with this search's shape, filters and pool (while the query was being embedded).
    """
    # The caller's judgement of the query (the gateway's, sent with the search) when there is
    # one: a query's shape is judged once. A plain client sends none, and it is judged here.
    shape = shape or q.analyze(query)
    if limit <= 0:
        return HybridOutcome([], 0.0, None, shape, 0, False)
    cap = _clamp_ratio(semantic_ratio)
    pool = channel_pool(limit, candidate_pool)
    vectors_only = cap >= 1.0

    # The static channel searches the rows the primary one cannot: none when every chunk with a
    # static vector has a primary one too (and the query a primary vector).
    static_search = query_vector is None or store.vector_counts().static_only > 0
    # A natural-language query never short-circuits, so its vector search starts alongside
    # the lexical one (LanceDB releases the GIL): latency becomes the slower channel instead
    # of the sum. Other queries wait for the lexical verdict, which often makes it unnecessary.
    channels = _vector_channels(store, query_vector, static_query_vector if static_search else None, filters, pool)
    speculative: list[tuple[str, Future[list[ScoredChunk]]]] = []
    if cap > 0.0 and channels and (vectors_only or shape.intent == q.NATURAL_LANGUAGE):
        speculative = [(name, _EXECUTOR.submit(search)) for name, search in channels]

    if vectors_only:
        words = LexicalCandidates()
    elif lexical is None:
        words = lexical_candidates(store, shape, query, filters, pool)
    else:
        words = lexical
    candidates = list(words.candidates)
    missing = words.missing
    ratio, reason = semantic_weight(
        shape, cap, has_definition=words.has_definition, has_lexical=words.has_lexical, policy=policy
    )

    used: tuple[str, ...] = ()
    if ratio > 0.0 and not channels:
        ratio, reason = 0.0, unavailable_reason
    if ratio > 0.0:
        try:
            found = [(name, future.result()) for name, future in speculative] if speculative else \
                [(name, search()) for name, search in channels]
        except DimensionMismatch as err:
            _log.warning("semantic search skipped: %s", err)
            ratio, reason = 0.0, SKIP_DIMENSION_MISMATCH
        else:
            if not any(hits for _, hits in found) and not _has_vectors(store, static_query_vector is not None):
                ratio, reason = 0.0, SKIP_NO_VECTORS
            else:
                used = tuple(name for name, _ in found)
            candidates += [
                Candidate(h.chunk, cosine=h.score, semantic_rank=i, vector_channel=name)
                for name, hits in found
                for h, i in zip(hits, shared_ranks([h.score for h in hits]), strict=True)
            ]
    else:
        for _, future in speculative:
            future.cancel()
    if vectors_only and ratio == 0.0:
        # The vector channel was asked for alone and could not answer: say so with an empty
        # list rather than a silent switch to lexical.
        candidates = []

    if model is not None and policy.full and candidates:
        candidates = _with_graph_and_cosines(store, candidates, query_vector if ratio > 0.0 or vectors_only else None,
                                             static_query_vector)
    ranked = rank(shape, candidates, ratio=ratio, limit=len(candidates) or 1, policy=policy, model=model)
    results = ranked[:limit]
    cut = ranked[limit:]
    truncated = is_truncated(results, cut)
    exact_missing = bool(missing) and len(missing) == len(exact_identifiers(shape))
    features = confidence_features(shape, ranked, exact_missing)
    return HybridOutcome(
        results=results,
        semantic_ratio_used=ratio,
        semantic_skipped_reason=reason,
        shape=shape,
        total_candidates=len(ranked),
        truncated=truncated,
        confidence=confidence(features) if ranked else 0.0,
        answerability=answerability(features) if ranked else 0.0,
        confidence_features=features,
        missing_names=missing,
        nearest_names=nearest_names(missing, *store.names()) if missing else (),
        vector_channels=used if ratio > 0.0 else (),
    )


@dataclass(frozen=True)
class LexicalCandidates:
    """What the text channels found: full text, names, paths."""

    candidates: tuple[Candidate, ...] = ()
    has_lexical: bool = False  # full text found something
    has_definition: bool = False  # a chunk is named as an identifier of the query
    missing: tuple[str, ...] = ()  # exact identifiers of the query no chunk is named


def lexical_candidates(store: ChunkReader, shape: QueryShape, query: str, filters: Filters,
                       pool: int) -> LexicalCandidates:
    """The full-text, name and path channels' candidates: no query vector needed."""
    candidates: list[Candidate] = []
    lexical = store.search_lexical(shape.lexical_text or query, filters, pool)
    candidates += [Candidate(h.chunk, bm25=h.score, lexical_rank=i)
                   for h, i in zip(lexical, shared_ranks([h.score for h in lexical]), strict=True)]
    has_definition = False
    missing: tuple[str, ...] = ()
    if shape.identifiers:
        named = store.find_by_names(shape.identifiers, filters, pool)
        has_definition = bool(named)
        candidates += [Candidate(c, name_match=True) for c in named]
        missing = missing_names(exact_identifiers(shape), named)
    if shape.path:
        candidates += [Candidate(c, path_match=True) for c in store.find_by_path(shape.path, filters, pool)]
    return LexicalCandidates(tuple(candidates), bool(lexical), has_definition, missing)


def shared_ranks(scores: Sequence[float]) -> list[int]:
    """1-based ranks of a channel's hits, best score first, where equal scores share the better
    rank. Among equal scores a channel's order is its engine's accident: LanceDB's full-text
    search returned the same file of two packages of a monorepo (equal BM25) in one order or the
    other from one moment to the next, and the learned ranker, reading the rank, put either first.
    Equal evidence now gives equal features, and `ranking._order` breaks the tie by id."""
    first: dict[float, int] = {}
    for position, score in enumerate(sorted(scores, reverse=True), start=1):
        first.setdefault(score, position)
    return [first[score] for score in scores]


def channel_pool(limit: int, candidate_pool: int) -> int:
    """Candidates each channel is asked for."""
    return max(candidate_pool, limit)


def _with_graph_and_cosines(store: ChunkReader, candidates: list[Candidate], query_vector: np.ndarray | None,
                            static_query_vector: np.ndarray | None) -> list[Candidate]:
    """The candidates with each model's cosine and their in-degree filled in (one lookup each)."""
    ids = list(dict.fromkeys(c.chunk.id for c in candidates))
    try:
        cosines = store.cosines(ids, query_vector, static_query_vector)
    except DimensionMismatch as err:
        _log.warning("candidate cosines skipped: %s", err)
        cosines = {}
    degrees = store.in_degrees(ids)
    out = []
    for c in candidates:
        primary, static = cosines.get(c.chunk.id, (None, None))
        out.append(evolve(c, primary_cosine=primary, static_cosine=static, in_degree=degrees.get(c.chunk.id, 0)))
    return out


def _vector_channels(
    store: ChunkReader,
    query_vector: np.ndarray | None,
    static_query_vector: np.ndarray | None,
    filters: Filters,
    pool: int,
) -> list[tuple[str, Callable[[], list[ScoredChunk]]]]:
    """The vector searches this query can run, by channel: the primary model's over the rows
    that have its vector, the static model's over the rest (or over every row when the primary
    model could not embed the query)."""
    channels: list[tuple[str, Callable[[], list[ScoredChunk]]]] = []
    if query_vector is not None:
        channels.append((PRIMARY_VECTORS, partial(store.search_vector, query_vector, filters, pool)))
    if static_query_vector is not None:
        channels.append((STATIC_VECTORS, partial(store.search_static_vector, static_query_vector, filters, pool,
                                                 without_primary=query_vector is not None)))
    return channels


def _has_vectors(store: ChunkReader, static: bool) -> bool:
    """Whether any row has a vector a channel of this search could find."""
    if store.counts()[1] > 0:
        return True
    return static and store.vector_counts().static > 0


def _clamp_ratio(ratio: float) -> float:
    if math.isnan(ratio):
        _log.warning("semantic_ratio is NaN; using 0")
        return 0.0
    if not 0.0 <= ratio <= 1.0:
        _log.warning("semantic_ratio %r outside [0, 1]; clamped", ratio)
        return min(max(ratio, 0.0), 1.0)
    return ratio
