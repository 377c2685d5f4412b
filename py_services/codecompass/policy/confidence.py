"""Confidence policy: how sure the search is that an answer is among its results, the names a
query typed that the index lacks, and the composite confidence an agent reads."""

from __future__ import annotations

import difflib
import heapq
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

from codecompass.common.chunks import Chunk
from codecompass.common.identifiers import TOKEN, identifier_parts
from codecompass.policy import shape as q
from codecompass.policy.ranking import KIND_WORDS, SEMANTIC, STRUCTURE, RankedResult, clamp
from codecompass.policy.shape import QueryShape

# --- Confidence: is the answer in the results at all? -------------------------------------
#
# A query that matches nothing still has a best result, so confidence is judged from absolute
# evidence: how many of the query's words the best results contain, whether a name, path or quoted
# phrase matched exactly, the raw cosine of the best semantic hit, and the learned ranker's own
# probability for its first result and its lead over the second. A logistic model turns that into
# P(the first result is a right answer): a wrong first result is the failure an agent pays for,
# whether the question has an answer elsewhere in the list or none at all. models/ranker/calibrate.py
# fits it on the corpus's train repositories, ranked by the learned ranker (their queries, whose
# first result is right or wrong, and exact names; as queries with no answer: the same queries
# asked of another repository, real names with a letter changed, and text about nothing, weighted
# as one query in ten), and measures it on the benchmark's test split.

CONFIDENCE_TOP = 5
# Answerability looks this deep: P(a right answer is among the first ANSWERABLE_DEPTH results).
ANSWERABLE_DEPTH = 10
# The features the model weighs. Query length, intent and "found lexically at all" were tried
# and left out: leave-one-repository-out on the dev split calibrated worse with them.
CONFIDENCE_FEATURES = ("coverage", "cosine", "definition", "exact_name", "name_words", "path", "phrase", "top_score",
                       "margin")
_CONFIDENCE_TEXT_CHARS = 4000


@dataclass(frozen=True)
class Calibration:
    bias: float
    weights: tuple[tuple[str, float], ...]


# Fitted by models/ranker/calibrate.py on the held-out train repositories, the ones no embedding
# model learned from (their cosines are the product's, not a memorised training question's;
# bench/results/calibration-latest.json: expected calibration error 0.050 on train, 0.035 on the
# test split). `exact_name` carries a name lookup answered by its definition; `definition` alone (a
# name mentioned in any question, also about code elsewhere) adds nothing once it does.
DEFAULT_CALIBRATION = Calibration(bias=-3.248, weights=(
    ("coverage", 1.53), ("cosine", 1.086), ("definition", -0.259), ("exact_name", 2.261), ("name_words", 0.988),
    ("path", 1.61), ("phrase", 0.706), ("top_score", 0.654), ("margin", 2.579),
))


# The same evidence fitted for another question (models/ranker/calibrate.py, same examples): is a
# right answer among the first ANSWERABLE_DEPTH results at all? Confidence asks about the first
# result only, so a question whose answer ranks fourth is "low" for it (65% of the answerable test
# questions are below 0.5), while answerability tells that question from one with no answer here
# (test split: 78% of questions asked of the wrong repository below 0.5, against 18% of those with
# an answer in their first ten). It decides how much of the ranking an unsure answer gives.
DEFAULT_ANSWERABILITY = Calibration(bias=-2.723, weights=(
    ("coverage", 1.493), ("cosine", 2.144), ("definition", 0.139), ("exact_name", 1.365), ("name_words", 0.771),
    ("path", 1.002), ("phrase", 0.655), ("top_score", 1.913), ("margin", 1.288),
))


def confidence_features(shape: QueryShape, results: list[RankedResult], exact_missing: bool = False
                        ) -> dict[str, float]:
    """The evidence confidence is judged from, each in [0, 1]. `exact_missing`: every exact
    identifier the query typed is missing from the index (see `missing_names`)."""
    terms = [t for t in dict.fromkeys(shape.words or shape.name_parts) if len(t) >= 3 and t not in KIND_WORDS]
    top = results[:CONFIDENCE_TOP]
    coverage = max((_coverage(terms, r.chunk) for r in top), default=0.0) if terms else 0.0
    signals = [r.signals for r in top]
    return {
        "coverage": coverage,
        "cosine": max((r.vector_similarity for r in top if r.semantic_rank), default=0.0),
        "lexical": 1.0 if any(r.lexical_rank for r in top) else 0.0,
        "definition": 1.0 if any("definition" in s or "_name" in s for s in signals) else 0.0,
        # A name lookup answered by its definition: the first result is the symbol the query typed.
        # Apart from `definition`, which a name mentioned in a question about other code also sets.
        "exact_name": 1.0 if shape.intent == q.SYMBOL and top and "definition" in top[0].signals else 0.0,
        "name_words": min(1.0, max((s.get("name_words", 0.0) for s in signals), default=0.0)),
        "path": 1.0 if any("path" in s or "_path" in s for s in signals) else 0.0,
        "phrase": 1.0 if any("phrase" in s for s in signals) else 0.0,
        # The learned ranker's P(relevant) of its first result and its lead over the second (with
        # the hand-set stack, scores relative to the best: the first is always 1).
        "top_score": clamp(top[0].score) if top else 0.0,
        "margin": score_margin([r.score for r in top]),
        "missing_name": 1.0 if exact_missing else 0.0,
    }


def answerability(features: dict[str, float]) -> float:
    """P(a right answer is among the first ANSWERABLE_DEPTH results), by the same rules as
    `confidence`: nothing matched is 0, a missing exact name caps it."""
    return confidence(features, DEFAULT_ANSWERABILITY)


def confidence(features: dict[str, float], calibration: Calibration = DEFAULT_CALIBRATION) -> float:
    if not features.get("lexical") and not features.get("cosine") and not features.get("definition") \
            and not features.get("path"):
        return 0.0  # nothing matched in any channel
    z = calibration.bias + sum(w * features.get(name, 0.0) for name, w in calibration.weights)
    calibrated = 1.0 / (1.0 + math.exp(-max(min(z, 40.0), -40.0)))
    if features.get("missing_name"):
        # A rule, not a weight: the calibration set has few misspelt names, and an agent that
        # typed an exact name must never be told with confidence that something else is it.
        return min(calibrated, MISSING_NAME_CONFIDENCE)
    return calibrated


# --- Names the query typed that the index does not have ------------------------------------
#
# `validateTokenz` finds `validateToken` by its parts and ranks it first with a fused score of
# 1.0, which reads as "found". When the query is an exact identifier (symbol intent, code-shaped:
# camelCase, snake_case, dotted, `f()`) and no chunk has that name, the answer is a guess: its
# confidence is capped below every gate, and the closest names in the index are offered instead.
# Plain words (`retry`, `logger`) are concepts, not names, and keep their confidence.

MISSING_NAME_CONFIDENCE = 0.2
NEAREST_NAMES = 5
# difflib's similarity below which a name is not offered as "did you mean".
_NEAREST_CUTOFF = 0.6


def exact_identifiers(shape: QueryShape) -> tuple[str, ...]:
    """The identifiers a symbol query typed as exact code names."""
    if shape.intent != q.SYMBOL:
        return ()
    return tuple(i for i in shape.identifiers if q.is_code_shaped(i))


def missing_names(identifiers: Iterable[str], named: Iterable[Chunk]) -> tuple[str, ...]:
    """The identifiers no chunk of `named` (the exact-name lookup's hits) is called, ignoring case."""
    found = {n.lower() for c in named for n in (c.name, c.qualified_name)}
    return tuple(i for i in identifiers if i.lower() not in found)


def nearest_names(missing: Iterable[str], names: Iterable[str], qualified: Iterable[str],
                  limit: int = NEAREST_NAMES) -> tuple[str, ...]:
    """Names of the index closest to each missing identifier (qualified names for a dotted
    one), best first, at most `limit` in all: difflib's `get_close_matches` over them."""
    out: list[str] = []
    for wanted in missing:
        # frozenset() of a frozenset (a version's names) is that set: its cached vocabulary.
        pool = _vocabulary(frozenset(qualified if any(sep in wanted for sep in (".", "#", "::")) else names))
        key = wanted.lower().replace("#", ".").replace("::", ".")
        for match in pool.close_matches(key, limit, _NEAREST_CUTOFF):
            if pool.original[match] not in out:
                out.append(pool.original[match])
    return tuple(out[:limit])


class _Vocabulary:
    """An index's names as difflib's `get_close_matches` compares them, with each name's
    character counts, so that the names whose `quick_ratio` (the characters two strings share,
    as a share of their lengths) reaches the cutoff are found for all names at once; only those
    are compared one by one, most alike first. Same matches as `get_close_matches`, which
    screens by that ratio name by name: over ws-300k's 24k names and qualified names, 63 ms a
    mistyped name on average, now 6.7 (154 typos, the vocabulary's one build included)."""

    def __init__(self, names: Iterable[str]) -> None:
        import numpy as np  # here: the gateway imports this module and never needs numpy

        self.original = {n.lower(): n for n in sorted(names)}
        self.keys = list(self.original)
        lengths = np.array([len(k) for k in self.keys], dtype=np.int64)
        # Each character of every key, as a column of its character, then counted per key.
        points = np.frombuffer("".join(self.keys).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
        alphabet, columns = np.unique(points, return_inverse=True)
        self.columns = {chr(int(c)): i for i, c in enumerate(alphabet)}
        self.counts = np.zeros((len(self.keys), len(alphabet)), dtype=np.int32)
        np.add.at(self.counts, (np.repeat(np.arange(len(self.keys)), lengths), columns), 1)
        self.lengths = lengths

    def close_matches(self, word: str, n: int, cutoff: float) -> list[str]:
        import numpy as np

        if not self.keys:
            return []
        wanted = np.zeros(self.counts.shape[1], dtype=np.int32)
        for char in word:
            if (column := self.columns.get(char)) is not None:
                wanted[column] += 1
        shared = np.minimum(self.counts, wanted).sum(axis=1)
        total = self.lengths + len(word)
        quick = np.where(total > 0, 2.0 * shared / np.maximum(total, 1), 1.0)
        matcher = difflib.SequenceMatcher()
        matcher.set_seq2(word)
        best: list[tuple[float, str]] = []  # the n best (ratio, key) so far, a min-heap
        passing = np.flatnonzero(quick >= cutoff)
        # Most alike by characters first: a name's ratio never exceeds its quick ratio, so once
        # that falls below the n-th best ratio no later name can enter (a tie still could).
        for i in passing[np.argsort(-quick[passing], kind="stable")]:
            if len(best) == n and quick[i] < best[0][0]:
                break
            matcher.set_seq1(self.keys[i])
            if (ratio := matcher.ratio()) >= cutoff:
                if len(best) < n:
                    heapq.heappush(best, (ratio, self.keys[i]))
                elif (ratio, self.keys[i]) > best[0]:
                    heapq.heapreplace(best, (ratio, self.keys[i]))
        return [key for _, key in sorted(best, reverse=True)]


@lru_cache(maxsize=4)
def _vocabulary(names: frozenset[str]) -> _Vocabulary:
    """One per table version's names (a frozenset hashes once): a version's mistyped names
    share it."""
    return _Vocabulary(names)


@lru_cache(maxsize=1 << 16)
def _word_and_parts(token: str) -> tuple[str, ...]:
    """A token as a word and its identifier parts: memoised, as code repeats its identifiers."""
    return (token.lower(), *identifier_parts(token))


def _coverage(terms: list[str], chunk: Chunk) -> float:
    """Share of `terms` that occur in the chunk (name, path, JSDoc, code) as a word or word
    part; a term of 6+ letters also matches a word sharing its first 5 (`inserted`/`insert`),
    a plural its singular."""
    text = " ".join((chunk.qualified_name, chunk.relative_path, chunk.jsdoc,
                     chunk.collapsed_source[:_CONFIDENCE_TEXT_CHARS]))
    words: set[str] = set()
    for token in TOKEN.findall(text):
        words.update(_word_and_parts(token))
    stems = {w[:5] for w in words if len(w) >= 5}
    hits = sum(1 for t in terms
               if t in words or (len(t) >= 6 and t[:5] in stems) or (t.endswith("s") and t[:-1] in words))
    return hits / len(terms)


# --- Composite confidence: how sure an answer is, as an agent reads it ----------------------
#
# Seed 004 FR-721: confidence combines the top score, the top-1/top-2 margin and whether the
# lexical and semantic channels agree. Scores are normalised per query (the best is near 1
# whatever matched), so on their own they cannot tell an answer from noise; the calibrated
# confidence above can. The composite therefore scales the calibrated probability by the
# support the score shape gives it: `calibrated * (1 - SUPPORT_WEIGHT + SUPPORT_WEIGHT * support)`,
# support being the mean of the signals that exist (agreement only when both channels ran). A
# query nothing matched stays at 0; a clear, corroborated winner keeps its calibrated value;
# a flat list or channels that disagree lose up to SUPPORT_WEIGHT of it.

SUPPORT_WEIGHT = 0.4
# A top-1/top-2 margin this large (scores in [0, 1]) counts as a clear winner.
MARGIN_FULL = 0.15
# How many of the best results the channels' agreement is judged on.
AGREEMENT_TOP = 5


def score_margin(scores: list[float]) -> float:
    """Top-1 minus top-2 (the top score itself when there is one result, 0 when none)."""
    if not scores:
        return 0.0
    if len(scores) == 1:
        return clamp(scores[0])
    return clamp(scores[0] - scores[1])


class Unmatched(Enum):
    """Why a query evidently has no answer in the index, when the search can tell: the first line
    of a low-confidence answer says it, and the answer is held to its small budget."""

    NOTHING_TO_SEARCH = "nothing_to_search"  # no letters or digits: emoji, punctuation, invisible characters
    MISSING_NAMES = "missing_names"  # exact names it typed that no chunk has
    NO_WORDS = "no_words"  # only the vector channel answered: its words occur nowhere in the index


def unmatched(text: str, missing_names: Sequence[str], words_matched: bool, has_results: bool) -> Unmatched | None:
    """Why the query `text` evidently has no answer here, or None when nothing says so (the
    answer may still be unsure: confidence and answerability judge that)."""
    if not any(ch.isalnum() for ch in text):
        return Unmatched.NOTHING_TO_SEARCH
    if missing_names:
        return Unmatched.MISSING_NAMES
    if has_results and not words_matched:
        return Unmatched.NO_WORDS
    return None


def channel_agreement(results: list[RankedResult], top: int = AGREEMENT_TOP) -> float | None:
    """How far the lexical and semantic channels agree on the best results, in [0, 1]: half
    for the best result being found by both, half for the share of the first `top` found by
    both. None when either channel found none of them (nothing to agree or disagree with)."""
    head = [r for r in results[:top] if r.provenance != STRUCTURE]
    if not head or not any(r.lexical_rank for r in head) or not any(r.semantic_rank for r in head):
        return None
    both = [bool(r.lexical_rank and r.semantic_rank) for r in head]
    return 0.5 * float(both[0]) + 0.5 * sum(both) / len(both)


def composite_confidence(calibrated: float, top_score: float, margin: float, agreement: float | None) -> float:
    """The calibrated confidence scaled by the support of the score shape (see above)."""
    signals = [clamp(top_score), clamp(margin / MARGIN_FULL)]
    if agreement is not None:
        signals.append(clamp(agreement))
    support = sum(signals) / len(signals)
    return clamp(calibrated) * (1.0 - SUPPORT_WEIGHT + SUPPORT_WEIGHT * support)


@dataclass(frozen=True)
class AnswerConfidence:
    """How sure a ranked answer is, and the evidence: computed once per answer over the whole
    ranking, so both tools and the selection's gate read the same number."""

    calibrated: float  # retrieval's calibrated P(the first result is right)
    top_score: float
    margin: float
    agreement: float | None  # None when only one channel found the best results
    composite: float  # the calibrated confidence scaled by the support of the score shape
    # Some result was found by the query's words (the full-text, name or path channel); False when
    # only the vector channel answered, i.e. the query's words occur nowhere in the index.
    words_matched: bool
    # Retrieval's calibrated P(a right result is among the first ten); None: not judged (a server
    # that does not send it), which caps nothing.
    answerability: float | None = None


def answer_confidence(results: list[RankedResult], scores: list[float], calibrated: float,
                      answerability: float | None = None) -> AnswerConfidence:
    """The composite confidence of a ranked answer (`scores`: its final scores, best first): what
    the agent is shown, and what selection's gate reads, so an answer flagged `low_confidence`
    is exactly one the gate judges unsure."""
    top = scores[0] if scores else 0.0
    margin = score_margin(scores)
    agreement = channel_agreement(results)
    composite = composite_confidence(calibrated, top, margin, agreement) if scores else 0.0
    return AnswerConfidence(calibrated=calibrated, top_score=top, margin=margin, agreement=agreement,
                            composite=composite, words_matched=any(r.provenance != SEMANTIC for r in results),
                            answerability=answerability if scores else 0.0)
