"""The commit a checkout is at, read from the git directory's files (every sync asks), agrees with
`git rev-parse HEAD` in each layout a workspace has: a repository and a folder in it, packed
refs, a detached HEAD, a linked worktree, no commit yet, no repository."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codecompass.retrieval.index import layers


def git(cwd: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "PATH": "/usr/bin:/bin", "HOME": str(cwd)}
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True,
                          env=env).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "src" / "a.ts").write_text("export const a = 1;\n")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "one")
    (root / "src" / "a.ts").write_text("export const a = 2;\n")
    git(root, "commit", "-q", "-am", "two")
    return root


def never_asks_git(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args: object) -> str | None:
        raise AssertionError("git was asked")
    monkeypatch.setattr(layers, "_git", refuse)


def test_a_branch_in_loose_and_in_packed_refs_and_from_a_subfolder(repo: Path, monkeypatch) -> None:
    expected = git(repo, "rev-parse", "HEAD")
    never_asks_git(monkeypatch)
    assert layers.head_commit(repo) == expected
    assert layers.head_commit(repo / "src") == expected
    monkeypatch.undo()
    git(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    never_asks_git(monkeypatch)
    assert layers.head_commit(repo) == expected


def test_a_detached_head(repo: Path, monkeypatch) -> None:
    first = git(repo, "rev-parse", "HEAD~1")
    git(repo, "checkout", "-q", "--detach", first)
    never_asks_git(monkeypatch)
    assert layers.head_commit(repo) == first


def test_a_linked_worktree_on_its_own_branch(repo: Path, tmp_path: Path, monkeypatch) -> None:
    other = tmp_path / "other"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(other), "HEAD~1")
    (other / "b.ts").write_text("export const b = 1;\n")
    git(other, "add", ".")
    git(other, "commit", "-q", "-m", "three")
    expected = git(other, "rev-parse", "HEAD")
    assert expected != git(repo, "rev-parse", "HEAD")
    never_asks_git(monkeypatch)
    assert layers.head_commit(other) == expected


def test_no_commit_yet_and_no_repository(tmp_path: Path, monkeypatch) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    git(empty, "init", "-q")
    assert layers.head_commit(empty) is None  # git is asked, and has no commit either
    plain = tmp_path / "plain"
    plain.mkdir()
    never_asks_git(monkeypatch)
    assert layers.head_commit(plain) is None


def test_git_is_asked_when_the_environment_points_it_elsewhere(repo: Path, tmp_path: Path, monkeypatch) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.setenv("GIT_DIR", str(repo / ".git"))
    asked: list[tuple[str, ...]] = []
    monkeypatch.setattr(layers, "_git", lambda root, *args: asked.append(args) or None)
    assert layers.head_commit(plain) is None
    assert asked == [("rev-parse", "HEAD")]
