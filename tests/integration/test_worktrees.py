"""Checkouts of one repository (issue 30): each git worktree has an index of its own, and a new
one starts from the repository's base, so it costs only the files it changed. Real git, real
worktrees and branches, real services."""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import lancedb
import pytest
from tests.conftest import SAMPLE_WORKSPACE

from codecompass.clients.retrieval import RetrievalClient
from codecompass.contracts.retrieval.model import SearchQuery
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
def retrieval(start_python_service, analysis_server: str, tmp_path: Path) -> tuple[RetrievalClient, Path]:
    _, embedding = start_python_service("codecompass.embedding", {"CODECOMPASS_EMBEDDING_PROFILE": "code-static"})
    indexes = tmp_path / "indexes"
    _, address = start_python_service("codecompass.retrieval", {
        "ANALYSIS_ADDR": analysis_server, "EMBEDDING_ADDR": embedding, "CODECOMPASS_EMBEDDING_PROFILE": "code-static",
        "CODECOMPASS_RETRIEVAL_DB_URI": str(indexes), "CODECOMPASS_STATE_DIR": str(tmp_path / "state"),
        "CODECOMPASS_RETRIEVAL_CHECKOUT_BASES": "1"})
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


def test_a_dirty_checkout_writes_no_base(retrieval: tuple[RetrievalClient, Path],
                                         repository: tuple[Path, Path]) -> None:
    client, indexes = retrieval
    main, _ = repository
    (main / "src" / "utils" / "scratch.ts").write_text("export const scratch = 1;\n", encoding="utf-8")
    _index(client, main)
    time.sleep(2)
    assert [e for e in _registry(indexes) if e.kind == BASE] == []
