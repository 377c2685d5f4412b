// Every kind of bad input named in issue 2 §3, each with real files on disk:
// it gets a clear answer (a skip reason, a flag, or a status code) and
// nothing crashes.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { chunkedFileFromPb } from '../src/convert';
import { type FsOps, realFs } from '../src/fileio';
import { CodeAnalysisServiceClient, type ChunkFilesResponse } from '../src/gen/codecompass/v1/analysis';
import { createLogger } from '../src/logging';
import { type RunningServer, startServer } from '../src/server';
import { AnalysisService, type ChunkRequest } from '../src/service';
import type { ChunkedFile } from '../src/types';

const LIMITS = { maxFileBytes: 5 * 1024 * 1024, maxPrograms: 2, maxRenderCacheFiles: 16, maxWorkspaces: 4 };
let root: string;

function write(rel: string, content: string | Buffer): string {
  const file = path.join(root, rel);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content);
  return file;
}

async function chunk(service: AnalysisService, paths: string[], includeReferences = false): Promise<ChunkedFile[]> {
  const request: ChunkRequest = { workspaceRoot: root, paths, includeReferences, lexicalOnly: false };
  const out: ChunkedFile[] = [];
  for await (const file of service.chunkFiles(request)) out.push(file);
  return out;
}

async function chunkOne(paths: string, service = new AnalysisService(LIMITS)): Promise<ChunkedFile> {
  const [file] = await chunk(service, [paths]);
  return file;
}

function grpcChunk(client: CodeAnalysisServiceClient, workspaceRoot: string, paths: string[]): Promise<ChunkFilesResponse[]> {
  return new Promise((resolve, reject) => {
    const got: ChunkFilesResponse[] = [];
    const stream = client.chunkFiles({ workspaceRoot, paths, includeReferences: false, lexicalOnly: false }, { deadline: Date.now() + 20_000 });
    stream.on('data', (r: ChunkFilesResponse) => got.push(r));
    stream.on('error', reject);
    stream.on('end', () => resolve(got));
  });
}

describe('bad input', () => {
  before(() => {
    root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'cc-bad-')));
  });
  after(() => fs.rmSync(root, { recursive: true, force: true }));

  it('syntax errors: chunks what parses and flags the file', async () => {
    write('syntax.ts', 'export function fine(): number {\n  return 1;\n}\nexport function broken( {\n  return ;\n');
    const file = await chunkOne('syntax.ts');
    assert.equal(file.status, 'syntax_errors');
    assert.ok(file.diagnostics.length > 0);
    assert.match(file.diagnostics[0], /^\d+:\d+ /);
    assert.ok(file.chunks.some((c) => c.name === 'fine'));
  });

  it('binary file: skipped as binary', async () => {
    write('blob.ts', Buffer.from([0x65, 0x78, 0x00, 0x00, 0xff, 0x10]));
    const file = await chunkOne('blob.ts');
    assert.equal(file.status, 'skipped');
    assert.equal(file.skipReason, 'binary');
    assert.match(file.skipDetail, /NUL byte at offset 2/);
  });

  it('non-UTF-8 (latin-1 bytes): skipped as not_utf8', async () => {
    write('latin1.ts', Buffer.from("export const café = 'naïve';\n", 'latin1'));
    const file = await chunkOne('latin1.ts');
    assert.equal(file.status, 'skipped');
    assert.equal(file.skipReason, 'not_utf8');
    assert.match(file.skipDetail, /invalid UTF-8 near byte 16/);
  });

  it('UTF-8 BOM: chunked, the BOM is not part of any source', async () => {
    write('bom.ts', '\ufeffexport function withBom(): void {}\n');
    const file = await chunkOne('bom.ts');
    assert.equal(file.status, 'ok');
    const fn = file.chunks.find((c) => c.name === 'withBom');
    assert.ok(fn);
    assert.equal(fn.fullSource, 'export function withBom(): void {}');
    assert.equal(fn.startLine, 1);
  });

  it('UTF-16LE with BOM: decoded and chunked', async () => {
    write('wide.ts', Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('export class Wide {\n  size = 2;\n}\n', 'utf16le')]));
    const file = await chunkOne('wide.ts');
    assert.equal(file.status, 'ok');
    const wide = file.chunks.find((c) => c.name === 'Wide');
    assert.equal(wide?.fullSource, 'export class Wide {\n  size = 2;\n}');
    assert.equal(file.lineCount, 3);
  });

  it('CRLF line endings: line numbers and sources stay exact', async () => {
    write('crlf.ts', 'export function a(): number {\r\n  return 1;\r\n}\r\n\r\nexport function b(): void {}\r\n');
    const file = await chunkOne('crlf.ts');
    assert.equal(file.status, 'ok');
    assert.equal(file.lineCount, 5);
    const [card, a, b] = file.chunks;
    assert.deepEqual([card.nodeKind, card.startLine, card.endLine], ['module', 1, 5]);
    assert.deepEqual([a.name, a.startLine, a.endLine], ['a', 1, 3]);
    assert.equal(a.fullSource, 'export function a(): number {\r\n  return 1;\r\n}');
    assert.deepEqual([b.name, b.startLine, b.endLine], ['b', 5, 5]);
  });

  it('empty file: ok with no chunks', async () => {
    write('empty.ts', '');
    const file = await chunkOne('empty.ts');
    assert.deepEqual([file.status, file.chunks.length, file.lineCount], ['ok', 0, 0]);
    assert.equal(file.contentHash, 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
  });

  it('a 50k-line file: chunked in full, within seconds', async () => {
    const parts: string[] = [];
    for (let i = 0; i < 5000; i++) {
      parts.push(`/** Step ${i}. */\nexport function step${i}(input: number): number {\n  const doubled = input * 2;\n  if (doubled > ${i}) {\n    return doubled - ${i};\n  }\n  return doubled + ${i};\n}\n\n`);
    }
    write('huge.ts', parts.join('') + '\n'.repeat(5000));
    const started = performance.now();
    const file = await chunkOne('huge.ts');
    const elapsedMs = performance.now() - started;
    assert.equal(file.status, 'ok');
    assert.equal(file.lineCount, 50_000);
    // 5,000 functions and the file's card.
    assert.equal(file.chunks.length, 5001);
    assert.equal(file.chunks[5000].startLine, 4999 * 9 + 2);
    // Generous bound for a loaded 2-core CI box; typical is well under 2 s.
    assert.ok(elapsedMs < 20_000, `50k-line file took ${Math.round(elapsedMs)} ms`);
  });

  it('minified bundle: skipped as minified with the line shape as detail', async () => {
    write('vendor/bundle.js', '/*! lib v1 | MIT */\n' + '!function(e){var t={};function n(r){return t[r]}n.m=e}([]);'.repeat(800) + '\n');
    write('vendor/lib.min.js', 'var a=1;\n');
    const [bundle, min] = await chunk(new AnalysisService(LIMITS), ['vendor']);
    assert.deepEqual([bundle.relativePath, bundle.status, bundle.skipReason], ['vendor/bundle.js', 'skipped', 'minified']);
    assert.match(bundle.skipDetail, /longest line \d+ chars, average \d+ chars over 3 lines/);
    assert.deepEqual([min.relativePath, min.skipReason], ['vendor/lib.min.js', 'minified']);
  });

  it('file over the size limit: skipped as too_large without being read', async () => {
    write('limit/large.ts', 'export const x = 1;\n'.repeat(100));
    const file = await chunkOne('limit/large.ts', new AnalysisService({ ...LIMITS, maxFileBytes: 1000 }));
    assert.deepEqual([file.status, file.skipReason, file.skipDetail], ['skipped', 'too_large', '2000 bytes exceeds limit of 1000']);
  });

  it('symlink loop: reported, not followed, in scan and in chunking', async () => {
    write('loopy/real.ts', 'export const r = 1;\n');
    fs.symlinkSync(path.join(root, 'loopy'), path.join(root, 'loopy', 'again'));
    fs.symlinkSync(path.join(root, 'loopy', 'a.ts'), path.join(root, 'loopy', 'b.ts'));
    fs.symlinkSync(path.join(root, 'loopy', 'b.ts'), path.join(root, 'loopy', 'a.ts'));
    const files = await chunk(new AnalysisService(LIMITS), ['loopy']);
    assert.deepEqual(
      files.map((f) => [f.relativePath, f.status, f.skipReason ?? '']),
      [
        ['loopy/a.ts', 'skipped', 'symlink_loop'],
        ['loopy/again', 'skipped', 'symlink_loop'],
        ['loopy/b.ts', 'skipped', 'symlink_loop'],
        ['loopy/real.ts', 'ok', ''],
      ],
    );
    const explicit = await chunkOne('loopy/a.ts');
    assert.equal(explicit.skipReason, 'symlink_loop');
  });

  it('file deleted between listing and reading: vanished, the rest goes on', async () => {
    write('race/a.ts', 'export const a = 1;\n');
    const doomed = write('race/b.ts', 'export const b = 1;\n');
    write('race/c.ts', 'export const c = 1;\n');
    const deleting: FsOps = {
      ...realFs,
      readFile: (p) => {
        if (p === doomed) fs.rmSync(doomed, { force: true });
        return realFs.readFile(p);
      },
    };
    const service = new AnalysisService(LIMITS, deleting);
    const scan = await service.scan({ workspaceRoot: path.join(root, 'race'), previous: [], excludePatterns: [] });
    assert.deepEqual(scan.files.map((f) => f.relativePath), ['a.ts', 'c.ts']);
    assert.deepEqual(scan.skipped.map((s) => [s.relativePath, s.reason]), [['b.ts', 'vanished']]);
    write('race/b.ts', 'export const b = 1;\n');
    const files = await chunk(service, ['race']);
    assert.deepEqual(files.map((f) => [f.relativePath, f.skipReason ?? f.status]), [['race/a.ts', 'ok'], ['race/b.ts', 'vanished'], ['race/c.ts', 'ok']]);
  });

  it('file rewritten between its stat and its read: chunked as read, with the hash and size of what was read', async () => {
    const edited = write('edit/a.ts', 'export function beforeTheEdit(): number {\n  return 1;\n}\n');
    const after = 'export function afterTheEdit(): number {\n  return 2 + 2;\n}\n';
    const rewriting: FsOps = {
      ...realFs,
      readFile: (p) => {
        if (p === edited) fs.writeFileSync(edited, after);
        return realFs.readFile(p);
      },
    };
    const [file] = await chunk(new AnalysisService(LIMITS, rewriting), ['edit/a.ts']);
    assert.deepEqual(file.chunks.map((c) => c.name), ['<module top level>', 'afterTheEdit']);
    assert.equal(file.contentHash, createHash('sha256').update(after).digest('hex'));
    assert.equal(file.sizeBytes, Buffer.byteLength(after));
  });

  it('unreadable file: skipped as unreadable (EACCES), also when running as root', async () => {
    const locked = write('locked/secret.ts', 'export const s = 1;\n');
    write('locked/open.ts', 'export const o = 1;\n');
    fs.chmodSync(locked, 0o000);
    let fsOps = realFs;
    try {
      fs.readFileSync(locked);
      // Root reads through mode 000, so present the error a normal user would get.
      fsOps = {
        ...realFs,
        readFile: (p) => {
          if (p === locked) throw Object.assign(new Error(`EACCES: permission denied, open '${p}'`), { code: 'EACCES' });
          return realFs.readFile(p);
        },
      };
    } catch {
      // Not root: the real permission error is what the service sees.
    }
    try {
      const service = new AnalysisService(LIMITS, fsOps);
      const scan = await service.scan({ workspaceRoot: path.join(root, 'locked'), previous: [], excludePatterns: [] });
      assert.deepEqual(scan.files.map((f) => f.relativePath), ['open.ts']);
      assert.equal(scan.skipped[0].reason, 'unreadable');
      assert.match(scan.skipped[0].detail, /^EACCES: permission denied/);
      const files = await chunk(service, ['locked']);
      assert.deepEqual(files.map((f) => [f.relativePath, f.skipReason ?? f.status]), [['locked/open.ts', 'ok'], ['locked/secret.ts', 'unreadable']]);
    } finally {
      fs.chmodSync(locked, 0o644);
    }
  });

  it('.gitignore honoured and node_modules excluded when chunking a folder', async () => {
    write('proj/.gitignore', 'generated/\n');
    write('proj/src/app.ts', 'export function app(): void {}\n');
    write('proj/generated/api.ts', 'export function api(): void {}\n');
    write('proj/node_modules/dep/index.js', 'export function dep() {}\n');
    write('proj/src/node_modules/inner/index.ts', 'export function inner() {}\n');
    const files = await chunk(new AnalysisService(LIMITS), ['proj']);
    assert.deepEqual(files.map((f) => f.relativePath), ['proj/src/app.ts']);
    const scan = await new AnalysisService(LIMITS).scan({ workspaceRoot: path.join(root, 'proj'), previous: [], excludePatterns: [] });
    assert.deepEqual(scan.files.map((f) => f.relativePath), ['src/app.ts']);
  });

  describe('over gRPC', () => {
    let server: RunningServer;
    let client: CodeAnalysisServiceClient;
    let service: AnalysisService;
    let outside: string;

    before(async () => {
      outside = fs.mkdtempSync(path.join(os.tmpdir(), 'cc-outside-'));
      fs.writeFileSync(path.join(outside, 'passwords.ts'), 'export const p = 1;\n');
      fs.symlinkSync(path.join(outside, 'passwords.ts'), path.join(root, 'linked.ts'));
      service = new AnalysisService(LIMITS);
      server = await startServer({ host: '127.0.0.1', port: 0, service, logger: createLogger('test', 'error', () => {}) });
      server.setServing();
      client = new CodeAnalysisServiceClient(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
    });
    after(async () => {
      client.close();
      await server.shutdown(1000);
      service.dispose();
      fs.rmSync(outside, { recursive: true, force: true });
    });

    it('path outside the workspace: refused with INVALID_ARGUMENT', async () => {
      for (const bad of ['../../etc/passwd', '/etc/passwd', path.join(outside, 'passwords.ts')]) {
        await assert.rejects(grpcChunk(client, root, [bad]), (err: grpc.ServiceError) => {
          assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
          assert.match(err.details, /is outside the workspace root/);
          assert.doesNotMatch(err.details, /\n\s+at /);
          return true;
        });
      }
    });

    it('symlink resolving outside the workspace: skipped as outside_workspace', async () => {
      const [file] = await grpcChunk(client, root, ['linked.ts']);
      assert.equal(file.relativePath, 'linked.ts');
      assert.equal(file.skipDetail, `resolves to ${fs.realpathSync(path.join(outside, 'passwords.ts'))}`);
      assert.equal(file.chunks.length, 0);
    });

    it('missing path: that file skipped as vanished, the others chunked; missing or relative workspace root: INVALID_ARGUMENT', async () => {
      // A file deleted or renamed after the caller listed it (a checkout under a sync) ends nothing but its own answer.
      const files = (await grpcChunk(client, root, ['nope/missing.ts', 'syntax.ts'])).map(chunkedFileFromPb);
      assert.deepEqual(
        files.map((f) => [f.relativePath, f.status, f.skipReason, f.skipDetail]),
        [
          ['nope/missing.ts', 'skipped', 'vanished', 'no longer exists'],
          ['syntax.ts', 'syntax_errors', undefined, ''],
        ],
      );
      for (const workspaceRoot of [path.join(root, 'does-not-exist'), 'relative/root', '']) {
        await assert.rejects(grpcChunk(client, workspaceRoot, ['a.ts']), (err: grpc.ServiceError) => {
          assert.equal(err.code, grpc.status.INVALID_ARGUMENT);
          assert.match(err.details, /workspace_root/);
          return true;
        });
      }
    });
  });
});
