"""Workspace root detection and the service start order."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from codecompass_cli.errors import CliError
from codecompass_cli.services import SERVICES, ServiceDef, needed, start_waves
from codecompass_cli.workspace import find_workspace_root, resolve_target

from codecompass.common.config import load_settings


def _tree(tmp_path: Path) -> Path:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "repo" / "packages" / "web" / "src").mkdir(parents=True)
    (tmp_path / "repo" / "packages" / "web" / "package.json").write_text("{}")
    (tmp_path / "repo" / "packages" / "web" / "src" / "app.tsx").write_text("export const App = () => null;\n")
    (tmp_path / "repo" / "tools").mkdir()
    (tmp_path / "repo" / "tools" / "gen.js").write_text("module.exports = {};\n")
    (tmp_path / "loose").mkdir()
    return tmp_path


def test_nearest_marker_wins(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    assert find_workspace_root(root / "repo/packages/web/src/app.tsx") == root / "repo/packages/web"
    assert find_workspace_root(root / "repo/tools/gen.js") == root / "repo"
    assert find_workspace_root(root / "loose") == root / "loose"


def test_resolve_target_gives_root_and_relative_path(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    assert resolve_target(str(root / "repo/packages/web/src/app.tsx"), None) == (
        root / "repo/packages/web", "src/app.tsx")
    assert resolve_target(str(root / "repo/tools"), str(root / "repo")) == (root / "repo", "tools")
    assert resolve_target(str(root / "repo"), None) == (root / "repo", ".")


def test_paths_outside_the_workspace_and_missing_paths_are_usage_errors(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    with pytest.raises(CliError, match="outside the workspace") as excinfo:
        resolve_target(str(root / "loose"), str(root / "repo"))
    assert excinfo.value.exit_code == 2
    with pytest.raises(CliError, match="no such file or folder") as excinfo:
        resolve_target(str(root / "nope.ts"), None)
    assert excinfo.value.exit_code == 2


def test_services_start_in_dependency_waves() -> None:
    waves = [[svc.name for svc in wave] for wave in start_waves(SERVICES)]
    assert waves == [["analysis", "embedding", "rerank"], ["retrieval", "selection"]]


def test_services_whose_needs_have_known_addresses_start_with_them() -> None:
    every = {svc.name for svc in SERVICES}
    assert [[svc.name for svc in wave] for wave in start_waves(SERVICES, known=every)] == [
        ["analysis", "embedding", "retrieval", "rerank", "selection"]]
    # Only the analysis service's port known: retrieval still waits for the embedding service.
    assert [[svc.name for svc in wave] for wave in start_waves(SERVICES, known={"analysis"})] == [
        ["analysis", "embedding", "rerank", "selection"], ["retrieval"]]


def test_a_dependency_cycle_is_reported() -> None:
    def argv() -> list[str]:
        return []

    cycle = (ServiceDef("a", argv, "x", needs=("b",)), ServiceDef("b", argv, "y", needs=("a",)))
    with pytest.raises(ValueError, match="cycle"):
        start_waves(cycle)


def test_the_rerank_service_runs_only_when_a_query_can_use_a_model_reranker() -> None:
    local = load_settings()
    assert [svc.name for svc in needed(local)] == ["analysis", "embedding", "retrieval", "selection"]
    for rerank in (dataclasses.replace(local.rerank, provider="voyage"),
                   dataclasses.replace(local.rerank, external_provider_enabled=True,
                                       allow_code_payload_to_external=True)):
        assert "rerank" in [svc.name for svc in needed(dataclasses.replace(local, rerank=rerank))]
    # One gate open is still closed: no query can reach a model reranker.
    one_gate = dataclasses.replace(local.rerank, external_provider_enabled=True)
    assert "rerank" not in [svc.name for svc in needed(dataclasses.replace(local, rerank=one_gate))]
