"""One trace across processes: a Python client span is the parent of the Node server span."""

from __future__ import annotations

import json
import time
from pathlib import Path

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from codecompass.common.telemetry import traced_channel, tracer
from codecompass.v1 import analysis_pb2, analysis_pb2_grpc

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
    _, address = start_analysis_service({"CODECOMPASS_TRACE_FILE": str(trace_file)})

    with tracer("test").start_as_current_span("scan sample workspace") as parent, traced_channel(address) as channel:
        response = analysis_pb2_grpc.CodeAnalysisServiceStub(channel).ScanWorkspace(
            analysis_pb2.ScanWorkspaceRequest(workspace_root=str(sample_workspace)), timeout=30)
    assert len(response.files) > 10

    (client,) = [s for s in span_exporter.get_finished_spans() if s.name == SCAN and s.kind == SpanKind.CLIENT]
    assert client.parent.span_id == parent.get_span_context().span_id
    (server,) = _read_spans(trace_file, SCAN)
    assert server["trace_id"] == format(client.context.trace_id, "032x")
    assert server["parent_span_id"] == format(client.context.span_id, "016x")
    assert server["service"] == "codecompass-analysis"
    assert server["attributes"]["rpc.grpc.status_code"] == 0
