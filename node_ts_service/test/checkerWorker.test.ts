// The type checker runs in worker threads: while a reference-resolving
// ChunkFiles is stuck in the checker, the main thread still answers health,
// RenderSymbols and Trace; a cancel stops the worker's job; a crashed worker
// is an INTERNAL error on one line and is replaced.
//
// The real worker is wrapped by a test script (written below) that can hold a
// job the way a long Program build does, by blocking the worker thread, for
// as long as a marker file exists: "answers while chunking" is then a fact of
// ordering, not a timing threshold. A worker that dies on one file, or takes
// too long over it, costs that file alone: it is skipped as chunk_failed and
// every other file of the stream is chunked.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { chunkedFileFromPb } from '../src/convert';
import { CodeAnalysisServiceClient, TraceDirection, type ChunkFilesResponse, type RenderSymbolsResponse, type TraceResponse } from '../src/gen/codecompass/v1/analysis';
import { createLogger } from '../src/logging';
import { type RunningServer, startServer } from '../src/server';
import { AnalysisService, CancelledError } from '../src/service';
import type { ChunkedFile } from '../src/types';

const REAL_WORKER = path.join(__dirname, '..', 'src', 'checkerWorker.js');
const HealthClient = grpc.makeClientConstructor(healthService, 'grpc.health.v1.Health');
type Health = InstanceType<typeof HealthClient> & {
  check(req: { service: string }, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: { status: string }) => void): void;
};
const LIMITS = { maxFileBytes: 1 << 20, maxPrograms: 2, maxRenderCacheFiles: 8, maxWorkspaces: 2 };
const deadline = () => ({ deadline: Date.now() + 20_000 });
/** The per-file limit of this suite's service: long for these small files, short for a test. */
const FILE_TIMEOUT_MS = 3000;

/**
 * The real worker plus faults, keyed by the top folder of a chunk job's
 * files: `slow/` blocks the job while `<dir>/hold` exists; `between/` blocks
 * before posting its second file while `<dir>/pause` exists; `crash/` throws
 * out of the worker as a job starts; and per file, the worker exits (as on
 * running out of memory) instead of answering for `dies/user1.ts`, and blocks
 * forever instead of answering for `hangs/user1.ts`. Every start, job and
 * reply is logged to `<dir>/worker.log`.
 */
function wrapperScript(dir: string): string {
  return `
const { parentPort, threadId } = require('node:worker_threads');
const fs = require('node:fs');
const dir = ${JSON.stringify(dir)};
const log = (line) => fs.appendFileSync(dir + '/worker.log', line + '\\n');
const nap = new Int32Array(new SharedArrayBuffer(4));
const waitWhile = (name) => { while (fs.existsSync(dir + '/' + name)) Atomics.wait(nap, 0, 0, 10); };
const touches = (job, top) => !!job && job.kind === 'chunk' && job.files.some((f) => f.relativePath.startsWith(top + '/'));
let current;
log('start ' + threadId);
const before = (job) => {
  current = job;
  log('job ' + job.kind);
  if (touches(job, 'crash')) throw new Error('simulated checker crash\\nsecond line that must not reach the client');
  if (touches(job, 'slow')) waitWhile('hold');
};
// Runs before() ahead of the real worker's handler, which a throw then never reaches.
const on = parentPort.on.bind(parentPort);
parentPort.on = (event, handler) => on(event, event === 'message' ? (job) => { before(job); handler(job); } : handler);
const post = parentPort.postMessage.bind(parentPort);
parentPort.postMessage = (reply) => {
  if (reply.kind === 'file' && reply.index === 1 && touches(current, 'between')) waitWhile('pause');
  const file = reply.kind === 'file' ? current.files[reply.index].relativePath : '';
  if (file === 'dies/user1.ts') process.exit(7);
  if (file === 'hangs/user1.ts') for (;;) Atomics.wait(nap, 0, 0, 10);
  log(reply.kind + (reply.kind === 'file' ? ' ' + reply.index : ''));
  post(reply);
};
require(${JSON.stringify(REAL_WORKER)});
`;
}

const SHARED = `/** Adds two numbers. */
export function add(a: number, b: number): number {
  return a + b;
}
`;
const USER = (n: number) => `import { add } from '../shared';

/** Uses add. */
export function use${n}(x: number): number {
  return add(x, ${n});
}
`;

function chunkStream(client: CodeAnalysisServiceClient, root: string, paths: string[], includeReferences: boolean) {
  const files: ChunkedFile[] = [];
  let ended = false;
  const stream = client.chunkFiles({ workspaceRoot: root, paths, includeReferences, lexicalOnly: false }, new grpc.Metadata(), deadline());
  const done = new Promise<ChunkedFile[]>((resolve, reject) => {
    stream.on('data', (r: ChunkFilesResponse) => files.push(chunkedFileFromPb(r)));
    stream.on('error', (err) => {
      ended = true;
      reject(err);
    });
    stream.on('end', () => {
      ended = true;
      resolve(files);
    });
  });
  return { stream, files, done, isEnded: () => ended };
}

async function waitUntil(condition: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('type checker in worker threads', () => {
  let root: string;
  let dir: string;
  let service: AnalysisService;
  let server: RunningServer;
  let client: CodeAnalysisServiceClient;
  let health: Health;
  const logLines = () => (fs.existsSync(path.join(dir, 'worker.log')) ? fs.readFileSync(path.join(dir, 'worker.log'), 'utf8').split('\n').filter(Boolean) : []);
  const mark = (name: string) => fs.writeFileSync(path.join(dir, name), '');
  const unmark = (name: string) => fs.rmSync(path.join(dir, name), { force: true });
  const count = (line: string) => logLines().filter((l) => l.startsWith(line)).length;

  before(async () => {
    root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'cc-checker-')));
    dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'cc-checker-ctl-')));
    fs.writeFileSync(path.join(root, 'shared.ts'), SHARED);
    for (const top of ['slow', 'between', 'crash', 'fast', 'dies', 'hangs']) {
      fs.mkdirSync(path.join(root, top));
      for (let i = 0; i < 3; i++) fs.writeFileSync(path.join(root, top, `user${i}.ts`), USER(i));
    }
    const script = path.join(dir, 'worker.js');
    fs.writeFileSync(script, wrapperScript(dir));
    service = new AnalysisService({ ...LIMITS, chunkFileTimeoutMs: FILE_TIMEOUT_MS }, undefined, { checkerWorkerScript: script });
    server = await startServer({ host: '127.0.0.1', port: 0, service, logger: createLogger('test', 'error', () => {}) });
    server.setServing();
    client = new CodeAnalysisServiceClient(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
    health = new HealthClient(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure()) as Health;
  });
  after(async () => {
    unmark('hold');
    unmark('pause');
    client.close();
    health.close();
    await server.shutdown(1000);
    service.dispose();
    fs.rmSync(root, { recursive: true, force: true });
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers health, RenderSymbols and Trace while a reference-resolving ChunkFiles is held in the checker', async () => {
    // A symbol id to render, from a plain ChunkFiles (parsed on the main thread, no worker).
    const plain = await chunkStream(client, root, ['fast/user0.ts'], false).done;
    const symbolId = plain[0].chunks.find((c) => c.name === 'use0')!.id;
    const jobsBefore = count('job chunk');

    mark('hold');
    const held = chunkStream(client, root, ['slow'], true);
    // The checker thread has the job and is blocked in it.
    await waitUntil(() => count('job chunk') > jobsBefore, 'the chunk worker to take the job');

    const status = await new Promise<string>((resolve, reject) =>
      health.check({ service: '' }, deadline(), (err, res) => (err ? reject(err) : resolve(res!.status))),
    );
    assert.equal(status, 'SERVING');
    const rendered = await new Promise<RenderSymbolsResponse>((resolve, reject) =>
      client.renderSymbols({ workspaceRoot: root, specs: [{ symbolId, expandChildIds: [], relativePath: 'fast/user0.ts', focusLine: 0 }] }, new grpc.Metadata(), deadline(), (err, res) =>
        err ? reject(err) : resolve(res),
      ),
    );
    assert.match(rendered.symbols[0].source, /export function use0/);
    const traced = await new Promise<TraceResponse>((resolve, reject) =>
      client.trace(
        { workspaceRoot: root, symbol: 'add', relativePath: 'shared.ts', direction: TraceDirection.TRACE_DIRECTION_CALLERS, depth: 0, limit: 0 },
        new grpc.Metadata(),
        deadline(),
        (err, res) => (err ? reject(err) : resolve(res)),
      ),
    );
    // Every user*.ts of the six folders calls add.
    assert.equal(traced.returned, 18);
    // All three answered while the chunk stream had not sent a single file.
    assert.equal(held.files.length, 0);
    assert.equal(held.isEnded(), false);

    unmark('hold');
    const files = await held.done;
    assert.deepEqual(
      files.map((f) => f.relativePath),
      ['slow/user0.ts', 'slow/user1.ts', 'slow/user2.ts'],
    );
    const add = files[0].chunks.flatMap((c) => c.references).find((r) => r.name === 'add');
    assert.equal(add?.relativePath, 'shared.ts');
  });

  it('answers health while a syntax-only ChunkFiles is held in its worker', async () => {
    const jobsBefore = count('job chunk');
    mark('hold');
    const held = chunkStream(client, root, ['slow'], false);
    await waitUntil(() => count('job chunk') > jobsBefore, 'the syntax chunker to take the job');
    const status = await new Promise<string>((resolve, reject) =>
      health.check({ service: '' }, deadline(), (err, res) => (err ? reject(err) : resolve(res!.status))),
    );
    assert.equal(status, 'SERVING');
    assert.equal(held.files.length, 0);
    assert.equal(held.isEnded(), false);
    unmark('hold');
    const files = await held.done;
    assert.equal(files.length, 3);
    assert.deepEqual(files[0].chunks.flatMap((c) => c.references), []);
  });

  it('a cancelled call stops the worker between files', async () => {
    mark('pause');
    let cancelled = false;
    const stream = service.chunkFiles({ workspaceRoot: root, paths: ['between'], includeReferences: true, lexicalOnly: false }, () => cancelled);
    const first = await stream.next();
    assert.equal(first.done ? undefined : first.value.relativePath, 'between/user0.ts');
    const repliesBefore = logLines().length;
    cancelled = true;
    await assert.rejects(stream.next(), CancelledError);
    // The cancel flag is set before the call fails; let the worker go on and see it.
    unmark('pause');
    await waitUntil(() => logLines().slice(repliesBefore).includes('cancelled'), 'the worker to report the job cancelled');
    const rest = logLines().slice(repliesBefore);
    // The worker may or may not have reached the second file when the flag was set; never the third.
    assert.equal(rest.at(-1), 'cancelled');
    assert.ok(!rest.includes('file 2') && !rest.includes('done'), `the job ran on after the cancel: ${rest.join(', ')}`);
  });

  it('a cancelled call whose job does not stop is ended by replacing the worker', async () => {
    const startsBefore = count('start');
    const jobsBefore = count('job chunk');
    mark('hold');
    const held = chunkStream(client, root, ['slow'], true);
    await waitUntil(() => count('job chunk') > jobsBefore, 'the chunk worker to take the job');
    held.stream.cancel();
    await assert.rejects(held.done, (err: grpc.ServiceError) => err.code === grpc.status.CANCELLED);
    // Still held, yet the next job runs: the stuck worker was terminated and a fresh one took over.
    const next = await chunkStream(client, root, ['fast'], true).done;
    assert.equal(next.length, 3);
    assert.ok(count('start') > startsBefore, 'a new worker started');
    unmark('hold');
  });

  it('a worker that crashes at every job skips those files with the crash on one line; the process lives on', async () => {
    const files = await chunkStream(client, root, ['crash'], true).done;
    assert.deepEqual(
      files.map((f) => [f.relativePath, f.status, f.skipReason, f.skipDetail]),
      [0, 1, 2].map((i) => [`crash/user${i}.ts`, 'skipped', 'chunk_failed', 'the chunk worker crashed: simulated checker crash while chunking it']),
    );
    const status = await new Promise<string>((resolve, reject) =>
      health.check({ service: '' }, deadline(), (err, res) => (err ? reject(err) : resolve(res!.status))),
    );
    assert.equal(status, 'SERVING');
    const next = await chunkStream(client, root, ['fast'], true).done;
    assert.deepEqual(
      next.map((f) => f.status),
      ['ok', 'ok', 'ok'],
    );
    assert.ok(next[0].chunks.flatMap((c) => c.references).some((r) => r.name === 'add' && r.relativePath === 'shared.ts'));
  });

  it('a worker that dies on one file costs that file alone: the rest of the stream is chunked, with references', async () => {
    const files = await chunkStream(client, root, ['dies', 'fast'], true).done;
    assert.deepEqual(
      files.map((f) => [f.relativePath, f.status, f.skipReason ?? '', f.skipDetail]),
      [
        ['dies/user0.ts', 'ok', '', ''],
        ['dies/user1.ts', 'skipped', 'chunk_failed', 'the chunk worker exited with code 7 while chunking it'],
        ['dies/user2.ts', 'ok', '', ''],
        ['fast/user0.ts', 'ok', '', ''],
        ['fast/user1.ts', 'ok', '', ''],
        ['fast/user2.ts', 'ok', '', ''],
      ],
    );
    for (const file of files.filter((f) => f.status === 'ok')) {
      assert.ok(file.chunks.flatMap((c) => c.references).some((r) => r.name === 'add'), `${file.relativePath} lost its references`);
    }
  });

  it('a file that takes longer than the per-file limit is skipped as chunk_failed; the files after it are chunked', async () => {
    for (const includeReferences of [true, false]) {
      const files = await chunkStream(client, root, ['hangs', 'fast'], includeReferences).done;
      assert.deepEqual(
        files.map((f) => [f.relativePath, f.status, f.skipReason ?? '', f.skipDetail]),
        [
          ['fast/user0.ts', 'ok', '', ''],
          ['fast/user1.ts', 'ok', '', ''],
          ['fast/user2.ts', 'ok', '', ''],
          ['hangs/user0.ts', 'ok', '', ''],
          ['hangs/user1.ts', 'skipped', 'chunk_failed', 'chunking took longer than 3 s'],
          ['hangs/user2.ts', 'ok', '', ''],
        ],
      );
    }
  });

  it("a file that would outlast the call's deadline is skipped in time for the stream to answer every file", async () => {
    const deadlineMs = Date.now() + 4000;
    const files: ChunkedFile[] = [];
    for await (const file of service.chunkFiles({ workspaceRoot: root, paths: ['hangs'], includeReferences: false, lexicalOnly: false }, () => false, deadlineMs)) {
      files.push(file);
    }
    assert.ok(Date.now() < deadlineMs, 'answered before the deadline');
    assert.deepEqual(
      files.map((f) => [f.relativePath, f.status]),
      [
        ['hangs/user0.ts', 'ok'],
        ['hangs/user1.ts', 'skipped'],
        ['hangs/user2.ts', 'ok'],
      ],
    );
    // Under the suite's 3 s limit: what the deadline left after the margin kept to send the rest.
    assert.match(files[1].skipDetail, /^chunking took longer than [12](\.\d)? s$/);
  });
});

// Start-up warms the syntax chunkers at once; the chunk checker's parse of the
// default libs waits (a cold start's first answer does not need it), and is
// left out when a request has started that worker first.
describe('warm-up of the chunk workers', () => {
  const made: { dir: string; root: string; service: AnalysisService }[] = [];
  function fixture(checkerWarmDelayMs: number) {
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'cc-warm-ctl-')));
    const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'cc-warm-')));
    fs.writeFileSync(path.join(root, 'shared.ts'), SHARED);
    fs.mkdirSync(path.join(root, 'fast'));
    fs.writeFileSync(path.join(root, 'fast', 'user1.ts'), USER(1));
    const script = path.join(dir, 'worker.js');
    fs.writeFileSync(script, wrapperScript(dir));
    const service = new AnalysisService({ ...LIMITS }, undefined, { checkerWorkerScript: script, checkerWarmDelayMs });
    made.push({ dir, root, service });
    const lines = () => (fs.existsSync(path.join(dir, 'worker.log')) ? fs.readFileSync(path.join(dir, 'worker.log'), 'utf8').split('\n') : []);
    const count = (line: string) => lines().filter((l) => l === line).length;
    return { root, service, count };
  }

  after(() => {
    for (const { dir, root, service } of made) {
      service.dispose();
      fs.rmSync(dir, { recursive: true, force: true });
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('starts the syntax chunkers at once and the chunk checker only after the delay', async () => {
    const late = fixture(60_000);
    late.service.warmUp();
    await waitUntil(() => late.count('job warm') === 2, 'the syntax chunkers to warm');
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(late.count('job warm'), 2, 'the chunk checker warmed during start-up');

    const soon = fixture(20);
    soon.service.warmUp();
    await waitUntil(() => soon.count('job warm') === 3, 'the chunk checker to warm after its delay');
  });

  it('leaves the warm-up out when a request started the chunk checker first', async () => {
    const { root, service, count } = fixture(300);
    service.warmUp();
    const files: ChunkedFile[] = [];
    for await (const file of service.chunkFiles({ workspaceRoot: root, paths: ['fast/user1.ts'], includeReferences: true, lexicalOnly: false })) {
      files.push(file);
    }
    assert.equal(files.length, 1);
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(count('job chunk'), 1);
    assert.equal(count('job warm'), 2, 'the chunk checker was warmed after a request had started it');
  });
});
