// gRPC edge of the analysis service: handlers convert, delegate to
// AnalysisService, and map failures to status codes. Each RPC runs inside a
// SERVER span that continues the caller's W3C trace context.
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { PackageDefinition } from '@grpc/proto-loader';
import { ReflectionService } from '@grpc/reflection';
import { HealthImplementation, protoPath as healthProtoPath } from 'grpc-health-check';
import type { Span } from '@opentelemetry/api';
import { ConversionError, chunkRequestFromPb, chunkedFileToPb, renderRequestFromPb, renderResultToPb, scanRequestFromPb, scanResultToPb, traceRequestFromPb, traceResultToPb } from './convert';
import {
  CodeAnalysisServiceService,
  type ChunkFilesRequest,
  type ChunkFilesResponse,
  type CodeAnalysisServiceServer,
} from './gen/codecompass/v1/analysis';
import type { LogFields, Logger } from './logging';
import { type AnalysisService, CancelledError } from './service';
import { hostPort } from './hosts';
import { FILE_DESCRIPTORS } from './gen/descriptors';
import { recordRpcStatus, withServerSpan } from './tracing';
import { RequestError } from './workspace';
import { BearerTokens, serverCredentials, tokenInterceptor, type TlsFiles } from './auth';
import type { AnalysisConfig } from './config';

// The gRPC contract this service implements (its health entry, its spans' rpc.service): a
// contract name, unlike the service's own name (names.ts).
export const ANALYSIS_GRPC_SERVICE = 'codecompass.v1.CodeAnalysisService';

interface StatusError {
  code: grpc.status;
  details: string;
}

/** Failures as the client sees them: a code and one line, never a stack. */
export function toStatusError(err: unknown, logger: Logger, method: string): StatusError {
  if (err instanceof RequestError) {
    return { code: err.kind === 'not_found' ? grpc.status.NOT_FOUND : grpc.status.INVALID_ARGUMENT, details: err.message };
  }
  if (err instanceof ConversionError) return { code: grpc.status.INVALID_ARGUMENT, details: err.message };
  if (err instanceof CancelledError) return { code: grpc.status.CANCELLED, details: err.message };
  logger.error('rpc failed', { method, error: err instanceof Error ? err.message : String(err), stack: (err as Error)?.stack });
  const short = err instanceof Error ? err.message.split('\n')[0].slice(0, 200) : 'unknown error';
  return { code: grpc.status.INTERNAL, details: `${method} failed: ${short}` };
}

function finishSpan(span: Span, status: StatusError | undefined): void {
  recordRpcStatus(span, status?.code ?? grpc.status.OK, status?.details);
}

/** Resolves when the stream can take more, or when writing no longer matters. */
function writable(call: grpc.ServerWritableStream<ChunkFilesRequest, ChunkFilesResponse>): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      call.off('drain', done);
      call.off('cancelled', done);
      call.off('close', done);
      resolve();
    };
    call.on('drain', done);
    call.on('cancelled', done);
    call.on('close', done);
  });
}

/** The call's deadline in epoch milliseconds; Infinity when the client set none. */
function deadlineOf(call: { getDeadline(): grpc.Deadline }): number {
  const deadline = call.getDeadline();
  return deadline instanceof Date ? deadline.getTime() : Number.isFinite(deadline) ? Number(deadline) : Infinity;
}

export function createHandlers(service: AnalysisService, logger: Logger): CodeAnalysisServiceServer {
  return {
    scanWorkspace: (call, callback) => {
      void withServerSpan(ANALYSIS_GRPC_SERVICE, 'ScanWorkspace', call.metadata, async (span) => {
        try {
          const result = await service.scan(scanRequestFromPb(call.request), () => call.cancelled);
          span.setAttribute('codecompass.files', result.files.length);
          span.setAttribute('codecompass.scan.unchanged', result.unchanged === true);
          span.setAttribute('codecompass.scan.since_token', result.sinceToken === true);
          finishSpan(span, undefined);
          const fields: LogFields = {
            unchanged: result.unchanged === true,
            watch: result.watchToken ? 'on' : (result.unwatchedReason ?? 'off'),
            files: result.files.length,
            added: result.added.length,
            changed: result.changed.length,
            removed: result.removed.length,
            skipped: result.skipped.length,
            duration_ms: Math.round(result.durationMs),
          };
          // A scan answered by the folder watch is every search's freshness check: not worth a line each.
          if (result.unchanged) logger.debug('scan done', fields);
          else logger.info('scan done', fields);
          callback(null, scanResultToPb(result));
        } catch (err) {
          const status = toStatusError(err, logger, 'ScanWorkspace');
          finishSpan(span, status);
          callback(status);
        }
      });
    },

    chunkFiles: (call) => {
      void withServerSpan(ANALYSIS_GRPC_SERVICE, 'ChunkFiles', call.metadata, async (span) => {
        let files = 0;
        try {
          const request = chunkRequestFromPb(call.request);
          // Which pass a trace reader is looking at: a cold index's syntax-only pass, or the one with references.
          span.setAttribute('codecompass.chunk.references', request.includeReferences);
          span.setAttribute('codecompass.chunk.lexical_only', request.lexicalOnly);
          for await (const file of service.chunkFiles(request, () => call.cancelled, deadlineOf(call))) {
            if (call.cancelled) throw new CancelledError();
            files++;
            if (!call.write(chunkedFileToPb(file))) await writable(call);
          }
          span.setAttribute('codecompass.files', files);
          finishSpan(span, undefined);
          call.end();
        } catch (err) {
          const status = toStatusError(err, logger, 'ChunkFiles');
          span.setAttribute('codecompass.files', files);
          finishSpan(span, status);
          if (!call.cancelled) call.emit('error', status);
        }
      });
    },

    renderSymbols: (call, callback) => {
      void withServerSpan(ANALYSIS_GRPC_SERVICE, 'RenderSymbols', call.metadata, async (span) => {
        try {
          const request = renderRequestFromPb(call.request);
          const result = await service.render(request, () => call.cancelled);
          span.setAttribute('codecompass.render.requested', request.specs.length);
          span.setAttribute('codecompass.render.symbols', result.symbols.length);
          span.setAttribute('codecompass.render.missing', result.missingSymbolIds.length);
          finishSpan(span, undefined);
          callback(null, renderResultToPb(result));
        } catch (err) {
          const status = toStatusError(err, logger, 'RenderSymbols');
          finishSpan(span, status);
          callback(status);
        }
      });
    },

    trace: (call, callback) => {
      void withServerSpan(ANALYSIS_GRPC_SERVICE, 'Trace', call.metadata, async (span) => {
        try {
          // No deadline from the client means no limit of its own; the service
          // still caps a trace at its internal budget.
          const result = await service.trace(traceRequestFromPb(call.request), deadlineOf(call), () => call.cancelled);
          span.setAttribute('codecompass.trace.returned', result.returned);
          span.setAttribute('codecompass.trace.partial', result.partial);
          finishSpan(span, undefined);
          callback(null, traceResultToPb(result));
        } catch (err) {
          const status = toStatusError(err, logger, 'Trace');
          finishSpan(span, status);
          callback(status);
        }
      });
    },
  };
}

export interface RunningServer {
  readonly host: string;
  readonly port: number;
  /** Marks the service ready once warm-up has finished. */
  setServing(): void;
  /**
   * Stops accepting calls and lets in-flight ones (a ChunkFiles stream over
   * a large folder) finish; after graceMs the rest are cut off.
   */
  shutdown(graceMs: number): Promise<void>;
}

/**
 * Binds `host` with `bind`. `::` listens on both families (libuv makes the socket dual-stack), as
 * the Python services do; a machine without IPv6 (a kernel booted with ipv6.disable=1) cannot open
 * an IPv6 socket, and then every IPv4 address is taken instead.
 */
export async function bindWithFallback(bind: (host: string) => Promise<number>, host: string, logger: Logger): Promise<{ host: string; port: number }> {
  try {
    return { host, port: await bind(host) };
  } catch (err) {
    if (host !== '::' || !/EAFNOSUPPORT|EADDRNOTAVAIL|family not supported/i.test(String(err))) throw err;
    logger.info('no IPv6 on this machine: listening on every IPv4 address', {});
    return { host: '0.0.0.0', port: await bind('0.0.0.0') };
  }
}

/**
 * Server reflection over this service, health and reflection itself: the protos' descriptors
 * (generated into gen/descriptors.ts, with their doc comments; ts-proto's stubs carry none), and
 * health's and reflection's from the protos their packages ship.
 */
function addReflection(server: grpc.Server): void {
  // Reflection reads one thing of each entry: the serialized files it belongs to. The package's
  // files are one entry, typed as the loader's smallest kind (it has no kind for a whole file).
  const ours: PackageDefinition = {
    'codecompass.v1': {
      format: 'Protocol Buffer 3 EnumDescriptorProto',
      type: {},
      fileDescriptorProtos: FILE_DESCRIPTORS.map((encoded) => Buffer.from(encoded, 'base64')),
    },
  };
  // Reflection's own protos, as its package ships them (build/proto beside build/src): it serves both
  // versions, and lists what it can describe.
  const reflectionProtos = path.join(path.dirname(require.resolve('@grpc/reflection')), '..', 'proto', 'grpc', 'reflection');
  const loaded = protoLoader.loadSync([healthProtoPath, ...['v1', 'v1alpha'].map((v) => path.join(reflectionProtos, v, 'reflection.proto'))]);
  new ReflectionService({ ...loaded, ...ours }).addToServer(server);
}

export async function startServer(options: {
  host: string;
  port: number;
  service: AnalysisService;
  logger: Logger;
  /** Serve gRPC reflection (the grpc_reflection setting); on unless turned off. */
  reflection?: boolean;
  /** The service token every call but health's must carry (auth.ts); none unless given. */
  auth?: AnalysisConfig['auth'];
  /** TLS from PEM files; plaintext unless given. */
  tls?: TlsFiles;
}): Promise<RunningServer> {
  const tokens = options.auth === undefined ? undefined : new BearerTokens(options.auth, options.logger);
  const server = new grpc.Server({
    // Chunk responses of huge files can exceed the 4 MiB default.
    'grpc.max_send_message_length': 64 * 1024 * 1024,
    'grpc.max_receive_message_length': 64 * 1024 * 1024,
    interceptors: tokens === undefined ? [] : [tokenInterceptor(tokens, options.logger)],
  });
  const credentials = serverCredentials(options.tls);
  const health = new HealthImplementation({ '': 'NOT_SERVING', [ANALYSIS_GRPC_SERVICE]: 'NOT_SERVING' });
  health.addToServer(server);
  server.addService(CodeAnalysisServiceService, createHandlers(options.service, options.logger));
  if (options.reflection ?? true) addReflection(server);
  const { host, port } = await bindWithFallback(
    (bindHost) =>
      new Promise<number>((resolve, reject) => {
        server.bindAsync(hostPort(bindHost, options.port), credentials, (err, boundPort) => (err ? reject(err) : resolve(boundPort)));
      }),
    options.host,
    options.logger,
  );
  const setAll = (status: 'SERVING' | 'NOT_SERVING') => {
    health.setStatus('', status);
    health.setStatus(ANALYSIS_GRPC_SERVICE, status);
  };
  let stopping: Promise<void> | undefined;
  return {
    host,
    port,
    setServing: () => {
      if (!stopping) setAll('SERVING');
    },
    shutdown: (graceMs) => {
      stopping ??= new Promise<void>((resolve) => {
        setAll('NOT_SERVING');
        const force = setTimeout(() => {
          options.logger.warn('grace period over, cancelling in-flight calls', { grace_ms: graceMs });
          server.forceShutdown();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(force);
          resolve();
        });
      });
      return stopping;
    },
  };
}
