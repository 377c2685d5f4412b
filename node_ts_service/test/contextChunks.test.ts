// Chunks for code that is not a named declaration: call-argument callbacks,
// test blocks, IIFEs, objects passed to calls, anonymous default exports and
// the module chunk; plus line coverage and machine-path hygiene.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';
import { chunkSourceFile, lineCoverage } from '../src/chunker';
import { withoutMachinePaths } from '../src/references';
import { renderSymbol } from '../src/render';
import type { Chunk } from '../src/types';
import { assertInvariants, byQualifiedName, chunkText, readFixture } from './chunkHelpers';

function names(chunks: Chunk[]): string[] {
  return chunks.map((c) => `${c.nodeKind} ${c.qualifiedName}`);
}

function fullCoverage(text: string, chunks: Chunk[]): void {
  const cov = lineCoverage(text, chunks);
  assert.equal(cov.covered, cov.lines, 'every non-blank line is inside a chunk');
  assert.equal(cov.codeCovered, cov.codeLines);
}

describe('callbacks passed to calls', () => {
  const APP = readFixture('express-app.js');
  const app = chunkText('src/app.js', APP, 'javascript');

  it('names route handlers from the callee and the route, and keeps one-liners in their parent', () => {
    assert.deepEqual(names(app.chunks), [
      'module <module top level>',
      'variable app',
      "function app.get('/users/:id') handler",
      'function app.listen(3000) callback',
    ]);
    assertInvariants(APP, app.chunks);
    // `app.post('/users', (req, res) => res.status(201)…)` is one line: it stays in the module chunk.
    const module = byQualifiedName(app.chunks, '<module top level>');
    assert.ok(module.collapsedSource.includes("app.post('/users', (req, res) => res.status(201).json(req.body));"));
  });

  it('shows the route call in the handler and keeps its own callbacks in its text', () => {
    const handler = byQualifiedName(app.chunks, "app.get('/users/:id') handler");
    assert.ok(handler.fullSource.startsWith("app.get('/users/:id', async (req, res) => {"));
    assert.equal(handler.signature, "app.get('/users/:id', async (req, res) =>");
    // A callback inside a function is that function's code, not a symbol of its own.
    assert.ok(handler.collapsedSource.includes('const friend = findUser(id);'));
    // Inside its parent's module chunk the whole handler collapses to its call.
    const module = byQualifiedName(app.chunks, '<module top level>');
    assert.ok(module.collapsedSource.includes("app.get('/users/:id', async (req, res) => { /* 11 lines collapsed */ });"));
  });

  it('covers every non-blank line of a small Express app', () => {
    fullCoverage(APP, app.chunks);
  });

  it('keeps ids when lines shift and gives repeated names distinct ids', () => {
    const shifted = chunkText('src/app.js', `\n\n${APP}`, 'javascript');
    assert.deepEqual(shifted.chunks.map((c) => c.id), app.chunks.map((c) => c.id));
    const twice = chunkText('a.js', "on('x', () => {\n  a();\n  b();\n});\non('x', () => {\n  c();\n  d();\n});\n", 'javascript');
    assert.deepEqual(names(twice.chunks), ['module <module top level>', "function on('x') handler", "function on('x') handler"]);
    assert.notEqual(twice.chunks[1].id, twice.chunks[2].id);
  });

  it('names callbacks without a string argument from the callee and a short name argument', () => {
    const text = [
      'router.use(auth, (req, res, next) => {',
      '  next();',
      '});',
      'fetch(url).then((res) => {',
      '  return res.json();',
      '});',
      'items.forEach((x) => x.run());',
      'new Promise((resolve) => {',
      '  setTimeout(resolve, 1);',
      '});',
    ].join('\n');
    const out = chunkText('a.ts', text);
    assert.deepEqual(names(out.chunks), [
      'module <module top level>',
      'function router.use(auth) callback',
      'function fetch().then() callback',
      'function new Promise() callback',
    ]);
    assertInvariants(text, out.chunks);
  });

  it('keeps callbacks, objects and IIFEs inside a function in its own text', () => {
    const text = [
      'export function start(items) {',
      '  items.forEach((x) => {',
      '    x.run();',
      '    x.stop();',
      '  });',
      '  register({',
      '    name: "a",',
      '    run() { return 1; },',
      '  });',
      '}',
    ].join('\n');
    const out = chunkText('a.ts', text);
    assert.deepEqual(names(out.chunks), ['module <module top level>', 'function start']);
    assert.ok(out.chunks[1].collapsedSource.includes('x.stop();'));
    fullCoverage(text, out.chunks);
  });
});

describe('test suites', () => {
  const TESTS = readFixture('cart.test.ts');
  const out = chunkText('src/cart.test.ts', TESTS);

  it('nests describe, it, hooks, it.each and Playwright test.describe by title', () => {
    assert.deepEqual(names(out.chunks), [
      'module <module top level>',
      "function describe('cart')",
      "function describe('cart') > beforeEach()",
      "function describe('cart') > it('adds items')",
      "function describe('cart') > it.each('adds %i apples')",
      "function describe('cart') > describe('totals')",
      "function describe('cart') > describe('totals') > it('sums prices')",
      "function test.describe('checkout page')",
      "function test.describe('checkout page') > test('pays')",
    ]);
    assert.ok(out.chunks.every((c) => c.isTest));
    assertInvariants(TESTS, out.chunks);
  });

  it('shows a describe block with its it blocks collapsed', () => {
    const suite = byQualifiedName(out.chunks, "describe('cart')");
    assert.ok(suite.fullSource.startsWith("describe('cart', () => {"));
    assert.ok(suite.collapsedSource.includes("it('adds items', () => { /* 4 lines collapsed */ });"));
    assert.ok(suite.collapsedSource.includes("describe('totals', () => { /* 6 lines collapsed */ });"));
    assert.ok(suite.collapsedSource.includes('let cart: Cart;'));
    assert.ok(!suite.collapsedSource.includes('expect(cart.count()).toBe(2);'));
    const adds = byQualifiedName(out.chunks, "describe('cart') > it('adds items')");
    assert.ok(adds.embeddingText.startsWith("[TypeScript] src/cart.test.ts > describe('cart') > it('adds items')\n"));
  });

  it('covers every non-blank line of a small test file', () => {
    fullCoverage(TESTS, out.chunks);
  });

  it('makes one-line test blocks chunks too', () => {
    const text = "it('is true', () => expect(true).toBe(true));\n";
    assert.deepEqual(names(chunkText('a.test.ts', text).chunks), ['module <module top level>', "function it('is true')"]);
  });
});

describe('IIFEs, objects passed to calls and default exports', () => {
  it('chunks IIFEs of every form; top-level ones keep their declarations top-level in name', () => {
    const text = [
      '(function () {',
      '  function setup() {',
      '    return 1;',
      '  }',
      '  setup();',
      '})();',
      '(() => {',
      '  run();',
      '  stop();',
      '})();',
      '!function () {',
      '  go();',
      '  halt();',
      '}();',
      'export function later() {',
      '  const v = (() => {',
      '    return 2;',
      '  })();',
      '  return v;',
      '}',
    ].join('\n');
    const out = chunkText('a.js', text, 'javascript');
    assert.deepEqual(names(out.chunks), [
      'module <module top level>',
      'function <iife>',
      'function setup',
      'function <iife>',
      'function <iife>',
      'function later',
    ]);
    assertInvariants(text, out.chunks);
    assert.equal(new Set(out.chunks.map((c) => c.id)).size, out.chunks.length);
    assert.ok(out.chunks[1].collapsedSource.includes('function setup() { /* 3 lines collapsed */ }'));
    fullCoverage(text, out.chunks);
  });

  it('chunks objects passed to calls with their methods and nested option objects as children', () => {
    const text = [
      "import { defineConfig } from 'vite';",
      "Vue.component('todo-item', {",
      "  props: ['todo'],",
      '  methods: {',
      '    toggle() {',
      '      this.todo.done = !this.todo.done;',
      '    },',
      '  },',
      '  render(h) {',
      "    return h('li', this.todo.text);",
      '  },',
      '});',
      'export const store = createStore({',
      '  state: () => ({ count: 0 }),',
      '  increment(state) {',
      '    state.count++;',
      '  },',
      '});',
      'export default defineConfig({',
      '  plugins: [],',
      "  root: 'src',",
      '});',
    ].join('\n');
    const out = chunkText('vite.config.ts', text);
    assert.deepEqual(names(out.chunks), [
      'module <module top level>',
      "variable Vue.component('todo-item', {…})",
      "variable Vue.component('todo-item', {…}) > methods",
      "method Vue.component('todo-item', {…}) > methods.toggle",
      "method Vue.component('todo-item', {…}) > render",
      'variable store',
      'variable store > createStore({…})',
      // Function-valued properties of a chunked object are chunks whatever their size, as in `const api = { … }`.
      'method store > createStore({…}) > state',
      'method store > createStore({…}) > increment',
      'variable defineConfig({…})',
    ]);
    assertInvariants(text, out.chunks);
    const vue = byQualifiedName(out.chunks, "Vue.component('todo-item', {…})");
    assert.ok(vue.collapsedSource.includes('render(h) { /* 3 lines collapsed */ },'));
    fullCoverage(text, out.chunks);
  });

  it('names anonymous default exports "default" and chunks CommonJS exports', () => {
    const fn = chunkText('a.ts', 'export default function () {\n  return 1;\n}\n');
    assert.deepEqual(names(fn.chunks), ['module <module top level>', 'function default']);
    const cls = chunkText('a.ts', 'export default class {\n  run() {\n    return 1;\n  }\n}\n');
    assert.deepEqual(names(cls.chunks), ['module <module top level>', 'class default', 'method default.run']);
    const obj = chunkText('a.ts', 'export default {\n  start() {\n    return 1;\n  },\n};\n');
    assert.deepEqual(names(obj.chunks), ['module <module top level>', 'variable default', 'method default.start']);
    const cjs = chunkText('a.js', 'module.exports = {\n  a() {\n    return 1;\n  },\n};\nexports.b = function () {\n  return 2;\n};\n', 'javascript');
    assert.deepEqual(names(cjs.chunks), [
      'module <module top level>',
      'variable module.exports',
      'method module.exports.a',
      'function b',
    ]);
  });
});

describe('the module chunk', () => {
  it('is the whole file for a script of bare statements', () => {
    const text = "#!/usr/bin/env node\n// build script\nconst args = process.argv.slice(2);\nif (args.length === 0) {\n  console.error('usage');\n  process.exit(1);\n}\nrun(args);\n";
    const out = chunkText('scripts/build.js', text, 'javascript');
    assert.deepEqual(names(out.chunks), ['module <module top level>', 'variable args']);
    const module = out.chunks[0];
    assert.equal(module.fullSource, text.trimEnd());
    assert.equal(module.startLine, 1);
    assert.equal(module.parentId, '');
    assert.deepEqual(module.childIds, []);
    assertInvariants(text, out.chunks);
    fullCoverage(text, out.chunks);
  });

  it('is made for a file of declarations alone too: the file card, outlined', () => {
    const text = '/** License header. */\n\n// helpers\nexport function ok(): number {\n  return 1;\n}\n';
    const out = chunkText('a.ts', text);
    assert.deepEqual(names(out.chunks), ['module <module top level>', 'function ok']);
    assert.equal(out.chunks[0].collapsedSource, '/** License header. */\n\n// helpers\nexport function ok(): number { /* 3 lines collapsed */ }');
    fullCoverage(text, out.chunks);
  });

  it('is left out for a file of comments alone', () => {
    assert.deepEqual(chunkText('a.ts', '// nothing\n/* here */\n').chunks, []);
  });

  it('collapses top-level symbols, and renders one of them expanded on request', () => {
    const text = "import fs from 'fs';\n\nexport function read(p: string) {\n  return fs.readFileSync(p, 'utf8');\n}\n\nread('x');\n";
    const out = chunkText('src/read.ts', text);
    const module = byQualifiedName(out.chunks, '<module top level>');
    assert.equal(module.collapsedSource, "import fs from 'fs';\n\nexport function read(p: string) { /* 3 lines collapsed */ }\n\nread('x');");
    const read = byQualifiedName(out.chunks, 'read');
    const rendered = renderSymbol(out.chunks, text, { symbolId: module.id, expandChildIds: [read.id] });
    assert.ok(rendered);
    assert.equal(rendered.source, text.trimEnd());
    assert.deepEqual(rendered.unknownChildIds, []);
  });
});

describe('machine paths', () => {
  it('drops import("…") qualifiers and makes workspace paths relative', () => {
    assert.equal(
      withoutMachinePaths('const w: import("/home/me/app/node_modules/dep/index").Widget', '/home/me/app'),
      'const w: Widget',
    );
    assert.equal(withoutMachinePaths("x: import('/opt/lib/x').A<import(\"/b\").B>", '/w'), 'x: A<B>');
    assert.equal(withoutMachinePaths('cannot read /home/me/app/src/a.ts', '/home/me/app'), 'cannot read src/a.ts');
  });

  it('keeps a module type, by its workspace or package path', () => {
    assert.equal(
      withoutMachinePaths('const m: typeof import("/home/me/app/src/schema/builders")', '/home/me/app'),
      'const m: typeof import("src/schema/builders")',
    );
    // A monorepo's hoisted packages lie outside the workspace root.
    assert.equal(
      withoutMachinePaths('Promise<typeof import("/home/me/mono/node_modules/@types/dep/index")>', '/home/me/mono/packages/app'),
      'Promise<typeof import("@types/dep/index")>',
    );
    assert.equal(withoutMachinePaths('typeof import("C:\\src\\shared\\util")', 'D:\\app'), 'typeof import("util")');
    assert.equal(withoutMachinePaths('typeof import("fs")', '/w'), 'typeof import("fs")');
  });

  it('leaves the workspace path out of every chunk field, references included', () => {
    const root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'cc-abs-')));
    try {
      const pkg = path.join(root, 'node_modules', 'dep');
      fs.mkdirSync(pkg, { recursive: true });
      fs.writeFileSync(path.join(pkg, 'package.json'), '{"name":"dep","types":"index.d.ts"}');
      fs.writeFileSync(path.join(pkg, 'index.d.ts'), 'export declare class Widget { size: number; }\nexport declare function make(): Widget;\n');
      fs.mkdirSync(path.join(root, 'src'));
      fs.writeFileSync(path.join(root, 'src', 'shape.ts'), 'export class Shape {\n  area(): number {\n    return 1;\n  }\n}\n');
      const mainText = [
        "import { make } from 'dep';",
        "import { Shape } from './shape';",
        // The checker names a namespace import's module, and the module's type, by its absolute path.
        "import * as shapes from './shape';",
        'export const widget = make();',
        'export const shape = new Shape();',
        'export const shapeModule = shapes;',
        'export function measure() {',
        '  return widget.size + shape.area() + new shapes.Shape().area() + new shapeModule.Shape().area();',
        '}',
        "app.get('/size', (req, res) => {",
        '  res.json(measure());',
        '});',
        '',
      ].join('\n');
      const mainPath = path.join(root, 'src', 'main.ts');
      fs.writeFileSync(mainPath, mainText);
      const program = ts.createProgram({ rootNames: [mainPath], options: { strict: true, moduleResolution: ts.ModuleResolutionKind.Node10 } });
      const sourceFile = program.getSourceFile(mainPath);
      assert.ok(sourceFile);
      const out = chunkSourceFile({
        absolutePath: mainPath,
        relativePath: 'src/main.ts',
        text: mainText,
        language: 'typescript',
        sourceFile,
        checker: program.getTypeChecker(),
        workspaceRoot: root,
      });
      const measure = byQualifiedName(out.chunks, 'measure');
      const widget = measure.references.find((r) => r.name === 'widget');
      assert.ok(widget, JSON.stringify(measure.references));
      assert.equal(widget.signature, 'const widget: Widget');
      assert.equal(measure.references.find((r) => r.name === 'shapeModule')?.signature, 'const shapeModule: typeof import("src/shape")');
      // The module itself is no reference: the Dependencies line names it by its specifier.
      assert.ok(measure.references.every((r) => r.chunkId !== '' || !r.name.startsWith('"')), JSON.stringify(measure.references));
      assert.ok(measure.embeddingText.includes('\nDependencies: ./shape\n'), measure.embeddingText);
      const serialized = JSON.stringify(out);
      assert.ok(!serialized.includes(root), 'no chunk field holds the workspace path');
      assert.ok(!serialized.includes(os.tmpdir()), 'nor the temp dir');
    } finally {
      fs.rmSync(root, { recursive: true, force: true });
    }
  });
});
