"""One trace across processes: a Python client span is the parent of the Node server span."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from pathlib import Path

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from codecompass.clients.analysis import AnalysisClient
from codecompass.common import names
from codecompass.common.telemetry import tracer

SCAN = "codecompass.v1.CodeAnalysisService/ScanWorkspace"


def _read_spans(path: Path, name: str, timeout: float = 10.0) -> list[dict]:
    # The Node exporter writes synchronously when the span ends, which is right
    # after the response is sent, so the line can trail our receipt by a moment.
    deadline = time.monotonic() + timeout
    while True:
        if path.exists():
            spans = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            matching = [span for span in spans if span["name"] == name]
            if matching or time.monotonic() > deadline:
                return matching
        elif time.monotonic() > deadline:
            return []
        time.sleep(0.05)


def test_node_server_span_is_a_child_of_the_python_client_span(
    tmp_path: Path, start_analysis_service, span_exporter: InMemorySpanExporter, sample_workspace: Path
) -> None:
    trace_file = tmp_path / "node.jsonl"
    # OTEL_SERVICE_NAME does not rename a service: its name in traces is its one name.
    _, address = start_analysis_service({"CODECOMPASS_TRACE_FILE": str(trace_file), "OTEL_SERVICE_NAME": "other"})

    client = AnalysisClient(address, timeout_s=30)
    try:
        with tracer("test").start_as_current_span("scan sample workspace") as parent:
            scan = client.scan(str(sample_workspace), tuple, version=None)
    finally:
        client.close()
    assert len(scan.files) > 10

    (client,) = [s for s in span_exporter.get_finished_spans() if s.name == SCAN and s.kind == SpanKind.CLIENT]
    assert client.parent.span_id == parent.get_span_context().span_id
    (server,) = _read_spans(trace_file, SCAN)
    assert server["trace_id"] == format(client.context.trace_id, "032x")
    assert server["parent_span_id"] == format(client.context.span_id, "016x")
    assert (server["service"], server["service_namespace"]) == (names.ANALYSIS, names.NAMESPACE)
    assert server["attributes"]["rpc.grpc.status_code"] == 0


class _Collector(trace_service_pb2_grpc.TraceServiceServicer):
    def __init__(self) -> None:
        self.requests: list[trace_service_pb2.ExportTraceServiceRequest] = []

    def Export(self, request, context):
        self.requests.append(request)
        return trace_service_pb2.ExportTraceServiceResponse()

    def resources(self, span_name: str) -> list[dict[str, str]]:
        """The resource attributes of each batch that holds a span named `span_name`."""
        return [{attr.key: attr.value.string_value for attr in rs.resource.attributes}
                for request in self.requests for rs in request.resource_spans
                if any(span.name == span_name for scope in rs.scope_spans for span in scope.spans)]


@contextmanager
def _collecting() -> Iterator[tuple[_Collector, str]]:
    collector = _Collector()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    trace_service_pb2_grpc.add_TraceServiceServicer_to_server(collector, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    try:
        yield collector, f"http://127.0.0.1:{port}"
    finally:
        server.stop(0)


_EXPORTING_CHILD = """
from codecompass.common.telemetry import init_telemetry, shutdown_telemetry, tracer
init_telemetry("embedding")
with tracer("child").start_as_current_span("embed batch"):
    pass
shutdown_telemetry()
"""


def test_spans_go_to_the_otlp_endpoint_when_it_is_set() -> None:
    with _collecting() as (collector, endpoint):
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_SERVICE_NAME": "other",
               "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test"}
        child = subprocess.run([sys.executable, "-c", _EXPORTING_CHILD], env=env, capture_output=True, text=True,
                               timeout=60, check=False)
        assert child.returncode == 0, child.stderr
    resource_spans = [rs for request in collector.requests for rs in request.resource_spans]
    resources = {tuple(sorted((attr.key, attr.value.string_value) for attr in rs.resource.attributes
                              if attr.key in ("service.name", "service.namespace", "deployment.environment")))
                 for rs in resource_spans}
    span_names = {span.name for rs in resource_spans for scope in rs.scope_spans for span in scope.spans}
    # The name the code gives, in the codecompass namespace; the environment still adds attributes.
    assert resources == {(("deployment.environment", "test"), ("service.name", names.EMBEDDING),
                          ("service.namespace", names.NAMESPACE))}
    assert span_names == {"embed batch"}


def test_the_node_service_takes_resource_attributes_from_the_environment_as_the_python_ones_do(
        start_analysis_service, sample_workspace: Path) -> None:
    """OTEL_RESOURCE_ATTRIBUTES adds to the analysis service's resource too: a backend that files
    spans by a resource attribute (Phoenix's project: `make traces`) would otherwise split a trace
    between the Node service and the rest. Its one name still wins over the environment's."""
    with _collecting() as (collector, endpoint):
        _, address = start_analysis_service({
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "100", "OTEL_SERVICE_NAME": "other",
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test,openinference.project.name=codecompass"})
        client = AnalysisClient(address, timeout_s=30)
        try:
            client.scan(str(sample_workspace), tuple, version=None)
        finally:
            client.close()
        deadline = time.monotonic() + 20
        while not collector.resources(SCAN) and time.monotonic() < deadline:
            time.sleep(0.1)
    (resource,) = collector.resources(SCAN)
    assert {key: resource.get(key) for key in ("service.name", "service.namespace", "deployment.environment",
                                               "openinference.project.name")} == {
        "service.name": names.ANALYSIS, "service.namespace": names.NAMESPACE, "deployment.environment": "test",
        "openinference.project.name": "codecompass"}
