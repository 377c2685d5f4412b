import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { CHUNKER_VERSION } from '../src/chunker';
import { chunkedFileFromPb, renderResultFromPb, scanResultFromPb } from '../src/convert';
import {
  CodeAnalysisServiceClient,
  type ChunkFilesRequest,
  type ChunkFilesResponse,
  type RenderSymbolsRequest,
  type RenderSymbolsResponse,
  type ScanWorkspaceRequest,
  type ScanWorkspaceResponse,
} from '../src/gen/codecompass/v1/analysis';
import { createLogger } from '../src/logging';
import { SERVICE_NAME, SERVICE_NAMESPACE } from '../src/names';
import { ANALYSIS_GRPC_SERVICE, bindWithFallback, startServer } from '../src/server';
import { AnalysisService } from '../src/service';
import type { ChunkedFile } from '../src/types';

const MAIN = path.join(__dirname, '..', 'src', 'main.js');
const HealthClient = grpc.makeClientConstructor(healthService, 'grpc.health.v1.Health');
type Health = InstanceType<typeof HealthClient> & {
  check(req: { service: string }, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: { status: string }) => void): void;
  watch(req: { service: string }): grpc.ClientReadableStream<{ status: string }>;
};

const deadline = (ms = 20_000) => ({ deadline: Date.now() + ms });

/** The fields of the service's JSON log lines (src/logging.ts) that these tests read. */
interface LogRecord {
  level: string;
  msg: string;
  service: string;
  address?: string;
  port?: number;
}

/** The fields of a JSON-lines span record (src/tracing.ts) that these tests read. */
interface SpanRecord {
  trace_id: string;
  parent_span_id: string;
  name: string;
  service: string;
  service_namespace: string;
  start_ns: number;
  end_ns: number;
  attributes: Record<string, unknown>;
}

function parseLines<T>(text: string): T[] {
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as T);
}

function checkHealth(client: Health, service: string): Promise<string> {
  return new Promise((resolve, reject) =>
    client.check({ service }, deadline(5000), (err, res) => (err ? reject(err) : resolve(res!.status))),
  );
}

function scan(client: CodeAnalysisServiceClient, request: ScanWorkspaceRequest, metadata = new grpc.Metadata()): Promise<ScanWorkspaceResponse> {
  return new Promise((resolve, reject) =>
    client.scanWorkspace(request, metadata, deadline(), (err, res) => (err ? reject(err) : resolve(res))),
  );
}

function render(client: CodeAnalysisServiceClient, request: RenderSymbolsRequest): Promise<RenderSymbolsResponse> {
  return new Promise((resolve, reject) =>
    client.renderSymbols(request, new grpc.Metadata(), deadline(), (err, res) => (err ? reject(err) : resolve(res))),
  );
}

function chunkFiles(client: CodeAnalysisServiceClient, request: ChunkFilesRequest, metadata = new grpc.Metadata()): Promise<ChunkedFile[]> {
  return new Promise((resolve, reject) => {
    const files: ChunkedFile[] = [];
    const stream = client.chunkFiles(request, metadata, deadline());
    stream.on('data', (r: ChunkFilesResponse) => files.push(chunkedFileFromPb(r)));
    stream.on('error', reject);
    stream.on('end', () => resolve(files));
  });
}

async function waitFor<T>(probe: () => T | Promise<T>, done: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    let value: T | undefined;
    try {
      value = await probe();
    } catch {
      // Not ready yet (a probe that throws or rejects): try again.
    }
    if (value !== undefined && done(value)) return value;
    if (Date.now() > until) throw new Error(`condition not met within ${timeoutMs} ms (last: ${String(value)})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const GREETER = `/** Greets people. */
export class Greeter {
  constructor(private readonly name: string) {}

  /** Says hi. */
  greet(): string {
    const text = \`hi \${this.name}\`;
    return text;
  }

  farewell(): string {
    return 'bye';
  }
}
`;

describe('configuration', () => {
  it('a bad value stops start-up with exit code 2 naming the variable', async () => {
    const bad = [['ANALYSIS_PORT', '99999'], ['ANALYSIS_MAX_FILE_BYTES', '5MB'], ['LOG_LEVEL', 'loud'], ['CODECOMPASS_BIND_HOST', '0.0.0.0:50051']];
    for (const [name, value] of bad) {
      const child = spawn(process.execPath, [MAIN], { env: { ...process.env, [name]: value }, stdio: ['ignore', 'pipe', 'pipe'] });
      let err = '';
      let out = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      child.stdout.on('data', (d: Buffer) => (out += d.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      assert.equal(code, 2, `${name}=${value}`);
      assert.match(err, new RegExp(`^${SERVICE_NAME}: invalid ${name}: [^\n]+\n$`));
      assert.equal(out, '');
    }
  });
});

describe('bind host', () => {
  it('listens on CODECOMPASS_BIND_HOST, says so in one line when that is beyond loopback, and answers on loopback', async () => {
    const child = spawn(process.execPath, [MAIN], {
      // Beyond loopback a token is required (test/auth.test.ts); health needs none.
      env: { ...process.env, CODECOMPASS_BIND_HOST: '0.0.0.0', CODECOMPASS_GRPC_AUTH_TOKEN: 'bind-host-test-token-8d1e', ANALYSIS_PORT: '0', LOG_LEVEL: 'info' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    try {
      const listening = await new Promise<string>((resolve, reject) => {
        readline.createInterface({ input: child.stdout }).on('line', (line) => {
          const match = /^LISTENING (\S+)$/.exec(line);
          if (match) resolve(match[1]);
        });
        child.on('exit', (code) => reject(new Error(`exited early (${code}): ${stderr}`)));
      });
      const port = /^0\.0\.0\.0:(\d+)$/.exec(listening)?.[1];
      assert.ok(port, listening);
      const health = new HealthClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure()) as Health;
      try {
        // Any answer proves the wildcard bind reaches loopback; warm-up decides which one.
        assert.match(await checkHealth(health, ''), /^(NOT_SERVING|SERVING)$/);
      } finally {
        health.close();
      }
      const records = parseLines<LogRecord>(stderr);
      const warnings = records.filter((r) => r.level === 'warn' && r.msg.startsWith('listening beyond this machine'));
      assert.equal(warnings.length, 1);
      assert.equal(warnings[0].address, listening);
      assert.equal(warnings[0].service, SERVICE_NAME);
    } finally {
      child.kill('SIGTERM');
      assert.equal(await exited, 0);
    }
  });
});

describe('health lifecycle (in-process server)', () => {
  it('is NOT_SERVING until warm, SERVING after, NOT_SERVING while shutting down', async () => {
    const service = new AnalysisService({ maxFileBytes: 1 << 20, maxPrograms: 1, maxRenderCacheFiles: 4, maxWorkspaces: 1 });
    const server = await startServer({ host: '127.0.0.1', port: 0, service, logger: createLogger('test', 'error', () => {}) });
    const health = new HealthClient(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure()) as Health;
    try {
      assert.equal(await checkHealth(health, ''), 'NOT_SERVING');
      assert.equal(await checkHealth(health, ANALYSIS_GRPC_SERVICE), 'NOT_SERVING');
      service.warmUp();
      server.setServing();
      assert.equal(await checkHealth(health, ''), 'SERVING');
      assert.equal(await checkHealth(health, ANALYSIS_GRPC_SERVICE), 'SERVING');

      const seen: string[] = [];
      const watch = health.watch({ service: ANALYSIS_GRPC_SERVICE });
      watch.on('data', (r: { status: string }) => seen.push(r.status));
      watch.on('error', () => {});
      await waitFor(() => seen.length, (n) => n >= 1);
      const stopped = server.shutdown(5000);
      await waitFor(() => seen.at(-1), (s) => s === 'NOT_SERVING');
      watch.cancel();
      await stopped;
      assert.deepEqual(seen, ['SERVING', 'NOT_SERVING']);
    } finally {
      health.close();
      service.dispose();
    }
  });
});

describe('graceful shutdown (in-process server)', () => {
  it('lets an in-flight ChunkFiles stream finish within the grace period', async () => {
    const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'cc-drain-')));
    for (let i = 0; i < 150; i++) fs.writeFileSync(path.join(root, `f${String(i).padStart(3, '0')}.ts`), `export function f${i}(): number {\n  return ${i};\n}\n`);
    const service = new AnalysisService({ maxFileBytes: 1 << 20, maxPrograms: 1, maxRenderCacheFiles: 4, maxWorkspaces: 1 });
    const server = await startServer({ host: '127.0.0.1', port: 0, service, logger: createLogger('test', 'error', () => {}) });
    server.setServing();
    const client = new CodeAnalysisServiceClient(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
    try {
      let stopped: Promise<void> | undefined;
      const names = await new Promise<string[]>((resolve, reject) => {
        const got: string[] = [];
        const stream = client.chunkFiles({ workspaceRoot: root, paths: ['.'], includeReferences: false, lexicalOnly: false }, deadline());
        stream.on('data', (r: ChunkFilesResponse) => {
          assert.equal(r.chunkerVersion, CHUNKER_VERSION);
          got.push(r.relativePath);
          stopped ??= server.shutdown(20_000);
        });
        stream.on('error', reject);
        stream.on('end', () => resolve(got));
      });
      assert.equal(names.length, 150);
      await stopped;
    } finally {
      client.close();
      service.dispose();
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('analysis service process', () => {
  let root: string;
  let traceFile: string;
  let child: ChildProcess;
  let stderr = '';
  let address: string;
  let client: CodeAnalysisServiceClient;
  let health: Health;

  const write = (rel: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
  };

  before(async () => {
    root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'cc-server-')));
    traceFile = path.join(root, '..', `${path.basename(root)}-spans.jsonl`);
    write('src/greeter.ts', GREETER);
    write('src/util.js', 'module.exports.double = function double(x) {\n  return x * 2;\n};\n');
    write('src/old.ts', 'export const old = 1;\n');
    write('node_modules/dep/index.js', 'exports.x = 1;\n');
    child = spawn(process.execPath, [MAIN], {
      env: { ...process.env, ANALYSIS_PORT: '0', CODECOMPASS_TRACE_FILE: traceFile, LOG_LEVEL: 'info',
        // Does not rename the service: its name in traces is the one in its logs and variables.
        OTEL_SERVICE_NAME: 'another-name' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    const lines = readline.createInterface({ input: child.stdout! });
    address = await new Promise<string>((resolve, reject) => {
      lines.on('line', (line) => {
        const match = /^LISTENING (\S+)$/.exec(line);
        if (match) resolve(match[1]);
      });
      child.on('exit', (code) => reject(new Error(`server exited early (${code}): ${stderr}`)));
    });
    client = new CodeAnalysisServiceClient(address, grpc.credentials.createInsecure());
    health = new HealthClient(address, grpc.credentials.createInsecure()) as Health;
  });

  after(() => {
    client?.close();
    health?.close();
    if (child && child.exitCode === null) child.kill('SIGKILL');
    fs.rmSync(root, { recursive: true, force: true });
    fs.rmSync(traceFile, { force: true });
  });

  it('announces a real port and becomes SERVING', async () => {
    assert.match(address, /^127\.0\.0\.1:\d+$/);
    assert.notEqual(address, '127.0.0.1:0');
    await waitFor(() => checkHealth(health, ''), (s) => s === 'SERVING');
    assert.equal(await checkHealth(health, ANALYSIS_GRPC_SERVICE), 'SERVING');
    const listening = parseLines<LogRecord>(stderr).find((r) => r.msg === 'listening');
    assert.ok(listening, 'a "listening" log line');
    assert.equal(listening.service, SERVICE_NAME);
    assert.equal(`127.0.0.1:${listening.port}`, address);
  });

  it('ScanWorkspace reports the catalog and its diff between scans', async () => {
    const firstPb = await scan(client, { workspaceRoot: root, previous: [], excludePatterns: [], unchangedSince: '', previousOmitted: false });
    assert.equal(firstPb.chunkerVersion, CHUNKER_VERSION);
    const first = scanResultFromPb(firstPb);
    assert.deepEqual(first.files.map((f) => f.relativePath), ['src/greeter.ts', 'src/old.ts', 'src/util.js']);
    assert.deepEqual(first.added, ['src/greeter.ts', 'src/old.ts', 'src/util.js']);

    write('src/util.js', 'module.exports.double = function double(x) {\n  return x + x;\n};\n');
    fs.rmSync(path.join(root, 'src/old.ts'));
    write('src/new.tsx', 'export function Hello() {\n  return <div>hi</div>;\n}\n');
    const { scanRequestToPb } = await import('../src/convert');
    const second = scanResultFromPb(
      await scan(client, scanRequestToPb({ workspaceRoot: root, previous: first.files, excludePatterns: [] })),
    );
    assert.deepEqual(second.added, ['src/new.tsx']);
    assert.deepEqual(second.changed, ['src/util.js']);
    assert.deepEqual(second.removed, ['src/old.ts']);
    assert.equal(second.files.find((f) => f.relativePath === 'src/greeter.ts')?.contentHash, first.files[0].contentHash);
  });

  it('ChunkFiles streams one response per file in path order, inside the caller trace', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const parentSpanId = '00f067aa0ba902b7';
    const metadata = new grpc.Metadata();
    metadata.set('traceparent', `00-${traceId}-${parentSpanId}-01`);
    const files = await chunkFiles(client, { workspaceRoot: root, paths: ['src'], includeReferences: false, lexicalOnly: false }, metadata);
    assert.deepEqual(files.map((f) => [f.relativePath, f.status]), [
      ['src/greeter.ts', 'ok'],
      ['src/new.tsx', 'ok'],
      ['src/util.js', 'ok'],
    ]);
    const greeter = files[0];
    assert.deepEqual(greeter.chunks.map((c) => c.qualifiedName), [
      '<module top level>',
      'Greeter',
      'Greeter.constructor',
      'Greeter.greet',
      'Greeter.farewell',
    ]);
    assert.equal(greeter.lineCount, 14);
    assert.ok(files[2].chunks.some((c) => c.name === 'double'));

    const withRefs = await chunkFiles(client, { workspaceRoot: root, paths: [path.join(root, 'src/greeter.ts')], includeReferences: true, lexicalOnly: false });
    assert.deepEqual(withRefs.map((f) => f.chunks.map((c) => c.id)), [greeter.chunks.map((c) => c.id)]);

    // Lexical-only: the same chunks and sources, no embedding text, references ignored.
    const lexical = await chunkFiles(client, { workspaceRoot: root, paths: ['src/greeter.ts'], includeReferences: true, lexicalOnly: true });
    const strip = (c: (typeof greeter.chunks)[number]) => ({ ...c, embeddingText: '', embeddingTokenCount: 0, references: [] });
    assert.deepEqual(lexical[0].chunks, greeter.chunks.map(strip));
    assert.ok(greeter.chunks.every((c) => c.embeddingText.length > 0 && c.embeddingTokenCount > 0));

    const spans = await waitFor(
      () => parseLines<SpanRecord>(fs.readFileSync(traceFile, 'utf8')),
      (all) => all.some((s) => s.trace_id === traceId),
    );
    const span = spans.find((s) => s.trace_id === traceId);
    assert.ok(span, 'the ChunkFiles span');
    assert.equal(span.name, 'codecompass.v1.CodeAnalysisService/ChunkFiles');
    assert.equal(span.parent_span_id, parentSpanId);
    assert.equal(span.service, SERVICE_NAME);
    assert.equal(span.service_namespace, SERVICE_NAMESPACE);
    assert.equal(span.attributes['rpc.grpc.status_code'], 0);
    assert.ok(span.end_ns >= span.start_ns);
  });

  it('RenderSymbols expands the requested child, collapses the rest, reports missing ids', async () => {
    const [greeterFile] = await chunkFiles(client, { workspaceRoot: root, paths: ['src/greeter.ts'], includeReferences: false, lexicalOnly: false });
    const byName = new Map(greeterFile.chunks.map((c) => [c.name, c]));
    const cls = byName.get('Greeter')!;
    const greet = byName.get('greet')!;
    const result = renderResultFromPb(
      await render(client, {
        workspaceRoot: root,
        specs: [
          { symbolId: cls.id, expandChildIds: [greet.id, 'no-such-child'], relativePath: 'src/greeter.ts', focusLine: 0 },
          { symbolId: greet.id, expandChildIds: [], relativePath: '', focusLine: 0 },
          { symbolId: 'deadbeef', expandChildIds: [], relativePath: 'src/greeter.ts', focusLine: 0 },
        ],
      }),
    );
    assert.deepEqual(result.missingSymbolIds, ['deadbeef']);
    const [rendered, byMap] = result.symbols;
    assert.equal(rendered.symbolId, cls.id);
    assert.equal(rendered.qualifiedName, 'Greeter');
    assert.match(rendered.source, /const text = `hi \$\{this\.name\}`;/);
    assert.doesNotMatch(rendered.source, /'bye'/);
    assert.match(rendered.source, /farewell\(\): string \{/);
    assert.deepEqual(rendered.unknownChildIds, ['no-such-child']);
    assert.ok(rendered.tokenCount > 10);
    assert.deepEqual([rendered.startLine, rendered.endLine], [2, 14]);
    assert.equal(byMap.symbolId, greet.id);
    assert.equal(byMap.relativePath, 'src/greeter.ts');
  });

  it('refuses bad requests with a status and keeps serving; survives a cancelled stream', async () => {
    await assert.rejects(chunkFiles(client, { workspaceRoot: root, paths: ['../outside.ts'], includeReferences: false, lexicalOnly: false }), (err: grpc.ServiceError) => {
      assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
      return true;
    });
    for (let i = 0; i < 200; i++) write(`many/f${String(i).padStart(3, '0')}.ts`, `export function f${i}(): number {\n  return ${i};\n}\n`);
    const stream = client.chunkFiles({ workspaceRoot: root, paths: ['many'], includeReferences: false, lexicalOnly: false }, deadline());
    const outcome = await new Promise<string>((resolve) => {
      stream.on('data', () => stream.cancel());
      stream.on('error', (err: grpc.ServiceError) => resolve(grpc.status[err.code]));
      stream.on('end', () => resolve('completed'));
    });
    assert.equal(outcome, 'CANCELLED');
    assert.equal(await checkHealth(health, ''), 'SERVING');
    const again = await chunkFiles(client, { workspaceRoot: root, paths: ['many/f000.ts'], includeReferences: false, lexicalOnly: false });
    assert.equal(again[0].chunks[1].name, 'f0');
  });

  it('SIGTERM: goes NOT_SERVING, drains, flushes, exits 0', async () => {
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
    const messages = parseLines<LogRecord>(stderr).map((r) => r.msg);
    assert.ok(messages.includes('shutting down'));
    assert.equal(messages.at(-1), 'stopped');
  });
});

describe('listening on ::', () => {
  it('takes both families, as the Python services do', async () => {
    const service = new AnalysisService({ maxFileBytes: 1 << 20, maxPrograms: 1, maxRenderCacheFiles: 4, maxWorkspaces: 1 });
    const server = await startServer({ host: '::', port: 0, service, logger: createLogger('test', 'error', () => {}) });
    try {
      server.setServing();
      for (const address of [`127.0.0.1:${server.port}`, `[::1]:${server.port}`]) {
        const health = new HealthClient(address, grpc.credentials.createInsecure()) as Health;
        const status = await new Promise<string>((resolve, reject) =>
          health.check({ service: '' }, deadline(), (err, reply) => (err ? reject(err) : resolve(String(reply?.status)))),
        );
        health.close();
        assert.equal(status, 'SERVING', address);
      }
    } finally {
      await server.shutdown(0);
      service.dispose();
    }
  });

  it('falls back to every IPv4 address where the machine has no IPv6, and only then', async () => {
    const logger = createLogger('test', 'error', () => {});
    const noIpv6 = (host: string) =>
      host === '::'
        ? Promise.reject(new Error('No address added out of total 1 resolved: listen EAFNOSUPPORT: address family not supported ::'))
        : Promise.resolve(7);
    assert.deepEqual(await bindWithFallback(noIpv6, '::', logger), { host: '0.0.0.0', port: 7 });
    const taken = () => Promise.reject(new Error('listen EADDRINUSE: address already in use'));
    await assert.rejects(bindWithFallback(taken, '::', logger), /EADDRINUSE/);
    const never = () => Promise.reject(new Error('listen EAFNOSUPPORT: address family not supported'));
    await assert.rejects(bindWithFallback(never, '127.0.0.2', logger), /EAFNOSUPPORT/, 'only :: falls back');
  });
});
