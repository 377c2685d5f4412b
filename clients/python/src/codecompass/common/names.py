"""The one name of each CodeCompass service, used wherever a service is named.

As in opentelemetry-demo, a service has one name: its `service.name` in traces, the `service`
field of its logs, its process name in `codecompass up` / `status` and runtime.json, its
ServiceSpec, the stem of its environment variables (``ANALYSIS_ADDR``, ``ANALYSIS_PORT``), and the
compose service and Kubernetes Deployment that run it. Shared trace backends tell CodeCompass's
`retrieval` from another product's by `service.namespace` (NAMESPACE). The Node analysis service
keeps its copy of its own name in node_ts_service/src/names.ts; a test compares the two.

gRPC service names in the protos (``codecompass.v1.RetrievalService``) are contract names, not
these: they name an API, which a service implements.
"""

from __future__ import annotations

NAMESPACE = "codecompass"

ANALYSIS = "analysis"
EMBEDDING = "embedding"
RETRIEVAL = "retrieval"
RERANK = "rerank"
SELECTION = "selection"
GATEWAY = "gateway"
# The retrieval service in its writer role, where a deployment runs the roles apart (one index
# writer, searchers behind RETRIEVAL_ADDR); locally the one retrieval process plays both.
WRITER = "writer"
# Not a service, but a process that sends spans (the client side of a `codecompass search`).
CLI = "cli"

# The gRPC services `codecompass up` runs, in the order `status` lists them.
BACKENDS = (ANALYSIS, EMBEDDING, RETRIEVAL, RERANK, SELECTION)


def addr_env(service: str) -> str:
    """The variable that says where clients reach ``service``: ``RETRIEVAL_ADDR``."""
    return f"{service.upper()}_ADDR"


def port_env(service: str) -> str:
    """The variable that says which port ``service`` listens on: ``RETRIEVAL_PORT``."""
    return f"{service.upper()}_PORT"


def metrics_port_env(service: str) -> str:
    """The variable that says which port ``service`` serves its metrics on: ``RETRIEVAL_METRICS_PORT``."""
    return f"{service.upper()}_METRICS_PORT"
