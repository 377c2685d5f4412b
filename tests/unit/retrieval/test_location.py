"""Workspace ids: the repository's remote and the path inside it, whatever folder or user the
clone is in; a configured id; else the local path, keyed as indexes were before ids."""

from __future__ import annotations

import hashlib
import os
import re
import time
from pathlib import Path

import pytest

from codecompass.common.config import settings_from
from codecompass.contracts.retrieval.errors import InvalidWorkspace
from codecompass.retrieval.location import (
    IndexRegistry,
    InvalidWorkspaceId,
    index_key,
    index_root,
    normalised_remote,
    validated_id,
    validated_root,
    workspace_id_for,
    workspace_id_of,
)


@pytest.mark.parametrize(("url", "expected"), [
    ("git@github.com:Acme/api.git", "github.com/Acme/api"),
    ("https://alice:s3cret@GitHub.com/Acme/api.git/", "github.com/Acme/api"),
    ("ssh://git@gitlab.example.com:2222/group/sub/api.git", "gitlab.example.com/group/sub/api"),
    ("git://example.org/tools/x", "example.org/tools/x"),
    ("/srv/git/api.git", None),
    ("file:///srv/git/api.git", None),
    ("../api", None),
])
def test_remotes_are_normalised_without_credentials_or_ports(url: str, expected: str | None) -> None:
    assert normalised_remote(url) == expected


def _clone(folder: Path, url: str) -> Path:
    (folder / ".git").mkdir(parents=True)
    (folder / ".git" / "config").write_text(
        f'[core]\n\tbare = false\n[remote "upstream"]\n\turl = https://example.org/fork/api\n'
        f'[remote "origin"]\n\turl = {url}\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n', encoding="utf-8")
    return folder


def test_two_clones_in_different_folders_share_one_id_and_key(tmp_path: Path) -> None:
    alice = _clone(tmp_path / "home" / "alice" / "work" / "api", "git@github.com:acme/api.git")
    bob = _clone(tmp_path / "srv" / "checkouts" / "api-main", "https://github.com/acme/api")
    (alice / "packages" / "core").mkdir(parents=True)
    (bob / "packages" / "core").mkdir(parents=True)
    assert workspace_id_of(alice) == workspace_id_of(bob) == "github.com/acme/api"
    assert workspace_id_of(alice / "packages" / "core") == "github.com/acme/api#packages/core"
    assert index_key(workspace_id_of(alice / "packages" / "core")) == index_key(
        workspace_id_of(bob / "packages" / "core"))


def test_a_worktree_reads_its_repository_s_config(tmp_path: Path) -> None:
    main = _clone(tmp_path / "main", "git@github.com:acme/api.git")
    (main / ".git" / "worktrees" / "feature").mkdir(parents=True)
    (main / ".git" / "worktrees" / "feature" / "commondir").write_text("../..\n", encoding="utf-8")
    tree = tmp_path / "feature"
    tree.mkdir()
    (tree / ".git").write_text(f"gitdir: {main / '.git' / 'worktrees' / 'feature'}\n", encoding="utf-8")
    assert workspace_id_of(tree) == "github.com/acme/api"


def test_a_remote_changed_in_the_config_changes_the_id_at_once(tmp_path: Path) -> None:
    # The config is parsed once per version of the file (its time and size), read again when either
    # changed, and always while it is too recent for its time to tell two versions apart.
    clone = _clone(tmp_path / "api", "git@github.com:acme/api.git")
    config = clone / ".git" / "config"
    an_hour_ago = time.time() - 3600
    os.utime(config, (an_hour_ago, an_hour_ago))
    assert workspace_id_of(clone) == workspace_id_of(clone) == "github.com/acme/api"
    # The same size, another time.
    config.write_text(config.read_text(encoding="utf-8").replace("acme/api", "acme/app"), encoding="utf-8")
    os.utime(config, (an_hour_ago + 1, an_hour_ago + 1))
    assert workspace_id_of(clone) == "github.com/acme/app"
    # Written just now, the same size again: too recent to be told apart by its time.
    config.write_text(config.read_text(encoding="utf-8").replace("acme/app", "acme/web"), encoding="utf-8")
    assert workspace_id_of(clone) == "github.com/acme/web"
    config.write_text(config.read_text(encoding="utf-8").replace("acme/web", "acme/api"), encoding="utf-8")
    assert workspace_id_of(clone) == "github.com/acme/api"
    config.write_text("[core]\n\tbare = false\n", encoding="utf-8")
    assert workspace_id_of(clone) == f"local:{clone}"


def test_without_a_remote_the_id_is_the_local_path_and_the_key_the_old_one(tmp_path: Path) -> None:
    folder = tmp_path / "scratch"
    folder.mkdir()
    assert workspace_id_of(folder) == f"local:{folder}"
    # The key indexes had before workspace ids: a digest of the path.
    assert index_key(workspace_id_of(folder)) == hashlib.sha256(str(folder).encode()).hexdigest()[:32]
    local_only = _clone(tmp_path / "local-only", "/srv/git/api.git")
    assert workspace_id_of(local_only) == f"local:{local_only}"


def test_a_configured_id_wins_and_is_validated(tmp_path: Path) -> None:
    assert workspace_id_of(tmp_path, "team/api") == "team/api"
    for bad, why in (("", "must not be empty"), ("x" * 201, "at most 200"), ("a\nb", "printable ASCII")):
        with pytest.raises(InvalidWorkspaceId, match=why):
            validated_id(bad)


@pytest.mark.parametrize(("root", "said"), [
    ("/tmp\x00/x", "workspace_root contains a NUL character (at position 4)"),
    ("/" + "p" * 100_000, "workspace_root is 100,001 characters long, over the limit of 4,096"),
    ("/tmp/" + "n" * 300, "workspace_root has a file or folder name of 300 bytes, over the 255"),
    ("r" * 5_000, "workspace_root is 5,000 characters long"),
])
def test_a_root_no_file_system_holds_is_an_invalid_workspace_in_one_line(root: str, said: str) -> None:
    # Before: "does not exist" with the NUL printed raw, or an internal error (ENAMETOOLONG).
    with pytest.raises(InvalidWorkspace, match=re.escape(said)) as raised:
        validated_root(root)
    assert len(str(raised.value)) < 300


def test_a_recorded_checkout_id_is_read_from_the_registry_once_and_forgotten_when_dropped(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = settings_from({"CODECOMPASS_STATE_DIR": str(tmp_path / "state")})
    main = _clone(tmp_path / "main", "git@github.com:acme/shop.git")
    other = _clone(tmp_path / "other", "git@github.com:acme/shop.git")
    registry = IndexRegistry(index_root(settings), {})
    registry.register(index_key("github.com/acme/shop"), "github.com/acme/shop", str(main))
    read = []
    entries = IndexRegistry.entries
    monkeypatch.setattr(IndexRegistry, "entries", lambda self: read.append(1) or entries(self))

    mine = workspace_id_for(settings, other)
    assert mine.startswith("github.com/acme/shop@checkout-")
    assert len(read) == 1  # not recorded yet: read again until a sync registers it
    workspace_id_for(settings, other)
    assert len(read) == 2
    registry.register(index_key(mine), mine, str(other))
    assert [workspace_id_for(settings, other) for _ in range(3)] == [mine] * 3
    assert workspace_id_for(settings, main) == "github.com/acme/shop"
    assert len(read) == 4  # each checkout's recorded id read once, then kept

    registry.unregister(index_key(mine))
    workspace_id_for(settings, other)
    assert len(read) == 5
