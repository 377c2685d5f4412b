"""What every deploy file must agree with, read from the services themselves (not restated here).

The compose and Kubernetes tests compare their manifests against these values, so a renamed
variable, a moved port or a new service breaks a test instead of a deployment.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import fields
from functools import cache
from pathlib import Path

from codecompass.common import names
from codecompass.common.config import Settings, documented_settings
from codecompass.common.telemetry import TRACE_FILE_ENV

REPO = Path(__file__).resolve().parents[2]
NODE_DIR = REPO / "node_ts_service"

# Variables the deploy files may set that belong to a library the services run on, not to
# CodeCompass's settings; each with why a deployment sets it.
THIRD_PARTY_ENV = {
    # OpenTelemetry SDKs (Python and Node) read these themselves.
    "OTEL_EXPORTER_OTLP_ENDPOINT": "where spans go (telemetry.py, tracing.ts)",
    "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "where spans go, traces only",
    "OTEL_EXPORTER_OTLP_INSECURE": "plain gRPC to an in-cluster collector",
    "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment and k8s attributes",
    # An orchestrator's own variables.
    "JOB_COMPLETION_INDEX": "set by Kubernetes for an Indexed Job's pod: the shard it works on",
    "HF_HUB_OFFLINE": "the models are baked into the image; never reach a hub",
    "PYTHONUNBUFFERED": "logs reach the container runtime as they are written",
    "NODE_ENV": "production mode for Node libraries",
}


@cache
def python_env() -> frozenset[str]:
    """Every variable a Python service or the gateway reads as a setting."""
    extra = {"CODECOMPASS_CONFIG", TRACE_FILE_ENV, "LOG_LEVEL"}
    return frozenset({env for env, _, _ in documented_settings()} | extra)


@cache
def node_env() -> frozenset[str]:
    """Every variable the analysis service reads: its config loaded once over a recording env."""
    script = (
        "const seen = new Set();"
        "const env = new Proxy({}, { get(_, key) { if (typeof key === 'string') seen.add(key); return undefined; },"
        " has(_, key) { if (typeof key === 'string') seen.add(key); return false; } });"
        "const { loadConfig } = require('./dist/src/config.js'); loadConfig(env);"
        # A renamed variable is read only to refuse it: not one a deployment may set.
        "const refused = (name) => { try { loadConfig({ [name]: '1' }); return false; }"
        " catch (e) { return /no longer read/.test(String(e.message)); } };"
        "process.stdout.write(JSON.stringify([...seen].filter((name) => !refused(name))));"
    )
    out = subprocess.run(["node", "-e", script], cwd=NODE_DIR, check=True, capture_output=True, text=True)
    return frozenset(json.loads(out.stdout))


def default_port(service: str) -> int:
    """The port a backend listens on by default (ANALYSIS_PORT … SELECTION_PORT)."""
    defaults = {f.name: f.default for f in fields(Settings)}
    return int(defaults[f"{service}_port"])


def gateway_port() -> int:
    """The streamable-HTTP port of `python -m codecompass_gateway` when none is given."""
    import argparse

    from codecompass_gateway.__main__ import add_server_arguments

    parser = argparse.ArgumentParser()
    add_server_arguments(parser)
    return int(parser.get_default("port"))


def gateway_http_path() -> str:
    from codecompass_gateway.server import HTTP_PATH

    return HTTP_PATH


BACKENDS = names.BACKENDS
