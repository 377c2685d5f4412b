// The one telemetry module of the analysis service. It is initialised before
// any gRPC server exists so every span, including the first request's, lands
// in the configured exporters.
import * as fs from 'node:fs';
import {
  context,
  propagation,
  trace,
  SpanKind,
  SpanStatusCode,
  type Context,
  type Span,
  type TextMapGetter,
  type Tracer,
} from '@opentelemetry/api';
import { ExportResultCode, W3CTraceContextPropagator, hrTimeToNanoseconds, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-grpc';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  SimpleSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { SERVICE_NAME, SERVICE_NAMESPACE } from './names';

export interface TelemetryOptions {
  otlpEndpoint: string | undefined;
  traceFile: string | undefined;
}

export interface Telemetry {
  /** Flushes pending spans and stops the exporters. */
  shutdown(): Promise<void>;
}

/**
 * Appends finished spans as JSON lines. The Python services write the same
 * format, so a test can assert a trace across processes without a collector.
 */
export class JsonLinesSpanExporter implements SpanExporter {
  constructor(private readonly path: string) {}

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    try {
      const lines = spans.map((span) => JSON.stringify(spanRecord(span)) + '\n').join('');
      fs.appendFileSync(this.path, lines);
      resultCallback({ code: ExportResultCode.SUCCESS });
    } catch (err) {
      resultCallback({ code: ExportResultCode.FAILED, error: err as Error });
    }
  }

  async shutdown(): Promise<void> {}
}

function spanRecord(span: ReadableSpan): Record<string, unknown> {
  return {
    trace_id: span.spanContext().traceId,
    span_id: span.spanContext().spanId,
    parent_span_id: span.parentSpanContext?.spanId ?? '',
    name: span.name,
    service: String(span.resource.attributes['service.name'] ?? ''),
    service_namespace: String(span.resource.attributes['service.namespace'] ?? ''),
    start_ns: hrTimeToNanoseconds(span.startTime),
    end_ns: hrTimeToNanoseconds(span.endTime),
    attributes: span.attributes,
  };
}

let active: Telemetry | undefined;

export function initTelemetry(options: TelemetryOptions): Telemetry {
  if (active) return active;
  const spanProcessors: SpanProcessor[] = [];
  if (options.otlpEndpoint) {
    // The exporter reads OTEL_EXPORTER_OTLP_* itself (endpoint, headers, TLS).
    spanProcessors.push(new BatchSpanProcessor(new OTLPTraceExporter()));
  }
  if (options.traceFile) {
    // Synchronous, so a span is on disk as soon as its RPC has answered.
    spanProcessors.push(new SimpleSpanProcessor(new JsonLinesSpanExporter(options.traceFile)));
  }
  const provider = new NodeTracerProvider({
    // The service's one name (names.ts); OTEL_SERVICE_NAME does not rename it, so its name in
    // traces is the one in its logs, its variables and `codecompass status`. OTEL_RESOURCE_ATTRIBUTES
    // still adds attributes, as it does for the Python services: the provider reads no environment
    // itself, and a trace backend that groups by one (Phoenix's project) would split the trace.
    resource: detectResources({ detectors: [envDetector] }).merge(
      resourceFromAttributes({ 'service.name': SERVICE_NAME, 'service.namespace': SERVICE_NAMESPACE }),
    ),
    spanProcessors,
  });
  provider.register({ propagator: new W3CTraceContextPropagator() });
  const telemetry: Telemetry = { shutdown: () => provider.shutdown() };
  active = telemetry;
  return telemetry;
}

function tracer(): Tracer {
  return trace.getTracer('codecompass.analysis');
}

/** Reads W3C headers from gRPC metadata, whose values may be repeated. */
export interface MetadataLike {
  get(key: string): Array<string | Buffer>;
}

const metadataGetter: TextMapGetter<MetadataLike> = {
  keys: () => ['traceparent', 'tracestate'],
  get: (carrier, key) => {
    const values = carrier.get(key).map((v) => v.toString());
    return values.length === 0 ? undefined : values.length === 1 ? values[0] : values;
  },
};

function extractContext(metadata: MetadataLike): Context {
  return propagation.extract(context.active(), metadata, metadataGetter);
}

/**
 * Runs an RPC body inside a SERVER span that continues the caller's trace.
 * The callback settles the span with the gRPC status code it answered.
 */
export function withServerSpan<T>(
  service: string,
  method: string,
  metadata: MetadataLike,
  body: (span: Span) => Promise<T>,
): Promise<T> {
  const parent = extractContext(metadata);
  return tracer().startActiveSpan(
    `${service}/${method}`,
    {
      kind: SpanKind.SERVER,
      attributes: { 'rpc.system': 'grpc', 'rpc.service': service, 'rpc.method': method },
    },
    parent,
    async (span) => {
      try {
        return await body(span);
      } finally {
        span.end();
      }
    },
  );
}

export function recordRpcStatus(span: Span, code: number, message?: string): void {
  span.setAttribute('rpc.grpc.status_code', code);
  if (code === 0) {
    span.setStatus({ code: SpanStatusCode.OK });
  } else {
    span.setStatus({ code: SpanStatusCode.ERROR, message });
  }
}
