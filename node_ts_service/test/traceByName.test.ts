// Trace where the type checker cannot see (issue 15 §3): an untyped
// JavaScript reply object whose methods call each other through `this`, as
// web frameworks write them. The checker resolves none of those calls; the
// trace finds them by name, marks each node resolved_by name, and never calls
// such an answer complete. Sites the checker does resolve stay its own: a
// call of another class's method of the same name is not a caller. And an
// interface's implementations are classes and objects, not every use of it.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AnalysisService } from '../src/service';
import type { TraceDirection, TraceRequest, TraceResult } from '../src/trace';

const JS_ROOT = path.resolve(__dirname, '..', '..', 'test', 'fixtures', 'trace_js');
const IMPL_ROOT = path.resolve(__dirname, '..', '..', 'test', 'fixtures', 'trace_impl');
const FAR = () => Date.now() + 60_000;

/** 1-based line of the first line of `file` containing `needle`. */
function lineWith(root: string, file: string, needle: string): number {
  const index = fs.readFileSync(path.join(root, file), 'utf8').split('\n').findIndex((l) => l.includes(needle));
  assert.ok(index >= 0, `${needle} not in ${file}`);
  return index + 1;
}

function request(workspaceRoot: string, symbol: string, direction: TraceDirection): TraceRequest {
  return { workspaceRoot, symbol, relativePath: '', direction, depth: 0, limit: 0 };
}

const nodes = (result: TraceResult) => result.nodes.map((n) => [n.relativePath, n.line, n.qualifiedName, n.resolvedBy]);

describe('trace where the checker cannot resolve', () => {
  let service: AnalysisService;
  before(() => {
    service = new AnalysisService({ maxFileBytes: 1 << 20, maxPrograms: 2, maxRenderCacheFiles: 4, maxWorkspaces: 2 });
  });
  after(() => service.dispose());

  it('callers of a method assigned to an untyped object: the this.deliver() and res.deliver() calls, by name, not complete', async () => {
    const result = await service.trace(request(JS_ROOT, 'reply.deliver', 'callers'), FAR());
    const at = (file: string, needle: string) => lineWith(JS_ROOT, file, needle);
    assert.deepEqual(nodes(result), [
      ['lib/reply.js', at('lib/reply.js', 'return this.deliver(text);'), 'reply.asJson', 'name'],
      ['lib/reply.js', at('lib/reply.js', "this.setHeader('Content-Type', 'text/javascript');") + 1, 'reply.asJsonp', 'name'],
      ['lib/reply.js', at('lib/reply.js', 'return this.deliver(http.STATUS_CODES'), 'reply.deliverStatus', 'name'],
      ['lib/routes.js', at('lib/routes.js', "res.deliver('ok');"), 'health', 'name'],
    ]);
    assert.equal(result.partial, true);
    assert.equal(result.partialReason, 'unresolved');
    assert.equal(result.totalFound, 4);
  });

  it('a call the checker resolves to another method of that name is not a caller; an untyped one may be', async () => {
    const result = await service.trace(request(JS_ROOT, 'Mailer.deliver', 'callers'), FAR());
    assert.deepEqual(nodes(result), [
      ['lib/routes.js', lineWith(JS_ROOT, 'lib/routes.js', 'mailer.deliver({'), 'welcome', 'checker'],
      // `res` is untyped: by name it may be a Mailer. The this.deliver() calls inside reply.* are reply.deliver's.
      ['lib/routes.js', lineWith(JS_ROOT, 'lib/routes.js', "res.deliver('ok');"), 'health', 'name'],
    ]);
    assert.equal(result.partialReason, 'unresolved');
  });

  it('callees through this: the sibling method of the same object, by name', async () => {
    const result = await service.trace(request(JS_ROOT, 'reply.asJson', 'callees'), FAR());
    assert.deepEqual(nodes(result), [['lib/reply.js', lineWith(JS_ROOT, 'lib/reply.js', 'reply.deliver = function'), 'reply.deliver', 'name']]);
    assert.equal(result.partialReason, 'unresolved');
  });

  it('references by name as well, and a fully typed answer stays complete', async () => {
    const refs = await service.trace(request(JS_ROOT, 'reply.deliver', 'references'), FAR());
    assert.deepEqual(
      refs.nodes.map((n) => n.qualifiedName),
      ['reply.asJson', 'reply.asJsonp', 'reply.deliverStatus', 'health'],
    );
    assert.ok(refs.nodes.every((n) => n.resolvedBy === 'name'));
    const typed = await service.trace(request(IMPL_ROOT, 'totalArea', 'callees'), FAR());
    assert.equal(typed.partial, false);
    assert.ok(typed.nodes.every((n) => n.resolvedBy === 'checker'));
  });

  it("an interface's implementations are the classes and objects that implement it, not its other uses", async () => {
    const result = await service.trace(request(IMPL_ROOT, 'Shape', 'implementations'), FAR());
    assert.deepEqual(result.nodes.map((n) => n.qualifiedName).sort(), ['Circle', 'Polygon', 'Rectangle', 'unit']);
    assert.equal(result.partial, false);
    // An abstract member is implemented by members with a body.
    const area = await service.trace(request(IMPL_ROOT, 'Polygon.area', 'implementations'), FAR());
    assert.deepEqual(area.nodes.map((n) => n.qualifiedName), ['Rectangle.area']);
  });
});
