"""Ranking policy: how channel features become one ordered list. The only home of fusion
weights, boosts and penalties; the store returns raw features (BM25, cosine, lookups) and
never folds policy into them.

Two steps:
1. **Fusion** of the channels: `(1 - r) * lexical + r * semantic`, where lexical is BM25
   divided by the query's best BM25 (raw BM25 is not comparable across queries) and semantic
   is the cosine similarity min-max scaled over the query's vector candidates (raw cosines of
   small models crowd into a narrow band, which would make `r` mean less than it says). Each
   vector channel (the primary model's vectors, the static model's for chunks the primary has
   not embedded yet) is scaled within itself: two models' cosines live on different scales,
   so they only meet once each is in [0, 1].
   `r` is the semantic ratio the caller settled on (`semantic_weight`).
2. **Signals** (RANKING_MODE_FULL), each a plain, explainable prior, kept on only where the
   dev split of bench/quality says it helps (bench/README.md, "Ranking ablation"):
   - `definition`: the chunk *is* the symbol a symbol-shaped query names (its name or
     qualified name equals an identifier typed) — the answer to "where is X", not a caller;
   - `name_words`: the query's words spell the chunk's name (`merge map` → `mergeMap`): the
     product of the shares of query words in the name and of name words in the query, so the
     exact name beats a longer one that merely contains it;
   - `path`: the chunk is top-level code of the file the query names (`operators/map.ts`);
   - `phrase`: the chunk's own code contains the query's message or quoted text verbatim;
   - penalties for where answers rarely are: tests (unless the query is about tests),
     examples/docs/scripts/benchmarks, compat shims, vendored/bundled code, `.d.ts`;
   - `tiny`: one- or two-line constants, types and fields, which win BM25 on length
     normalisation alone ("right file, wrong symbol");
   - `module_top_level`: a file's `<module top level>` chunk (imports, exports, wiring) shares
     words with many questions; it is the answer when the file itself is asked for (`path`).
   Measured and off by default (weight 0 / factor 1), kept as knobs for other corpora and
   models: `definition` for identifiers mentioned inside a sentence, `file_words` (the file's
   name shares words with the query) and `file_coherence` (a file with several good candidates
   lifts its best chunk).
3. **File diversity** (`saturation`), last, on the final order (the learned model's when one
   ranks): later chunks of one file count less, so that one large file's members do not fill
   the head of the list when a question needs several files.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import PurePosixPath
from typing import NamedTuple, Protocol

from codecompass.common.chunks import Chunk, NodeKind
from codecompass.common.identifiers import identifier_parts
from codecompass.common.records import evolve
from codecompass.common.testcode import is_test_path
from codecompass.policy import shape as q
from codecompass.policy.shape import QueryShape

LEXICAL = "lexical"
SEMANTIC = "semantic"
HYBRID = "hybrid"
STRUCTURE = "structure"  # a hub: found through references, not by matching the query
# Vector channels: which vectors a semantic candidate was found by.
PRIMARY_VECTORS = "primary"  # the index's embedding model (background-filled)
STATIC_VECTORS = "static"  # the static model's, written with the chunk
# Where a result's file came from, in a checkout's index that started from a base.
ORIGIN_BASE = "base"  # as at the base's commit
ORIGIN_CHECKOUT = "checkout"  # added or changed in this checkout

SKIP_SHORT_CIRCUIT = "lexical_short_circuit"
SKIP_RATIO_ZERO = "semantic_ratio_zero"
SKIP_INTENT = "intent_not_natural_language"

# Path components whose code is rarely the answer to a question about the product itself.
_EXAMPLE_DIR = re.compile(
    r"(?:^|/)(?:_?examples?|demos?|samples?|docs?|documentation|scripts?|benchmarks?|bench|perf|playground|storybook|stories)(?:/|$)"
)
_COMPAT_DIR = re.compile(r"(?:^|/)(?:compat|_compat|legacy|deprecated|polyfills?|shims?)(?:/|$)")
_VENDOR = re.compile(r"(?:^|/)(?:vendor|vendored|third[_-]party|dist|build|out|bundles?|umd|esm5|cjs)(?:/|$)"
                     r"|\.min\.[cm]?js$")
_DECLARATION = re.compile(r"\.d\.[cm]?ts$")
KIND_WORDS = frozenset({
    "function", "method", "class", "interface", "type", "enum", "component", "variable", "constant", "const",
    "namespace", "constructor", "accessor", "getter", "setter", "hook", "operator", "property", "field",
})
_SMALL_KINDS = frozenset({NodeKind.VARIABLE, NodeKind.TYPE, NodeKind.ACCESSOR, NodeKind.ENUM})


@dataclass(frozen=True)
class RankingPolicy:
    """Weights of the ranking policy. Additive boosts are fractions of the query's best fused
    score, so they mean the same whatever the score scale of a query."""

    full: bool = True
    semantic_minmax: bool = True
    definition: float = 1.0
    definition_embedded: float = 0.0
    name_words: float = 0.8
    path: float = 1.5
    phrase: float = 0.6
    file_words: float = 0.0
    file_coherence: float = 0.0
    # Test code under a question about the implementation. Splitting the two directions (bench/README.md,
    # 'Test code in the ranked list'): a strong demotion of tests lifts nl/jsdoc, while the same value on the
    # implementation costs identifier queries whose words only look like test words ('mock', 'spec').
    test_penalty: float = 0.2
    # The implementation under a question about tests.
    not_test_penalty: float = 0.5
    example_penalty: float = 0.5
    compat_penalty: float = 0.5
    vendor_penalty: float = 0.4
    declaration_penalty: float = 0.7
    tiny_penalty: float = 0.7
    module_penalty: float = 0.7
    # File diversity: a file's n-th result is scaled by saturation**(n-1) on the final order. Chosen
    # on dev by models/ranker/train.py (best mean of MRR@10 and file nDCG@10 over 1.0..0.3, kept
    # unless another decay beats it by more than a rebuild's noise): 0.4 lifted concept questions'
    # file nDCG@10 on test 0.428 -> 0.479 for 0.512 -> 0.516 MRR@10 overall.
    saturation: float = 0.4
    # Semantic ratio, as a share of the cap, per intent.
    symbol_share: float = 0.5
    error_share: float = 0.5
    path_share: float = 0.0


DEFAULT_POLICY = RankingPolicy()
FUSION_ONLY = RankingPolicy(full=False)


@dataclass(frozen=True)
class Candidate:
    """Raw features of one chunk from the channels; 0 / False where a channel did not find it."""

    chunk: Chunk
    bm25: float = 0.0
    lexical_rank: int = 0
    cosine: float = 0.0
    semantic_rank: int = 0  # 1-based, within `vector_channel`
    name_match: bool = False
    path_match: bool = False
    vector_channel: str = PRIMARY_VECTORS  # whose vectors gave `cosine` (when semantic_rank)
    # Each model's cosine for every candidate, whichever channel found it (None: the chunk has no
    # such vector yet, or the query none): features of the learned ranker.
    primary_cosine: float | None = None
    static_cosine: float | None = None
    # Chunks in the whole index that reference this one.
    in_degree: int = 0


@dataclass(frozen=True)
class RankedResult:
    chunk: Chunk
    score: float  # final, in [0, 1]
    lexical_score: float  # BM25 over the query's best BM25, in [0, 1]; 0 when not found lexically
    vector_similarity: float  # cosine in [-1, 1]; 0 when not found semantically
    provenance: str  # "lexical" | "semantic" | "hybrid"
    lexical_rank: int  # 1-based; 0 when absent
    semantic_rank: int  # 1-based; 0 when absent
    fusion_score: float = 0.0  # channel fusion alone, in [0, 1]
    signals: dict[str, float] = field(default_factory=dict)  # signal -> factor it applied
    vector_channel: str = ""  # PRIMARY_VECTORS | STATIC_VECTORS; "" when not found semantically
    # In a checkout's index that started from a base: ORIGIN_BASE or ORIGIN_CHECKOUT (where its file
    # came from; not a ranking signal); "" in an index without a base.
    origin: str = ""
    # The workspace id of the index it came from (not a ranking signal): what tells results apart
    # when one search covers several workspaces.
    workspace_id: str = ""


def semantic_weight(
    shape: QueryShape,
    cap: float,
    *,
    has_definition: bool,
    has_lexical: bool = True,
    policy: RankingPolicy = DEFAULT_POLICY,
) -> tuple[float, str | None]:
    """The semantic ratio to use, at most `cap`, and why it is lower when it is.

    A cap of 1.0 asks for the vector channel alone and is honoured as such. Otherwise the
    intent decides: a symbol the index defines or a file path is answered lexically (vectors
    can only push noise above a known answer); other symbol and error queries lean lexical;
    natural language gets the full cap.
    """
    if cap <= 0.0:
        return 0.0, SKIP_RATIO_ZERO
    if cap >= 1.0:
        return 1.0, None
    if not has_lexical and not has_definition:
        # Nothing lexical to trust: the vector channel is the only chance of an answer.
        return cap, None
    if shape.intent == q.SYMBOL:
        if has_definition:
            return 0.0, SKIP_SHORT_CIRCUIT
        return cap * policy.symbol_share, None
    if shape.intent == q.PATH:
        share = policy.path_share
        return (cap * share, None) if share > 0 else (0.0, SKIP_INTENT)
    if shape.intent == q.ERROR:
        return cap * policy.error_share, None
    return cap, None


class Reranker(Protocol):
    """A model that reorders the hand-set stack's full list (`learned.LearnedRanker`)."""

    def rerank(self, shape: QueryShape, results: list[RankedResult], candidates: dict[str, Candidate],
               limit: int) -> list[RankedResult]: ...


def rank(
    shape: QueryShape,
    candidates: Iterable[Candidate],
    *,
    ratio: float,
    limit: int,
    policy: RankingPolicy = DEFAULT_POLICY,
    model: Reranker | None = None,
) -> list[RankedResult]:
    """Candidates ordered best first, at most `limit`. With a `model` (RANKING_MODE_FULL only)
    the hand-set order and its signals become the model's features and the model decides."""
    merged = _merge(candidates)
    if not merged or limit <= 0:
        return []
    fused = _fuse(merged, ratio, policy)
    if policy.full:
        fused = _apply_signals(shape, fused, policy)
    fused.sort(key=_order)
    diversify = policy.full and policy.saturation < 1.0
    if policy.full and model is not None:
        # Diversity reorders the model's whole list, so it needs all of it, not only the head.
        fused = model.rerank(shape, fused, merged, len(fused) if diversify else limit)
    if diversify:
        fused = _saturate(fused, policy.saturation)
    return fused[:limit]


# A result left out by the limit is still a strong one when it scores at least this share of the
# best: the answer is then incomplete (seed 003's `result_completeness: truncated`), not merely short.
TRUNCATED_SHARE = 0.5


def is_truncated(results: Sequence[RankedResult], cut: Sequence[RankedResult]) -> bool:
    """Whether the limit cut a result that scored within TRUNCATED_SHARE of the best one kept."""
    return bool(cut and results and cut[0].score >= TRUNCATED_SHARE * results[0].score)


def _order(r: RankedResult) -> tuple:
    # Ties go to the better lexical rank, then semantic rank, then id: identical inputs always
    # give identical output.
    return (-r.score, r.lexical_rank or 1 << 30, r.semantic_rank or 1 << 30, r.chunk.id)


def _merge(candidates: Iterable[Candidate]) -> dict[str, Candidate]:
    merged: dict[str, Candidate] = {}
    for c in candidates:
        seen = merged.get(c.chunk.id)
        if seen is None:
            merged[c.chunk.id] = c
            continue
        merged[c.chunk.id] = evolve(
            seen,
            bm25=max(seen.bm25, c.bm25),
            lexical_rank=seen.lexical_rank or c.lexical_rank,
            cosine=seen.cosine if seen.semantic_rank else c.cosine,
            semantic_rank=seen.semantic_rank or c.semantic_rank,
            vector_channel=seen.vector_channel if seen.semantic_rank else c.vector_channel,
            name_match=seen.name_match or c.name_match,
            path_match=seen.path_match or c.path_match,
            primary_cosine=seen.primary_cosine if seen.primary_cosine is not None else c.primary_cosine,
            static_cosine=seen.static_cosine if seen.static_cosine is not None else c.static_cosine,
            in_degree=max(seen.in_degree, c.in_degree),
        )
    return merged


def _fuse(merged: dict[str, Candidate], ratio: float, policy: RankingPolicy) -> list[RankedResult]:
    top_bm25 = max((c.bm25 for c in merged.values()), default=0.0)
    # (lowest, highest) cosine per vector channel: each channel is scaled within itself.
    bounds: dict[str, tuple[float, float]] = {}
    for c in merged.values():
        if c.semantic_rank:
            lo, hi = bounds.get(c.vector_channel, (c.cosine, c.cosine))
            bounds[c.vector_channel] = (min(lo, c.cosine), max(hi, c.cosine))
    out = []
    for c in merged.values():
        lexical = c.bm25 / top_bm25 if top_bm25 > 0 else 0.0
        if not c.semantic_rank:
            semantic = 0.0
        elif policy.semantic_minmax:
            lo, hi = bounds[c.vector_channel]
            semantic = (c.cosine - lo) / (hi - lo) if hi - lo > 1e-9 else 1.0
        else:
            semantic = max(c.cosine, 0.0)
        fused = clamp((1.0 - ratio) * lexical + ratio * semantic)
        lr, sr = c.lexical_rank, c.semantic_rank
        out.append(
            RankedResult(
                chunk=c.chunk,
                score=fused,
                lexical_score=lexical,
                vector_similarity=c.cosine if sr else 0.0,
                provenance=HYBRID if lr and sr else (SEMANTIC if sr else LEXICAL),
                lexical_rank=lr,
                semantic_rank=sr,
                fusion_score=fused,
                signals={"_name": 1.0} if c.name_match else ({"_path": 1.0} if c.path_match else {}),
                vector_channel=c.vector_channel if sr else "",
            )
        )
    return out


def _apply_signals(shape: QueryShape, fused: list[RankedResult], policy: RankingPolicy) -> list[RankedResult]:
    top = max((r.score for r in fused), default=0.0) or 1.0
    identifiers = {i.lower() for i in shape.identifiers}
    exact_names = set(shape.identifiers)
    # Identifiers inside a sentence may be mentions ("no WebSocket constructor"): only a
    # case-exact name counts there, so `webSocket` the function is not taken for `WebSocket`.
    embedded = shape.intent != q.SYMBOL
    phrase = _phrase_of(shape)
    # The phrase's longest word: a chunk whose code lacks it cannot hold the phrase (a word has no
    # spaces, so it lies within one run of the normalised code), and most chunks lack it: the test
    # is then one lowercasing instead of a normalisation of the whole code per candidate.
    probe = max(phrase.split(), key=len) if phrase else ""
    words = [w for w in shape.words if len(w) >= 3] if shape.intent in (q.NATURAL_LANGUAGE, q.ERROR) else []
    path = shape.path.lower()
    # Kind words ("function", "class") describe the symbol rather than name it.
    query_words = [w for w in shape.name_parts if w not in KIND_WORDS]

    scored: list[tuple[RankedResult, float, dict[str, float]]] = []
    for r in fused:
        chunk = r.chunk
        score = r.score
        signals: dict[str, float] = {}
        add = 0.0
        defines = _defines(chunk, identifiers, exact_names if embedded else None)
        if defines:
            weight = policy.definition_embedded if embedded else policy.definition
            if chunk.name in shape.identifiers or chunk.qualified_name in shape.identifiers:
                # Case-exact: `Token` (the class) before `token` (a variable) when `Token` was typed.
                weight += 0.05
            add += weight * top
            signals["definition"] = weight
        if not defines and policy.name_words > 0 and query_words:
            share = _name_word_share(query_words, chunk.name)
            if share > 0:
                add += policy.name_words * share * top
                signals["name_words"] = round(policy.name_words * share, 4)
        if path and _path_matches(chunk.relative_path.lower(), path):
            weight = policy.path if chunk.depth == 0 else policy.path / 2
            add += weight * top
            signals["path"] = weight
        if phrase and probe in (code := chunk.collapsed_source.lower()) and _phrase_pattern(phrase).search(code):
            add += policy.phrase * top
            signals["phrase"] = policy.phrase
        if words and policy.file_words > 0:
            share = _file_word_share(words, chunk.relative_path)
            if share > 0:
                add += policy.file_words * share * top
                signals["file_words"] = round(policy.file_words * share, 4)
        factor = _path_penalty(chunk, shape, policy)
        for name, value in factor.items():
            signals[name] = value
        multiplier = math.prod(factor.values()) if factor else 1.0
        if not defines and chunk.end_line - chunk.start_line < 2 and chunk.node_kind in _SMALL_KINDS:
            multiplier *= policy.tiny_penalty
            signals["tiny"] = policy.tiny_penalty
        if chunk.node_kind is NodeKind.MODULE and not path and policy.module_penalty != 1.0:
            # A file's top-level code (imports, exports, wiring) matches many words of many
            # questions; it is the answer when the file itself is asked for.
            multiplier *= policy.module_penalty
            signals["module_top_level"] = policy.module_penalty
        scored.append((r, (score + add) * multiplier, signals))

    if policy.file_coherence > 0:
        scored = _file_coherence(scored, policy.file_coherence)

    # Boosts can lift scores past 1; dividing by the best keeps them in [0, 1] and in order.
    scale = max(max((s for _, s, _ in scored), default=0.0), 1.0)
    return [evolve(r, score=clamp(score / scale), signals={**r.signals, **signals}) for r, score, signals in scored]


def _file_coherence(
    scored: list[tuple[RankedResult, float, dict[str, float]]], weight: float
) -> list[tuple[RankedResult, float, dict[str, float]]]:
    file_sum: dict[str, float] = defaultdict(float)
    best_in_file: dict[str, int] = {}
    for i, (r, score, _) in enumerate(scored):
        path = r.chunk.relative_path
        file_sum[path] += score
        if path not in best_in_file or score > scored[best_in_file[path]][1]:
            best_in_file[path] = i
    top = max((s for _, s, _ in scored), default=0.0)
    max_sum = max(file_sum.values(), default=0.0)
    if top <= 0 or max_sum <= 0:
        return scored
    out = list(scored)
    for path, i in best_in_file.items():
        r, score, signals = out[i]
        bonus = weight * top * file_sum[path] / max_sum
        out[i] = (r, score + bonus, {**signals, "file_coherence": round(bonus / top, 4)})
    return out


def _saturate(ranked: list[RankedResult], decay: float) -> list[RankedResult]:
    """File diversity on the final order (the model's, else the hand-set stack's), then re-sorted,
    so one file's members do not crowd out the other files a question needs."""
    factors = saturation_factors([r.chunk.relative_path for r in ranked], decay)
    out = [r if factor == 1.0 else evolve(r, score=r.score * factor,
                                          signals={**r.signals, "saturation": round(factor, 4)})
           for r, factor in zip(ranked, factors, strict=True)]
    out.sort(key=_order)
    return out


def saturation_factors(files: Sequence[str], decay: float) -> list[float]:
    """What each result's score is multiplied by, in the order given: `decay` per result of its
    file already met (the models' training report replays it over its dumped candidates)."""
    seen: dict[str, int] = defaultdict(int)
    out = []
    for path in files:
        out.append(decay ** seen[path])
        seen[path] += 1
    return out


def _defines(chunk: Chunk, identifiers: set[str], exact: set[str] | None = None) -> bool:
    if exact is not None:
        return chunk.name in exact or chunk.qualified_name in exact
    if not identifiers:
        return False
    return chunk.name.lower() in identifiers or chunk.qualified_name.lower() in identifiers


def _name_word_share(query_words: list[str], name: str) -> float:
    parts = _name_parts(name)
    if len(parts) < 2 or not query_words:
        # A one-word name is BM25's job; the signal is for names a query spells in pieces.
        return 0.0
    in_name = sum(1 for w in query_words if w in parts)
    if in_name < 2:
        return 0.0
    in_query = sum(1 for p in parts if p in query_words)
    return (in_name / len(query_words)) * (in_query / len(parts))


def _path_matches(relative_path: str, path: str) -> bool:
    """`path` names this file: equal, or a suffix starting at a folder boundary."""
    return relative_path == path or relative_path.endswith("/" + path)


def _phrase_of(shape: QueryShape) -> str:
    """Text to find verbatim in a chunk's own code: the quoted part, else the whole query when it
    has three or more words. Whatever the intent: a message pasted from a log often reads like
    a sentence ("no WebSocket constructor can be found"), and a sentence that is not in the
    code simply never matches."""
    if shape.phrase:
        phrase = _normalise(shape.phrase)
    elif len(shape.text.split()) >= 3:
        phrase = _normalise(shape.text)
    else:
        return ""
    # Too short to be distinctive in code.
    return phrase if len(phrase) >= 12 else ""


def _normalise(text: str) -> str:
    return " ".join(text.lower().split()).strip(" .:;,!")


@lru_cache(maxsize=256)
def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    """`phrase` (normalised) found in lowercased code as `_normalise` would find it there, with
    any run of whitespace between its words, without normalising each candidate's whole code
    (60 candidates of 1.5 kB that hold its longest word: 0.14 ms instead of 1.15)."""
    return re.compile(r"\s+".join(re.escape(word) for word in phrase.split(" ")))


# Per name and per path, not per query: a search weighs ~180 candidates of a workspace's few
# thousand files, and these were a tenth of its ranking time.
@lru_cache(maxsize=1 << 16)
def _name_parts(name: str) -> tuple[str, ...]:
    return tuple(p for p in identifier_parts(name) if p)


@lru_cache(maxsize=1 << 16)
def _path_words(relative_path: str) -> frozenset[str]:
    """The words of a file's name (without extensions) and of its folder's, of 3 letters or more."""
    p = PurePosixPath(relative_path)
    parts = set(identifier_parts(p.name.split(".", 1)[0]))
    if p.parent.name:
        parts.update(identifier_parts(p.parent.name))
    return frozenset(x for x in parts if len(x) >= 3)


class _PathKinds(NamedTuple):
    test: bool
    example: bool
    compat: bool
    vendored: bool
    declaration: bool


@lru_cache(maxsize=1 << 16)
def _path_kinds(relative_path: str) -> _PathKinds:
    return _PathKinds(is_test_path(relative_path), example_path(relative_path), bool(_COMPAT_DIR.search(relative_path)),
                      vendored_path(relative_path), declaration_path(relative_path))


def _file_word_share(words: list[str], relative_path: str) -> float:
    parts = _path_words(relative_path)
    if not parts:
        return 0.0
    matched = 0
    for word in words:
        if word in parts or any(_prefix_match(word, part) for part in parts):
            matched += 1
    return matched / len(words)


def _prefix_match(a: str, b: str) -> bool:
    shorter, longer = (a, b) if len(a) <= len(b) else (b, a)
    return len(shorter) >= 4 and longer.startswith(shorter)


def example_path(relative_path: str) -> bool:
    """Examples, docs, scripts, benchmarks: code that shows or drives the product."""
    return bool(_EXAMPLE_DIR.search(relative_path))


def vendored_path(relative_path: str) -> bool:
    """Vendored, built or bundled code."""
    return bool(_VENDOR.search(relative_path))


def declaration_path(relative_path: str) -> bool:
    """A TypeScript declaration file (`.d.ts`): the types of code that lives elsewhere."""
    return bool(_DECLARATION.search(relative_path))


def _path_penalty(chunk: Chunk, shape: QueryShape, policy: RankingPolicy) -> dict[str, float]:
    kinds = _path_kinds(chunk.relative_path)
    out: dict[str, float] = {}
    is_test = chunk.is_test or kinds.test
    if is_test != shape.mentions_tests:
        # A question about tests wants tests; any other question wants the implementation.
        if is_test:
            out["test_file"] = policy.test_penalty
        else:
            out["not_test_file"] = policy.not_test_penalty
    if kinds.example:
        out["example_or_script"] = policy.example_penalty
    if kinds.compat:
        out["compat"] = policy.compat_penalty
    if kinds.vendored:
        out["vendored_or_built"] = policy.vendor_penalty
    if kinds.declaration:
        out["declaration_file"] = policy.declaration_penalty
    return {k: v for k, v in out.items() if v != 1.0}


def clamp(x: float) -> float:
    return min(max(x, 0.0), 1.0)


# --- Hubs: symbols that connect several of the best results --------------------------------
#
# The blueprint's structure stage. Edges are the references the type checker resolved at
# index time (calls, type references, imports), across the whole workspace: seed -> hub is a
# callee or a type the seed uses, hub -> seed a caller. A symbol connected to at least
# `min_connections` seeds is a hub. Its score is the score mass of the seeds it connects over
# that of the best `reference` seeds, times the best seed's score and `weight` (capped): a hub
# of the three best results ranks just under the best match, a hub of two weak ones stays
# low. At most `max_hubs` enter.


@dataclass(frozen=True)
class HubPolicy:
    seeds: int = 15
    min_connections: int = 2
    max_hubs: int = 3
    reference: int = 3
    weight: float = 0.9


DEFAULT_HUB_POLICY = HubPolicy()


def hub_eligible(chunk: Chunk) -> bool:
    """Tests and a file's top-level wiring connect to everything and explain nothing."""
    return not (chunk.is_test or is_test_path(chunk.relative_path) or chunk.node_kind is NodeKind.MODULE)


@dataclass(frozen=True)
class HubScore:
    chunk_id: str
    score: float
    connected: tuple[str, ...]  # seed ids, best seed first
    outgoing: int  # seeds that reference the hub
    incoming: int  # seeds the hub references


def hub_scores(
    seeds: list[tuple[str, float]],
    outgoing: dict[str, list[str]],
    incoming: dict[str, list[str]],
    policy: HubPolicy = DEFAULT_HUB_POLICY,
) -> list[HubScore]:
    """Hubs among the neighbours of `seeds` ([(id, score)], best first).

    `outgoing[seed]` lists the chunks the seed references; `incoming[seed]` the chunks that
    reference the seed. Seeds are never hubs of themselves."""
    seeds = seeds[: policy.seeds]
    seed_ids = {sid for sid, _ in seeds}
    reference = sum(sorted((max(score, 0.0) for _, score in seeds), reverse=True)[: policy.reference])
    best = max((score for _, score in seeds), default=0.0)
    if reference <= 0.0:
        return []
    links: dict[str, dict[str, str]] = defaultdict(dict)  # hub -> seed -> direction
    for sid, _ in seeds:
        for target in outgoing.get(sid, ()):
            if target not in seed_ids:
                links[target].setdefault(sid, "out")
        for source in incoming.get(sid, ()):
            if source not in seed_ids:
                links[source].setdefault(sid, "in")
    score_of = dict(seeds)
    order = {sid: i for i, (sid, _) in enumerate(seeds)}
    hubs = []
    for hub, by_seed in links.items():
        if len(by_seed) < policy.min_connections:
            continue
        mass = sum(max(score_of[s], 0.0) for s in by_seed)
        connected = tuple(sorted(by_seed, key=order.__getitem__))
        hubs.append(HubScore(
            chunk_id=hub,
            score=clamp(policy.weight * best * min(1.0, mass / reference)),
            connected=connected,
            outgoing=sum(1 for d in by_seed.values() if d == "out"),
            incoming=sum(1 for d in by_seed.values() if d == "in"),
        ))
    hubs.sort(key=lambda h: (-h.score, -len(h.connected), h.chunk_id))
    return hubs[: policy.max_hubs]
