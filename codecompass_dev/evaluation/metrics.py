"""Ranking and context-cost metrics over target-level relevance.

A query has one or more targets (symbols); a ranked list is reduced to, per
position, the index of the target it hits (or None). A target counts once,
at its first hit, so several chunks of one symbol (overloads) never inflate a score.

File level (score_files): the relevant items are files. Each relevant file counts once, at
the rank of the first result whose path is that file and, when the file's target has a line
span, whose line span overlaps it; nDCG's ideal is over min(10, relevant files). A file
target is a whole file (a `concept` query's answer) or a symbol target's file with the
symbol's lines as its span, so a result that spans the whole file (the `<module top level>`
chunk) hits every target of its file.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from codecompass.common.tokens import count_tokens

METRIC_NAMES = ("MRR@10", "R@1", "R@5", "R@10", "nDCG@10")
FILE_METRIC_NAMES = ("file nDCG@10", "file R@10")


def first_hits(hits: Sequence[int | None]) -> list[bool]:
    """Per rank: True when this rank is the first hit of some target."""
    seen: set[int] = set()
    flags: list[bool] = []
    for target in hits:
        fresh = target is not None and target not in seen
        if fresh:
            seen.add(target)
        flags.append(fresh)
    return flags


def reciprocal_rank(hits: Sequence[int | None], k: int = 10) -> float:
    for rank, target in enumerate(hits[:k], start=1):
        if target is not None:
            return 1.0 / rank
    return 0.0


def recall_at(hits: Sequence[int | None], n_targets: int, k: int) -> float:
    if n_targets <= 0:
        raise ValueError("a query needs at least one target")
    found = {t for t in hits[:k] if t is not None}
    return len(found) / n_targets


def ndcg_at(hits: Sequence[int | None], n_targets: int, k: int = 10) -> float:
    if n_targets <= 0:
        raise ValueError("a query needs at least one target")
    dcg = sum(1.0 / math.log2(rank + 1) for rank, fresh in enumerate(first_hits(hits[:k]), start=1) if fresh)
    ideal = sum(1.0 / math.log2(rank + 1) for rank in range(1, min(n_targets, k) + 1))
    return dcg / ideal


@dataclass(frozen=True)
class QueryScore:
    mrr10: float
    r1: float
    r5: float
    r10: float
    ndcg10: float

    def values(self) -> tuple[float, ...]:
        return (self.mrr10, self.r1, self.r5, self.r10, self.ndcg10)


def score_query(hits: Sequence[int | None], n_targets: int) -> QueryScore:
    return QueryScore(
        mrr10=reciprocal_rank(hits, 10),
        r1=recall_at(hits, n_targets, 1),
        r5=recall_at(hits, n_targets, 5),
        r10=recall_at(hits, n_targets, 10),
        ndcg10=ndcg_at(hits, n_targets, 10),
    )


def mean_scores(scores: Iterable[QueryScore]) -> tuple[float, ...]:
    rows = [s.values() for s in scores]
    if not rows:
        return tuple(float("nan") for _ in METRIC_NAMES)
    return tuple(sum(col) / len(rows) for col in zip(*rows, strict=True))


@dataclass(frozen=True)
class Target:
    """A symbol target: the chunk of `qualified_name` in `path`, at lines start_line..end_line of the
    pinned code (a result hits it by that name or by exactly those lines in that file)."""

    path: str
    qualified_name: str
    start_line: int
    end_line: int


# --- File level: each relevant file once, at its first (overlapping) result. ---


@dataclass(frozen=True)
class FileTarget:
    """A file-level target: a file, or the lines start_line..end_line of it (1-based, inclusive;
    0 and 0: the whole file)."""

    path: str
    start_line: int = 0
    end_line: int = 0

    @property
    def whole_file(self) -> bool:
        return self.start_line == 0 and self.end_line == 0


@dataclass(frozen=True)
class RelevantFile:
    """One relevant file and the spans a result must overlap (none: any result of the file hits)."""

    path: str
    spans: tuple[tuple[int, int], ...]


def relevant_files(targets: Iterable[FileTarget]) -> list[RelevantFile]:
    """Targets grouped by file, in first-seen order; a whole-file target makes its file whole."""
    spans: dict[str, list[tuple[int, int]] | None] = {}
    for target in targets:
        if target.whole_file:
            spans[target.path] = None
            continue
        found = spans.setdefault(target.path, [])
        if found is not None:
            found.append((target.start_line, target.end_line))
    return [RelevantFile(path, tuple(found) if found is not None else ()) for path, found in spans.items()]


def file_hit(path: str, start_line: int, end_line: int, files: Sequence[RelevantFile]) -> int | None:
    """Index of the relevant file a result (its path and line span) hits, or None."""
    for index, relevant in enumerate(files):
        if relevant.path == path and (
            not relevant.spans or any(start_line <= end and start <= end_line for start, end in relevant.spans)
        ):
            return index
    return None


@dataclass(frozen=True)
class FileScore:
    ndcg10: float
    r10: float

    def values(self) -> tuple[float, ...]:
        return (self.ndcg10, self.r10)


def score_files(results: Sequence[tuple[str, int, int]], targets: Iterable[FileTarget]) -> FileScore:
    """File-level nDCG@10 and recall@10 of results given as (path, start_line, end_line), in order."""
    files = relevant_files(targets)
    hits = [file_hit(path, start, end, files) for path, start, end in results[:10]]
    return FileScore(ndcg10=ndcg_at(hits, len(files), 10), r10=recall_at(hits, len(files), 10))


# --- Context cost: what the returned results cost an agent that reads them in order. ---

# The header a consumer writes before each result when it pastes results into a prompt.
RESULT_HEADER = "// {path} > {qualified_name}\n"
TOKEN_BUDGETS = (500, 2_000, 8_000)
BUDGET_METRIC_NAMES = tuple(f"R@{b // 1000}k tok" if b >= 1000 else f"R@{b} tok" for b in TOKEN_BUDGETS)
ANSWER_DEPTH = 10


def result_text(path: str, qualified_name: str, collapsed_source: str) -> str:
    """The text one result adds to a context: a one-line header, then its collapsed source."""
    return RESULT_HEADER.format(path=path, qualified_name=qualified_name) + collapsed_source


def result_token_cost(path: str, qualified_name: str, collapsed_source: str) -> int:
    """cl100k_base tokens of `result_text` (the analysis service counts with the same encoding)."""
    return count_tokens(result_text(path, qualified_name, collapsed_source))


def recall_within_budget(hits: Sequence[int | None], costs: Sequence[int], n_targets: int, budget: int) -> float:
    """Share of targets whose chunk lies wholly inside the first `budget` tokens of the results.

    The context is the results concatenated in the order returned. Strict: a result counts only
    when it fits entirely (cumulative cost ≤ budget); the walk stops at the first result that does
    not fit, since a consumer that truncates a context keeps a prefix. A chunk cut off halfway is
    not an answer (its body, the part that answers, is usually what the cut loses).
    """
    if n_targets <= 0:
        raise ValueError("a query needs at least one target")
    if len(hits) != len(costs):
        raise ValueError("one cost per result")
    used = 0
    found: set[int] = set()
    for target, cost in zip(hits, costs, strict=True):
        used += cost
        if used > budget:
            break
        if target is not None:
            found.add(target)
    return len(found) / n_targets


def tokens_per_answer(costs: Sequence[int], depth: int = ANSWER_DEPTH) -> int:
    """Tokens of the top `depth` results: what a fixed top-k answer costs its reader."""
    return sum(costs[:depth])


@dataclass(frozen=True)
class ContextScore:
    recall_by_budget: tuple[float, ...]  # one per TOKEN_BUDGETS
    answer_tokens: int  # tokens_per_answer at ANSWER_DEPTH


def score_context(
    hits: Sequence[int | None], costs: Sequence[int], n_targets: int, budgets: Sequence[int] = TOKEN_BUDGETS
) -> ContextScore:
    return ContextScore(
        recall_by_budget=tuple(recall_within_budget(hits, costs, n_targets, b) for b in budgets),
        answer_tokens=tokens_per_answer(costs),
    )


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in [0, 100]): always an observed value, NaN when empty."""
    if not values:
        return float("nan")
    if not 0 <= q <= 100:
        raise ValueError("q must be in [0, 100]")
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]
