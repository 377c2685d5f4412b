"""The Dockerfiles, checked without a Docker engine: hadolint finds nothing, every COPY source
exists and reaches the builder through .dockerignore (Docker's own matching rules), the images
bake in exactly the models the services load by default, and what they expose, check and set
agrees with the deploy contract (tests/deploy/contract.py)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
import tomllib
from datetime import date
from functools import cache
from pathlib import Path

import pytest
from docker.utils.build import PatternMatcher
from dockerfile_parse import DockerfileParser
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from tests.deploy import contract

from codecompass.common import names
from codecompass.common.config import CHECKOUT_ROOT
from codecompass.embedding.minilm import CODE_SMALL_MODEL_DIR
from codecompass.embedding.static import DEFAULT_MODEL_DIR as CODE_STATIC_MODEL_DIR
from codecompass.policy.learned import DEFAULT_MODEL as RANKER_MODEL

DOCKER_DIR = contract.REPO / "deploy" / "docker"
PYTHON_DOCKERFILE = DOCKER_DIR / "python.Dockerfile"
ANALYSIS_DOCKERFILE = DOCKER_DIR / "analysis.Dockerfile"
DOCKERFILES = (PYTHON_DOCKERFILE, ANALYSIS_DOCKERFILE)
PYTHON_LOCK = DOCKER_DIR / "python-requirements.lock"
# Node.js LTS lines: (LTS from, end of life), from the Node.js release schedule as of 2026-11.
# Odd lines are never LTS. A new line's row goes here when the analysis image moves to it.
NODE_LTS = {
    20: (date(2023, 10, 24), date(2026, 4, 30)),
    22: (date(2024, 10, 29), date(2027, 4, 30)),
    24: (date(2025, 10, 28), date(2028, 4, 30)),
}
# What only building the image or training needs: the minilm export (torch traces, onnx writes)
# and sentence-transformers with what it pulls. None may reach the runtime venv.
BUILD_ONLY = ("torch", "onnx", "sentence-transformers", "transformers", "scikit-learn", "triton")
BUILD_ONLY_MODULES = ("torch", "onnx", "sentence_transformers", "transformers", "sklearn", "triton")
HADOLINT = Path(sys.executable).parent / "hadolint"
NON_ROOT = "10001:10001"
# Variables an image sets for the process itself, not CodeCompass settings, each with why.
PROCESS_ENV = {
    "PATH": "the virtualenv's interpreter and the codecompass command first",
    "PYTHONDONTWRITEBYTECODE": "the root file system is read-only; byte code is compiled at build",
    "XDG_CACHE_HOME": "where the minilm profile finds its ONNX export, made at build",
}


@cache
def instructions(dockerfile: Path) -> tuple[dict, ...]:
    return tuple(DockerfileParser(str(dockerfile)).structure)


def stages(dockerfile: Path) -> list[list[dict]]:
    """The instructions of each stage (FROM to the next FROM)."""
    found: list[list[dict]] = []
    for instruction in instructions(dockerfile):
        if instruction["instruction"] == "FROM":
            found.append([])
        if found:
            found[-1].append(instruction)
    return found


def copies(dockerfile: Path) -> list[tuple[list[str], list[str]]]:
    """Every COPY as (its flags, its sources and destination)."""
    result = []
    for instruction in instructions(dockerfile):
        if instruction["instruction"] == "COPY":
            words = shlex.split(instruction["value"])
            result.append(([w for w in words if w.startswith("--")], [w for w in words if not w.startswith("--")]))
    return result


def final(dockerfile: Path, name: str) -> list[str]:
    """The values of instruction `name` in the last stage: the image that ships."""
    return [i["value"] for i in stages(dockerfile)[-1] if i["instruction"] == name]


def parser(dockerfile: Path) -> DockerfileParser:
    return DockerfileParser(str(dockerfile))


@cache
def build_context() -> frozenset[str]:
    """Every path `docker build` sends from the repository root: docker-py's walk of the tree with
    .dockerignore's patterns, a port of moby's matcher (a folder left out is skipped whole unless
    a `!` pattern reaches inside it)."""
    return frozenset(dockerignore().walk(str(contract.REPO)))


@cache
def dockerignore() -> PatternMatcher:
    lines = (contract.REPO / ".dockerignore").read_text().splitlines()
    return PatternMatcher([line.strip() for line in lines if line.strip() and not line.startswith("#")])


def tracked(relative: str) -> list[str]:
    out = subprocess.run(["git", "ls-files", "--", relative], cwd=contract.REPO, check=True, capture_output=True,
                         text=True)
    return out.stdout.split()


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_hadolint_finds_nothing(dockerfile: Path) -> None:
    done = subprocess.run([str(HADOLINT), "--no-color", str(dockerfile)], cwd=contract.REPO, check=False,
                          capture_output=True, text=True, timeout=60)
    assert (done.returncode, done.stdout + done.stderr) == (0, "")


@pytest.mark.parametrize("dockerfile", DOCKERFILES, ids=lambda p: p.name)
def test_every_copy_source_exists_and_reaches_the_builder(dockerfile: Path) -> None:
    stage_names = [shlex.split(s[0]["value"])[-1] for s in stages(dockerfile)]
    for flags, paths in copies(dockerfile):
        *sources, _destination = paths
        source_stage = next((f.partition("=")[2] for f in flags if f.startswith("--from=")), None)
        if source_stage is not None:
            assert source_stage in stage_names, f"COPY --from={source_stage}: no such stage"
            continue
        for source in sources:
            assert (contract.REPO / source).exists(), f"COPY {source}: not in the repository"
            files = tracked(source)
            assert files, f"COPY {source}: git tracks nothing there"
            left_out = [f for f in files if f not in build_context()]
            assert not left_out, f"COPY {source}: .dockerignore leaves out {left_out[:5]}"


def test_the_context_holds_what_the_images_copy_and_nothing_else() -> None:
    context = build_context()
    sources = [source for flags, paths in (*copies(PYTHON_DOCKERFILE), *copies(ANALYSIS_DOCKERFILE)) if not flags
               for source in paths[:-1]]
    # Every file sent lies under a COPY source (or is .dockerignore, which Docker always reads).
    strays = [path for path in context if (contract.REPO / path).is_file() and path != ".dockerignore"
              and not any(path == s or path.startswith(s.rstrip("/") + "/") for s in sources)]
    assert not strays, strays[:10]
    # Byte code a local run leaves in the sources stays out (the walk skips a folder that matches).
    assert not [path for path in context if "__pycache__" in path.split("/")]
    assert dockerignore().matches("py_services/codecompass/retrieval/__pycache__")
    for left_out in (".git", ".venv", "node_ts_service/node_modules", "node_ts_service/dist", "bench", "tests",
                     "deploy/.env", "models/corpus", "models/.work", "node_ts_service/test"):
        assert not [path for path in context if path == left_out or path.startswith(left_out + "/")], left_out


def test_the_python_image_bakes_in_the_models_the_services_load_by_default() -> None:
    copied = {source for flags, paths in copies(PYTHON_DOCKERFILE) if not flags for source in paths[:-1]}
    defaults = {
        "code-small (the default embedding profile)": CODE_SMALL_MODEL_DIR,
        "code-static (retrieval's static channel)": CODE_STATIC_MODEL_DIR,
        "the learned ranker": RANKER_MODEL,
        "the ranker's score scale": RANKER_MODEL.with_suffix(".scale.json"),
    }
    for what, path in defaults.items():
        relative = path.relative_to(CHECKOUT_ROOT).as_posix()
        assert relative in copied, f"{what}: {relative} is not copied into the image"
        assert path.exists()
    # The models and the sources are opened to the unprivileged user (COPY keeps a checkout's
    # modes: this one's code-static weights are owner-only), and so is the minilm profile's
    # export, made in its own stage where the service looks for it (the exporter writes owner-only).
    build, export, _runtime = stages(PYTHON_DOCKERFILE)
    assert runs_of(build)[-1].endswith("chmod -R a+rX /app")
    assert "python -m codecompass.embedding.minilm_onnx" in runs_of(export)[-1]
    assert runs_of(export)[-1].endswith("chmod -R a+rX /opt/codecompass")
    assert parser(PYTHON_DOCKERFILE).envs["XDG_CACHE_HOME"] == "/opt/codecompass/cache"
    assert parser(PYTHON_DOCKERFILE).envs["HF_HUB_OFFLINE"] == "1"


def runs_of(stage: list[dict]) -> list[str]:
    return [i["value"] for i in stage if i["instruction"] == "RUN"]


def stage_name(stage: list[dict]) -> str:
    return shlex.split(stage[0]["value"])[-1]


@cache
def pyproject(package: str) -> dict:
    return tomllib.loads((contract.REPO / package / "pyproject.toml").read_text())["project"]


def locked() -> dict[str, tuple[str, list[str]]]:
    """The lock's packages: canonical name -> (version, its sha256 hashes)."""
    found: dict[str, tuple[str, list[str]]] = {}
    # A requirement and its `--hash` options are one logical line, continued with backslashes.
    text = PYTHON_LOCK.read_text().replace("\\\n", " ")
    for line in text.splitlines():
        if not line or line.startswith((" ", "#")):
            continue
        requirement, *options = line.split()
        name, _, version = requirement.partition("==")
        found[canonicalize_name(name)] = (version, [o.removeprefix("--hash=") for o in options])
    return found


def test_torch_is_the_export_extra_s_pin_from_the_cpu_index_and_only_in_the_export_stage() -> None:
    pin = next(d for d in pyproject("py_services")["optional-dependencies"]["export"] if d.startswith("torch=="))
    installs = [(stage_name(stage), run) for stage in stages(PYTHON_DOCKERFILE) for run in runs_of(stage)
                if re.search(r"\btorch==", run)]
    assert [stage for stage, _ in installs] == ["export"]
    words = installs[0][1].split()
    assert pin in words and words[words.index("--index-url") + 1] == "https://download.pytorch.org/whl/cpu"
    assert "--extra-index-url" not in installs[0][1]


def test_the_runtime_stage_takes_only_the_export_s_file_from_the_export_stage() -> None:
    """torch, onnx and what they pull live in the export stage's venv, which never ships."""
    taken = {(flags[0].partition("=")[2], paths[0]) for flags, paths in copies(PYTHON_DOCKERFILE)
             if flags and flags[0].startswith("--from=")}
    assert taken == {("build", "/opt/venv"), ("build", "/app"), ("export", "/opt/codecompass")}
    export = stages(PYTHON_DOCKERFILE)[1]
    assert parser(PYTHON_DOCKERFILE).envs["XDG_CACHE_HOME"] == "/opt/codecompass/cache"
    assert any(i["instruction"] == "ENV" and "XDG_CACHE_HOME=/opt/codecompass/cache" in i["value"] for i in export)


def test_the_runtime_venv_is_the_hashed_lock_and_the_sources_alone() -> None:
    build = stages(PYTHON_DOCKERFILE)[0]
    installs = [run for run in runs_of(build) if run.startswith("pip install")]
    lock = f"/tmp/{PYTHON_LOCK.name}"
    assert installs == [f"pip install --no-cache-dir --require-hashes --no-deps -r {lock}",
                        "pip install --no-cache-dir --no-deps -e ./clients/python -e ./py_services -e ./gateway_mcp"]
    assert ([], [PYTHON_LOCK.relative_to(contract.REPO).as_posix(), "/tmp/"]) in copies(PYTHON_DOCKERFILE)


def test_the_lock_pins_every_run_time_dependency_with_hashes() -> None:
    packages = locked()
    # The repository's own distributions are installed from the sources, not the lock.
    runtime = [Requirement(d) for package in ("clients/python", "py_services", "gateway_mcp")
               for d in pyproject(package)["dependencies"]
               if Requirement(d).name not in ("codecompass", "codecompass-client")]
    for requirement in runtime:
        name = canonicalize_name(requirement.name)
        assert name in packages, f"{requirement}: not in {PYTHON_LOCK.name}; run `make image-lock`"
        version, _hashes = packages[name]
        assert requirement.specifier.contains(version, prereleases=True), \
            f"{requirement}: the lock has {version}; run `make image-lock`"
    for name, (version, hashes) in packages.items():
        assert version and hashes and all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in hashes), name
    # Written by the Makefile's target, which runs the generator that says what the lock leaves out.
    assert PYTHON_LOCK.read_text().splitlines()[1] == "#    make image-lock"
    assert "$(VENV)/bin/python deploy/docker/lock.py" in (contract.REPO / "Makefile").read_text()


def test_no_build_only_package_is_a_run_time_dependency_or_in_the_lock() -> None:
    runtime = {canonicalize_name(Requirement(d).name) for package in ("py_services", "gateway_mcp")
               for d in pyproject(package)["dependencies"]}
    assert not runtime & set(BUILD_ONLY), sorted(runtime & set(BUILD_ONLY))
    in_lock = set(locked())
    assert not in_lock & set(BUILD_ONLY), sorted(in_lock & set(BUILD_ONLY))
    assert not [name for name in in_lock if name.startswith(("nvidia-", "cuda-"))]


def test_the_services_start_without_the_build_only_packages() -> None:
    """What the image runs, with every build-only package made unimportable: each service's and
    the gateway's entry module, and the default models loaded and used."""
    script = f"""
import sys
for name in {sorted(BUILD_ONLY_MODULES)!r}:
    sys.modules[name] = None
import codecompass.embedding.__main__, codecompass.retrieval.__main__, codecompass.rerank.__main__
import codecompass.selection.__main__, codecompass_gateway.__main__, codecompass_cli.__main__
from codecompass.embedding.minilm import MiniLMProvider, code_small
from codecompass.embedding.static import StaticProvider
from codecompass.policy.learned import load_ranker
for provider in (MiniLMProvider(spec=code_small()), StaticProvider()):
    provider.warmup()
    assert provider.embed(["validate a jwt token"], "query").shape[0] == 1
assert load_ranker().booster is not None
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, "ok"), done.stderr[-3000:]


@pytest.mark.parametrize(("dockerfile", "language"), [(PYTHON_DOCKERFILE, "python"), (ANALYSIS_DOCKERFILE, "node")],
                         ids=["python", "analysis"])
def test_bases_are_pinned_versions_and_the_image_runs_as_uid_10001(dockerfile: Path, language: str) -> None:
    # Every stage starts from the one base, or from a stage before it.
    bases = set(parser(dockerfile).parent_images) - {stage_name(stage) for stage in stages(dockerfile)}
    assert len(bases) == 1
    base = bases.pop()
    name, _, tag = base.partition(":")
    assert name == language and re.fullmatch(r"\d+\.\d+\.\d+-(slim-bookworm|bookworm-slim)", tag), base
    if language == "python":
        requires = tomllib.loads((contract.REPO / "py_services" / "pyproject.toml").read_text())["project"]
        assert tag.startswith("3.11.") and requires["requires-python"] == ">=3.11,<3.12"
    else:
        assert int(tag.split(".")[0]) in NODE_LTS, f"{base}: not a Node.js LTS line"
    assert final(dockerfile, "USER") == [NON_ROOT]
    assert final(dockerfile, "STOPSIGNAL") == ["SIGTERM"]
    labels = parser(dockerfile).labels
    assert labels["org.opencontainers.image.title"] == f"codecompass/{'python' if language == 'python' else 'analysis'}"
    assert {"org.opencontainers.image.version", "org.opencontainers.image.revision"} <= set(labels)


def test_the_analysis_image_runs_a_node_lts_line_that_is_still_supported() -> None:
    """Fails once the base's line passes its end of life: then move to the next LTS line."""
    (base,) = set(parser(ANALYSIS_DOCKERFILE).parent_images) - {stage_name(s) for s in stages(ANALYSIS_DOCKERFILE)}
    line = int(base.partition(":")[2].split(".")[0])
    lts_from, end_of_life = NODE_LTS[line]
    assert lts_from <= date.today() < end_of_life, f"{base}: Node.js {line} is LTS from {lts_from} to {end_of_life}"


def test_the_python_image_exposes_the_contract_ports_and_sets_only_real_settings() -> None:
    exposed = {int(p) for value in final(PYTHON_DOCKERFILE, "EXPOSE") for p in value.split()}
    python_backends = [s for s in names.BACKENDS if s != names.ANALYSIS]
    assert exposed == {contract.default_port(s) for s in python_backends} | {contract.gateway_port()}
    for variable in parser(PYTHON_DOCKERFILE).envs:
        assert variable in contract.python_env() | set(contract.THIRD_PARTY_ENV) | set(PROCESS_ENV), variable
    # The contract's state dir (compose mounts its volumes there) and a bind reachable from outside.
    envs = parser(PYTHON_DOCKERFILE).envs
    assert (envs["CODECOMPASS_STATE_DIR"], envs["CODECOMPASS_BIND_HOST"]) == ("/var/lib/codecompass", "0.0.0.0")
    assert final(PYTHON_DOCKERFILE, "HEALTHCHECK") == []


def test_the_analysis_image_runs_main_and_checks_its_own_port() -> None:
    port = contract.default_port(names.ANALYSIS)
    assert final(ANALYSIS_DOCKERFILE, "EXPOSE") == [str(port)]
    assert final(ANALYSIS_DOCKERFILE, "CMD") == ['["node", "dist/src/main.js"]']
    (healthcheck,) = final(ANALYSIS_DOCKERFILE, "HEALTHCHECK")
    assert healthcheck.endswith(f'CMD ["node", "dist/src/healthcheck.js", "127.0.0.1:{port}"]')
    # What the image copies out of its build is what `make setup` builds here.
    for script in ("main.js", "healthcheck.js"):
        assert (contract.NODE_DIR / "dist" / "src" / script).is_file()
    for variable in parser(ANALYSIS_DOCKERFILE).envs:
        assert variable in contract.node_env() | set(contract.THIRD_PARTY_ENV), variable
    assert parser(ANALYSIS_DOCKERFILE).envs["CODECOMPASS_BIND_HOST"] == "0.0.0.0"


def test_the_analysis_image_primes_its_compile_cache_with_its_own_node_before_it_drops_root() -> None:
    """The V8 code cache is valid for the Node build that made it: it is made in the runtime stage,
    from the compiled sources, and stays root-owned (the service only reads it)."""
    runtime = stages(ANALYSIS_DOCKERFILE)[-1]
    order = [(i["instruction"], i["value"]) for i in runtime]
    prime = order.index(("RUN", "node dist/src/primeCompileCache.js"))
    copied = next(n for n, (instruction, value) in enumerate(order)
                  if instruction == "COPY" and value.split()[-1] == "dist/src")
    user = next(n for n, (instruction, _) in enumerate(order) if instruction == "USER")
    assert copied < prime < user
    assert (contract.NODE_DIR / "dist" / "src" / "primeCompileCache.js").is_file()
