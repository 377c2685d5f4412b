"""The CI workflow that builds, tests, publishes and signs the images (.github/workflows/images.yml),
checked offline: against the GitHub Actions workflow schema (check-jsonschema's vendored copy), by
zizmor's audits (pedantic: injection through `${{ }}` in scripts, credentials left in the checkout,
permissions, unpinned actions, ...), and against what it must do: both images for amd64 and arm64,
pushed by digest to the project's own registry, `docker compose up --wait` over those images, one
MCP call with the gateway's token, and only then tags and a keyless signature on each digest.

What no check here can show is that it runs: the actions' inputs, the registry, QEMU, cosign and
Sigstore are the forge's. (actionlint, which type-checks expressions, installs from PyPI only by
downloading its binary from GitHub; the expression references it would catch are checked below.)
"""

from __future__ import annotations

import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from tests.deploy import contract

WORKFLOWS = contract.REPO / ".github" / "workflows"
IMAGES = WORKFLOWS / "images.yml"
# Every workflow of the repository: a new one is added here, and so gets every check below.
WORKFLOW_FILES = (IMAGES,)
BIN = Path(sys.executable).parent
PLATFORMS = {"linux/amd64", "linux/arm64"}
DOCKERFILES = {"deploy/docker/python.Dockerfile": "python", "deploy/docker/analysis.Dockerfile": "analysis"}
SHA_PIN = re.compile(r"^\s*(?:-\s+)?uses:\s+([\w.-]+/[\w./-]+)@([0-9a-f]{40}) # v\d+\.\d+\.\d+\s*$")


@cache
def workflow() -> dict[str, Any]:
    # PyYAML reads a bare `on` as the boolean True (YAML 1.1).
    return yaml.safe_load(IMAGES.read_text())


def jobs() -> dict[str, dict[str, Any]]:
    return workflow()["jobs"]


def steps(job: str) -> list[dict[str, Any]]:
    return jobs()[job]["steps"]


def uses(job: str, action: str) -> list[dict[str, Any]]:
    return [step for step in steps(job) if step.get("uses", "").startswith(action + "@")]


def runs(job: str) -> str:
    return "\n".join(step.get("run", "") for step in steps(job))


def test_every_workflow_is_one_these_tests_check() -> None:
    assert sorted(WORKFLOWS.glob("*")) == list(WORKFLOW_FILES)


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_each_workflow_is_valid_against_the_schema(path: Path) -> None:
    done = subprocess.run([str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(path)],
                          check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_zizmor_finds_nothing_even_pedantic() -> None:
    done = subprocess.run([str(BIN / "zizmor"), "--offline", "--no-progress", "--pedantic", str(WORKFLOWS)],
                          check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "No findings to report" in done.stdout, done.stdout + done.stderr


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.name)
def test_every_action_is_pinned_by_commit_with_its_release_named(path: Path) -> None:
    lines = [line for line in path.read_text().splitlines() if re.match(r"^\s*(-\s+)?uses:", line)]
    assert lines
    unpinned = [line.strip() for line in lines if not SHA_PIN.match(line)]
    assert not unpinned, unpinned


def test_expressions_name_only_jobs_steps_and_outputs_that_exist() -> None:
    text = IMAGES.read_text()
    for job, name in re.findall(r"needs\.([\w-]+)\.outputs\.([\w-]+)", text):
        assert name in jobs()[job].get("outputs", {}), f"needs.{job}.outputs.{name}"
    for name, job in jobs().items():
        needs = job.get("needs", [])
        needs = [needs] if isinstance(needs, str) else needs
        assert set(needs) <= set(jobs()), name
        body = yaml.safe_dump(job)
        assert set(re.findall(r"needs\.([\w-]+)\.", body)) <= set(needs), name
        ids = {step["id"] for step in job["steps"] if "id" in step}
        assert set(re.findall(r"steps\.([\w-]+)\.", body)) <= ids, name


def test_permissions_are_none_by_default_and_each_job_asks_for_its_own() -> None:
    assert workflow()["permissions"] == {}
    asked = {name: job.get("permissions", {}) for name, job in jobs().items()}
    assert asked == {"build": {"contents": "read", "packages": "write"},
                     "smoke": {"contents": "read", "packages": "read"},
                     "release": {"packages": "write", "id-token": "write"}}
    for name in asked:
        for checkout in uses(name, "actions/checkout"):
            assert checkout["with"]["persist-credentials"] is False, name


def test_both_images_are_built_for_amd64_and_arm64_and_pushed_by_digest() -> None:
    assert uses("build", "docker/setup-qemu-action") and uses("build", "docker/setup-buildx-action")
    builds = {step["with"]["file"]: step["with"] for step in uses("build", "docker/build-push-action")}
    assert set(builds) == set(DOCKERFILES)
    for dockerfile, options in builds.items():
        assert set(options["platforms"].split(",")) == PLATFORMS, dockerfile
        output = dict(part.split("=", 1) for part in options["outputs"].split(","))
        # The project's own registry, under the name compose and the manifests give the image.
        assert output["name"] == f"${{{{ steps.names.outputs.prefix }}}}/{DOCKERFILES[dockerfile]}", dockerfile
        assert (output["type"], output["push-by-digest"], output["name-canonical"]) == ("image", "true", "true")
        assert output["push"] == "${{ steps.names.outputs.push }}" and "tags" not in options
        assert options["provenance"] == "mode=max" and options["sbom"] is True
    assert 'prefix=ghcr.io/${OWNER,,}/codecompass"' in runs("build")
    assert "echo \"push=${PUSH}\"" in runs("build")
    names = next(step for step in steps("build") if step.get("id") == "names")
    assert names["env"]["PUSH"] == "${{ github.event_name == 'push' }}"
    # A push comes from main or a version tag; pull requests build without pushing.
    assert workflow()[True] == {"push": {"branches": ["main"], "tags": ["v*"]}, "pull_request": None}


def test_the_smoke_test_starts_compose_with_wait_and_calls_the_gateway_with_its_token() -> None:
    assert jobs()["smoke"]["needs"] == "build"
    compose = yaml.safe_load((contract.REPO / "deploy" / "compose.yaml").read_text())
    # Images under the names compose runs: localhost/codecompass/<image>:${CODECOMPASS_VERSION}.
    version = jobs()["smoke"]["env"]["CODECOMPASS_VERSION"]
    for service in compose["services"].values():
        assert service["image"].startswith("localhost/codecompass/")
        assert service["image"].endswith(":${CODECOMPASS_VERSION:-0.1.0}")
    loaded = {step["with"]["tags"] for step in uses("smoke", "docker/build-push-action")}
    assert loaded == {f"localhost/codecompass/{image}:{version}" for image in DOCKERFILES.values()}
    assert 'docker tag "${PREFIX}/${image}@${!digest_var}" "localhost/codecompass/${image}:${CODECOMPASS_VERSION}"' \
        in runs("smoke")
    # The token file compose mounts as the gateway's secret, made as docs/deploy.md makes it.
    (up,) = [step for step in steps("smoke") if "docker compose up" in step.get("run", "")]
    token_file = compose["secrets"]["gateway-token"]["file"].rpartition(":-")[2].rstrip("}").removeprefix("./")
    assert up["working-directory"] == "deploy"
    assert f"(umask 022; openssl rand -hex 32 > {token_file})" in up["run"]
    assert "docker compose up --wait --wait-timeout 600 --no-build --pull never" in up["run"]
    (call,) = [step for step in steps("smoke") if "mcp_smoke.py" in step.get("run", "")]
    command = " ".join(call["run"].replace("\\\n", " ").split())
    url = f"http://127.0.0.1:{contract.gateway_port()}{contract.gateway_http_path()}"
    assert f'"${{PWD}}/deploy/{token_file}:/smoke/gateway-token:ro"' in command
    assert f"--url {url} --token-file /smoke/gateway-token" in command
    # The path the answer must name is in the folder compose serves (deploy/.env).
    expected = re.search(r"--expect (\S+)", command)
    assert expected is not None
    served = next(line.partition("=")[2] for line in (contract.REPO / "deploy" / ".env").read_text().splitlines()
                  if line.startswith("CODECOMPASS_WORKSPACES_DIR="))
    assert (contract.REPO / "deploy" / served / expected.group(1)).is_file()
    assert [step["run"] for step in steps("smoke") if step.get("if") == "always()"] == [
        "docker compose down --volumes --timeout 60"]


def test_only_tested_digests_are_tagged_and_the_signature_is_on_the_digest() -> None:
    release = jobs()["release"]
    assert release["needs"] == ["build", "smoke"] and release["if"] == "github.event_name == 'push'"
    assert uses("release", "sigstore/cosign-installer")
    script = runs("release")
    assert 'ref="${PREFIX}/${image}@${!digest_var}"' in script
    assert 'docker buildx imagetools create --tag "${PREFIX}/${image}:${tag}" "${ref}"' in script
    (sign,) = [line.strip() for line in script.splitlines() if line.strip().startswith("cosign")]
    assert sign == 'cosign sign --yes --recursive "${ref}"'
    assert '"| codecompass/${image} | \\`${ref}\\` |" >> "$GITHUB_STEP_SUMMARY"' in script
    for image in DOCKERFILES.values():
        assert release["env"][f"{image.upper()}_DIGEST"] == f"${{{{ needs.build.outputs.{image} }}}}"
        assert jobs()["build"]["outputs"][image] == f"${{{{ steps.{image}.outputs.digest }}}}"
