"""The learned ranker: a LightGBM LambdaRank model over every feature the first stage has.

The hand-set stack (`ranking.py`) stays the reference and the fallback: its fusion score, its
signals and its final score are features here, next to the raw evidence they were built from
(BM25, each model's cosine for every candidate, name and path lookups), per-field word matches,
the chunk's shape, file-level aggregates of the candidates and the reference graph (degree in
the whole index, links to the other candidates: hubs as a feature, not a stage). The model
(models/ranker/, `make ranker`) was trained on the corpus's train repositories, early-stopped
on the benchmark's dev split and reported on its test split; it decides the order, and each
result's `signals` name the features that moved it most along its path through the trees
(`PathExplainer`), so "why is this first" keeps an answer.

Scores: the model's outputs are margins with no fixed scale, so a result's score is the
probability that it is an answer, `sigmoid(a * margin + b)` (Platt scaling fitted on the train
repositories' candidates, models/ranker/model.scale.json): a low best score says the best is
unsure, and the relevance gate downstream reads a ratio of probabilities (score / best score).

Everything here is pure: the features come from the candidates the retrieval service gathered.
"""

from __future__ import annotations

import json
import logging
import math
import re
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import NamedTuple

import numpy as np

from codecompass.common.chunks import Chunk, NodeKind
from codecompass.common.config import CHECKOUT_ROOT
from codecompass.common.identifiers import TOKEN, identifier_parts
from codecompass.common.lean_imports import import_without
from codecompass.common.records import evolve
from codecompass.common.testcode import is_test_path
from codecompass.policy import shape as q
from codecompass.policy.ranking import KIND_WORDS, Candidate, RankedResult, example_path, vendored_path
from codecompass.policy.shape import REQUEST_WORDS, QueryShape

_log = logging.getLogger(__name__)
# The committed model of `make ranker` (models/ranker/train.py).
DEFAULT_MODEL = CHECKOUT_ROOT / "models" / "ranker" / "model.txt"
# Rankers trained on the indexes of another primary model, at <provider>/model.txt here (`make
# ranker-code-static`): a ranker weighs its model's cosines, and one taught on code-small's
# trusts a static model's cosines as if they were code-small's.
MODEL_RANKERS_DIR = DEFAULT_MODEL.parent
_PROVIDER_NAME = re.compile(r"[a-z0-9][a-z0-9-]*")
# How much of each field is read for word matches: enough for a symbol's head, cheap for 100.
_FIELD_CHARS = {"signature": 400, "jsdoc": 800, "body": 2500}
_KINDS = (NodeKind.FUNCTION, NodeKind.METHOD, NodeKind.CLASS, NodeKind.INTERFACE, NodeKind.TYPE,
          NodeKind.VARIABLE, NodeKind.MODULE, NodeKind.ENUM)
# Candidates whose links to each other count (the hand-set order's head).
_LINK_TOP = 20
# Contributions named in a result's signals, for the first EXPLAINED results.
TOP_CONTRIBUTIONS = 3
EXPLAINED = 5
SIGNAL_PREFIX = "learned."

FEATURES: tuple[str, ...] = (
    # the query
    "q_natural_language", "q_symbol", "q_error", "q_path", "q_words", "q_mentions_tests", "q_phrase",
    "q_identifiers",
    # the channels
    "bm25_rel", "bm25_log", "lexical_rank_inv", "in_lexical",
    "cos_primary", "cos_primary_gap", "cos_primary_rank_inv", "has_primary", "ann_rank_inv",
    "cos_static", "cos_static_gap", "cos_static_rank_inv",
    "name_match", "path_match",
    # the hand-set stack
    "handset_fusion", "handset_score", "handset_rank_inv", "sig_definition", "sig_name_words", "sig_path",
    "sig_phrase", "pen_test", "pen_not_test", "pen_example", "pen_compat", "pen_vendor", "pen_declaration",
    "pen_tiny", "pen_module",
    # words of the query per field (weighted by rarity among the candidates)
    "cov_name", "cov_qualified", "cov_signature", "cov_jsdoc", "cov_body", "cov_path", "cov_all",
    "name_exact",
    # the chunk
    *(f"kind_{k.value}" for k in _KINDS), "depth", "lines_log", "has_jsdoc", "is_test", "is_example",
    "is_vendor", "index_file", "path_depth",
    # the file, over the candidates
    "file_candidates", "file_best_bm25", "file_best_cos", "file_rank", "file_words",
    # the file as an answer: a concept question ("how does X run Y") is answered by a file; its
    # card (the module chunk) carries the file's purpose and exports, and the file's evidence is
    # the sum of its candidates'
    "q_question", "cov_card", "file_score_sum", "file_best_rank_inv", "file_card_candidate",
    # the reference graph
    "out_degree", "in_degree", "links_top", "parent_candidate", "child_candidates",
)
_INDEX = {name: i for i, name in enumerate(FEATURES)}


# The word fields of a chunk; "all" is any of them.
_WORD_FIELDS = ("name", "qualified", "signature", "jsdoc", "body", "path", "card")
_FIELD_BIT = {name: 1 << i for i, name in enumerate(_WORD_FIELDS)}
_ANY_FIELD = (1 << len(_WORD_FIELDS)) - 1
# (fields, feature) pairs of the query-word coverage features ("path" serves cov_path and file_words).
_COVERAGE = ((_FIELD_BIT["name"], "cov_name"), (_FIELD_BIT["qualified"], "cov_qualified"),
             (_FIELD_BIT["signature"], "cov_signature"), (_FIELD_BIT["jsdoc"], "cov_jsdoc"),
             (_FIELD_BIT["body"], "cov_body"), (_FIELD_BIT["path"], "cov_path"), (_ANY_FIELD, "cov_all"),
             (_FIELD_BIT["path"], "file_words"), (_FIELD_BIT["card"], "cov_card"))
# Features of the chunk alone, whatever the query: computed once per chunk and cached.
_CHUNK_FEATURES = (*(f"kind_{k.value}" for k in _KINDS), "depth", "lines_log", "has_jsdoc", "is_test",
                   "is_example", "is_vendor", "index_file", "path_depth", "out_degree")


class _ChunkWords(NamedTuple):
    """What the features read of one chunk whatever the query. Words and stems (the first five
    letters of each word of five or more) map to the fields they are in, one bit per field of
    _WORD_FIELDS: a term is looked up once for all fields, and thousands of cached chunks are
    tuples of strings, numbers and dicts of them, which the garbage collector stops tracking (a
    set per field made the cache 350k tracked objects on ws-300k, and full collections took up to
    0.8 s: a search's latency tail)."""

    words: dict[str, int]
    stems: dict[str, int]
    name_words: tuple[str, ...]  # the name's identifier parts, once each
    name_parts: int  # the name's identifier parts, counted with repeats
    own: tuple[float, ...]  # _CHUNK_FEATURES, in order


class _Words:
    """Each chunk's _ChunkWords, cached by content: chunks recur across queries, and the searcher
    splits the rows of the index it searches while idle (`remember_words`). ~4 KiB each: 32k of
    them, every chunk of ws-300k and more, ~130 MiB."""

    def __init__(self, size: int = 32_000) -> None:
        self._cache: OrderedDict[tuple[str, str], _ChunkWords] = OrderedDict()
        self._size = size
        # Searches run in several threads, and the read-ahead in one more: a key another thread
        # pushes out between a lookup and its move to the end would fail the search.
        self._lock = threading.Lock()

    def of(self, chunk: Chunk) -> _ChunkWords:
        key = (chunk.id, chunk.snippet_hash)
        with self._lock:
            found = self._cache.get(key)
            if found is not None:
                self._cache.move_to_end(key)
                return found
        name_parts = identifier_parts(chunk.name)
        fields = (
            name_parts,
            _words(chunk.qualified_name),
            _words(chunk.signature[: _FIELD_CHARS["signature"]]),
            _words(chunk.jsdoc[: _FIELD_CHARS["jsdoc"]]),
            _words(chunk.collapsed_source[: _FIELD_CHARS["body"]]),
            _words(chunk.relative_path),
            _words(_card_text(chunk)),
        )
        words: dict[str, int] = {}
        stems: dict[str, int] = {}
        for bit, values in zip(_FIELD_BIT.values(), fields, strict=True):
            # Each distinct word once: code repeats its words, and this loop was most of a chunk's cost.
            distinct = set(values)
            for w in distinct:
                words[w] = words.get(w, 0) | bit
            for stem in {w[:5] for w in distinct if len(w) >= 5}:
                stems[stem] = stems.get(stem, 0) | bit
        path = PurePosixPath(chunk.relative_path)
        own = (
            *(float(chunk.node_kind is kind) for kind in _KINDS),
            float(chunk.depth),
            math.log1p(max(chunk.end_line - chunk.start_line + 1, 1)),
            float(bool(chunk.jsdoc)),
            float(chunk.is_test or is_test_path(chunk.relative_path)),
            float(example_path(chunk.relative_path)),
            float(vendored_path(chunk.relative_path)),
            float(path.name.split(".", 1)[0] == "index"),
            float(len(path.parts)),
            math.log1p(sum(1 for ref in chunk.references if ref.chunk_id)),
        )
        found = _ChunkWords(words, stems, tuple(dict.fromkeys(name_parts)), len(name_parts), own)
        with self._lock:
            self._cache[key] = found
            if len(self._cache) > self._size:
                self._cache.popitem(last=False)
        return found


_WORDS = _Words()


def remember_words(chunks: Sequence[Chunk]) -> None:
    """Split `chunks` into the words the features read now, so that a search that meets them
    later does not (~90 µs a chunk): for a searcher's idle time."""
    for chunk in chunks:
        _WORDS.of(chunk)
# The card lines of a module chunk's embedding text worth matching (the rest is the outline,
# which the body field reads).
_CARD_PREFIXES = ("Purpose:", "Exports:", "Re-exports:")


def _card_text(chunk: Chunk) -> str:
    """A file card's own lines: its purpose and the names it exports ('' for any other chunk)."""
    if chunk.node_kind is not NodeKind.MODULE:
        return ""
    head = chunk.embedding_text.split("\n---\n", 1)[0]
    return "\n".join(line for line in head.splitlines() if line.startswith(_CARD_PREFIXES))


def _words(text: str) -> list[str]:
    out: list[str] = []
    for token in TOKEN.findall(text):
        out.extend(_token_words(token))
    return out


@lru_cache(maxsize=1 << 16)
def _token_words(token: str) -> tuple[str, ...]:
    """A token and, when it splits, its identifier parts: memoised because code repeats its
    identifiers, and splitting them was a third of the features' time per search."""
    parts = identifier_parts(token)
    return (token.lower(), *parts) if len(parts) > 1 else (token.lower(),)


def query_terms(shape: QueryShape) -> list[str]:
    """The query's content words: no stop words, request words ("fix", "how") or kind words."""
    return [w for w in dict.fromkeys(shape.words or shape.name_parts)
            if len(w) >= 2 and w not in REQUEST_WORDS and w not in KIND_WORDS]


def _matches(terms: Sequence[str], chunk: _ChunkWords) -> list[int]:
    """For each term, the fields (bits) it is in: as a word, as its singular (`handlers` /
    `handler`) or by a shared stem (`inserted` / `insert`): a stem shared is a word shared."""
    out = []
    for t in terms:
        found = chunk.words.get(t, 0)
        if t.endswith("s"):
            found |= chunk.words.get(t[:-1], 0)
        if len(t) >= 6:
            found |= chunk.stems.get(t[:5], 0)
        out.append(found)
    return out


def feature_matrix(shape: QueryShape, results: Sequence[RankedResult],
                   candidates: dict[str, Candidate]) -> np.ndarray:
    """One row of FEATURES per result of the hand-set stack (in its order)."""
    n = len(results)
    x = np.zeros((n, len(FEATURES)), dtype=np.float32)
    if n == 0:
        return x
    col = _INDEX
    x[:, col["q_natural_language"]] = shape.intent == q.NATURAL_LANGUAGE
    x[:, col["q_symbol"]] = shape.intent == q.SYMBOL
    x[:, col["q_error"]] = shape.intent == q.ERROR
    x[:, col["q_path"]] = shape.intent == q.PATH
    terms = query_terms(shape)
    x[:, col["q_words"]] = len(terms)
    x[:, col["q_mentions_tests"]] = shape.mentions_tests
    x[:, col["q_phrase"]] = bool(shape.phrase)
    x[:, col["q_identifiers"]] = len(shape.identifiers)
    x[:, col["q_question"]] = shape.question

    raw = [candidates[r.chunk.id] for r in results]
    words = [_WORDS.of(r.chunk) for r in results]
    x[:, [col[name] for name in _CHUNK_FEATURES]] = np.array([w.own for w in words], dtype=np.float64)
    top_bm25 = max((c.bm25 for c in raw), default=0.0)
    bm25_rel = [c.bm25 / top_bm25 if top_bm25 > 0 else 0.0 for c in raw]
    primary = np.array([c.primary_cosine if c.primary_cosine is not None else np.nan for c in raw], dtype=np.float32)
    static = np.array([c.static_cosine if c.static_cosine is not None else np.nan for c in raw], dtype=np.float32)
    best_primary = np.nanmax(primary) if np.isfinite(primary).any() else 0.0
    best_static = np.nanmax(static) if np.isfinite(static).any() else 0.0
    x[:, col["cos_primary_rank_inv"]] = _rank_inv(primary)
    x[:, col["cos_static_rank_inv"]] = _rank_inv(static)

    by_file: dict[str, list[int]] = defaultdict(list)
    for i, r in enumerate(results):
        by_file[r.chunk.relative_path].append(i)
    top_score = max((r.score for r in results), default=0.0) or 1.0
    file_sum = {path: sum(results[j].score for j in members) / top_score for path, members in by_file.items()}
    file_bm25 = {path: max(bm25_rel[j] for j in members) for path, members in by_file.items()}
    file_cos = {}
    for path, members in by_file.items():
        cosines = [cos for cos in (raw[j].primary_cosine for j in members) if cos is not None]
        file_cos[path] = float(max(cosines) - best_primary) if cosines else -1.0
    cards = {r.chunk.relative_path for r in results if r.chunk.node_kind is NodeKind.MODULE}
    ids = {r.chunk.id: i for i, r in enumerate(results)}
    head = {r.chunk.id for r in results[:_LINK_TOP]}
    links: defaultdict[str, int] = defaultdict(int)
    for r in results[:_LINK_TOP]:
        for ref in r.chunk.references:
            if ref.chunk_id in head and ref.chunk_id != r.chunk.id:
                links[r.chunk.id] += 1
                links[ref.chunk_id] += 1
    children: defaultdict[str, int] = defaultdict(int)
    for r in results:
        if r.chunk.parent_id in ids:
            children[r.chunk.parent_id] += 1

    if terms:
        # Term weights by rarity among the candidates: a word every candidate has tells nothing.
        matched = np.array([_matches(terms, w) for w in words], dtype=np.int64)  # (candidates, terms): field bits
        df = np.count_nonzero(matched, axis=0)
        weight = np.log((n + 1) / (df + 0.5))
        total = float(weight.sum()) or 1.0
        for bits, name in _COVERAGE:
            x[:, col[name]] = ((matched & bits) != 0) @ weight / total
        # Every part of the name is a query word (and the name is not one word of a longer query).
        term_set = set(terms)
        x[:, col["name_exact"]] = [w.name_parts > 0 and term_set.issuperset(w.name_words)
                                   and w.name_parts >= min(2, len(terms)) for w in words]

    # Column by column: a comprehension per feature instead of 38 appends a row (ws-300k, about
    # 175 candidates a search: the whole matrix 2.8 -> 2.35 ms, the same values).
    paths = [r.chunk.relative_path for r in results]
    of_file = [by_file[path] for path in paths]
    signals = [r.signals for r in results]
    columns: dict[str, Sequence[float]] = {
        "bm25_rel": bm25_rel,
        "bm25_log": [math.log1p(c.bm25) for c in raw],
        "lexical_rank_inv": [1.0 / c.lexical_rank if c.lexical_rank else 0.0 for c in raw],
        "in_lexical": [bool(c.lexical_rank) for c in raw],
        "cos_primary": [c.primary_cosine if c.primary_cosine is not None else 0.0 for c in raw],
        "cos_primary_gap": [float(c.primary_cosine - best_primary) if c.primary_cosine is not None else 0.0
                            for c in raw],
        "has_primary": [c.primary_cosine is not None for c in raw],
        "ann_rank_inv": [1.0 / c.semantic_rank if c.semantic_rank else 0.0 for c in raw],
        "cos_static": [c.static_cosine if c.static_cosine is not None else 0.0 for c in raw],
        "cos_static_gap": [float(c.static_cosine - best_static) if c.static_cosine is not None else 0.0
                           for c in raw],
        "name_match": [c.name_match for c in raw],
        "path_match": [c.path_match for c in raw],
        "handset_fusion": [r.fusion_score for r in results],
        "handset_score": [r.score for r in results],
        "handset_rank_inv": [1.0 / (i + 1) for i in range(n)],
        "sig_definition": [s.get("definition", 0.0) for s in signals],
        "sig_name_words": [s.get("name_words", 0.0) for s in signals],
        "sig_path": [s.get("path", 0.0) for s in signals],
        "sig_phrase": [s.get("phrase", 0.0) for s in signals],
        "pen_test": ["test_file" in s for s in signals],
        "pen_not_test": ["not_test_file" in s for s in signals],
        "pen_example": ["example_or_script" in s for s in signals],
        "pen_compat": ["compat" in s for s in signals],
        "pen_vendor": ["vendored_or_built" in s for s in signals],
        "pen_declaration": ["declaration_file" in s for s in signals],
        "pen_tiny": ["tiny" in s for s in signals],
        "pen_module": ["module_top_level" in s for s in signals],
        "file_candidates": [len(m) for m in of_file],
        "file_best_bm25": [file_bm25[path] for path in paths],
        "file_best_cos": [file_cos[path] for path in paths],
        "file_rank": [m.index(i) + 1 for i, m in enumerate(of_file)],
        "file_score_sum": [file_sum[path] for path in paths],
        # A file's candidates are in the hand-set order: the first is its best-ranked.
        "file_best_rank_inv": [1.0 / (m[0] + 1) for m in of_file],
        "file_card_candidate": [path in cards for path in paths],
        "in_degree": [math.log1p(c.in_degree) for c in raw],
        "links_top": [links.get(r.chunk.id, 0) for r in results],
        "parent_candidate": [r.chunk.parent_id in ids for r in results],
        "child_candidates": [children.get(r.chunk.id, 0) for r in results],
    }
    for name, values in columns.items():
        x[:, col[name]] = values
    return x


def _rank_inv(values: np.ndarray) -> np.ndarray:
    """1 / rank by value (best = 1), 0 where the value is missing."""
    out = np.zeros(len(values), dtype=np.float32)
    present = np.flatnonzero(np.isfinite(values))
    order = present[np.argsort(-values[present], kind="stable")]
    out[order] = 1.0 / np.arange(1, len(order) + 1)
    return out


def scale_path(model: Path) -> Path:
    """The Platt scaling of a model's margins, beside it (`model.txt` -> `model.scale.json`)."""
    return model.with_suffix(".scale.json")


@dataclass(frozen=True)
class LearnedRanker:
    """A trained model file and the feature names it was trained on (they must be FEATURES)."""

    path: Path

    @cached_property
    def scale(self) -> tuple[float, float]:
        found = json.loads(scale_path(self.path).read_text(encoding="utf-8"))
        return float(found["a"]), float(found["b"])

    @cached_property
    def booster(self):  # lightgbm.Booster; imported here so a process without the model never loads it
        booster = _lightgbm().Booster(model_file=str(self.path))
        names = tuple(booster.feature_name())
        if names != FEATURES:
            raise ValueError(f"{self.path}: the model's features differ from this build's "
                             f"({len(names)} vs {len(FEATURES)}); retrain with `make ranker`")
        return booster

    @cached_property
    def explainer(self) -> PathExplainer:
        return PathExplainer(self.booster.dump_model())

    def rerank(self, shape: QueryShape, results: list[RankedResult], candidates: dict[str, Candidate],
               limit: int) -> list[RankedResult]:
        """`results` (the hand-set order) reordered by the model, at most `limit`."""
        if len(results) < 2:
            return results[:limit]
        x = feature_matrix(shape, results, candidates)
        predicted = self.booster.predict(x, num_threads=1)
        order = sorted(range(len(results)), key=lambda i: (-predicted[i], i))[:limit]
        a, b = self.scale
        head = order[:EXPLAINED]
        contributions = self.explainer.contributions(x[head])
        why = {i: _top(contributions[k]) for k, i in enumerate(head)}
        out = []
        for i in order:
            r = results[i]
            signals = {**r.signals, **why.get(i, {})}
            z = max(min(a * float(predicted[i]) + b, 40.0), -40.0)
            out.append(evolve(r, score=1.0 / (1.0 + math.exp(-z)), signals=signals))
        return out


class PathExplainer:
    """Each feature's contribution to a row's margin along the row's path through the trees
    (path attribution): at every split the row passes, the change from the node's value (the mean
    output of the training rows that reached it) to the value of the child it takes, summed per
    feature. The last column is the sum of the trees' root values, so a row's contributions sum to
    its margin, as LightGBM's `pred_contrib` does.

    Why not `pred_contrib` (TreeSHAP, which averages over every order of the features): with the
    committed model it took 1.7 ms a row, 8.4 ms for the five a search explains, the largest
    single cost of a warm search; this walk takes 0.8 ms for the five. The two readings differ:
    path attribution credits the splits near a tree's root more, and on the test split's
    explained results it names the same first feature as TreeSHAP for 58% of them. Both add up
    to the model's score; this one says which splits on this result's path moved it."""

    def __init__(self, dump: dict) -> None:
        feature: list[int] = []
        threshold: list[float] = []
        left: list[int] = []
        right: list[int] = []
        value: list[float] = []

        def add(node: dict) -> int:
            i = len(feature)
            feature.append(-1)
            threshold.append(0.0)
            left.append(-1)
            right.append(-1)
            value.append(float(node.get("leaf_value", 0.0)))
            if "split_feature" not in node:
                return i
            if node["decision_type"] != "<=" or node["missing_type"] != "None":
                # train.py never makes these (categorical splits, learned missing values).
                raise ValueError(f"a split of kind {node['decision_type']!r}, missing {node['missing_type']!r}: "
                                 "only numerical splits without missing values are explained")
            feature[i], threshold[i], value[i] = node["split_feature"], node["threshold"], node["internal_value"]
            left[i] = add(node["left_child"])
            right[i] = add(node["right_child"])
            return i

        self._roots = np.array([add(tree["tree_structure"]) for tree in dump["tree_info"]], dtype=np.int64)
        self._feature = np.array(feature, dtype=np.int64)
        self._threshold = np.array(threshold, dtype=np.float64)
        self._left = np.array(left, dtype=np.int64)
        self._right = np.array(right, dtype=np.int64)
        self._value = np.array(value, dtype=np.float64)
        self._width = int(dump["max_feature_idx"]) + 2

    def contributions(self, x: np.ndarray) -> np.ndarray:
        """(rows, features + 1): each feature's contribution, then the bias (as `pred_contrib`)."""
        # Without learned missing values LightGBM reads NaN as zero.
        x = np.nan_to_num(np.asarray(x, dtype=np.float64), nan=0.0)
        out = np.zeros((len(x), self._width))
        out[:, -1] = self._value[self._roots].sum()
        node = np.tile(self._roots, (len(x), 1))
        row = np.broadcast_to(np.arange(len(x))[:, None], node.shape)
        # Every row down every tree a level at a time; a row at a leaf stays there.
        while True:
            inner = self._feature[node] >= 0
            if not inner.any():
                return out
            at, r = node[inner], row[inner]
            f = self._feature[at]
            taken = np.where(x[r, f] <= self._threshold[at], self._left[at], self._right[at])
            np.add.at(out, (r, f), self._value[taken] - self._value[at])
            node[inner] = taken


def _top(contributions: np.ndarray) -> dict[str, float]:
    """The features that moved a result most, as signals (`learned.<feature>`: its contribution)."""
    values = contributions[:-1]  # the last column is the model's bias
    order = np.argsort(-np.abs(values))[:TOP_CONTRIBUTIONS]
    return {f"{SIGNAL_PREFIX}{FEATURES[j]}": round(float(values[j]), 4) for j in order if values[j] != 0.0}


class FeatureRecorder:
    """Keeps the hand-set order and records each query's feature rows: the training data."""

    def __init__(self) -> None:
        self.rows: np.ndarray | None = None
        self.ids: list[str] = []

    def rerank(self, shape: QueryShape, results: list[RankedResult], candidates: dict[str, Candidate],
               limit: int) -> list[RankedResult]:
        self.rows = feature_matrix(shape, results, candidates)
        self.ids = [r.chunk.id for r in results]
        return results[:limit]


def _lightgbm() -> ModuleType:
    # Without scikit-learn: lightgbm's guard would import it, for nothing a Booster needs (lean_imports).
    return import_without("lightgbm", hidden="sklearn")


class Rankers:
    """The learned ranker of each index's primary model, each loaded once per process.

    A configured model file (`retrieval.ranker_model`) ranks every index. Otherwise an index whose
    primary model has a ranker of its own (MODEL_RANKERS_DIR/<provider>/model.txt) gets that one,
    loaded on its first search, and every other index the committed default, loaded by `load` (the
    service calls it once it serves) or by the first search.
    """

    def __init__(self, configured: Path | None = None, *, root: Path = MODEL_RANKERS_DIR) -> None:
        self._configured = configured
        self._root = root
        self._default: LearnedRanker | None = None
        self._own: dict[str, LearnedRanker | None] = {}
        self._lock = threading.Lock()
        # Importing lightgbm (scipy.sparse with it) was a quarter of a retrieval process's start,
        # ~0.4 s of CPU: the service loads the default once it serves (`load`), and a search that
        # comes first waits for it.
        self._load_lock = threading.Lock()
        self._loaded = False

    def load(self) -> None:
        """Load the default ranker, once; a caller that comes while it loads waits for it."""
        with self._load_lock:
            if self._loaded:
                return
            try:
                self._default = load_ranker(self._configured)
            except Exception as exc:  # noqa: BLE001 - lightgbm itself missing or broken: rank without it
                _log.warning("learned ranker not loaded (%s): ranking with the hand-set stack", exc)
            self._loaded = True

    def for_provider(self, provider: str) -> LearnedRanker | None:
        self.load()
        if self._configured is not None or not _PROVIDER_NAME.fullmatch(provider):
            return self._default
        with self._lock:
            if provider not in self._own:
                path = self._root / provider / "model.txt"
                self._own[provider] = load_ranker(path) if path.is_file() else self._default
            return self._own[provider]


def load_ranker(path: Path | None = None) -> LearnedRanker | None:
    """The learned ranker of `path` (default: the committed model), loaded now; None, with one
    log line, when there is no model file or it cannot be read: the hand-set stack ranks alone.
    The one I/O of the policy package, once per process."""
    path = Path(path) if path is not None else DEFAULT_MODEL
    if not path.is_file():
        _log.info("no learned ranker at %s: ranking with the hand-set stack", path)
        return None
    LightGBMError = _lightgbm().basic.LightGBMError  # noqa: N806 - the library's class

    ranker = LearnedRanker(path)
    try:
        ranker.booster  # noqa: B018 - load and check now, not on the first search
        ranker.scale  # noqa: B018
        ranker.explainer  # noqa: B018
    except (LightGBMError, OSError, ValueError, KeyError) as exc:
        _log.warning("learned ranker %s not loaded (%s): ranking with the hand-set stack", path, exc)
        return None
    return ranker
