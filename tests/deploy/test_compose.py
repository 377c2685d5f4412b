"""deploy/compose*.yaml, checked without a Docker engine: each file against the compose spec's
schema (check-jsonschema's vendored copy), then against the deploy contract read from the services
themselves (tests/deploy/contract.py): service names, commands, ports, addresses, settings, health
checks, hardening, volumes, the .env beside them, and the collector's pipelines.

The layers (compose.s3.yaml, compose.observability.yaml) are checked file by file: there is no
compose implementation here to merge them, and a merger written for the test would be a second,
untested one."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml
from codecompass_gateway.wire import HEALTH_PATH
from tests.deploy import contract

from codecompass.common import names

DEPLOY = contract.REPO / "deploy"
COMPOSE = DEPLOY / "compose.yaml"
S3 = DEPLOY / "compose.s3.yaml"
OBSERVABILITY = DEPLOY / "compose.observability.yaml"
FILES = (COMPOSE, S3, OBSERVABILITY)
CHECK_JSONSCHEMA = Path(sys.executable).parent / "check-jsonschema"

SERVICES = frozenset({*names.BACKENDS, names.WRITER, names.GATEWAY})
PYTHON_SERVICES = SERVICES - {names.ANALYSIS}
# What the layers add that is no CodeCompass service: each with the layer that adds it.
INFRASTRUCTURE = {"s3": S3, "s3-bucket": S3, "otel-collector": OBSERVABILITY, "jaeger": OBSERVABILITY}
MODULES = {names.EMBEDDING: "codecompass.embedding", names.RETRIEVAL: "codecompass.retrieval",
           names.WRITER: "codecompass.retrieval", names.RERANK: "codecompass.rerank",
           names.SELECTION: "codecompass.selection", names.GATEWAY: "codecompass_gateway"}
ROLES = {names.RETRIEVAL: "searcher", names.WRITER: "writer"}
SECRETS = ("CODECOMPASS_GATEWAY_AUTH_TOKEN", "CODECOMPASS_EMBEDDING_API_KEY", "CODECOMPASS_RERANK_API_KEY",
           "CODECOMPASS_REWRITE_API_KEY")
WORKSPACES = "/workspaces"
STATE_DIR = "/var/lib/codecompass"
INDEX_DIR = f"{STATE_DIR}/index"
COLLECTOR = "http://otel-collector:4317"
# One collector configuration for compose and the Kubernetes component.
COLLECTOR_CONFIG = DEPLOY / "k8s" / "components" / "observability" / "otel-collector.yaml"
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)")


@cache
def load(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def services(path: Path = COMPOSE) -> dict[str, dict[str, Any]]:
    return load(path)["services"]


def port_of(service: str) -> int:
    """The port a service listens on in its container: the writer is a retrieval process."""
    if service == names.GATEWAY:
        return contract.gateway_port()
    return contract.default_port(names.RETRIEVAL if service == names.WRITER else service)


@cache
def env_file() -> dict[str, str]:
    values = {}
    for line in (DEPLOY / ".env").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


def default_of(value: str) -> str:
    """The value of a `${NAME:-default}` (or a literal) when NAME is left as .env has it."""
    match = re.fullmatch(r"\$\{(\w+)(?::-([^}]*))?\}", value)
    if match is None:
        return value
    return env_file().get(match.group(1)) or match.group(2) or ""


def pyproject_version() -> str:
    return tomllib.loads((contract.REPO / "py_services" / "pyproject.toml").read_text())["project"]["version"]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_each_file_is_valid_against_the_compose_spec(path: Path) -> None:
    done = subprocess.run([str(CHECK_JSONSCHEMA), "--builtin-schema", "vendor.compose-spec", str(path)],
                          check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_compose_runs_every_contract_service_under_its_one_name() -> None:
    assert set(services()) == SERVICES


@pytest.mark.parametrize("path", (S3, OBSERVABILITY), ids=lambda p: p.name)
def test_a_layer_changes_contract_services_and_adds_only_pinned_infrastructure(path: Path) -> None:
    for name, service in services(path).items():
        if name in SERVICES:
            assert "image" not in service and "command" not in service, name
            continue
        assert INFRASTRUCTURE.get(name) == path, f"{path.name}: {name} is neither a contract service nor known"
        assert re.fullmatch(r"[\w./-]+:\d+\.\d+\.\d+", service["image"]), service["image"]


def test_commands_images_and_roles_are_the_contract_s() -> None:
    version = pyproject_version()
    assert env_file()["CODECOMPASS_VERSION"] == version
    for name, service in services().items():
        runtime = "analysis" if name == names.ANALYSIS else "python"
        # A registry host in the name (localhost): a bare `codecompass/...` is Docker Hub's, and
        # whoever holds that namespace there.
        assert service["image"] == f"localhost/codecompass/{runtime}:${{CODECOMPASS_VERSION:-{version}}}", name
        assert service["build"] == {"context": "..", "dockerfile": f"deploy/docker/{runtime}.Dockerfile",
                                    "args": {"VERSION": f"${{CODECOMPASS_VERSION:-{version}}}"}}, name
        command = service["command"]
        if name == names.ANALYSIS:
            assert command == ["node", "dist/src/main.js"]
        else:
            assert command[:3] == ["python", "-m", MODULES[name]], name
        assert service["environment"].get("CODECOMPASS_RETRIEVAL_ROLE") == ROLES.get(name), name
    gateway = services()[names.GATEWAY]["command"]
    assert gateway[3:] == ["--transport", "streamable-http", "--host", "0.0.0.0", "--port",
                           str(contract.gateway_port())]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_variable_a_service_is_given_is_a_setting_it_reads(path: Path) -> None:
    for name, service in services(path).items():
        if name not in SERVICES:
            continue
        allowed = contract.node_env() if name == names.ANALYSIS else contract.python_env()
        unknown = set(service.get("environment", {})) - allowed - set(contract.THIRD_PARTY_ENV)
        assert not unknown, f"{path.name}: {name} is given {sorted(unknown)}, which it never reads"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_every_port_and_address_is_the_contract_s(path: Path) -> None:
    for name, service in services(path).items():
        for variable, value in service.get("environment", {}).items():
            if variable.endswith("_PORT"):
                assert variable == names.port_env(names.RETRIEVAL if name == names.WRITER else name), variable
                assert int(value) == port_of(name), f"{name}: {variable}={value}"
            if variable.endswith("_ADDR"):
                host, _, port = value.rpartition(":")
                assert host in SERVICES and variable == names.addr_env(host), f"{name}: {variable}={value}"
                assert int(port) == port_of(host), f"{name}: {variable}={value}"


def test_health_checks_ask_each_service_on_its_own_port() -> None:
    for name, service in services().items():
        test = service["healthcheck"]["test"]
        if name == names.ANALYSIS:
            assert test == ["CMD", "node", "dist/src/healthcheck.js", f"127.0.0.1:{port_of(name)}"]
        elif name == names.GATEWAY:
            assert test == ["CMD", "python", "-m", "codecompass.common.probe",
                            f"http://127.0.0.1:{port_of(name)}{HEALTH_PATH}"]
        else:
            assert test == ["CMD", "python", "-m", "codecompass.common.probe", f"127.0.0.1:{port_of(name)}"]
        for needed, condition in service.get("depends_on", {}).items():
            assert condition == {"condition": "service_healthy"} and "healthcheck" in services()[needed], name
    # The gateway starts last: it indexes its workspaces through every backend at start.
    assert set(services()[names.GATEWAY]["depends_on"]) == SERVICES - {names.GATEWAY}


def test_every_service_is_hardened() -> None:
    for name, service in services().items():
        assert service["user"] == "10001:10001", name
        assert service["read_only"] is True and service["init"] is True, name
        assert service["cap_drop"] == ["ALL"] and service["security_opt"] == ["no-new-privileges:true"], name
        assert any(mount.startswith("/tmp:") for mount in service["tmpfs"]), name
        # The writer finishes a sync in flight at its next batch: twice the others' drain.
        assert service["stop_grace_period"] == ("60s" if name == names.WRITER else "30s"), name
        # Its state dir is writable: a volume, or a tmpfs where nothing is worth keeping.
        if name in PYTHON_SERVICES:
            mounts = [v.partition(":")[2] if isinstance(v, str) else v["target"] for v in service.get("volumes", [])]
            tmpfs = [mount.partition(":")[0] for mount in service["tmpfs"]]
            assert STATE_DIR in mounts + tmpfs, name
    published = {name for name, service in services().items() if "ports" in service}
    assert published == {names.GATEWAY}
    (port,) = services()[names.GATEWAY]["ports"]
    assert port["target"] == contract.gateway_port() and default_of(port["host_ip"]) == "127.0.0.1"


def test_workspaces_are_one_read_only_folder_at_the_same_path_and_the_index_has_one_writer() -> None:
    for name, service in services().items():
        binds = [v for v in service.get("volumes", []) if isinstance(v, dict) and v["type"] == "bind"]
        expected = name in (names.ANALYSIS, names.WRITER, names.RETRIEVAL, names.GATEWAY)
        assert [(b["target"], b["read_only"]) for b in binds] == ([(WORKSPACES, True)] if expected else []), name
    host_folder = env_file()["CODECOMPASS_WORKSPACES_DIR"]
    assert (DEPLOY / host_folder).is_dir()
    gateway = services()[names.GATEWAY]["environment"]
    assert gateway["CODECOMPASS_GATEWAY_ALLOWED_ROOTS"] == WORKSPACES
    served = default_of(gateway["CODECOMPASS_GATEWAY_WORKSPACES"]).split(":")
    assert served and all(w == WORKSPACES or w.startswith(WORKSPACES + "/") for w in served)

    def index_mount(service: str) -> dict[str, Any]:
        volumes = services()[service]["volumes"]
        (mount,) = [v if isinstance(v, dict) else {"source": v.split(":")[0], "target": v.split(":")[1]}
                    for v in volumes if (v["target"] if isinstance(v, dict) else v.split(":")[1]) == INDEX_DIR]
        return mount

    assert index_mount(names.WRITER)["source"] == index_mount(names.RETRIEVAL)["source"] == "index"
    assert index_mount(names.RETRIEVAL)["read_only"] is True and not index_mount(names.WRITER).get("read_only")
    for service in (names.WRITER, names.RETRIEVAL):
        assert services()[service]["environment"]["CODECOMPASS_RETRIEVAL_DB_URI"] == INDEX_DIR
    named = {v.split(":")[0] if isinstance(v, str) else v["source"]
             for s in services().values() for v in s.get("volumes", []) if isinstance(v, str) or v["type"] == "volume"}
    assert named == set(load(COMPOSE)["volumes"])


def test_the_env_file_names_every_variable_the_files_read_and_holds_no_secret() -> None:
    read = {name for path in FILES for name in _VARIABLE.findall(path.read_text())}
    assert read <= set(env_file()), sorted(read - set(env_file()))
    for secret in SECRETS:
        assert env_file().get(secret, "") == "", f"{secret} has a value in the committed deploy/.env"
    for service in services().values():
        for variable, value in service.get("environment", {}).items():
            if variable in SECRETS:
                assert value.startswith(f"${{{variable}:"), f"{variable}: not taken from the environment"


@pytest.mark.parametrize(("variable", "secret"), [("CODECOMPASS_GATEWAY_AUTH_TOKEN", "gateway-token"),
                                                  ("CODECOMPASS_GRPC_AUTH_TOKEN", "service-token")])
def test_the_tokens_are_secret_files_not_environment_variables(variable: str, secret: str) -> None:
    """In the environment it shows in `docker inspect`, and a required variable (`:?`) made every
    compose command, `down` and `logs` included, fail without it in the shell. The gateway's token is
    the gateway's alone; the services' token is in every service, each a gRPC server beyond loopback
    (the images bind 0.0.0.0) and most a client of the others."""
    users = {names.GATEWAY} if secret == "gateway-token" else set(services())
    for name, service in services().items():
        assert variable not in service.get("environment", {}), name
        if name in users:
            assert secret in service["secrets"], name
            assert service["environment"][f"{variable}_FILE"] == f"/run/secrets/{secret}", name
        else:
            assert secret not in service.get("secrets", ()), name
    source = load(COMPOSE)["secrets"][secret]["file"]
    assert set(source) & set("$/.") and variable not in source
    # The default file beside compose.yaml is never committed.
    ignored = (contract.REPO / "deploy" / ".gitignore").read_text().split()
    assert source.rpartition(":-")[2].rstrip("}").removeprefix("./") in ignored
    assert f"{variable}_FILE" in contract.python_env()


def test_the_s3_layer_moves_the_index_to_its_bucket_for_writer_and_searcher() -> None:
    layer = services(S3)
    dev = tomllib.loads((contract.REPO / "py_services" / "pyproject.toml").read_text())
    moto = next(d for d in dev["project"]["optional-dependencies"]["dev"] if d.startswith("moto"))
    # The server the object-storage tests run, in the same release.
    assert layer["s3"]["image"] == f"motoserver/moto:{moto.partition('==')[2]}"
    assert layer["s3-bucket"]["depends_on"] == {"s3": {"condition": "service_healthy"}}
    assert "create_bucket(Bucket='codecompass')" in layer["s3-bucket"]["entrypoint"][-1]
    for name in (names.WRITER, names.RETRIEVAL):
        environment = layer[name]["environment"]
        assert environment["CODECOMPASS_RETRIEVAL_DB_URI"] == "s3://codecompass/index"
        options = json.loads(environment["CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS"])
        assert options["aws_endpoint"] == "http://s3:5000" and options["allow_http"] == "true"
        assert layer[name]["depends_on"] == {"s3-bucket": {"condition": "service_completed_successfully"}}
    assert set(layer) - set(INFRASTRUCTURE) == {names.WRITER, names.RETRIEVAL}


def test_the_observability_layer_sends_every_service_s_spans_to_the_collector() -> None:
    layer = services(OBSERVABILITY)
    for name in SERVICES:
        assert layer[name] == {"environment": {"OTEL_EXPORTER_OTLP_ENDPOINT": COLLECTOR}}, name
    collector = layer["otel-collector"]
    (config_mount,) = collector["volumes"]
    source, target, mode = config_mount.split(":")
    assert (DEPLOY / source).resolve() == COLLECTOR_CONFIG.resolve() and mode == "ro"
    assert collector["command"] == [f"--config={target}"]
    grpc = load(DEPLOY / source)["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"]
    assert grpc.rpartition(":")[2] == COLLECTOR.rpartition(":")[2]
    (ui,) = layer["jaeger"]["ports"]
    assert (ui["target"], ui["host_ip"]) == (16686, "127.0.0.1")


def test_the_engine_version_the_files_need_is_stated() -> None:
    # start_interval came with Docker Engine 25: an older engine refuses the file, so the guide
    # must say so before its first command.
    uses = [path.name for path in FILES if "start_interval" in path.read_text(encoding="utf-8")]
    assert uses
    guide = (contract.REPO / "docs" / "deploy.md").read_text(encoding="utf-8")
    compose_section = guide.split("## Running with Docker Compose", 1)[1].split("```", 1)[0]
    assert "Docker Engine 25 or later" in compose_section


def test_the_collector_s_pipelines_use_only_components_it_defines() -> None:
    config = load(COLLECTOR_CONFIG)
    service = config["service"]
    assert set(service["extensions"]) <= set(config.get("extensions", {}))
    assert set(service["pipelines"]) == {"traces", "metrics"}
    for pipeline in service["pipelines"].values():
        for kind in ("receivers", "processors", "exporters"):
            assert pipeline.get(kind) or kind == "processors", kind
            assert set(pipeline.get(kind, [])) <= set(config.get(kind, {})), kind
    # The exporter reaches Jaeger by its name (compose's, the Service's), on the OTLP port Jaeger takes.
    assert config["exporters"]["otlp/jaeger"]["endpoint"] == "jaeger:4317"
