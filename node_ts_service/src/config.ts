// Environment is read once, validated, and frozen: a bad value stops the
// service at start with a message naming the variable, instead of surfacing
// later as an odd failure in the middle of a request.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { TokenError, checkLength, readTokenFile, type TlsFiles } from './auth';
import { LOOPBACK, isLoopback, parseBindHost } from './hosts';

export interface AnalysisConfig {
  readonly host: string;
  readonly port: number;
  readonly maxFileBytes: number;
  /** Index generated source (fileio's detectGenerated) instead of skipping it. */
  readonly indexGenerated: boolean;
  readonly shutdownGraceMs: number;
  readonly maxPrograms: number;
  readonly maxRenderCacheFiles: number;
  readonly maxRenderCacheChars: number;
  readonly maxWorkspaces: number;
  readonly maxWatchedFolders: number;
  readonly chunkFileTimeoutMs: number;
  readonly logLevel: LogLevel;
  /** gRPC server reflection (grpcurl, grpcui and Postman list and call the RPCs without the protos). */
  readonly reflection: boolean;
  readonly otlpEndpoint: string | undefined;
  readonly traceFile: string | undefined;
  readonly metricsPort: number | undefined;
  /** Where the V8 code cache of the large modules lives (compileCache.ts); undefined: none. */
  readonly compileCacheDir: string | undefined;
  /** The service token (auth.ts): the variable's, else the token file's; none on loopback unless set. */
  readonly auth: { readonly token?: string; readonly file?: string; readonly setting: string } | undefined;
  /** TLS from PEM files (auth.ts); undefined: plaintext. */
  readonly tls: TlsFiles | undefined;
}

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export class ConfigError extends Error {
  constructor(readonly variable: string, detail: string) {
    super(`invalid ${variable}: ${detail}`);
    this.name = 'ConfigError';
  }
}

const MIB = 1024 * 1024;
/** node_ts_service/.cache/v8, from dist/src where this module runs. */
export const DEFAULT_COMPILE_CACHE_DIR = path.resolve(__dirname, '..', '..', '.cache', 'v8');
/** See chunkFileTimeoutMs below. */
export const DEFAULT_CHUNK_FILE_TIMEOUT_MS = 60_000;

// Settings that were renamed: named, so a setup that still sets one fails at start saying what
// to set instead of the value being lost in silence.
const RENAMED: Readonly<Record<string, string>> = {
  ANALYSIS_HOST: 'CODECOMPASS_BIND_HOST, the host every CodeCompass server listens on',
};

// The variables of the service token and TLS, the Python services' `grpc` settings (the config file's
// values reach this service through them: `codecompass up` passes them on).
const TOKEN_VAR = 'CODECOMPASS_GRPC_AUTH_TOKEN';
const TOKEN_FILE_VAR = 'CODECOMPASS_GRPC_AUTH_TOKEN_FILE';

export function loadConfig(env: NodeJS.ProcessEnv = process.env): AnalysisConfig {
  for (const [name, replacement] of Object.entries(RENAMED)) {
    if (env[name] !== undefined) throw new ConfigError(name, `no longer read; set ${replacement}`);
  }
  // Loopback unless a deployment (a container, a host serving a team) says otherwise. The
  // Python services read the same variable (or the config file's bind_host, which
  // `codecompass up` passes on as this variable).
  const host = bindHostVar(env, 'CODECOMPASS_BIND_HOST', LOOPBACK);
  return Object.freeze({
    host,
    auth: authVars(env, host),
    tls: tlsVars(env),
    port: intVar(env, 'ANALYSIS_PORT', 50051, 0, 65535),
    // The setting every service reads (the Python services' grpc_reflection).
    reflection: boolVar(env, 'CODECOMPASS_GRPC_REFLECTION', true),
    // 5 MiB leaves room for 50k-line hand-written files (~2 MB) while keeping
    // generated blobs from dominating parse time and memory.
    maxFileBytes: intVar(env, 'ANALYSIS_MAX_FILE_BYTES', 5 * MIB, 1, 1024 * MIB),
    // Off: generated stubs and clients grow an index many times over (10 MB of them
    // took one past 1 GB) and crowd keyword results; a project that searches them turns this on.
    indexGenerated: boolVar(env, 'ANALYSIS_INDEX_GENERATED', false),
    // Long enough for an in-flight ChunkFiles stream over a large folder to
    // finish, short enough for an orchestrator's own kill timeout (30 s).
    shutdownGraceMs: intVar(env, 'ANALYSIS_SHUTDOWN_GRACE_MS', 10_000, 0, 600_000),
    // Each live LanguageService holds a Program (ASTs + checker); a handful
    // keeps a monorepo responsive while bounding memory.
    maxPrograms: intVar(env, 'ANALYSIS_MAX_PROGRAMS', 4, 1, 256),
    // Files parsed for rendering, kept per workspace: a search's answer renders symbols of
    // 20-50 files, and a cold parse costs 2-10 ms a file (a large one far more), the tail of
    // selection's latency. Bounded by count and by source size: an AST costs ~30x its text
    // (all of ws-300k, 10 MB of source, adds ~0.3 GB).
    maxRenderCacheFiles: intVar(env, 'ANALYSIS_RENDER_CACHE_FILES', 4096, 1, 100_000),
    maxRenderCacheChars: intVar(env, 'ANALYSIS_RENDER_CACHE_CHARS', 16_000_000, 1, 2_000_000_000),
    maxWorkspaces: intVar(env, 'ANALYSIS_MAX_WORKSPACES', 8, 1, 1024),
    // Folders watched per workspace so that a scan of an unchanged workspace needs no walk
    // (watch.ts): one inotify watch each, of the 8,192 to millions a Linux user may hold. A
    // workspace with more folders than this is walked on every scan; 0 turns watching off.
    maxWatchedFolders: intVar(env, 'ANALYSIS_MAX_WATCHED_FOLDERS', 20_000, 0, 1_000_000),
    // One file's chunking (a Program build aside) past this is abandoned and
    // the file skipped as chunk_failed, so a pathological file (the checker
    // inferring a type through thousands of nesting levels takes minutes)
    // cannot hold a whole index. The largest files we index (5 MiB, 50k lines
    // with references) take a few seconds.
    chunkFileTimeoutMs: intVar(env, 'ANALYSIS_CHUNK_FILE_TIMEOUT_MS', DEFAULT_CHUNK_FILE_TIMEOUT_MS, 100, 3_600_000),
    logLevel: logLevelVar(env, 'LOG_LEVEL', 'info'),
    otlpEndpoint: optionalVar(env, 'OTEL_EXPORTER_OTLP_ENDPOINT'),
    traceFile: optionalVar(env, 'CODECOMPASS_TRACE_FILE'),
    // The Prometheus endpoint (GET /metrics) on the bind host; none unless set, as several
    // services share one machine locally. A container sets 9464, each pod having its own.
    metricsPort: optionalVar(env, 'ANALYSIS_METRICS_PORT') === undefined ? undefined : intVar(env, 'ANALYSIS_METRICS_PORT', 0, 0, 65535),
    compileCacheDir: compileCacheVar(env),
  });
}

/** ANALYSIS_COMPILE_CACHE_DIR ("off": none), else `.cache/v8` in this package, beside the code it
 * caches as Python's __pycache__ is: `make setup` (and the image build) fill it, so even a first
 * start has it. A read-only install keeps what was built and writes nothing. */
function compileCacheVar(env: NodeJS.ProcessEnv): string | undefined {
  const set = env.ANALYSIS_COMPILE_CACHE_DIR;
  if (set === undefined) return DEFAULT_COMPILE_CACHE_DIR;
  return set.trim() === '' || set.trim().toLowerCase() === 'off' ? undefined : path.resolve(set.trim());
}

/** The service token's source, checked now so that a bad one stops the service at start; refused
 * beyond loopback when there is none. */
function authVars(env: NodeJS.ProcessEnv, host: string): AnalysisConfig['auth'] {
  const token = optionalVar(env, TOKEN_VAR);
  const file = optionalVar(env, TOKEN_FILE_VAR);
  try {
    if (token !== undefined) return { token: checkLength(token, TOKEN_VAR), setting: TOKEN_VAR };
    if (file !== undefined) {
      readTokenFile(file, TOKEN_FILE_VAR);
      return { file, setting: TOKEN_FILE_VAR };
    }
  } catch (err) {
    if (err instanceof TokenError) throw new ConfigError(token !== undefined ? TOKEN_VAR : TOKEN_FILE_VAR, err.message);
    throw err;
  }
  if (!isLoopback(host)) {
    throw new ConfigError(
      'CODECOMPASS_BIND_HOST',
      `${host} listens beyond this machine: set ${TOKEN_VAR} or ${TOKEN_FILE_VAR} to the service token clients must send, or listen on ${LOOPBACK}`,
    );
  }
  return undefined;
}

function tlsVars(env: NodeJS.ProcessEnv): TlsFiles | undefined {
  const certFile = pemVar(env, 'CODECOMPASS_GRPC_TLS_CERT_FILE');
  const keyFile = pemVar(env, 'CODECOMPASS_GRPC_TLS_KEY_FILE');
  const clientCaFile = pemVar(env, 'CODECOMPASS_GRPC_TLS_CLIENT_CA_FILE');
  if (certFile === undefined && keyFile === undefined && clientCaFile === undefined) return undefined;
  if (certFile === undefined) throw new ConfigError(keyFile !== undefined ? 'CODECOMPASS_GRPC_TLS_KEY_FILE' : 'CODECOMPASS_GRPC_TLS_CLIENT_CA_FILE', 'needs CODECOMPASS_GRPC_TLS_CERT_FILE too');
  if (keyFile === undefined) throw new ConfigError('CODECOMPASS_GRPC_TLS_CERT_FILE', 'needs CODECOMPASS_GRPC_TLS_KEY_FILE too');
  return { certFile, keyFile, clientCaFile };
}

/** A PEM file's path, read once here so that a missing or wrong file stops the service at start. */
function pemVar(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const file = optionalVar(env, name);
  if (file === undefined) return undefined;
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(name, `${file}: cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  if (!text.includes('-----BEGIN ')) throw new ConfigError(name, `${file}: not PEM (no -----BEGIN line)`);
  return file;
}

function optionalVar(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const raw = env[name]?.trim();
  return raw ? raw : undefined;
}

function bindHostVar(env: NodeJS.ProcessEnv, name: string, fallback: string): string {
  const raw = env[name];
  if (raw === undefined) return fallback;
  const host = parseBindHost(raw);
  if (host === undefined) {
    throw new ConfigError(name, `expected an IP address or host name to listen on (e.g. 127.0.0.1, 0.0.0.0, ::), got ${JSON.stringify(raw)}`);
  }
  return host;
}

/** The spellings the Python services' settings take (codecompass.common.config.parsers.parse_bool). */
function boolVar(env: NodeJS.ProcessEnv, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined) return fallback;
  const text = raw.trim().toLowerCase();
  if (['1', 'true', 'yes', 'on'].includes(text)) return true;
  if (['0', 'false', 'no', 'off', ''].includes(text)) return false;
  throw new ConfigError(name, `expected true or false, got ${JSON.stringify(raw)}`);
}

function intVar(env: NodeJS.ProcessEnv, name: string, fallback: number, min: number, max: number): number {
  const raw = optionalVar(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `expected a whole number, got ${JSON.stringify(raw)}`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(name, `expected ${min}..${max}, got ${value}`);
  return value;
}

const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

function logLevelVar(env: NodeJS.ProcessEnv, name: string, fallback: LogLevel): LogLevel {
  const raw = optionalVar(env, name)?.toLowerCase();
  if (raw === undefined) return fallback;
  const level = raw === 'warning' ? 'warn' : raw;
  if (!(LOG_LEVELS as readonly string[]).includes(level)) {
    throw new ConfigError(name, `expected one of ${LOG_LEVELS.join(', ')}, got ${JSON.stringify(raw)}`);
  }
  return level as LogLevel;
}
