"""A monorepo's packages as the workspace's manifests declare them (issue 30 §2)."""

from __future__ import annotations

import json
from pathlib import Path

from codecompass_gateway.packages import Package, package_of, packages_of


def _package(root: Path, folder: str, name: str | None) -> None:
    (root / folder).mkdir(parents=True)
    (root / folder / "package.json").write_text(json.dumps({"name": name} if name else {}), encoding="utf-8")


def test_npm_yarn_pnpm_lerna_and_tsconfig_references_declare_packages(tmp_path: Path) -> None:
    (tmp_path / "package.json").write_text(json.dumps({"workspaces": {"packages": ["packages/*", "!packages/skip"]}}),
                                           encoding="utf-8")
    (tmp_path / "pnpm-workspace.yaml").write_text("packages:\n  - 'apps/**'\n", encoding="utf-8")
    (tmp_path / "lerna.json").write_text(json.dumps({"packages": ["tools/cli"]}), encoding="utf-8")
    (tmp_path / "tsconfig.json").write_text(json.dumps({"references": [{"path": "./libs/shared/tsconfig.json"}]}),
                                            encoding="utf-8")
    _package(tmp_path, "packages/core", "@acme/core")
    _package(tmp_path, "packages/skip", "@acme/skip")
    _package(tmp_path, "apps/web", "@acme/web")
    _package(tmp_path, "apps/web/node_modules/left-pad", "left-pad")  # installed, not declared
    _package(tmp_path, "apps/admin/panel", None)  # no name: named by its folder
    _package(tmp_path, "tools/cli", "acme-cli")
    _package(tmp_path, "libs/shared", "@acme/shared")
    assert packages_of(tmp_path) == (
        Package("apps/admin/panel", "apps/admin/panel"), Package("@acme/web", "apps/web"),
        Package("@acme/shared", "libs/shared"), Package("@acme/core", "packages/core"),
        Package("acme-cli", "tools/cli"))


def test_broken_or_absent_manifests_and_escaping_globs_declare_nothing(tmp_path: Path) -> None:
    assert packages_of(tmp_path) == ()
    (tmp_path / "package.json").write_text("{not json", encoding="utf-8")
    (tmp_path / "pnpm-workspace.yaml").write_text("packages: [unclosed", encoding="utf-8")
    assert packages_of(tmp_path) == ()
    (tmp_path / "package.json").write_text(json.dumps({"workspaces": ["../outside/*", "/etc", 7]}), encoding="utf-8")
    assert packages_of(tmp_path) == ()


def test_a_file_belongs_to_the_deepest_package_holding_it() -> None:
    packages = (Package("@acme/web", "apps/web"), Package("@acme/web-admin", "apps/web/admin"))
    assert package_of("apps/web/admin/src/x.ts", packages) == packages[1]
    assert package_of("apps/web/src/x.ts", packages) == packages[0]
    assert package_of("apps/webby/src/x.ts", packages) is None
    assert package_of("README.md", ()) is None
