// The one telemetry module of the analysis service. It is initialised before
// any gRPC server exists so every span, including the first request's, lands
// in the configured exporters. Metrics go over OTLP to the same endpoint, and to a
// Prometheus endpoint when ANALYSIS_METRICS_PORT is set; their names are the Python
// services' (common/telemetry.py), so one dashboard reads both runtimes.
import * as fs from 'node:fs';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  context,
  metrics,
  propagation,
  trace,
  SpanKind,
  SpanStatusCode,
  type Context,
  type Counter,
  type Histogram,
  type Meter,
  type Span,
  type TextMapGetter,
  type Tracer,
} from '@opentelemetry/api';
import { ExportResultCode, W3CTraceContextPropagator, hrTimeToNanoseconds, type ExportResult } from '@opentelemetry/core';
import type * as OtlpMetrics from '@opentelemetry/exporter-metrics-otlp-grpc';
import type * as Prometheus from '@opentelemetry/exporter-prometheus';
import type * as OtlpTraces from '@opentelemetry/exporter-trace-otlp-grpc';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import type * as SdkMetrics from '@opentelemetry/sdk-metrics';
import type { MetricReader, ResourceMetrics } from '@opentelemetry/sdk-metrics';
import {
  BatchSpanProcessor,
  SimpleSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { hostPort } from './hosts';
import { SERVICE_NAME, SERVICE_NAMESPACE } from './names';

export interface TelemetryOptions {
  otlpEndpoint: string | undefined;
  traceFile: string | undefined;
  /** The Prometheus endpoint's port (0: any free one); undefined: none. */
  metricsPort?: number;
  metricsHost?: string;
}

export interface Telemetry {
  /** host:port of the Prometheus endpoint, once it listens; undefined when there is none. */
  readonly metricsAddress: Promise<string | undefined>;
  /** Flushes pending spans and metrics and stops the exporters. */
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

// The exporters and the metrics SDK load only when configured: loading them took ~0.2 s of the
// service's start on two cores, where a local start exports nothing (issue 27: cold start).
/* eslint-disable @typescript-eslint/no-require-imports -- loaded on first use, typed by the type-only imports above */
const otlpTraces = (): typeof OtlpTraces => require('@opentelemetry/exporter-trace-otlp-grpc') as typeof OtlpTraces;
const otlpMetrics = (): typeof OtlpMetrics => require('@opentelemetry/exporter-metrics-otlp-grpc') as typeof OtlpMetrics;
const prometheus = (): typeof Prometheus => require('@opentelemetry/exporter-prometheus') as typeof Prometheus;
const sdkMetrics = (): typeof SdkMetrics => require('@opentelemetry/sdk-metrics') as typeof SdkMetrics;
/* eslint-enable @typescript-eslint/no-require-imports */

export function initTelemetry(options: TelemetryOptions): Telemetry {
  if (active) return active;
  const spanProcessors: SpanProcessor[] = [];
  if (options.otlpEndpoint) {
    // The exporter reads OTEL_EXPORTER_OTLP_* itself (endpoint, headers, TLS).
    spanProcessors.push(new BatchSpanProcessor(new (otlpTraces().OTLPTraceExporter)()));
  }
  if (options.traceFile) {
    // Synchronous, so a span is on disk as soon as its RPC has answered.
    spanProcessors.push(new SimpleSpanProcessor(new JsonLinesSpanExporter(options.traceFile)));
  }
  // The service's one name (names.ts); OTEL_SERVICE_NAME does not rename it, so its name in
  // traces is the one in its logs, its variables and `codecompass status`. OTEL_RESOURCE_ATTRIBUTES
  // still adds attributes, as it does for the Python services: the provider reads no environment
  // itself, and a trace backend that groups by one (Phoenix's project) would split the trace.
  const resource = detectResources({ detectors: [envDetector] }).merge(
    resourceFromAttributes({ 'service.name': SERVICE_NAME, 'service.namespace': SERVICE_NAMESPACE }),
  );
  const provider = new NodeTracerProvider({ resource, spanProcessors });
  provider.register({ propagator: new W3CTraceContextPropagator() });

  const readers: MetricReader[] = [];
  if (options.otlpEndpoint) {
    // OTLP every 60 s unless OTEL_METRIC_EXPORT_INTERVAL says otherwise, as the Python services.
    const exporter = new (otlpMetrics().OTLPMetricExporter)();
    readers.push(new (sdkMetrics().PeriodicExportingMetricReader)({ exporter, exportIntervalMillis: exportIntervalMs() }));
  }
  let endpoint: PrometheusEndpoint | undefined;
  if (options.metricsPort !== undefined) {
    endpoint = new PrometheusEndpoint(options.metricsPort, options.metricsHost ?? '127.0.0.1');
    readers.push(endpoint.reader);
  }
  const meterProvider = readers.length > 0 ? new (sdkMetrics().MeterProvider)({ resource, readers }) : undefined;
  if (meterProvider) {
    metrics.setGlobalMeterProvider(meterProvider);
    instruments = createInstruments(metrics.getMeter('codecompass'));
  }
  const telemetry: Telemetry = {
    metricsAddress: endpoint?.listening ?? Promise.resolve(undefined),
    shutdown: async () => {
      await endpoint?.close();
      await Promise.all([provider.shutdown(), meterProvider?.shutdown()]);
    },
  };
  active = telemetry;
  return telemetry;
}

function exportIntervalMs(): number {
  const raw = Number(process.env.OTEL_METRIC_EXPORT_INTERVAL);
  return Number.isFinite(raw) && raw > 0 ? raw : 60_000;
}

// Prometheus's names carry the unit (`_seconds`), as OpenTelemetry's compatibility rules ask and as
// the Python exporter and the collector write them; this SDK's serializer leaves it out, so the
// endpoint adds it for the units our instruments use.
const UNIT_SUFFIXES: Readonly<Record<string, string>> = { s: 'seconds', By: 'bytes' };

function withUnitSuffixes(collected: ResourceMetrics): ResourceMetrics {
  return {
    ...collected,
    scopeMetrics: collected.scopeMetrics.map((scope) => ({
      ...scope,
      metrics: scope.metrics.map((metric) => {
        const suffix = UNIT_SUFFIXES[metric.descriptor.unit];
        if (!suffix || metric.descriptor.name.endsWith(`.${suffix}`)) return metric;
        return { ...metric, descriptor: { ...metric.descriptor, name: `${metric.descriptor.name}.${suffix}` } };
      }),
    })),
  };
}

/**
 * GET /metrics in Prometheus's text format. The SDK's exporter is the reader (its own server
 * stays off); this one serves what it collects with the unit suffixes and service.name and
 * service.namespace on every series, as the Python services' endpoints do.
 */
class PrometheusEndpoint {
  readonly reader: Prometheus.PrometheusExporter;
  readonly listening: Promise<string | undefined>;
  private readonly serializer: Prometheus.PrometheusSerializer;
  private readonly server: http.Server;

  constructor(port: number, host: string) {
    const { PrometheusExporter, PrometheusSerializer } = prometheus();
    this.reader = new PrometheusExporter({ preventServerStart: true });
    this.serializer = new PrometheusSerializer(undefined, undefined, /^service\.(name|namespace)$/);
    this.server = http.createServer((request, response) => void this.answer(request, response));
    this.listening = new Promise((resolve) => {
      // Metrics are not the service's work: it serves without them (its scrape target shows down)
      // rather than not at all.
      this.server.once('error', (err) => {
        process.stderr.write(`${SERVICE_NAME}: no metrics endpoint: cannot listen on ${hostPort(host, port)} (${String(err)})\n`);
        resolve(undefined);
      });
      this.server.listen(port, host, () => resolve(hostPort(host, (this.server.address() as AddressInfo).port)));
    });
  }

  private async answer(request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
    if (request.url?.split('?')[0] !== '/metrics') {
      response.writeHead(404).end();
      return;
    }
    try {
      const { resourceMetrics } = await this.reader.collect();
      response.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
      response.end(this.serializer.serialize(withUnitSuffixes(resourceMetrics)));
    } catch (err) {
      response.writeHead(500).end(`collecting metrics failed: ${String(err)}\n`);
    }
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      if (!this.server.listening) resolve();
      else this.server.close(() => resolve());
    });
  }
}

// The instruments, named as the Python services name theirs (common/telemetry.py). Made once the
// meter provider is set: this API's meters made before that stay no-ops (it has no proxy meter).
const DURATION_BUCKETS_S = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10];

interface Instruments {
  rpcServerDuration: Histogram;
  cacheRequests: Counter;
}

let instruments: Instruments | undefined;

function createInstruments(meter: Meter): Instruments {
  return {
    rpcServerDuration: meter.createHistogram('rpc.server.call.duration', {
      unit: 's',
      description: 'Duration of gRPC calls this server answered, by method and status code (health checks left out)',
      advice: { explicitBucketBoundaries: DURATION_BUCKETS_S },
    }),
    cacheRequests: meter.createCounter('codecompass.cache.requests', {
      unit: '{lookup}',
      description: "Lookups in a process's caches, by cache and result (hit or miss)",
    }),
  };
}

/** One lookup in a named cache (`render`: a file parsed for rendering). */
export function recordCacheLookup(cache: string, hit: boolean): void {
  instruments?.cacheRequests.add(1, { 'codecompass.cache': cache, 'codecompass.cache.result': hit ? 'hit' : 'miss' });
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
      const started = performance.now();
      try {
        return await body(span);
      } finally {
        span.end();
        instruments?.rpcServerDuration.record((performance.now() - started) / 1000, {
          'rpc.system': 'grpc',
          'rpc.service': service,
          'rpc.method': method,
          // A body that settled no status (none does today) counts as UNKNOWN, as gRPC would call it.
          'rpc.grpc.status_code': statusCodes.get(span) ?? 2,
        });
      }
    },
  );
}

// The status each server span was settled with, for its duration metric.
const statusCodes = new WeakMap<Span, number>();

export function recordRpcStatus(span: Span, code: number, message?: string): void {
  statusCodes.set(span, code);
  span.setAttribute('rpc.grpc.status_code', code);
  if (code === 0) {
    span.setStatus({ code: SpanStatusCode.OK });
  } else {
    span.setStatus({ code: SpanStatusCode.ERROR, message });
  }
}
