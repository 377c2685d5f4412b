"""OpenTelemetry for every CodeCompass Python process: one setup, W3C context over gRPC.

Call ``init_telemetry`` before creating any server or client. Spans go to
OTLP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` is set, and to a JSON-lines file when
``CODECOMPASS_TRACE_FILE`` is set (the same schema the Node service writes, so
tests and local debugging can join spans across processes without a collector).

Metrics (the instruments below, each declared once) go over OTLP to the same endpoint, and to a
Prometheus endpoint when the process is given a metrics port (``<SVC>_METRICS_PORT``).

The client side (a CLIENT span per call, its W3C context in the call's metadata) is
``codecompass.common.channels``, in the client distribution, which needs the OpenTelemetry API
alone; what this module installs is what exports those spans in a CodeCompass process.

Nothing else leaves the machine: the usage telemetry some libraries send home on their own
(onnxruntime's above all) is switched off here too, for the same process, at the same time.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from opentelemetry import context as otel_context
from opentelemetry import metrics, propagate, trace
from opentelemetry.baggage.propagation import W3CBaggagePropagator
from opentelemetry.metrics import CallbackOptions, Observation
from opentelemetry.propagators.composite import CompositePropagator
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.trace import SpanKind, Status, StatusCode
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from codecompass.common.channels import rpc_attributes
from codecompass.common.hosts import LOOPBACK, host_port
from codecompass.common.names import NAMESPACE

TRACE_FILE_ENV = "CODECOMPASS_TRACE_FILE"
_HEALTH_PREFIX = "/grpc.health.v1.Health/"

# The switches of libraries that phone home unless told not to. Forced, not defaulted: with the
# privacy gates closed CodeCompass makes no outbound connection, and a variable left in a user's
# shell must not break that. Children (the services the CLI starts) inherit them.
LIBRARY_TELEMETRY_OFF = {
    # onnxruntime (the default embedding model) sends usage events to
    # mobile.events.data.microsoft.com; it reads this once, when its module is imported.
    "ORT_DISABLE_TELEMETRY": "1",
    # huggingface_hub, under sentence-transformers and transformers: the model comes from a
    # package on disk, so no lookup of model metadata and no usage pings.
    "HF_HUB_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    # The cross-tool convention (consoledonottrack.com) other libraries honour.
    "DO_NOT_TRACK": "1",
}

_lock = threading.Lock()
_provider: TracerProvider | None = None
_meter_provider: MeterProvider | None = None
_shut_down = False


class JsonLinesSpanExporter(SpanExporter):
    """Appends one JSON object per finished span to a file."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._lock = threading.Lock()
        directory = os.path.dirname(os.path.abspath(path))
        os.makedirs(directory, exist_ok=True)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = [json.dumps(span_to_json(span), separators=(",", ":")) + "\n" for span in spans]
        with self._lock, open(self._path, "a", encoding="utf-8") as handle:
            handle.writelines(lines)
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def span_to_json(span: ReadableSpan) -> dict[str, Any]:
    ctx = span.get_span_context()
    assert ctx is not None, "the SDK gives every span it starts a context, and exporters see only those"
    parent = span.parent
    return {
        "trace_id": format(ctx.trace_id, "032x"),
        "span_id": format(ctx.span_id, "016x"),
        "parent_span_id": format(parent.span_id, "016x") if parent is not None else "",
        "name": span.name,
        "kind": span.kind.name.lower(),
        "service": span.resource.attributes.get("service.name", ""),
        "service_namespace": span.resource.attributes.get("service.namespace", ""),
        "start_ns": span.start_time,
        "end_ns": span.end_time,
        "status": span.status.status_code.name.lower(),
        "attributes": {k: _json_value(v) for k, v in (span.attributes or {}).items()},
    }


def _json_value(value: Any) -> Any:
    if isinstance(value, tuple | list):
        return list(value)
    return value


def disable_library_telemetry() -> None:
    """Switch off third-party usage telemetry in this process and the processes it starts.

    Must run before the libraries are imported; `init_telemetry` calls it first thing.
    """
    os.environ.update(LIBRARY_TELEMETRY_OFF)


def init_telemetry(service_name: str, *, extra_processors: Sequence[Any] = (), metrics_port: int | None = None,
                   metrics_host: str = LOOPBACK, extra_metric_readers: Sequence[MetricReader] = ()) -> None:
    """Install the tracer and meter providers and W3C propagators; later calls are no-ops.

    ``service_name`` is the process's one name (codecompass.common.names), in the `codecompass`
    namespace. ``OTEL_SERVICE_NAME`` does not rename it: a service's name in traces is the name it
    has in logs, process lists and addresses (OTEL_RESOURCE_ATTRIBUTES still adds attributes such
    as deployment.environment). ``metrics_port`` (the service's ``<SVC>_METRICS_PORT``) serves the
    metrics for Prometheus on ``metrics_host``; 0 picks a free port (``metrics_address`` says
    which). ``extra_processors`` and ``extra_metric_readers`` let tests attach in-memory exporters.
    """
    global _provider, _meter_provider
    disable_library_telemetry()
    with _lock:
        if _provider is not None:
            return
        # Attributes given here win over the environment's (OTEL_SERVICE_NAME among them).
        resource = Resource.create({"service.name": service_name, "service.namespace": NAMESPACE})
        # Our own exit hook (below) instead of the SDK's, so an explicit
        # shutdown_telemetry() and the exit hook never shut the provider down twice.
        provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        otlp = bool(os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"))
        if otlp or os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
            # Imported only when used: the exporter pulls in the OTLP protos, which
            # would slow every CLI invocation down for nothing.
            from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

            provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        trace_file = os.environ.get(TRACE_FILE_ENV)
        if trace_file:
            # Synchronous on purpose: a span is on disk the moment it ends, so a test
            # (or a person tailing the file) sees it without waiting for a batch flush.
            provider.add_span_processor(SimpleSpanProcessor(JsonLinesSpanExporter(trace_file)))
        for processor in extra_processors:
            provider.add_span_processor(processor)
        propagate.set_global_textmap(
            CompositePropagator([TraceContextTextMapPropagator(), W3CBaggagePropagator()])
        )
        trace.set_tracer_provider(provider)
        _provider = provider
        readers = [*_metric_readers(otlp or bool(os.environ.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")),
                                    metrics_port, metrics_host), *extra_metric_readers]
        # Without a reader the API's no-op meter stays: instruments cost nothing where nobody reads them.
        if readers:
            _meter_provider = MeterProvider(metric_readers=readers, resource=resource, shutdown_on_exit=False)
            metrics.set_meter_provider(_meter_provider)
        atexit.register(shutdown_telemetry)


def flush_telemetry() -> None:
    """Export pending spans and metrics now; the providers stay usable (short-lived CLI processes)."""
    with _lock:
        provider, meters = _provider, _meter_provider
    if provider is not None:
        provider.force_flush()
    if meters is not None:
        meters.force_flush()


def shutdown_telemetry() -> None:
    """Flush pending spans and stop exporters (safe to call more than once)."""
    global _shut_down
    with _lock:
        provider = _provider if not _shut_down else None
        meters = _meter_provider if not _shut_down else None
        _shut_down = True
    if provider is not None:
        provider.force_flush()
        provider.shutdown()
    if meters is not None:
        # Shutting a periodic reader down exports what it holds once more.
        meters.shutdown()


def tracer(name: str) -> trace.Tracer:
    return trace.get_tracer(name)


# --- metrics ---------------------------------------------------------------
#
# Every instrument a Python process records, declared once here; the Node service declares its
# own in tracing.ts with the same names. OpenTelemetry's names where its semantic conventions have
# one (gRPC server calls, MCP tool calls), `codecompass.…` otherwise. Prometheus sees them with
# dots as underscores, the unit as a suffix (`_seconds`, `_bytes`) and `_total` on counters.
# Attribute values are bounded: a method, a tool, a status, a cache, an index key (one per index
# the writer holds), never a path or a query.

# Latency buckets in seconds, OpenTelemetry's recommendation for RPC durations: a cached symbol
# lookup takes milliseconds, a search a few hundred, an index stream minutes (past 10 s it is +Inf).
DURATION_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0)
# OTLP pushes every 60 s by default (OTEL_METRIC_EXPORT_INTERVAL), a common scrape interval.

_meter = metrics.get_meter("codecompass")

RPC_SERVER_DURATION = _meter.create_histogram(
    "rpc.server.call.duration", unit="s", explicit_bucket_boundaries_advisory=DURATION_BUCKETS_S,
    description="Duration of gRPC calls this server answered, by method and status code (health checks left out)")
MCP_TOOL_DURATION = _meter.create_histogram(
    "mcp.server.operation.duration", unit="s", explicit_bucket_boundaries_advisory=DURATION_BUCKETS_S,
    description="Duration of MCP tool calls the gateway answered, by tool and error code")
CACHE_REQUESTS = _meter.create_counter(
    "codecompass.cache.requests", unit="{lookup}",
    description="Lookups in a process's caches, by cache and result (hit or miss)")
EMBEDDING_QUEUE_DEPTH = _meter.create_up_down_counter(
    "codecompass.embedding.queue.depth", unit="{text}",
    description="Texts the embedding service has received and not yet answered, by input type")

# The index writer's state, observed when metrics are collected (`observe_indexes`).
INDEX_GAUGES = {
    "codecompass.index.count": ("{index}", "Indexes this writer holds open"),
    "codecompass.index.chunks": ("{chunk}", "Chunks in the index"),
    "codecompass.index.size": ("By", "Bytes the index takes in its store"),
    "codecompass.embedding.backlog": ("{chunk}", "Chunks of the index still waiting for their primary vector"),
    "codecompass.sync.pending_files": ("{file}", "Files a sync has found changed and not yet written"),
    "codecompass.sync.lag": ("s", "Seconds since the oldest unfinished sync began (0: the last one finished)"),
}
INDEX_ATTRIBUTE = "codecompass.index"


@dataclass(frozen=True)
class IndexReading:
    """One index as its writer sees it at collection time."""

    key: str
    chunks: int
    size_bytes: int
    backlog: int
    pending_files: int
    lag_s: float


_index_observers: dict[int, Callable[[], list[IndexReading]]] = {}
_observers_lock = threading.Lock()


def observe_indexes(read: Callable[[], list[IndexReading]]) -> Callable[[], None]:
    """Report the indexes `read` returns at each collection, until the returned function is called."""
    handle = id(read)
    with _observers_lock:
        _index_observers[handle] = read

    def stop() -> None:
        with _observers_lock:
            _index_observers.pop(handle, None)

    return stop


def _index_readings() -> list[list[IndexReading]] | None:
    """Each writer's readings; None in a process without a writer (it reports no index gauges)."""
    with _observers_lock:
        reads = list(_index_observers.values())
    if not reads:
        return None
    out: list[list[IndexReading]] = []
    for read in reads:
        try:
            out.append(read())
        except Exception:  # noqa: BLE001 - a failed reading must not fail the collection of every metric
            logging.getLogger("codecompass.telemetry").exception("reading the indexes for metrics failed")
    return out


def _observe(field: str | None) -> Callable[[CallbackOptions], Iterable[Observation]]:
    def callback(_options: CallbackOptions) -> Iterable[Observation]:
        writers = _index_readings()
        if writers is None:
            return []
        if field is None:
            return [Observation(sum(len(readings) for readings in writers))]
        return [Observation(getattr(reading, field), {INDEX_ATTRIBUTE: reading.key})
                for readings in writers for reading in readings]

    return callback


for _name, _field in zip(INDEX_GAUGES, (None, "chunks", "size_bytes", "backlog", "pending_files", "lag_s"),
                         strict=True):
    _meter.create_observable_gauge(_name, callbacks=[_observe(_field)], unit=INDEX_GAUGES[_name][0],
                                   description=INDEX_GAUGES[_name][1])


def record_tool_call(tool: str, seconds: float, error: str | None) -> None:
    """One MCP tools/call: its tool and, when it failed, its error code (`error.type`)."""
    attributes = {"mcp.method.name": "tools/call", "gen_ai.tool.name": tool}
    if error is not None:
        attributes["error.type"] = error
    MCP_TOOL_DURATION.record(seconds, attributes)


def record_cache_lookups(cache: str, hits: int, misses: int) -> None:
    if hits:
        CACHE_REQUESTS.add(hits, {"codecompass.cache": cache, "codecompass.cache.result": "hit"})
    if misses:
        CACHE_REQUESTS.add(misses, {"codecompass.cache": cache, "codecompass.cache.result": "miss"})


_metrics_address: str | None = None


def metrics_address() -> str | None:
    """host:port of this process's Prometheus endpoint; None when it serves none."""
    return _metrics_address


def _metric_readers(otlp: bool, port: int | None, host: str) -> list[MetricReader]:
    global _metrics_address
    readers: list[MetricReader] = []
    if otlp:
        # Imported only when used, as the span exporter is.
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
    if port is not None:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from prometheus_client import start_http_server

        # service.name and service.namespace on every series, as the collector's Prometheus exporter
        # puts them (resource_to_telemetry_conversion): one dashboard reads either path.
        try:
            server, _thread = start_http_server(port, addr=host)
        except OSError as exc:
            # Metrics are not the service's work: it serves without them, and its scrape target shows
            # down, rather than not serving at all (a second stdio gateway started with the same port).
            logging.getLogger("codecompass.telemetry").error(
                "no metrics endpoint: cannot listen on %s (%s)", host_port(host, port), exc)
        else:
            readers.append(PrometheusMetricReader(resource_attribute_filter=lambda key: key in _RESOURCE_LABELS))
            _metrics_address = host_port(host, server.server_port)
    return readers


_RESOURCE_LABELS = frozenset({"service.name", "service.namespace"})


# --- server side ---------------------------------------------------------


def _metadata_carrier(metadata: Sequence[tuple[str, Any]] | None) -> dict[str, str]:
    return {key: value for key, value in (metadata or ()) if isinstance(value, str)}


class _ServerInterceptor(grpc.ServerInterceptor):
    """Continues the caller's trace: one SERVER span per RPC, with its status code, and the RPC's
    duration in `rpc.server.call.duration`."""

    def __init__(self) -> None:
        self._tracer = tracer("codecompass.grpc.server")

    def intercept_service(self, continuation, handler_call_details):
        handler = continuation(handler_call_details)
        method = handler_call_details.method
        # Health probes run every few hundred ms and would bury real traces;
        # wrapping them would also drop the non-blocking Watch of the servicer.
        if handler is None or method.startswith(_HEALTH_PREFIX):
            return handler
        parent = propagate.extract(_metadata_carrier(handler_call_details.invocation_metadata))
        start = self._starter(method, parent)
        if handler.unary_unary:
            return handler._replace(unary_unary=_wrap_unary(handler.unary_unary, start, method))
        if handler.stream_unary:
            return handler._replace(stream_unary=_wrap_unary(handler.stream_unary, start, method))
        if handler.unary_stream:
            return handler._replace(unary_stream=_wrap_stream(handler.unary_stream, start, method))
        return handler._replace(stream_stream=_wrap_stream(handler.stream_stream, start, method))

    def _starter(self, method: str, parent: otel_context.Context) -> Callable[[], trace.Span]:
        def start() -> trace.Span:
            return self._tracer.start_span(
                method.lstrip("/"), context=parent, kind=SpanKind.SERVER, attributes=rpc_attributes(method)
            )

        return start


def _context_code(context: grpc.ServicerContext) -> grpc.StatusCode | None:
    return context.code() if hasattr(context, "code") else None


def _finish_server_span(span: trace.Span, context: grpc.ServicerContext, exc: BaseException | None,
                        method: str, started: float) -> None:
    code = _context_code(context)
    if code is None:
        if isinstance(exc, GeneratorExit):
            code = grpc.StatusCode.CANCELLED
        else:
            code = grpc.StatusCode.UNKNOWN if exc is not None else grpc.StatusCode.OK
    RPC_SERVER_DURATION.record(time.perf_counter() - started,
                               {**rpc_attributes(method), "rpc.grpc.status_code": code.value[0]})
    span.set_attribute("rpc.grpc.status_code", code.value[0])
    if code != grpc.StatusCode.OK:
        details = context.details() if hasattr(context, "details") else None
        if isinstance(details, bytes):
            details = details.decode("utf-8", "replace")
        span.set_status(Status(StatusCode.ERROR, f"{code.name}: {details or ''}"))
    span.end()


def _abort_unexpected(exc: Exception, span: trace.Span, context: grpc.ServicerContext, method: str) -> None:
    """Turn a bug into INTERNAL with a short message; the traceback goes to the log, not the wire."""
    if _context_code(context) is not None:
        return  # context.abort() raised it: the servicer already chose the status.
    span.record_exception(exc)
    trace_id = format(span.get_span_context().trace_id, "032x")
    with trace.use_span(span, end_on_exit=False):
        logging.getLogger("codecompass.grpc.server").exception("unhandled error in %s", method)
    context.abort(
        grpc.StatusCode.INTERNAL,
        f"internal error in {method.lstrip('/')}: {type(exc).__name__} (trace {trace_id}; see the service log)",
    )


def _use(span: trace.Span):
    return trace.use_span(span, end_on_exit=False, record_exception=False, set_status_on_exception=False)


def _wrap_unary(behavior: Callable[..., Any], start: Callable[[], trace.Span], method: str) -> Callable[..., Any]:
    def wrapped(request: Any, context: grpc.ServicerContext) -> Any:
        started = time.perf_counter()
        span = start()
        error: BaseException | None = None
        try:
            with _use(span):
                return behavior(request, context)
        except Exception as exc:
            error = exc
            _abort_unexpected(exc, span, context, method)
            raise
        finally:
            _finish_server_span(span, context, error, method, started)

    return wrapped


def _wrap_stream(behavior: Callable[..., Iterator[Any]], start: Callable[[], trace.Span], method: str):
    def wrapped(request: Any, context: grpc.ServicerContext) -> Iterator[Any]:
        started = time.perf_counter()
        span = start()
        error: BaseException | None = None
        try:
            # The span is made current around each step of the handler, not across
            # yields, so it never leaks into whatever the worker thread runs in between.
            with _use(span):
                responses = iter(behavior(request, context))
            while True:
                with _use(span):
                    try:
                        item = next(responses)
                    except StopIteration:
                        return
                yield item
        except GeneratorExit as exc:
            error = exc
            raise
        except Exception as exc:
            error = exc
            _abort_unexpected(exc, span, context, method)
            raise
        finally:
            _finish_server_span(span, context, error, method, started)

    return wrapped


def server_interceptor() -> grpc.ServerInterceptor:
    return _ServerInterceptor()


def current_trace_ids() -> tuple[str, str] | None:
    """(trace_id, span_id) of the current span as hex, or None outside a span."""
    ctx = trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return None
    return format(ctx.trace_id, "032x"), format(ctx.span_id, "016x")
