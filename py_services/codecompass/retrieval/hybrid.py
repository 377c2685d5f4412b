"""Hybrid retrieval: full-text and vector candidates fused into one ranking.

`semantic_ratio` is a ceiling, not a fixed weight (seed 004, FR-703/FR-717). The runtime
lowers it when lexical evidence is already decisive:
- the top lexical hit's name is exactly an identifier the user typed, or the query is shaped
  like code and the top BM25 score dominates the runner-up: semantic is skipped
  (`lexical_short_circuit`, weight 0) because vectors can only push noise above a known answer;
- otherwise a code-shaped query (camelCase, snake_case, dotted, call syntax) leans lexical
  (half the cap): embeddings of short identifiers carry little meaning;
- natural-language queries use the full cap.

Two fusions, selected by `fusion`:
- "rrf": reciprocal-rank fusion, `(1-r)/(k+rank_lex) + r/(k+rank_sem)`, k=60, scaled by
  `k+1` so a result ranked first in every channel used scores 1.0;
- "blend": `(1-r)*bm25/max_bm25 + r*max(cosine, 0)`; BM25 is normalised per query by its
  maximum since raw BM25 is not comparable across queries or corpora.
Both produce scores in [0, 1]; which ranks better is measured by the benchmark (bench/).
"""

from __future__ import annotations

import logging
import math
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from codecompass.common.chunks import Chunk
from codecompass.common.identifiers import looks_like_identifier
from codecompass.retrieval.filters import Filters
from codecompass.retrieval.store import ChunkStore, DimensionMismatch, ScoredChunk

RRF_K = 60
FUSIONS = ("rrf", "blend")
# Top BM25 at least this many times the second: one result stands out lexically.
DOMINANCE_RATIO = 2.0
# Share of the semantic cap kept for code-shaped queries that did not short-circuit.
IDENTIFIER_SEMANTIC_SHARE = 0.5

SKIP_SHORT_CIRCUIT = "lexical_short_circuit"
SKIP_RATIO_ZERO = "semantic_ratio_zero"
SKIP_NO_VECTORS = "no_vectors"
SKIP_DIMENSION_MISMATCH = "dimension_mismatch"
SKIP_EMBEDDING_UNAVAILABLE = "embedding_unavailable"

LEXICAL = "lexical"
SEMANTIC = "semantic"
HYBRID = "hybrid"

_log = logging.getLogger(__name__)
# Shared by all searches in the process; bounded so concurrent queries cannot oversubscribe
# the CPU with vector scans.
_EXECUTOR = ThreadPoolExecutor(max_workers=4, thread_name_prefix="hybrid-vector")


@dataclass(frozen=True)
class HybridResult:
    chunk: Chunk
    score: float  # fused, in [0, 1]
    lexical_score: float  # BM25 normalised per query to [0, 1]; 0 when not found lexically
    vector_similarity: float  # cosine in [-1, 1]; 0 when not found semantically
    provenance: str  # "lexical" | "semantic" | "hybrid"
    lexical_rank: int  # 1-based; 0 when absent
    semantic_rank: int  # 1-based; 0 when absent


@dataclass(frozen=True)
class HybridOutcome:
    results: list[HybridResult]
    semantic_ratio_used: float
    semantic_skipped_reason: str | None


def hybrid_search(
    store: ChunkStore,
    query: str,
    *,
    query_vector: np.ndarray | None,
    filters: Filters,
    limit: int,
    semantic_ratio: float,
    fusion: str = "blend",
    vector_candidates: int = 40,
    lexical_candidates: int = 40,
    unavailable_reason: str = SKIP_EMBEDDING_UNAVAILABLE,
) -> HybridOutcome:
    """Ranked results for `query`.

    `query_vector` None means the query could not be embedded; `unavailable_reason` says
    why (reported as `semantic_skipped_reason`). A query vector from another model (wrong
    dimensions) falls back to lexical with reason "dimension_mismatch".
    """
    if fusion not in FUSIONS:
        raise ValueError(f"unknown fusion {fusion!r}; expected one of {', '.join(FUSIONS)}")
    if limit <= 0:
        return HybridOutcome([], 0.0, None)
    cap = _clamp_ratio(semantic_ratio)
    vector_limit = max(vector_candidates, limit)
    # A multi-word natural-language query cannot short-circuit in practice, so its vector
    # search starts alongside the lexical one (LanceDB releases the GIL): latency becomes
    # the slower channel instead of the sum. Code-shaped and one-word queries wait for the
    # lexical verdict, which often makes the vector search unnecessary.
    speculative: Future[list[ScoredChunk]] | None = None
    if cap > 0.0 and query_vector is not None and _natural_language(query):
        speculative = _EXECUTOR.submit(store.search_vector, query_vector, filters, vector_limit)
    lexical = store.search_lexical(query, filters, max(lexical_candidates, limit))
    ratio, reason = _semantic_weight(query, lexical, cap)

    semantic: list[ScoredChunk] = []
    if ratio > 0.0 and query_vector is None:
        ratio, reason = 0.0, unavailable_reason
    if ratio > 0.0:
        try:
            if speculative is not None:
                semantic = speculative.result()
            else:
                semantic = store.search_vector(query_vector, filters, vector_limit)
        except DimensionMismatch as err:
            _log.warning("semantic search skipped: %s", err)
            ratio, reason = 0.0, SKIP_DIMENSION_MISMATCH
        else:
            if not semantic and store.counts()[1] == 0:
                ratio, reason = 0.0, SKIP_NO_VECTORS
    elif speculative is not None:
        speculative.cancel()

    results = _fuse(lexical, semantic, ratio, fusion)[:limit]
    return HybridOutcome(results=results, semantic_ratio_used=ratio, semantic_skipped_reason=reason)


def _natural_language(query: str) -> bool:
    return len(query.split()) > 1 and not looks_like_identifier(query)


def _clamp_ratio(ratio: float) -> float:
    if math.isnan(ratio):
        _log.warning("semantic_ratio is NaN; using 0")
        return 0.0
    if not 0.0 <= ratio <= 1.0:
        _log.warning("semantic_ratio %r outside [0, 1]; clamped", ratio)
        return min(max(ratio, 0.0), 1.0)
    return ratio


def _semantic_weight(query: str, lexical: list[ScoredChunk], cap: float) -> tuple[float, str | None]:
    if cap == 0.0:
        return 0.0, SKIP_RATIO_ZERO
    if not lexical:
        # Nothing lexical to trust: semantic is the only chance of an answer.
        return cap, None
    if lexical[0].exact_name_match:
        return 0.0, SKIP_SHORT_CIRCUIT
    code_shaped = looks_like_identifier(query)
    if code_shaped and _dominates(lexical):
        return 0.0, SKIP_SHORT_CIRCUIT
    if code_shaped:
        return cap * IDENTIFIER_SEMANTIC_SHARE, None
    return cap, None


def _dominates(lexical: list[ScoredChunk]) -> bool:
    if len(lexical) == 1:
        return True
    second = lexical[1].score
    return second <= 0.0 or lexical[0].score >= DOMINANCE_RATIO * second


def _fuse(lexical: list[ScoredChunk], semantic: list[ScoredChunk], ratio: float, fusion: str) -> list[HybridResult]:
    top_bm25 = max((h.score for h in lexical), default=0.0)
    lex_rank = {h.chunk.id: rank for rank, h in enumerate(lexical, start=1)}
    lex_norm = {h.chunk.id: (h.score / top_bm25 if top_bm25 > 0 else 0.0) for h in lexical}
    sem_rank = {h.chunk.id: rank for rank, h in enumerate(semantic, start=1)}
    sem_sim = {h.chunk.id: h.score for h in semantic}
    chunks = {h.chunk.id: h.chunk for h in semantic}
    chunks.update({h.chunk.id: h.chunk for h in lexical})

    results = []
    for chunk_id, chunk in chunks.items():
        lr = lex_rank.get(chunk_id, 0)
        sr = sem_rank.get(chunk_id, 0)
        if fusion == "rrf":
            raw = (1.0 - ratio) * (1.0 / (RRF_K + lr) if lr else 0.0) + ratio * (1.0 / (RRF_K + sr) if sr else 0.0)
            score = raw * (RRF_K + 1)
        else:
            score = (1.0 - ratio) * lex_norm.get(chunk_id, 0.0) + ratio * max(sem_sim.get(chunk_id, 0.0), 0.0)
        results.append(
            HybridResult(
                chunk=chunk,
                score=min(max(score, 0.0), 1.0),
                lexical_score=lex_norm.get(chunk_id, 0.0),
                vector_similarity=sem_sim.get(chunk_id, 0.0),
                provenance=HYBRID if lr and sr else (LEXICAL if lr else SEMANTIC),
                lexical_rank=lr,
                semantic_rank=sr,
            )
        )
    # Ties (common with RRF) go to the better lexical rank, then semantic rank, then id, so
    # identical inputs always give identical output.
    results.sort(
        key=lambda r: (
            -r.score,
            r.lexical_rank or 1 << 30,
            r.semantic_rank or 1 << 30,
            r.chunk.id,
        )
    )
    return results
