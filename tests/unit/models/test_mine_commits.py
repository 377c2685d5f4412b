"""The commit rule of the training corpus on a tiny git repository made here: the bench's rule, at scale."""

from __future__ import annotations

import subprocess
from collections import Counter
from pathlib import Path

import pytest
from models.corpus import mine_commits
from models.corpus.pairs import Repo

RETRY = """export function computeDelay(attempt: number): number {
  return attempt * 100;
}

export function shouldRetry(attempt: number): boolean {
  return attempt < 3;
}
"""


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


def commit(
    root: Path, subject: str, edits: dict[str, tuple[str, str]] | None = None, files: dict[str, str] | None = None
):
    for rel, text in (files or {}).items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    for rel, (old, new) in (edits or {}).items():
        path = root / rel
        path.write_text(path.read_text(encoding="utf-8").replace(old, new, 1), encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", subject)


def test_commit_subjects_pair_with_the_symbols_they_touched(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.email", "a@example.com")
    git(root, "config", "user.name", "A")
    commit(root, "chore: initial import", files={"src/retry.ts": RETRY})
    commit(root, "fix(retry): honour the server's date header when waiting (#12)", {"src/retry.ts": ("* 100", "* 250")})
    commit(root, "Make shouldRetry give up after the last attempt", {"src/retry.ts": ("< 3", "<= 3")})
    commit(root, "Bump version to 1.2.3", {"src/retry.ts": ("* 250", "* 260")})
    commit(root, "Cover the retry jitter with more cases", files={"test/retry.test.ts": "test('x', () => {});\n"})
    commit(root, "Handle a missing clock in the scheduler", {"src/retry.ts": ("* 260", "* 270")})
    commit(root, "Handle a missing clock in the scheduler", {"src/retry.ts": ("<= 3", "<= 4")})
    head = git(root, "rev-parse", "HEAD").strip()
    stats: Counter = Counter()

    pairs = mine_commits.mine(Repo("someone/retry", head, root, root / ".git"), 400, stats)

    assert [(p.query, [(t.path, t.qualified_name, t.start_line, t.end_line) for t in p.targets]) for p in pairs] == [
        ("honour the server's date header when waiting", [("src/retry.ts", "computeDelay", 1, 3)])
    ]
    assert pairs[0].blank == [] and pairs[0].source["subject"].startswith("fix(retry): ")
    # The subject naming shouldRetry leaks its answer; one subject on two answers has none;
    # the chore, the version bump and the test-only commit are no behaviour change of the code.
    assert stats["commit_leaks_name"] == 1
    assert stats["commit_same_text_other_answer"] == 2
    assert stats["commit_subjects_kept"] == 5 and stats["commit_no_source_change"] == 1


def test_a_repository_without_history_has_no_commit_pairs(tmp_path: Path) -> None:
    stats: Counter = Counter()
    assert mine_commits.mine(Repo("someone/retry", "0" * 40, tmp_path), 400, stats) == []
    assert stats["commit_no_history"] == 1


def test_a_commit_a_partial_snapshot_cannot_read_is_skipped_not_the_repository(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.email", "a@example.com")
    git(root, "config", "user.name", "A")
    budget = "export function spendBudget(left: number): number {\n  return left - 1;\n}\n"
    commit(root, "chore: initial import", files={"src/retry.ts": RETRY, "src/budget.ts": budget})
    commit(root, "Honour the server's date header when waiting", {"src/retry.ts": ("* 100", "* 250")})
    commit(root, "Stop spending when nothing is left over", {"src/budget.ts": ("left - 1", "Math.max(0, left - 1)")})
    # The snapshot lacks the blob of the second commit's retry.ts, as a partial fetch may.
    blob = git(root, "rev-parse", "HEAD~1:src/retry.ts").strip()
    (root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    stats: Counter = Counter()

    pairs = mine_commits.mine(
        Repo("someone/retry", git(root, "rev-parse", "HEAD").strip(), root, root / ".git"), 400, stats
    )

    assert [(p.query, p.targets[0].qualified_name) for p in pairs] == [
        ("Stop spending when nothing is left over", "spendBudget")
    ]
    assert stats["commit_unreadable_commit"] == 1


def test_the_whole_history_is_mined_by_default_and_targets_must_exist_at_the_pinned_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.email", "a@example.com")
    git(root, "config", "user.name", "A")
    old = "export function legacyDelay(attempt: number): number {\n  return attempt;\n}\n"
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2012-03-01T12:00:00Z")
    commit(root, "chore: initial import", files={"src/retry.ts": RETRY, "src/legacy.ts": old})
    commit(root, "Honour the server's date header when waiting", {"src/retry.ts": ("* 100", "* 250")})
    commit(root, "Wait longer between the first attempts", {"src/legacy.ts": ("return attempt", "return 2 * attempt")})
    monkeypatch.setenv("GIT_COMMITTER_DATE", "2024-03-01T12:00:00Z")
    commit(root, "Stop retrying once the budget is spent", {"src/retry.ts": ("< 3", "< 4")})
    (root / "src/legacy.ts").unlink()
    commit(root, "Drop the old delay schedule nobody calls", files={})
    head = git(root, "rev-parse", "HEAD").strip()
    repo = Repo("someone/retry", head, root, root / ".git")

    stats: Counter = Counter()
    everything = mine_commits.mine(repo, 400, stats)
    windowed = mine_commits.mine(repo, 400, Counter(), window_days=5 * 365)

    # Twelve years back still pairs, as long as the symbol is still there: legacyDelay is gone.
    assert [(p.query, p.targets[0].qualified_name) for p in everything] == [
        ("Stop retrying once the budget is spent", "shouldRetry"),
        ("Honour the server's date header when waiting", "computeDelay"),
    ]
    assert stats["commit_gold_gone_in_pinned"] == 1
    assert [p.query for p in windowed] == ["Stop retrying once the budget is spent"]


def test_a_change_deep_inside_a_huge_symbol_has_no_answer(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    git(root, "config", "user.email", "a@example.com")
    git(root, "config", "user.name", "A")
    body = "".join(f"  const v{i} = {i};\n" for i in range(mine_commits.MAX_TARGET_LINES))
    wrapper = f"export function runInContext() {{\n{body}  return v1;\n}}\n"
    commit(root, "chore: initial import", files={"src/retry.ts": RETRY, "src/lib.ts": wrapper})
    commit(root, "Treat the first constant as a counted value", {"src/lib.ts": ("const v0 = 0", "const v0 = 1")})
    commit(
        root,
        "Wait a little longer before the first attempt",
        {"src/lib.ts": ("const v1 = 1", "const v1 = 2"), "src/retry.ts": ("* 100", "* 150")},
    )
    stats: Counter = Counter()

    pairs = mine_commits.mine(
        Repo("someone/lib", git(root, "rev-parse", "HEAD").strip(), root, root / ".git"), 400, stats
    )

    # The huge wrapper is no answer: the first commit has none left, the second keeps computeDelay.
    assert [(p.query, [t.qualified_name for t in p.targets]) for p in pairs] == [
        ("Wait a little longer before the first attempt", ["computeDelay"])
    ]
    assert stats["commit_large_target_dropped"] == 2
