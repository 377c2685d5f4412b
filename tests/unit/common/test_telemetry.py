"""Trace context crosses gRPC: client span -> metadata -> server span."""

from __future__ import annotations

import json
import os
from pathlib import Path

import grpc
import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from codecompass.common.channels import traced_channel
from codecompass.common.serving import ServiceSpec, start_server
from codecompass.common.telemetry import (
    LIBRARY_TELEMETRY_OFF,
    JsonLinesSpanExporter,
    current_trace_ids,
    disable_library_telemetry,
    tracer,
)

SERVICE = "test.Trace"


@pytest.fixture
def trace_server():
    seen: list[tuple[str, str] | None] = []

    def unary(request: bytes, context: grpc.ServicerContext) -> bytes:
        seen.append(current_trace_ids())
        return request

    def stream(request: bytes, context: grpc.ServicerContext):
        for part in request.split(b","):
            seen.append(current_trace_ids())
            yield part

    def fail(request: bytes, context: grpc.ServicerContext) -> bytes:
        context.abort(grpc.StatusCode.NOT_FOUND, "no such symbol")

    handlers = {
        "Unary": grpc.unary_unary_rpc_method_handler(unary),
        "Stream": grpc.unary_stream_rpc_method_handler(stream),
        "Fail": grpc.unary_unary_rpc_method_handler(fail),
    }

    def register(server: grpc.Server) -> list[str]:
        server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))
        return [SERVICE]

    running = start_server(ServiceSpec("trace", register))
    running.wait_until_serving(5)
    yield running, seen
    running.stop(0)


def _by_name(exporter: InMemorySpanExporter, name: str):
    return [span for span in exporter.get_finished_spans() if span.name == name]


def test_server_span_continues_the_client_trace(trace_server, span_exporter: InMemorySpanExporter) -> None:
    running, seen = trace_server
    with tracer("test").start_as_current_span("parent") as parent, traced_channel(running.address) as channel:
        assert channel.unary_unary(f"/{SERVICE}/Unary")(b"x", timeout=5) == b"x"
    (client,) = [s for s in _by_name(span_exporter, f"{SERVICE}/Unary") if s.kind == SpanKind.CLIENT]
    (server,) = [s for s in _by_name(span_exporter, f"{SERVICE}/Unary") if s.kind == SpanKind.SERVER]
    trace_id = parent.get_span_context().trace_id
    assert client.context.trace_id == server.context.trace_id == trace_id
    assert client.parent.span_id == parent.get_span_context().span_id
    assert server.parent.span_id == client.context.span_id
    assert server.attributes["rpc.grpc.status_code"] == 0
    assert seen == [(format(trace_id, "032x"), format(server.context.span_id, "016x"))]


def test_streaming_spans_cover_the_whole_stream(trace_server, span_exporter: InMemorySpanExporter) -> None:
    running, seen = trace_server
    with traced_channel(running.address) as channel:
        assert list(channel.unary_stream(f"/{SERVICE}/Stream")(b"a,b,c", timeout=5)) == [b"a", b"b", b"c"]
    (client,) = [s for s in _by_name(span_exporter, f"{SERVICE}/Stream") if s.kind == SpanKind.CLIENT]
    (server,) = [s for s in _by_name(span_exporter, f"{SERVICE}/Stream") if s.kind == SpanKind.SERVER]
    assert server.parent.span_id == client.context.span_id
    assert len(seen) == 3 and all(ids == seen[0] for ids in seen)
    assert seen[0][1] == format(server.context.span_id, "016x")


def test_error_status_is_recorded_on_both_sides(trace_server, span_exporter: InMemorySpanExporter) -> None:
    running, _ = trace_server
    with traced_channel(running.address) as channel, pytest.raises(grpc.RpcError):
        channel.unary_unary(f"/{SERVICE}/Fail")(b"", timeout=5)
    spans = _by_name(span_exporter, f"{SERVICE}/Fail")
    assert {s.kind for s in spans} == {SpanKind.CLIENT, SpanKind.SERVER}
    for span in spans:
        assert span.attributes["rpc.grpc.status_code"] == grpc.StatusCode.NOT_FOUND.value[0]
        assert not span.status.is_ok


def test_health_probes_are_not_traced(trace_server, span_exporter: InMemorySpanExporter) -> None:
    from grpc_health.v1 import health_pb2, health_pb2_grpc

    running, _ = trace_server
    with traced_channel(running.address) as channel:
        health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=5)
    assert [s for s in span_exporter.get_finished_spans() if s.kind == SpanKind.SERVER] == []


def test_json_lines_file_matches_the_shared_schema(tmp_path: Path) -> None:
    path = tmp_path / "spans" / "py.jsonl"
    provider = TracerProvider(resource=Resource.create({"service.name": "codecompass-test"}))
    provider.add_span_processor(SimpleSpanProcessor(JsonLinesSpanExporter(str(path))))
    local = provider.get_tracer("test")
    with local.start_as_current_span("outer") as outer, local.start_as_current_span("inner", attributes={"k": 1}):
        pass
    provider.shutdown()
    inner, outer_record = (json.loads(line) for line in path.read_text().splitlines())
    assert set(inner) >= {"trace_id", "span_id", "parent_span_id", "name", "service", "start_ns", "end_ns",
                          "attributes"}
    assert inner["name"] == "inner" and inner["service"] == "codecompass-test"
    assert inner["parent_span_id"] == outer_record["span_id"] == format(outer.get_span_context().span_id, "016x")
    assert outer_record["parent_span_id"] == ""
    assert len(inner["trace_id"]) == 32 and len(inner["span_id"]) == 16
    assert inner["attributes"] == {"k": 1}
    assert outer_record["start_ns"] <= inner["start_ns"] <= inner["end_ns"] <= outer_record["end_ns"]


def test_library_telemetry_is_off_even_when_the_shell_turned_it_on(monkeypatch: pytest.MonkeyPatch) -> None:
    assert LIBRARY_TELEMETRY_OFF["ORT_DISABLE_TELEMETRY"] == "1"
    for name in LIBRARY_TELEMETRY_OFF:
        monkeypatch.setenv(name, "0")
    disable_library_telemetry()
    assert {name: os.environ[name] for name in LIBRARY_TELEMETRY_OFF} == LIBRARY_TELEMETRY_OFF
