"""Checkouts of one repository (issue 30): each git worktree has an index of its own, and a new
one starts from the repository's base, so it costs only the files it changed. Real git, real
worktrees and branches, real services."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import lancedb
import pytest
from tests.conftest import SAMPLE_WORKSPACE

from codecompass.clients.errors import ServiceError
from codecompass.clients.retrieval import RetrievalClient
from codecompass.contracts.retrieval.model import SearchQuery
from codecompass.policy.ranking import ORIGIN_BASE, ORIGIN_CHECKOUT
from codecompass.retrieval.location import BASE, CHECKOUT, IndexRegistry, index_key, list_tables

REMOTE = "https://github.com/acme/shop.git"
REPOSITORY = "github.com/acme/shop"
# Defined on the feature branch only (which also removes src/auth/jwt.ts).
FEATURE_FUNCTION = "export function applyLoyaltyDiscount(total: number): number {\n  return total * 0.9;\n}\n"
BASE_WITHIN_S = 60.0


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture
def repository(tmp_path: Path) -> tuple[Path, Path]:
    """(main checkout, a worktree on branch `feature`): the feature adds a function to one file and
    removes another file."""
    main = tmp_path / "shop"
    shutil.copytree(SAMPLE_WORKSPACE, main)
    _git(main, "init", "-q", "-b", "main")
    _git(main, "config", "user.email", "dev@example.com")
    _git(main, "config", "user.name", "Dev")
    _git(main, "remote", "add", "origin", REMOTE)
    _git(main, "add", "-A")
    _git(main, "commit", "-q", "-m", "shop")
    feature = tmp_path / "shop-feature"
    _git(main, "worktree", "add", "-q", "-b", "feature", str(feature))
    with (feature / "src" / "utils" / "strings.ts").open("a", encoding="utf-8") as out:
        out.write("\n" + FEATURE_FUNCTION)
    (feature / "src" / "auth" / "jwt.ts").unlink()
    _git(feature, "commit", "-q", "-am", "loyalty discount")
    return main.resolve(), feature.resolve()


@pytest.fixture
def retrieval(start_python_service, analysis_server: str, tmp_path: Path,
              request: pytest.FixtureRequest) -> tuple[RetrievalClient, Path]:
    _, embedding = start_python_service("codecompass.embedding", {"CODECOMPASS_EMBEDDING_PROFILE": "code-static"})
    indexes = tmp_path / "indexes"
    _, address = start_python_service("codecompass.retrieval", {
        "ANALYSIS_ADDR": analysis_server, "EMBEDDING_ADDR": embedding, "CODECOMPASS_EMBEDDING_PROFILE": "code-static",
        "CODECOMPASS_RETRIEVAL_DB_URI": str(indexes), "CODECOMPASS_STATE_DIR": str(tmp_path / "state"),
        **getattr(request, "param", {})})
    client = RetrievalClient(address)
    yield client, indexes
    client.close()


def _index(client: RetrievalClient, root: Path):
    reports = list(client.index(str(root), wait_for_embeddings=True, timeout_s=300))
    assert reports and reports[-1].stats is not None
    return reports[-1].stats


def _names(client: RetrievalClient, root: Path, query: str) -> list[str]:
    outcome = client.search(SearchQuery(workspace_root=str(root), query=query, limit=10), 30)
    return [r.chunk.name for r in outcome.results]


def _registry(indexes: Path):
    return IndexRegistry(str(indexes), {}).entries()


def _wait_for_base(indexes: Path) -> list:
    deadline = time.monotonic() + BASE_WITHIN_S
    while not (bases := [e for e in _registry(indexes) if e.kind == BASE]):
        assert time.monotonic() < deadline, _registry(indexes)
        time.sleep(0.2)
    return bases


def _versions(folder: Path) -> dict[str, int]:
    db = lancedb.connect(str(folder))
    return {name: db.open_table(name).version for name in list_tables(db)}


def test_two_worktrees_keep_an_index_each_and_never_answer_from_the_other_branch(
        retrieval: tuple[RetrievalClient, Path], repository: tuple[Path, Path]) -> None:
    client, indexes = retrieval
    main, feature = repository
    _index(client, main)
    _index(client, feature)
    checkouts = [e for e in _registry(indexes) if e.kind == CHECKOUT]
    assert sorted(e.root for e in checkouts) == sorted([str(main), str(feature)])
    assert {e.workspace_id for e in checkouts if e.root == str(main)} == {REPOSITORY}
    (feature_id,) = {e.workspace_id for e in checkouts if e.root == str(feature)}
    assert feature_id.startswith(f"{REPOSITORY}@checkout-")

    # Alternating syncs write nothing: neither rewrites the other's rows.
    for root in (main, feature, main, feature):
        outcome = client.sync(str(root), 30_000, 60)
        assert outcome.finished and outcome.stats is not None
        assert (outcome.stats.chunks_upserted, outcome.stats.chunks_deleted) == (0, 0), (root, outcome.stats)

    # Each answers from its own branch.
    assert "applyLoyaltyDiscount" in _names(client, feature, "applyLoyaltyDiscount")
    assert "applyLoyaltyDiscount" not in _names(client, main, "applyLoyaltyDiscount")
    jwt_names = {"decodeJwt", "signHs256", "verifySignature"}
    assert jwt_names & set(_names(client, main, "decodeJwt signHs256"))
    assert not jwt_names & set(_names(client, feature, "decodeJwt signHs256"))
    # The ids are kept: the main checkout's index is still the repository's.
    assert client.status(str(main), 10).files > 0
    assert {e.key for e in _registry(indexes) if e.kind == CHECKOUT} == {index_key(REPOSITORY),
                                                                          index_key(feature_id)}


def test_a_new_worktree_starts_from_the_base_and_costs_only_its_diff(
        retrieval: tuple[RetrievalClient, Path], repository: tuple[Path, Path]) -> None:
    client, indexes = retrieval
    main, feature = repository
    first = _index(client, main)
    assert first.files_added > 10
    (base,) = _wait_for_base(indexes)
    head = _git(main, "rev-parse", "HEAD").strip()
    assert (base.commit, base.workspace_id, base.base) == (head, f"{REPOSITORY}@{head[:12]}", index_key(REPOSITORY))
    base_folder = indexes / base.key
    before = _versions(base_folder)

    stats = _index(client, feature)
    # One file changed, one removed: nothing else is chunked or embedded again.
    assert (stats.files_added, stats.files_changed, stats.files_removed) == (0, 1, 1), stats
    assert stats.chunks_embedded <= stats.chunks_upserted <= 6, stats  # strings.ts: 4 functions, its file card
    (entry,) = [e for e in _registry(indexes) if e.kind == CHECKOUT and e.root == str(feature)]
    assert entry.base == base.key and entry.commit == head
    assert "applyLoyaltyDiscount" not in _names(client, main, "applyLoyaltyDiscount")
    # Results say where they came from: this worktree's change, or the base at its commit.
    changed = client.search(SearchQuery(workspace_root=str(feature), query="applyLoyaltyDiscount", limit=5), 30)
    assert changed.metadata.base_commit == head
    assert (changed.results[0].chunk.name, changed.results[0].origin) == ("applyLoyaltyDiscount", ORIGIN_CHECKOUT)
    same = client.search(SearchQuery(workspace_root=str(feature), query="retryWithBackoff", limit=5), 30)
    assert (same.results[0].chunk.relative_path, same.results[0].origin) == ("src/utils/retry.ts", ORIGIN_BASE)
    plain = client.search(SearchQuery(workspace_root=str(main), query="retryWithBackoff", limit=5), 30)
    assert (plain.metadata.base_commit, plain.results[0].origin) == ("", "")
    # ListIndexes shows the base and what uses it; a base in use is not dropped.
    listed = {i.workspace_id: i for i in client.list_indexes(30)}
    assert listed[base.workspace_id].kind == "base" and listed[base.workspace_id].used_by == (entry.workspace_id,)
    assert listed[entry.workspace_id].base_workspace_id == base.workspace_id
    assert listed[entry.workspace_id].status.base_commit == head
    with pytest.raises(ServiceError, match="drop them first"):
        client.drop_index(30, workspace_id=base.workspace_id)
    # The base is never written by a checkout's sync, and outlives a checkout's index dropped.
    assert _versions(base_folder) == before
    client.drop_index(30, workspace_root=str(feature))
    assert _versions(base_folder) == before
    assert lancedb.connect(str(base_folder)).open_table("catalog").count_rows() > 0




def test_a_dirty_checkout_writes_no_base(retrieval: tuple[RetrievalClient, Path],
                                         repository: tuple[Path, Path]) -> None:
    client, indexes = retrieval
    main, _ = repository
    (main / "src" / "utils" / "scratch.ts").write_text("export const scratch = 1;\n", encoding="utf-8")
    _index(client, main)
    time.sleep(2)
    assert [e for e in _registry(indexes) if e.kind == BASE] == []


def test_gc_drops_a_base_with_the_last_checkout_of_its_repository(
        retrieval: tuple[RetrievalClient, Path], repository: tuple[Path, Path], run_cli,
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    client, indexes = retrieval
    main, feature = repository
    _index(client, main)
    (base,) = _wait_for_base(indexes)
    _index(client, feature)
    monkeypatch.setenv("RETRIEVAL_ADDR", client.address)
    monkeypatch.setenv("CODECOMPASS_STATE_DIR", str(tmp_path / "cli"))

    status = run_cli("status")
    assert f"base of {REPOSITORY} at {base.commit[:12]}, used by 1 checkout" in status.out
    assert f", from the base at {base.commit[:12]}" in status.out

    _git(main, "worktree", "remove", "--force", str(feature))
    first = run_cli("gc")
    assert first.code == 0, first.err
    assert any(line.startswith("removed") and line.endswith(f"{feature} (workspace no longer exists)")
               for line in first.out.splitlines())
    assert any(line.startswith("kept") and line.endswith(f"{base.workspace_id} (used by 1)")
               for line in first.out.splitlines())  # listed before the checkout went
    assert (indexes / base.key).is_dir()

    shutil.rmtree(main)
    second = run_cli("gc")
    assert second.code == 0, second.err
    assert any(line.startswith("removed") and line.endswith(f"{base.workspace_id} (no checkout of its repository "
                                                              "is left)") for line in second.out.splitlines())
    assert [e for e in _registry(indexes)] == []


@pytest.mark.parametrize("retrieval", [{"CODECOMPASS_RETRIEVAL_CHECKOUT_BASES": "false"}], indirect=True)
def test_with_bases_off_each_checkout_is_indexed_from_its_files(retrieval: tuple[RetrievalClient, Path],
                                                                 repository: tuple[Path, Path]) -> None:
    client, indexes = retrieval
    main, feature = repository
    first = _index(client, main)
    time.sleep(2)
    assert [e for e in _registry(indexes) if e.kind == BASE] == []
    assert _index(client, feature).files_added == first.files_added - 1  # jwt.ts removed on the branch


def test_on_object_storage_a_new_worktree_starts_from_the_base_too(
        start_python_service, analysis_server: str, repository: tuple[Path, Path], s3, tmp_path: Path) -> None:
    """The index root is an s3:// prefix (a local S3 server as a real process): the base is a copy
    of the checkout's tables in the bucket, and the worktree's index a shallow clone of it there."""
    main, feature = repository
    _, embedding = start_python_service("codecompass.embedding", {"CODECOMPASS_EMBEDDING_PROFILE": "code-static"})
    uri = s3.uri("indexes")
    _, address = start_python_service("codecompass.retrieval", {
        "ANALYSIS_ADDR": analysis_server, "EMBEDDING_ADDR": embedding, "CODECOMPASS_EMBEDDING_PROFILE": "code-static",
        "CODECOMPASS_RETRIEVAL_DB_URI": uri, "CODECOMPASS_STATE_DIR": str(tmp_path / "state"),
        "CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS": json.dumps(s3.storage_options)})
    client = RetrievalClient(address)
    try:
        _index(client, main)
        deadline = time.monotonic() + BASE_WITHIN_S
        while not (bases := [e for e in IndexRegistry(uri, s3.storage_options).entries() if e.kind == BASE]):
            assert time.monotonic() < deadline, IndexRegistry(uri, s3.storage_options).entries()
            time.sleep(0.2)
        (base,) = bases
        stats = _index(client, feature)
        assert (stats.files_added, stats.files_changed, stats.files_removed) == (0, 1, 1), stats
        (entry,) = [e for e in IndexRegistry(uri, s3.storage_options).entries()
                    if e.kind == CHECKOUT and e.root == str(feature)]
        assert entry.base == base.key
        found = client.search(SearchQuery(workspace_root=str(feature), query="applyLoyaltyDiscount", limit=5), 30)
        assert (found.results[0].chunk.name, found.results[0].origin) == ("applyLoyaltyDiscount", ORIGIN_CHECKOUT)
        same = client.search(SearchQuery(workspace_root=str(feature), query="retryWithBackoff", limit=5), 30)
        assert (same.results[0].chunk.relative_path, same.results[0].origin) == ("src/utils/retry.ts", ORIGIN_BASE)
        assert "applyLoyaltyDiscount" not in _names(client, main, "applyLoyaltyDiscount")
        # The worktree, clean at its branch's commit, writes a base of its own from its copy.
        feature_head = _git(feature, "rev-parse", "HEAD").strip()
        while not [e for e in IndexRegistry(uri, s3.storage_options).entries() if e.commit == feature_head
                   and e.kind == BASE]:
            assert time.monotonic() < deadline + BASE_WITHIN_S, IndexRegistry(uri, s3.storage_options).entries()
            time.sleep(0.2)
    finally:
        client.close()
