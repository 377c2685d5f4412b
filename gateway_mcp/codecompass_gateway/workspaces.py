"""One search over several workspaces (issue 30 §2): each workspace's pipeline runs on its own and
all at once (each syncs within its own freshness budget, as a search of one does), and their answers
merge under the ranking policy's fair-share rule (`policy.workspaces.fair_share`). A workspace whose
services or index fail is one line in the answer; the others still answer."""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from codecompass.common.tokens import count_tokens
from codecompass.policy.relevance import relevance
from codecompass.policy.workspaces import fair_share
from codecompass_gateway import tools
from codecompass_gateway.answer import CodeResult, CodeSearchAnswer, RankedItem, SearchAnswer, SelectedItem
from codecompass_gateway.packages import Package
from codecompass_gateway.pipeline import PipelineAnswer

R = TypeVar("R")
T = TypeVar("T")


@dataclass(frozen=True)
class Failed:
    """A workspace that could not be searched, and why, in one line."""

    root: Path
    reason: str


@dataclass(frozen=True)
class Searched(Generic[T]):
    """One workspace's own answer, beside what its results are labelled with."""

    root: Path
    packages: tuple[Package, ...]
    answer: T
    # The answer's confidence (its composite), which the merged answer's is when it is the surest.
    confidence: float


@dataclass(frozen=True)
class Merged(Generic[T, R]):
    """The merged answer: each result with the workspace it came from (an index into `searched`),
    most relevant first; the workspaces' own answers; those that failed."""

    results: tuple[tuple[int, R], ...]
    searched: tuple[Searched[T], ...]
    failed: tuple[Failed, ...]

    @property
    def most_confident(self) -> Searched[T]:
        """The workspace whose answer is the surest: the merged answer's confidence is its."""
        return max(self.searched, key=lambda s: s.confidence)


def each_workspace(roots: Sequence[Path], run: Callable[[Path], R]) -> tuple[list[tuple[Path, R]], list[Failed]]:
    """`run` for every workspace at once; what each answered, and those that failed (in the order
    given). When every one failed, the first failure is the call's."""
    with ThreadPoolExecutor(max_workers=len(roots), thread_name_prefix="workspace-search") as pool:
        # Each in a copy of this context: the tool's span is the parent of every workspace's pipeline.
        futures = [(root, pool.submit(contextvars.copy_context().run, run, root)) for root in roots]
    answered: list[tuple[Path, R]] = []
    failed: list[Failed] = []
    first: BaseException | None = None
    for root, future in futures:
        try:
            answered.append((root, future.result()))
        except tools.FAILURES as exc:
            failed.append(Failed(root, tools.failure(exc)[0]))
            first = first or exc
    if not answered and first is not None:
        raise first
    return answered, failed


def ranked_relevance(answer: PipelineAnswer) -> list[float]:
    """Each candidate's relevance, in order: what the gate judges a candidate by (`policy.relevance`:
    the answer's confidence, the score relative to its best, focus), so that two workspaces'
    results compare though each search scores its own best near 1."""
    candidates = answer.candidates
    return relevance([c.score for c in candidates], [c.result.chunk for c in candidates],
                     answer.confidence.composite, answer.focus)


def merge_answers(answered: Sequence[tuple[Searched[SearchAnswer], PipelineAnswer]], failed: Sequence[Failed],
                  max_tokens: int, threshold: float) -> Merged[SearchAnswer, SelectedItem | RankedItem]:
    """semantic_search's answers merged within `max_tokens` by the fair-share rule: a selected
    result costs its tokens and is judged by the relevance the gate gave it; a ranked one (selection
    did not run) costs its code's tokens and is judged by the relevance the gate would have."""
    groups = []
    for searched, answer in answered:
        results = searched.answer.results
        relevances = ([r.relevance for r in results if isinstance(r, SelectedItem)]
                      if searched.answer.selection is not None else ranked_relevance(answer))
        groups.append(list(zip(results, relevances, strict=True)))
    kept = fair_share(groups, max_tokens, threshold, relevance=lambda pair: pair[1], cost=lambda pair: _tokens(pair[0]))
    return Merged(results=tuple((i, item) for i, (item, _) in kept), searched=tuple(s for s, _ in answered),
                  failed=tuple(failed))


def _tokens(item: SelectedItem | RankedItem) -> int:
    return item.tokens if isinstance(item, SelectedItem) else count_tokens(item.code)


def merge_ranked(answered: Sequence[tuple[Searched[CodeSearchAnswer], PipelineAnswer]], failed: Sequence[Failed],
                 limit: int, threshold: float) -> Merged[CodeSearchAnswer, CodeResult]:
    """search_code's ranked lists interleaved within `limit` places by the fair-share rule: each
    workspace with a result at the gate holds an equal share of the places (its floor), the rest go
    by relevance; so one workspace cannot fill the list while another has relevant hits."""
    groups = [list(zip(searched.answer.results, ranked_relevance(answer), strict=True))
              for searched, answer in answered]
    kept = fair_share(groups, limit, threshold, relevance=lambda pair: pair[1])
    return Merged(results=tuple((i, item) for i, (item, _) in kept), searched=tuple(s for s, _ in answered),
                  failed=tuple(failed))
