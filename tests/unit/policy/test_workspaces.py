"""Fair shares across workspaces (policy.workspaces.fair_share): one question over several
workspaces, one budget. Pure; no services."""

from __future__ import annotations

from codecompass.policy.workspaces import fair_share

GATE = 0.5


def merged(groups: list[list[tuple[str, float, int]]], budget: int) -> list[str]:
    """The names kept, in order; a result is (name, relevance, cost)."""
    kept = fair_share(groups, budget, GATE, relevance=lambda r: r[1], cost=lambda r: r[2])
    return [r[0] for _, r in kept]


def test_each_relevant_workspace_is_guaranteed_an_equal_share() -> None:
    strong = [(f"a{i}", 0.95 - i * 0.01, 1000) for i in range(8)]
    weaker = [("b0", 0.6, 1000), ("b1", 0.55, 1000), ("b2", 0.52, 1000)]
    kept = merged([strong, weaker], 4000)
    # By relevance alone the strong workspace would take all four places.
    assert kept == ["a0", "a1", "b0", "b1"]


def test_a_workspace_with_nothing_relevant_gives_its_share_back() -> None:
    strong = [(f"a{i}", 0.9 - i * 0.01, 1000) for i in range(6)]
    nothing = [("b0", 0.3, 1000), ("b1", 0.2, 1000)]
    assert merged([strong, nothing], 4000) == ["a0", "a1", "a2", "a3"]
    # ...but its results still compete by relevance for what is left.
    assert merged([strong[:2], nothing], 4000) == ["a0", "a1", "b0", "b1"]


def test_the_rest_of_the_budget_goes_by_relevance_share_left_over_included() -> None:
    a = [("a0", 0.9, 1000), ("a1", 0.85, 1000)]
    b = [(f"b{i}", 0.7 - i * 0.05, 1000) for i in range(5)]
    # Shares of 3,000: a has 2,000 to take, b takes b0-b2; the 1,000 a left goes to b3, the next by relevance.
    assert merged([a, b], 6000) == ["a0", "a1", "b0", "b1", "b2", "b3"]


def test_a_result_too_large_for_what_is_left_is_passed_over_for_a_smaller_one() -> None:
    a = [("a0", 0.9, 3000), ("a1", 0.8, 4000), ("a2", 0.7, 500)]
    assert merged([a], 4000) == ["a0", "a2"]


def test_ranked_lists_interleave_with_a_floor_per_workspace() -> None:
    # search_code: one place per result; ten places over three relevant workspaces: three each, one by relevance.
    a = [(f"a{i}", 0.99 - i * 0.01, 1) for i in range(10)]
    b = [(f"b{i}", 0.7 - i * 0.01, 1) for i in range(10)]
    c = [("c0", 0.6, 1)]
    kept = fair_share([a, b, c], 10, GATE, relevance=lambda r: r[1])
    names = [r[0] for _, r in kept]
    assert names == ["a0", "a1", "a2", "a3", "a4", "a5", "b0", "b1", "b2", "c0"]
    assert [i for i, _ in kept] == [0] * 6 + [1] * 3 + [2]


def test_edges() -> None:
    assert fair_share([], 10, GATE, relevance=lambda r: r) == []
    assert fair_share([[], []], 10, GATE, relevance=lambda r: r) == []
    # Fewer places than relevant workspaces: no share to guarantee, relevance decides.
    assert fair_share([[0.9], [0.8]], 1, GATE, relevance=lambda r: r) == [(0, 0.9)]
    # Ties keep the groups' order; each group is read best first whatever order it came in.
    assert fair_share([[0.6, 0.7], [0.7]], 3, GATE, relevance=lambda r: r) == [(0, 0.7), (1, 0.7), (0, 0.6)]
