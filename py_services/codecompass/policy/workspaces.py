"""One question over several workspaces (issue 30 §2): how their answers share one budget.

Each workspace is searched on its own (its own ranking, confidence and gate); the merged answer
must neither let one workspace's many strong hits crowd out another's relevant ones, nor keep room
for a workspace that has nothing relevant to put in it. The rule, `fair_share`:

1. A workspace is *relevant* when at least one of its results reaches the confidence gate
   (relevance >= threshold: the number semantic_search's gate and search_code's low_confidence
   judge by).
2. The budget (tokens for semantic_search's answer, places for search_code's ranked list) is split
   equally among the relevant workspaces, and each is guaranteed its share, filled with its results
   that reach the gate, best first. A workspace with nothing relevant has no share: its part stays
   with the others, and so does whatever a relevant workspace leaves of its own.
3. The rest of the budget goes by relevance to every result not yet taken, whichever workspace it
   comes from and whether or not it reaches the gate: how a single workspace's answer fills it.
4. The merged answer is ordered by relevance, so the workspaces' results interleave.

Relevance, not the raw score, compares results across workspaces: a search normalises its scores
(its best result scores near 1 whether it matched or not), while relevance carries the search's
calibrated confidence (`policy.relevance`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")


def _one(_: object) -> int:
    return 1


def fair_share(groups: Sequence[Sequence[T]], budget: int, threshold: float, relevance: Callable[[T], float],
               cost: Callable[[T], int] = _one) -> list[tuple[int, T]]:
    """The results of `groups` (one per workspace) that the merged answer keeps within `budget`, as
    (index of its group, result), most relevant first; ties keep the groups' order and each group's
    own. `cost`: what a result spends of the budget (its tokens; one place by default, for a ranked
    list). A result that does not fit what is left is passed over for a smaller one after it."""
    ranked = [sorted(group, key=lambda r: -relevance(r)) for group in groups]
    relevant = [i for i, group in enumerate(ranked) if any(relevance(r) >= threshold for r in group)]
    share = budget // len(relevant) if relevant else 0
    taken: set[tuple[int, int]] = set()
    spent = 0
    for i in relevant:
        own = 0
        for j, result in enumerate(ranked[i]):
            if relevance(result) < threshold:
                break  # best first: the rest of the group is below the gate too
            if own + cost(result) <= share:
                own += cost(result)
                taken.add((i, j))
        spent += own
    rest = sorted(((i, j) for i, group in enumerate(ranked) for j in range(len(group)) if (i, j) not in taken),
                  key=lambda ij: -relevance(ranked[ij[0]][ij[1]]))
    for i, j in rest:
        if spent + cost(ranked[i][j]) <= budget:
            spent += cost(ranked[i][j])
            taken.add((i, j))
    return [(i, ranked[i][j]) for i, j in sorted(taken, key=lambda ij: (-relevance(ranked[ij[0]][ij[1]]), ij))]
