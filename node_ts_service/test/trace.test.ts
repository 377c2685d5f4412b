import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { traceRequestFromPb, traceRequestToPb, traceResultFromPb, traceResultToPb } from '../src/convert';
import { CodeAnalysisServiceClient, TraceDirection, type TraceRequest as TraceRequestPb, type TraceResponse } from '../src/gen/codecompass/v1/analysis';
import { createLogger } from '../src/logging';
import { type RunningServer, startServer } from '../src/server';
import { AnalysisService } from '../src/service';
import type { TraceDirection as Direction, TraceRequest, TraceResult } from '../src/trace';
import { RequestError } from '../src/workspace';

const ROOT = path.resolve(__dirname, '..', '..', 'test', 'fixtures', 'trace');
const FAR = Date.now() + 60_000;

/** 1-based line of the first line of `file` containing `needle`: fixtures are found by substring. */
function lineWith(file: string, needle: string): number {
  const lines = fs.readFileSync(path.join(ROOT, file), 'utf8').split('\n');
  const index = lines.findIndex((l) => l.includes(needle));
  assert.ok(index >= 0, `${needle} not in ${file}`);
  return index + 1;
}

function request(symbol: string, direction: Direction, extra: Partial<TraceRequest> = {}): TraceRequest {
  return { workspaceRoot: ROOT, symbol, relativePath: '', direction, depth: 0, limit: 0, ...extra };
}

const names = (result: TraceResult) => result.nodes.map((n) => n.qualifiedName).sort();

/**
 * A workspace in the temp folder holding `files` (relative path: text) and a service over it, for
 * the tests of one describe block: made before them, removed after.
 */
function tempWorkspace(prefix: string, files: Record<string, string>): { root: () => string; service: () => AnalysisService } {
  let root = '';
  let service: AnalysisService | undefined;
  before(() => {
    root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
    for (const [rel, text] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      fs.writeFileSync(path.join(root, rel), text);
    }
    service = new AnalysisService({ maxFileBytes: 1 << 20, maxPrograms: 2, maxRenderCacheFiles: 4, maxWorkspaces: 2 });
  });
  after(() => {
    service?.dispose();
    fs.rmSync(root, { recursive: true, force: true });
  });
  return { root: () => root, service: () => service! };
}

describe('Trace', () => {
  let service: AnalysisService;
  before(() => {
    service = new AnalysisService({ maxFileBytes: 1 << 20, maxPrograms: 2, maxRenderCacheFiles: 4, maxWorkspaces: 2 });
  });
  after(() => service.dispose());

  it('resolves the root by qualified name with its chunk and line range', async () => {
    const result = await service.trace(request('TokenService.validateToken', 'callers'), FAR);
    assert.equal(result.root.relativePath, 'src/auth.ts');
    assert.equal(result.root.qualifiedName, 'TokenService.validateToken');
    assert.equal(result.root.startLine, lineWith('src/auth.ts', 'validateToken(token: string)'));
    assert.ok(result.root.endLine > result.root.startLine);
    assert.notEqual(result.root.chunkId, '');
  });

  it('finds the three callers of a method, named by their chunks, with snippets', async () => {
    const result = await service.trace(request('TokenService.validateToken', 'callers'), FAR);
    assert.deepEqual(names(result), ['handleAdmin', 'login', 'refresh']);
    assert.equal(result.partial, false);
    assert.equal(result.totalFound, 3);
    assert.equal(result.returned, 3);
    const login = result.nodes.find((n) => n.qualifiedName === 'login')!;
    assert.equal(login.relativePath, 'src/routes.ts');
    assert.equal(login.line, lineWith('src/routes.ts', "tokens.validateToken(token) ? 'ok'"));
    assert.match(login.snippet, /validateToken/);
    assert.equal(login.depth, 1);
    assert.notEqual(login.chunkId, '');
  });

  it('follows callers two hops deep', async () => {
    const result = await service.trace(request('TokenService.validateToken', 'callers', { depth: 2 }), FAR);
    const route = result.nodes.filter((n) => n.qualifiedName === 'route');
    assert.ok(route.length >= 1, JSON.stringify(result.nodes));
    assert.ok(route.every((n) => n.depth === 2));
  });

  it('finds callees', async () => {
    const result = await service.trace(request('TokenService.validateToken', 'callees'), FAR);
    assert.deepEqual(names(result), ['checkSignature', 'hot']);
  });

  it('resolves path:line and lists references', async () => {
    const line = lineWith('src/auth.ts', 'export function checkSignature');
    const result = await service.trace(request(`src/auth.ts:${line}`, 'references'), FAR);
    assert.equal(result.root.qualifiedName, 'checkSignature');
    assert.deepEqual(names(result), ['TokenService.validateToken']);
  });

  it('finds both implementations of an interface, plus the abstract class that declares it', async () => {
    const result = await service.trace(request('Shape', 'implementations'), FAR);
    const found = names(result);
    assert.ok(found.includes('Circle'), JSON.stringify(found));
    assert.ok(found.includes('Rectangle') || found.includes('Polygon'), JSON.stringify(found));
  });

  it('walks supertypes and subtypes of a class hierarchy', async () => {
    const up = await service.trace(request('Square', 'supertypes', { depth: 3 }), FAR);
    assert.deepEqual(
      up.nodes.map((n) => [n.qualifiedName, n.depth]),
      [
        ['Rectangle', 1],
        ['Polygon', 2],
        ['Shape', 3],
      ],
    );
    const down = await service.trace(request('Polygon', 'subtypes', { depth: 2 }), FAR);
    assert.deepEqual(
      down.nodes.map((n) => [n.qualifiedName, n.depth]),
      [
        ['Rectangle', 1],
        ['Square', 2],
      ],
    );
  });

  it('an empty answer with a resolved root means there are none', async () => {
    const result = await service.trace(request('route', 'callers'), FAR);
    assert.equal(result.root.qualifiedName, 'route');
    assert.deepEqual(result.nodes, []);
    assert.equal(result.partial, false);
  });

  it('stops at the limit and says so for a hot function', async () => {
    const result = await service.trace(request('hot', 'references', { limit: 10 }), FAR);
    assert.equal(result.returned, 10);
    assert.equal(result.nodes.length, 10);
    assert.ok(result.totalFound > 100, String(result.totalFound));
    assert.equal(result.partial, true);
    assert.equal(result.partialReason, 'limit');
  });

  it('answers a symbol with thousands of references in bounded time', async () => {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), 'trace-hot-'));
    try {
      fs.writeFileSync(path.join(root, 'hot.ts'), 'export function hot(n: number): number {\n  return n;\n}\n');
      for (let f = 0; f < 10; f++) {
        const calls = Array.from({ length: 500 }, (_, i) => `  t += hot(${i});`).join('\n');
        fs.writeFileSync(path.join(root, `user${f}.ts`), `import { hot } from './hot';\nexport function use${f}(): number {\n  let t = 0;\n${calls}\n  return t;\n}\n`);
      }
      const started = Date.now();
      const result = await service.trace({ ...request('hot', 'references'), workspaceRoot: root }, FAR);
      assert.ok(Date.now() - started < 10_000, `${Date.now() - started} ms`);
      assert.equal(result.returned, 50);
      assert.equal(result.totalFound, 5010);
      assert.equal(result.partialReason, 'limit');
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });

  it('flags a spent deadline and a clamped depth', async () => {
    const late = await service.trace(request('Square', 'supertypes', { depth: 2 }), Date.now() - 1);
    assert.equal(late.partial, true);
    assert.equal(late.partialReason, 'deadline');
    const deep = await service.trace(request('Square', 'supertypes', { depth: 9 }), FAR);
    assert.equal(deep.partialReason, 'depth');
    assert.equal(deep.nodes.length, 3);
  });

  it('refuses unknown and ambiguous symbols with a clear error', async () => {
    await assert.rejects(service.trace(request('NoSuchThing.method', 'callers'), FAR), (err: unknown) => {
      return err instanceof RequestError && err.kind === 'not_found' && /NoSuchThing/.test(err.message);
    });
    await assert.rejects(service.trace(request('src/auth.ts:9999', 'callers'), FAR), (err: unknown) => {
      return err instanceof RequestError && err.kind === 'invalid_argument';
    });
    await assert.rejects(service.trace(request('hot', 'callers', { relativePath: 'src/routes.ts' }), FAR), (err: unknown) => {
      return err instanceof RequestError && err.kind === 'not_found';
    });
    await assert.rejects(service.trace(request('checkSignature', 'callers'), FAR), (err: unknown) => {
      return err instanceof RequestError && err.kind === 'invalid_argument' && /src\/legacy\/auth\.ts/.test(err.message);
    });
    const narrowed = await service.trace(request('checkSignature', 'callers', { relativePath: 'src/legacy/auth.ts' }), FAR);
    assert.equal(narrowed.root.relativePath, 'src/legacy/auth.ts');
    assert.deepEqual(narrowed.nodes, []);
  });

  it('round-trips through the proto types', async () => {
    const req = request('Shape', 'subtypes', { depth: 2, limit: 7 });
    assert.deepEqual(traceRequestFromPb(traceRequestToPb(req)), req);
    const result = await service.trace(request('hot', 'references', { limit: 3 }), FAR);
    assert.deepEqual(traceResultFromPb(traceResultToPb(result)), result);
  });
});

describe('Trace over gRPC', () => {
  let service: AnalysisService;
  let server: RunningServer;
  let client: CodeAnalysisServiceClient;
  before(async () => {
    service = new AnalysisService({ maxFileBytes: 1 << 20, maxPrograms: 2, maxRenderCacheFiles: 4, maxWorkspaces: 2 });
    server = await startServer({ host: '127.0.0.1', port: 0, service, logger: createLogger('test', 'error', () => {}) });
    server.setServing();
    client = new CodeAnalysisServiceClient(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
  });
  after(async () => {
    client.close();
    await server.shutdown(1000);
    service.dispose();
  });

  const call = (req: Partial<TraceRequestPb>) =>
    new Promise<TraceResponse>((resolve, reject) =>
      client.trace(
        { workspaceRoot: ROOT, symbol: '', relativePath: '', direction: TraceDirection.TRACE_DIRECTION_CALLERS, depth: 0, limit: 0, ...req },
        new grpc.Metadata(),
        { deadline: Date.now() + 20_000 },
        (err, res) => (err ? reject(err) : resolve(res)),
      ),
    );

  it('answers callers', async () => {
    const res = await call({ symbol: 'TokenService.validateToken' });
    assert.equal(res.root?.qualifiedName, 'TokenService.validateToken');
    assert.equal(res.returned, 3);
  });

  it('maps an unknown symbol to NOT_FOUND and a missing direction to INVALID_ARGUMENT', async () => {
    await assert.rejects(call({ symbol: 'Nope' }), (err: grpc.ServiceError) => err.code === grpc.status.NOT_FOUND);
    await assert.rejects(
      call({ symbol: 'hot', direction: TraceDirection.TRACE_DIRECTION_UNSPECIFIED }),
      (err: grpc.ServiceError) => err.code === grpc.status.INVALID_ARGUMENT && /direction/.test(err.details),
    );
  });
});

describe('Trace after an edit', () => {
  it('picks up an edited file: its whole-workspace Program follows the disk', async () => {
    const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'cc-trace-edit-')));
    const service = new AnalysisService({ maxFileBytes: 1 << 20, maxPrograms: 2, maxRenderCacheFiles: 4, maxWorkspaces: 2 });
    try {
      fs.writeFileSync(path.join(root, 'target.ts'), 'export function target(): number {\n  return 1;\n}\n');
      const caller = path.join(root, 'caller.ts');
      fs.writeFileSync(caller, "import { target } from './target';\n\nexport function first(): number {\n  return target();\n}\n");
      const callers = async () => names(await service.trace({ ...request('target', 'callers'), workspaceRoot: root }, FAR));
      assert.deepEqual(await callers(), ['first']);
      fs.appendFileSync(caller, '\nexport function second(): number {\n  return target() + 1;\n}\n');
      // A later mtime, even where the file system's clock is coarse.
      fs.utimesSync(caller, new Date(), new Date(Date.now() + 10_000));
      assert.deepEqual(await callers(), ['first', 'second']);
      fs.writeFileSync(path.join(root, 'third.ts'), "import { target } from './target';\n\nexport const third = () => target();\n");
      assert.deepEqual(await callers(), ['first', 'second', 'third']);
    } finally {
      service.dispose();
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});

describe('Trace of CommonJS exports', () => {
  // `exports.f = function` is no declaration to the call hierarchy, which found no caller of one;
  // the checker still resolves `require('./m').f()`, `m.f()` and a destructured `f()` to it.
  const ws = tempWorkspace('cc-trace-cjs-', {
    'package.json': '{"name": "cjs"}\n',
    'src/m.js':
      '// Money helpers.\nexports.formatPrice = function (cents) {\n  return "$" + cents / 100;\n};\n\n' +
      'exports.parsePrice = (text) => Number(text.slice(1)) * 100;\n\n' +
      'module.exports.roundCents = function roundCents(value) {\n  return Math.round(value);\n};\n',
    'src/cart.js':
      "const m = require('./m');\nconst { parsePrice } = require('./m');\n\n" +
      "function cartTotal(items) {\n  return require('./m').formatPrice(items.length);\n}\n\n" +
      "function cartLabel(item) {\n  return m.formatPrice(item.cents) + parsePrice('$1') + m.roundCents(2);\n}\n\n" +
      'module.exports = { cartTotal, cartLabel };\n',
  });
  const callers = async (symbol: string) => {
    const result = await ws.service().trace({ ...request(symbol, 'callers'), workspaceRoot: ws.root() }, FAR);
    return { names: names(result), by: result.nodes.map((n) => n.resolvedBy) };
  };

  it('finds the callers of exports.f through require(...).f and a module variable', async () => {
    assert.deepEqual(await callers('formatPrice'), { names: ['cartLabel', 'cartTotal'], by: ['checker', 'checker'] });
  });

  it('finds the callers of module.exports.f = function f', async () => {
    assert.deepEqual((await callers('roundCents')).names, ['cartLabel']);
  });

  it('finds a caller through a destructured require', async () => {
    assert.deepEqual((await callers('parsePrice')).names, ['cartLabel']);
  });
});

describe('Trace of JavaScript beside a TypeScript config', () => {
  // The workspace's tsconfig.json has no allowJs: its tools/ scripts are indexed all the same, and
  // a symbol the search returns from them must be traceable.
  const ws = tempWorkspace('cc-trace-tsjs-', {
    'tsconfig.json': '{"compilerOptions": {"strict": true, "noEmit": true}}\n',
    'src/index.ts': 'export function main(): number {\n  return 1;\n}\n',
    'tools/bundle.js':
      "var path = require('path');\n\nfunction outputFor(name) {\n  return path.join('dist', name);\n}\n\n" +
      'module.exports = function rollupBundle(options) {\n  return outputFor(options.name);\n};\n',
  });

  it('resolves a JS symbol, its callees and its callers', async () => {
    // The function of `module.exports = function rollupBundle` is asked of the call hierarchy by
    // its own name, not by the assignment's first (`exports`), where it has no item.
    const callees = await ws.service().trace({ ...request('rollupBundle', 'callees'), workspaceRoot: ws.root() }, FAR);
    assert.equal(callees.root.relativePath, 'tools/bundle.js');
    assert.equal(callees.root.startLine, 7);
    assert.deepEqual(names(callees), ['outputFor']);
    const callers = await ws.service().trace({ ...request('outputFor', 'callers'), workspaceRoot: ws.root() }, FAR);
    assert.deepEqual(names(callers), ['rollupBundle']);
  });
});

describe('Trace paths', () => {
  let service: AnalysisService;
  before(() => {
    service = new AnalysisService({ maxFileBytes: 1 << 20, maxPrograms: 2, maxRenderCacheFiles: 4, maxWorkspaces: 2 });
  });
  after(() => service.dispose());

  it('reads `..` and `.` segments within the workspace, in path:line and relative_path alike', async () => {
    const line = lineWith('src/auth.ts', 'export function checkSignature');
    for (const given of [`src/../src/auth.ts:${line}`, `./src/./auth.ts:${line}`, `${ROOT}/src/auth.ts:${line}`]) {
      const result = await service.trace(request(given, 'references'), FAR);
      assert.equal(result.root.relativePath, 'src/auth.ts', given);
    }
    const narrowed = await service.trace(request('checkSignature', 'callers', { relativePath: 'src/legacy/../legacy/auth.ts' }), FAR);
    assert.equal(narrowed.root.relativePath, 'src/legacy/auth.ts');
  });

  it('refuses a path that leaves the workspace, in one line', async () => {
    for (const extra of [{ symbol: '../auth.ts:3' }, { symbol: 'checkSignature', relativePath: 'src/../../x.ts' }, { symbol: 'checkSignature', relativePath: '/etc/passwd' }]) {
      await assert.rejects(service.trace({ ...request('', 'callers'), ...extra }, FAR), (err: unknown) => {
        return err instanceof RequestError && err.kind === 'invalid_argument' && /is outside the workspace root/.test(err.message);
      });
    }
  });

  it('quotes a prefix of a long symbol it cannot find, not the whole of it', async () => {
    const symbol = 'S'.repeat(4000);
    await assert.rejects(service.trace(request(symbol, 'callers'), FAR), (err: unknown) => {
      return err instanceof RequestError && err.kind === 'not_found' && err.message.length < 300 && /4,000 characters/.test(err.message);
    });
  });
});
