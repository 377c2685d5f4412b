"""The update bot's config (.github/renovate.json), checked offline: against Renovate's schema
(check-jsonschema's vendored copy), every key one that schema defines (it lets unknown keys
through, so a misspelt option would be silently ignored), and its managers against the files they
must keep current: both pyproject.toml files, the npm lock, both Dockerfiles' ARG-named bases and
the export stage's pins, the CI workflow's actions.

Whether Renovate opens the PRs it should is the forge's to show (the app installed on the
repository); the dependency dashboard it keeps lists what it found."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from tests.deploy import contract

CONFIG = contract.REPO / ".github" / "renovate.json"
DOCKERFILE = contract.REPO / "deploy" / "docker" / "python.Dockerfile"


@cache
def config() -> dict[str, Any]:
    return json.loads(CONFIG.read_text())


@cache
def schema() -> dict[str, Any]:
    vendored = resources.files("check_jsonschema.builtin_schemas.vendor") / "renovate.json"
    return json.loads(vendored.read_text())


def item_keys(definition: str) -> set[str]:
    """The keys an item of an array option (packageRules, customManagers) may have."""
    items = schema()["definitions"][definition]["items"]
    return {key for part in items.get("allOf", [items]) for key in part.get("properties", {})}


def test_the_config_is_valid_against_renovate_s_schema() -> None:
    done = subprocess.run([str(Path(sys.executable).parent / "check-jsonschema"), "--builtin-schema",
                           "vendor.renovate", str(CONFIG)], check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_key_is_an_option_renovate_defines() -> None:
    assert set(config()) - {"$schema"} <= set(schema()["properties"]), set(config()) - set(schema()["properties"])
    for option in ("packageRules", "customManagers"):
        for rule in config()[option]:
            assert set(rule) <= item_keys(option), sorted(set(rule) - item_keys(option))


def test_it_covers_pip_npm_docker_and_the_workflow_s_actions() -> None:
    assert set(config()["enabledManagers"]) == {"pep621", "npm", "dockerfile", "github-actions", "custom.regex"}
    for required in ("py_services/pyproject.toml", "gateway_mcp/pyproject.toml", "node_ts_service/package-lock.json",
                     "deploy/docker/python.Dockerfile", "deploy/docker/analysis.Dockerfile",
                     ".github/workflows/images.yml"):
        assert (contract.REPO / required).is_file(), required
    # The actions stay pinned by commit with their release in a comment (what test_workflows checks).
    assert "helpers:pinGitHubActionDigestsToSemver" in config()["extends"]
    # Both Dockerfiles name their base in an ARG, which Renovate's dockerfile manager follows; the
    # bases get their digests pinned.
    for dockerfile in ("python", "analysis"):
        text = (contract.REPO / "deploy" / "docker" / f"{dockerfile}.Dockerfile").read_text()
        assert re.search(r"^ARG (PYTHON|NODE)_IMAGE=\S+:\S+$", text, re.M) and "FROM ${" in text, dockerfile
    (digests,) = [r for r in config()["packageRules"] if r.get("pinDigests")]
    assert digests["matchManagers"] == ["dockerfile"]


def test_the_export_stage_s_pins_are_found_and_move_with_the_export_extra() -> None:
    (manager,) = config()["customManagers"]
    (pattern,) = manager["managerFilePatterns"]
    assert re.search(pattern.strip("/"), DOCKERFILE.relative_to(contract.REPO).as_posix())
    # Renovate's patterns are JavaScript's: a named group is (?<name>...), Python's (?P<name>...).
    python_pattern = manager["matchStrings"][0].replace("(?<", "(?P<")
    found = {m["depName"]: m["currentValue"] for m in re.finditer(python_pattern, DOCKERFILE.read_text())}
    export = tomllib.loads((contract.REPO / "py_services" / "pyproject.toml").read_text())["project"]
    pins = dict(pin.split("==") for pin in export["optional-dependencies"]["export"])
    assert found == pins
    (group,) = [r for r in config()["packageRules"] if set(r.get("matchPackageNames", [])) == set(pins)]
    assert group["groupName"]


def test_node_stays_on_lts_lines_and_python_on_3_11() -> None:
    rules = {tuple(r.get("matchPackageNames", [])): r for r in config()["packageRules"]}
    lts = re.compile(rules[("node",)]["allowedVersions"].strip("/"))
    assert [v for v in ("20.1.0", "22.0.0", "23.1.0", "24.21.0", "25.0.0", "26.0.0") if lts.search(v)] == [
        "20.1.0", "22.0.0", "24.21.0", "26.0.0"]
    assert rules[("python",)]["allowedVersions"] == "<3.12"
