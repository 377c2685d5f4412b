"""The client packages as a program gets them (issue 31 §3): the Python wheel installed in a fresh
virtual environment (its dependencies from the package index) and the npm tarball installed in a
fresh Node project, each running its quickstart example against real services: index a folder
while following the progress stream, search it, read the best symbol, the index status, and an
error as one line. The Python environment must hold none of the services' heavy packages, and
none of the services' own code."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from tests.conftest import SAMPLE_WORKSPACE

ROOT = Path(__file__).resolve().parents[2]
CLIENT_PY = ROOT / "clients" / "python"
CLIENT_TS = ROOT / "clients" / "typescript"
VERSION = (ROOT / "protos" / "VERSION").read_text().strip()
# The services' packages: a client installation that pulls any of them is no client package.
HEAVY = ("lancedb", "pylance", "pyarrow", "torch", "onnxruntime", "lightgbm", "transformers",
         "sentence-transformers", "opentelemetry-sdk", "prometheus-client", "codecompass")
QUERY = "validate token"

pytestmark = pytest.mark.slow
# Setting up the stack (~40 s), an install from the package index and a cold index of the sample
# workspace: about 100 s on two cores, near the suite's 120 s default once the machine is loaded.
INSTALL_AND_RUN = pytest.mark.timeout(300)


def _run(argv: list[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 240
         ) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, \
        f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def _clean_env(stack: dict[str, str]) -> dict[str, str]:
    """The environment of a program of someone else's: the services' addresses, and nothing that
    would let it find this checkout's sources (the test runner's PYTHONPATH, a virtualenv)."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "NODE_PATH")}
    env.update(RETRIEVAL_ADDR=stack["RETRIEVAL_ADDR"], ANALYSIS_ADDR=stack["ANALYSIS_ADDR"])
    return env


def _fresh_workspace(tmp_path: Path) -> str:
    """A copy of the sample workspace no service has seen: the example indexes it from nothing."""
    root = tmp_path / "workspace"
    shutil.copytree(SAMPLE_WORKSPACE, root)
    return str(root)


def _assert_quickstart_output(stdout: str, error_line: str) -> None:
    lines = stdout.splitlines()
    progress = [line for line in lines if line.startswith("index: ")]
    # Indexed from nothing, one line per change of the stream's reports, the last one the end.
    assert any("chunking" in line.lower() for line in progress) and "done" in progress[-1].lower(), stdout
    assert len(progress) == len(set(progress)), stdout
    hits = [line for line in lines if line.startswith("search: ")]
    assert hits and all(" src/" in line for line in hits), stdout
    symbol = next(line for line in lines if line.startswith("symbol: "))
    assert "tokens)" in symbol, stdout
    status = next(line for line in lines if line.startswith("status: "))
    assert "ready" in status.lower() and " chunks 0 " not in status, stdout
    assert error_line in lines, stdout


def test_the_versions_are_the_protos(tmp_path: Path) -> None:
    # One number (protos/VERSION, stamped by `make proto`) for the protos and both packages.
    assert VERSION.split(".")[0] == "1"  # codecompass.v1
    init = (CLIENT_PY / "src" / "codecompass" / "v1" / "__init__.py").read_text()
    assert f'__version__ = "{VERSION}"' in init
    assert tomllib.loads((CLIENT_PY / "pyproject.toml").read_text())["project"]["dynamic"] == ["version"]
    assert json.loads((CLIENT_TS / "package.json").read_text())["version"] == VERSION


@INSTALL_AND_RUN
def test_the_python_wheel_installs_alone_and_its_example_runs(indexed_stack: dict[str, str], tmp_path: Path) -> None:
    # Built from a copy: setuptools builds in the source tree, and its build/ folder keeps modules
    # deleted since, which a later wheel would ship.
    source = shutil.copytree(CLIENT_PY, tmp_path / "source", ignore=shutil.ignore_patterns("build", "*.egg-info"))
    dist = tmp_path / "dist"
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
          "--wheel-dir", str(dist), str(source)], cwd=tmp_path)
    [wheel] = dist.glob("codecompass_client-*.whl")
    assert wheel.name == f"codecompass_client-{VERSION}-py3-none-any.whl"
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path)
    python = venv / "bin" / "python"
    env = _clean_env(indexed_stack)
    _run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", str(wheel)],
         cwd=tmp_path, env=env, timeout=300)
    installed = json.loads(_run([str(python), "-m", "pip", "list", "--format", "json"], cwd=tmp_path, env=env).stdout)
    names = {package["name"].lower().replace("_", "-") for package in installed}
    assert "codecompass-client" in names
    assert not names & set(HEAVY), sorted(names & set(HEAVY))
    # The client's modules are there; the services' are not.
    probe = ("import importlib.util as u, codecompass.clients.retrieval, codecompass.v1; "
             "print(codecompass.v1.__version__, [m for m in ('codecompass.retrieval', 'codecompass.embedding', "
             "'codecompass.common.config', 'codecompass.common.telemetry', 'codecompass.policy.learned') "
             "if u.find_spec(m)])")
    assert _run([str(python), "-c", probe], cwd=tmp_path, env=env).stdout.split() == [VERSION, "[]"]

    example = shutil.copy(CLIENT_PY / "examples" / "quickstart.py", tmp_path / "quickstart.py")
    done = _run([str(python), str(example), _fresh_workspace(tmp_path), QUERY], cwd=tmp_path, env=env)
    print(done.stdout)
    _assert_quickstart_output(done.stdout, "error: retrieval: query must not be empty")


@INSTALL_AND_RUN
def test_the_npm_package_installs_alone_and_its_example_runs(indexed_stack: dict[str, str], tmp_path: Path) -> None:
    tsc = CLIENT_TS / "node_modules" / ".bin" / "tsc"
    if not tsc.is_file():
        pytest.fail(f"{tsc} is missing: run `make setup`", pytrace=False)
    npm = shutil.which("npm")
    assert npm is not None, "npm is missing from PATH"
    # `npm pack` compiles the package (its prepack script) and packs what a registry would serve.
    _run([npm, "pack", "--silent", "--pack-destination", str(tmp_path)], cwd=CLIENT_TS)
    tarball = tmp_path / f"codecompass-client-{VERSION}.tgz"
    assert tarball.is_file(), sorted(p.name for p in tmp_path.iterdir())
    project = tmp_path / "project"
    project.mkdir()
    (project / "package.json").write_text(json.dumps({"name": "quickstart", "private": True}))
    env = _clean_env(indexed_stack)
    _run([npm, "install", "--no-audit", "--no-fund", "--silent", str(tarball)], cwd=project, env=env, timeout=300)
    shutil.copy(CLIENT_TS / "examples" / "quickstart.ts", project / "quickstart.ts")
    # Compiled against the installed package's declarations (the repository's compiler and Node
    # types only: the project installs nothing but the package).
    _run([str(tsc), "--strict", "--target", "ES2022", "--module", "commonjs", "--esModuleInterop",
          "--skipLibCheck", "--types", "node", "--typeRoots", str(CLIENT_TS / "node_modules" / "@types"),
          "quickstart.ts"], cwd=project)
    done = _run(["node", "quickstart.js", _fresh_workspace(tmp_path), QUERY], cwd=project, env=env)
    print(done.stdout)
    _assert_quickstart_output(done.stdout, "error: retrieval at " + indexed_stack["RETRIEVAL_ADDR"]
                              + ": INVALID_ARGUMENT: query must not be empty")
