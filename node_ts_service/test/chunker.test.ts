import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';
import { chunkIdForDeclaration, CHUNKER_VERSION, EMBEDDING_TOKEN_BUDGET, isTestPath } from '../src/chunker';
import { countTokens, countTokensUpTo, referenceEncoder } from '../src/tokens';
import type { Chunk } from '../src/types';
import { assertInvariants, byQualifiedName, chunkText, readFixture } from './chunkHelpers';

const SAMPLE = readFixture('sample.ts');
const sample = chunkText('src/auth/sample.ts', SAMPLE);

function names(chunks: Chunk[]): string[] {
  return chunks.map((c) => `${c.nodeKind} ${c.qualifiedName}`);
}

/** Parses a chunk's text on its own (members inside a class or object) and returns the parse errors. */
function parseAlone(chunk: Chunk, parent: Chunk | undefined, jsx: boolean): string[] {
  const member = parent !== undefined && ['method', 'constructor', 'accessor', 'variable'].includes(chunk.nodeKind);
  const inObject = member && parent.nodeKind === 'variable';
  const wrapped = !member
    ? chunk.fullSource
    : inObject
      ? `({\n${chunk.fullSource}\n})`
      : `abstract class __Wrapper {\n${chunk.fullSource}\n}`;
  const sf = ts.createSourceFile(jsx ? 'x.tsx' : 'x.ts', wrapped, ts.ScriptTarget.Latest, true);
  const diags = (sf as unknown as { parseDiagnostics: ts.Diagnostic[] }).parseDiagnostics;
  return diags.map((d) => `${chunk.qualifiedName}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
}

describe('chunkSourceFile on TypeScript', () => {
  it('finds every symbol form at every depth', () => {
    assert.equal(sample.hasSyntaxErrors, false);
    assert.deepEqual(sample.diagnostics, []);
    const expected = [
      // Imports and `export { … }` lines belong to no symbol.
      'module <module top level>',
      'variable TOKEN_TTL_SECONDS',
      'variable counter',
      'variable api',
      'method api.get',
      'method api.post',
      'class TokenService',
      'variable TokenService.secret',
      'variable TokenService.instances',
      'variable TokenService.#hidden',
      'method TokenService.onTick',
      'variable TokenService.tick',
      'constructor TokenService.constructor',
      'method TokenService.validateToken',
      'function TokenService.validateToken.decodeHeader',
      'function TokenService.validateToken.decodeHeader.helper',
      'method TokenService.parse',
      'accessor TokenService.value',
      'accessor TokenService.value',
      'method TokenService.[Symbol.iterator]',
      'method TokenService.quoted-name',
      'method TokenService.#privateMethod',
      'method TokenService.render',
      'interface Validator',
      'type Pair',
      'type Id',
      'enum Color',
      'namespace Outer.Inner',
      'function Outer.Inner.deep',
      'variable Outer.Inner.LIMIT',
      'namespace ambient-mod',
      'function ambient-mod.amb',
      'function overloaded',
      'function default',
      'function outer',
      'function outer.inner',
      'function outer.inner.deepest',
    ];
    assert.deepEqual(names(sample.chunks), expected);
    assertInvariants(SAMPLE, sample.chunks);
  });

  it('keeps decorators and modifiers in the source and reports JSDoc apart', () => {
    const cls = byQualifiedName(sample.chunks, 'TokenService');
    assert.ok(cls.fullSource.startsWith("@Injectable({ providedIn: 'root' })\nexport abstract class TokenService"));
    assert.equal(cls.signature, 'export abstract class TokenService<T extends object> extends BaseService implements Validator');
    assert.ok(cls.jsdoc.startsWith('/**\n * Validates tokens.'));
    assert.equal(cls.jsdocStartLine, SAMPLE.split('\n').findIndex((l) => l.includes('Validates tokens.')));
    assert.ok(!cls.fullSource.includes('Second sentence'));
    const ctor = byQualifiedName(sample.chunks, 'TokenService.constructor');
    assert.ok(ctor.fullSource.startsWith("constructor(@Inject('SECRET') secret: string) {"));
  });

  it('collapses multi-line children to their signatures and keeps one-line children', () => {
    const cls = byQualifiedName(sample.chunks, 'TokenService');
    const validate = byQualifiedName(sample.chunks, 'TokenService.validateToken');
    const n = validate.endLine - validate.startLine + 1;
    assert.ok(
      cls.collapsedSource.includes(`\n  async validateToken(token: string): Promise<JwtPayload | null> { /* ${n} lines collapsed */ }\n`),
    );
    assert.ok(cls.collapsedSource.includes('\n  get value(): number { return this.tick; }\n'));
    assert.ok(cls.collapsedSource.includes('\n  set value(v: number) { /* 3 lines collapsed */ }\n'));
    assert.ok(cls.collapsedSource.includes('\n  onTick = (e: Event) => { /* 4 lines collapsed */ };\n'));
    assert.ok(cls.collapsedSource.includes('\n  parse(input: string): number;\n  parse(input: number): number;\n  parse(input: string | number): number { /* 5 lines collapsed */ }'));
    assert.ok(!cls.collapsedSource.includes('jwt.verify'));
    // A method shows its own body with its nested function collapsed.
    assert.ok(validate.collapsedSource.includes('function decodeHeader(raw: string): string { /* 6 lines collapsed */ }'));
    assert.ok(validate.collapsedSource.includes('jwt.verify(token, this.secret)'));
    assert.equal(validate.childIds.length, 1);
    const api = byQualifiedName(sample.chunks, 'api');
    assert.ok(api.collapsedSource.includes('get(url: string) { /* 3 lines collapsed */ },'));
    assert.ok(api.collapsedSource.includes("name: 'api',"));
  });

  it('builds the embedding text from preamble, separator and collapsed source', () => {
    const validate = byQualifiedName(sample.chunks, 'TokenService.validateToken');
    const preamble = [
      '[TypeScript] src/auth/sample.ts > TokenService > validateToken',
      'Purpose: Validates a JWT token and returns the decoded payload.',
      'Signature: async validateToken(token: string): Promise<JwtPayload | null>',
      'Dependencies: jsonwebtoken, ../models/auth',
      '',
      '---',
      '',
    ].join('\n');
    assert.equal(validate.embeddingText, preamble + validate.collapsedSource);
    assert.equal(validate.embeddingTokenCount, countTokens(validate.embeddingText));
    const id = byQualifiedName(sample.chunks, 'Id');
    assert.ok(!id.embeddingText.includes('Purpose:'));
    assert.ok(!id.embeddingText.includes('Dependencies:'));
  });

  it('lists only the imports a chunk uses', () => {
    const validate = byQualifiedName(sample.chunks, 'TokenService.validateToken');
    assert.deepEqual(validate.relevantImports, [
      "import * as jwt from 'jsonwebtoken';",
      "import type { JwtPayload } from '../models/auth';",
    ]);
    const ctor = byQualifiedName(sample.chunks, 'TokenService.constructor');
    assert.deepEqual(ctor.relevantImports, ["import { Injectable, Inject } from '@angular/core';"]);
    assert.deepEqual(byQualifiedName(sample.chunks, 'api').relevantImports, []);
    for (const c of sample.chunks) {
      assert.ok(!c.relevantImports.some((i) => i.includes('unused') || i.includes('side-effect')));
    }
  });

  it('merges overloads into one chunk and tells getters from setters', () => {
    const overloaded = sample.chunks.filter((c) => c.name === 'overloaded');
    assert.equal(overloaded.length, 1);
    assert.ok(overloaded[0].fullSource.startsWith('export function overloaded(a: string): string;\nexport function overloaded(a: number): number;'));
    assert.equal(overloaded[0].signature, 'export function overloaded(a: string): string\nexport function overloaded(a: number): number');
    const getter = byQualifiedName(sample.chunks, 'TokenService.value', 0);
    const setter = byQualifiedName(sample.chunks, 'TokenService.value', 1);
    assert.notEqual(getter.id, setter.id);
    assert.equal(getter.signature, 'get value(): number');
    assert.equal(setter.signature, 'set value(v: number)');
  });

  it('gives variables their type or a short initializer as signature', () => {
    assert.equal(byQualifiedName(sample.chunks, 'TOKEN_TTL_SECONDS').signature, 'export const TOKEN_TTL_SECONDS = 3600');
    assert.equal(byQualifiedName(sample.chunks, 'counter').signature, 'export let counter: number');
    assert.equal(byQualifiedName(sample.chunks, 'api').signature, 'export const api = { …');
    assert.equal(byQualifiedName(sample.chunks, 'TokenService.secret').signature, 'private readonly secret: string');
    assert.equal(byQualifiedName(sample.chunks, 'TOKEN_TTL_SECONDS').jsdoc, '/** The one auth constant: how long a token lives, in seconds. */');
  });

  it('produces source that parses on its own (no partial chunk)', () => {
    const byId = new Map(sample.chunks.map((c) => [c.id, c]));
    const errors = sample.chunks.flatMap((c) => parseAlone(c, byId.get(c.parentId), false));
    assert.deepEqual(errors, []);
  });

  it('keeps ids when lines shift and changes only lines', () => {
    const shifted = chunkText('src/auth/sample.ts', `// one\n// two\n\n\n\n${SAMPLE}`);
    assert.deepEqual(
      shifted.chunks.map((c) => c.id),
      sample.chunks.map((c) => c.id),
    );
    shifted.chunks.forEach((c, i) => {
      // The module chunk is the whole file: it grows by the comments instead of moving.
      if (c.nodeKind === 'module') return;
      assert.equal(c.startLine, sample.chunks[i].startLine + 5);
      assert.equal(c.snippetHash, sample.chunks[i].snippetHash);
    });
    const moved = chunkText('src/auth/other.ts', SAMPLE);
    assert.notEqual(moved.chunks[0].id, sample.chunks[0].id);
  });

  it('handles CRLF line endings and BOM-stripped text', () => {
    const crlf = SAMPLE.replace(/\n/g, '\r\n');
    const out = chunkText('src/auth/sample.ts', crlf);
    assert.deepEqual(
      out.chunks.map((c) => [c.id, c.startLine, c.endLine]),
      sample.chunks.map((c) => [c.id, c.startLine, c.endLine]),
    );
    assertInvariants(crlf, out.chunks);
    assert.ok(byQualifiedName(out.chunks, 'TokenService').fullSource.includes('\r\n'));
    const withBom = `\uFEFF${SAMPLE}`;
    const stripped = chunkText('src/auth/sample.ts', withBom.slice(1));
    assert.deepEqual(
      stripped.chunks.map((c) => [c.id, c.startLine]),
      sample.chunks.map((c) => [c.id, c.startLine]),
    );
  });
});

describe('chunkSourceFile on JSX, CommonJS and odd input', () => {
  it('recognises function, arrow, wrapped and class components', () => {
    const text = readFixture('components.tsx');
    const out = chunkText('src/ui/components.tsx', text, 'tsx');
    assert.deepEqual(names(out.chunks), [
      'module <module top level>',
      'interface Props',
      'component Greeting',
      'function Greeting.onClick',
      'component Arrow',
      'component Fancy',
      'component Memoized',
      'component Plain',
      'component Counter',
      'variable Counter.state',
      'method Counter.render',
      'component Pure',
      'method Pure.render',
      'function helperNotComponent',
    ]);
    assertInvariants(text, out.chunks);
    const greeting = byQualifiedName(out.chunks, 'Greeting');
    assert.ok(greeting.embeddingText.startsWith('[TSX] src/ui/components.tsx > Greeting\n'));
    assert.ok(greeting.collapsedSource.includes('const onClick = useCallback((e: React.MouseEvent) => { /* 3 lines collapsed */ }, [count]);'));
    assert.deepEqual(greeting.relevantImports, [
      "import React, { forwardRef, memo, useCallback, useState } from 'react';",
      "import { Button } from './Button';",
    ]);
    const byId = new Map(out.chunks.map((c) => [c.id, c]));
    assert.deepEqual(out.chunks.flatMap((c) => parseAlone(c, byId.get(c.parentId), true)), []);
  });

  it('chunks prototype assignments and CommonJS exports', () => {
    const text = readFixture('commonjs.js');
    const out = chunkText('lib/commonjs.js', text, 'javascript');
    assert.deepEqual(names(out.chunks), [
      'module <module top level>',
      'function Animal',
      'method Animal.speak',
      'function readConfig',
      'function writeConfig',
      'function createServer',
    ]);
    assertInvariants(text, out.chunks);
    const read = byQualifiedName(out.chunks, 'readConfig');
    assert.deepEqual(read.relevantImports, ["const fs = require('fs');", "const { join } = require('path');"]);
    assert.ok(read.embeddingText.includes('\nDependencies: fs, path\n'));
    assert.ok(read.embeddingText.startsWith('[JavaScript] lib/commonjs.js > readConfig\n'));
    assert.equal(byQualifiedName(out.chunks, 'Animal.speak').signature, 'Animal.prototype.speak = function ()');
  });

  it('chunks what parses in a file with syntax errors and reports them', () => {
    const text = readFixture('syntax-error.ts');
    const out = chunkText('src/broken.ts', text);
    assert.equal(out.hasSyntaxErrors, true);
    assert.ok(out.diagnostics.length > 0);
    for (const d of out.diagnostics) assert.match(d, /^\d+:\d+ \S/);
    assert.ok(out.diagnostics[0].startsWith('5:'));
    const ok = byQualifiedName(out.chunks, 'ok');
    assert.equal(ok.fullSource, 'export function ok(): number {\n  return 1;\n}');
    byQualifiedName(out.chunks, 'AfterError.m');
    assertInvariants(text, out.chunks);
    const many = chunkText('src/many.ts', 'let = ;\n'.repeat(100));
    assert.equal(many.diagnostics.length, 20);
  });

  it('never throws on empty, comment-only and unusual files', () => {
    assert.deepEqual(chunkText('a.ts', '').chunks, []);
    assert.deepEqual(chunkText('a.ts', '// nothing\n/* here */\n').chunks, []);
    const anon = chunkText('a.ts', 'export default class {\n  run() {\n    return 1;\n  }\n}\n');
    assert.deepEqual(names(anon.chunks), ['module <module top level>', 'class default', 'method default.run']);
    const arrowDefault = chunkText('a.ts', 'export default () => {\n  return 1;\n};\n');
    assert.deepEqual(names(arrowDefault.chunks), ['module <module top level>', 'function default']);
    const jsx = '<div>{[1, 2].map((x) => <span key={x}>{x}</span>)}</div>;\n'.repeat(50);
    // Bare top-level expressions are the file's top-level code; one-line callbacks stay in it.
    assert.deepEqual(names(chunkText('a.jsx', jsx, 'jsx').chunks), ['module <module top level>']);
    const garbage = chunkText('a.ts', '}}}{{{ class ((( function => \u0000 \uD800');
    assert.equal(garbage.hasSyntaxErrors, true);
    const exportedObject = chunkText('a.ts', 'export default {\n  start() {\n    return 1;\n  },\n};\n');
    assert.deepEqual(names(exportedObject.chunks), ['module <module top level>', 'variable default', 'method default.start']);
  });

  it('chunks class expressions bound to names and collapses multi-line members of every shape', () => {
    const text = [
      'export const Mixin = class extends Base {',
      '  static defaults = {',
      '    retries: 3,',
      '  };',
      '  render = () => (',
      '    <div />',
      '  );',
      '  run() {',
      '    return 1;',
      '  }',
      '};',
      '',
    ].join('\n');
    const out = chunkText('src/mixin.tsx', text, 'tsx');
    assert.deepEqual(names(out.chunks), [
      'module <module top level>',
      'class Mixin',
      'variable Mixin.defaults',
      'method Mixin.render',
      'method Mixin.run',
    ]);
    const cls = out.chunks[1];
    assert.equal(cls.signature, 'export const Mixin = class extends Base');
    assert.equal(
      cls.collapsedSource,
      [
        'export const Mixin = class extends Base {',
        '  static defaults = { /* 3 lines collapsed */ };',
        '  render = () => /* 3 lines collapsed */;',
        '  run() { /* 3 lines collapsed */ }',
        '};',
      ].join('\n'),
    );
    assertInvariants(text, out.chunks);
  });

  it('chunks a 6,000-line class as one overview plus one chunk per member', () => {
    const members: string[] = [];
    for (let i = 0; i < 1000; i++) {
      members.push(`  method${i}(a: number, b: string): number {\n    const x = a + ${i};\n    return x + b.length;\n  }\n`);
      members.push(`  field${i}: string = 'f${i}';\n\n`);
    }
    const text = `export class Huge {\n${members.join('')}}\n`;
    assert.ok(text.split('\n').length >= 6000);
    const out = chunkText('src/huge.ts', text);
    const classes = out.chunks.filter((c) => c.nodeKind === 'class');
    assert.equal(classes.length, 1);
    // The file's card, the class and its 2,000 members.
    assert.equal(out.chunks.length, 1 + 1 + 2000);
    const cls = classes[0];
    for (let i = 0; i < 1000; i++) {
      assert.ok(cls.collapsedSource.includes(`\n  method${i}(a: number, b: string): number { /* 4 lines collapsed */ }\n`));
    }
    assert.ok(!cls.collapsedSource.includes('const x ='));
    assert.ok(cls.embeddingTokenCount < 32_000);
    assertInvariants(text, out.chunks);
  });

  it('chunks typescript.js with every embedding text under 32k tokens', () => {
    const file = require.resolve('typescript/lib/typescript.js');
    const text = fs.readFileSync(file, 'utf8');
    const out = chunkText('node_modules_copy/typescript.js', text, 'javascript');
    assert.ok(out.chunks.length > 10_000);
    const over = out.chunks.filter((c) => c.embeddingTokenCount >= 32_000);
    assert.deepEqual(over.map((c) => c.qualifiedName), []);
    const checker = byQualifiedName(out.chunks, 'createTypeChecker');
    assert.ok(checker.embeddingTokenCount <= EMBEDDING_TOKEN_BUDGET);
    assert.ok(checker.fullSource.length > checker.collapsedSource.length);
    assertInvariants(text, out.chunks);
  });
});

describe('ids, paths and tokens', () => {
  it('computes the chunk id of any declaration node', () => {
    const sf = ts.createSourceFile('src/auth/sample.ts', SAMPLE, ts.ScriptTarget.Latest, true);
    const decls = new Map<string, ts.Node>();
    const visit = (n: ts.Node): void => {
      if ((ts.isFunctionDeclaration(n) || ts.isMethodDeclaration(n) || ts.isVariableDeclaration(n)) && n.name && ts.isIdentifier(n.name)) {
        if (!decls.has(n.name.text)) decls.set(n.name.text, n);
      }
      ts.forEachChild(n, visit);
    };
    visit(sf);
    const id = (name: string): string => chunkIdForDeclaration(decls.get(name)!, 'src/auth/sample.ts');
    assert.equal(id('overloaded'), byQualifiedName(sample.chunks, 'overloaded').id);
    assert.equal(id('validateToken'), byQualifiedName(sample.chunks, 'TokenService.validateToken').id);
    assert.equal(id('helper'), byQualifiedName(sample.chunks, 'TokenService.validateToken.decodeHeader.helper').id);
    assert.equal(id('api'), byQualifiedName(sample.chunks, 'api').id);
    const local = ts.createSourceFile('l.ts', 'function f() {\n  const local = 1;\n}\n', ts.ScriptTarget.Latest, true);
    const localDecl = (local.statements[0] as ts.FunctionDeclaration).body!.statements[0] as ts.VariableStatement;
    assert.equal(chunkIdForDeclaration(localDecl.declarationList.declarations[0], 'l.ts'), '');
    assert.match(CHUNKER_VERSION, /^\d+$/);
  });

  it('recognises test files by path convention, by the table the Python side is pinned to as well', () => {
    const table = JSON.parse(fs.readFileSync(path.resolve(__dirname, '..', '..', '..', 'tests', 'fixtures', 'test_paths.json'), 'utf8')) as {
      test: string[];
      not_test: string[];
    };
    for (const p of table.test) assert.equal(isTestPath(p), true, p);
    for (const p of table.not_test) assert.equal(isTestPath(p), false, p);
    assert.equal(isTestPath('src\\users\\test.ts'), true);
    assert.equal(chunkText('src/__tests__/a.ts', 'export const x = 1;\n').chunks[0].isTest, true);
    assert.equal(chunkText('src/users/test.ts', 'export const x = 1;\n').chunks[0].isTest, true);
    assert.equal(sample.chunks[0].isTest, false);
  });

  it('marks a describe/it/test block and every chunk inside it as test code, whatever the file is called', () => {
    const text = [
      '/** Adds two numbers. */',
      'export function add(a: number, b: number): number {',
      '  return a + b;',
      '}',
      '',
      "describe('add', () => {",
      '  function twice(x: number): number {',
      '    return add(x, x);',
      '  }',
      "  it('adds', () => {",
      '    expect(add(1, 2)).toBe(3);',
      '  });',
      "  test.each([[1, 2]])('doubles %i', (x, y) => {",
      '    expect(twice(x)).toBe(y);',
      '  });',
      '});',
      '',
    ].join('\n');
    const out = chunkText('src/math.ts', text);
    assert.deepEqual(
      out.chunks.map((c) => [c.qualifiedName, c.isTest]),
      [
        ['<module top level>', false],
        ['add', false],
        ["describe('add')", true],
        ["describe('add') > twice", true],
        ["describe('add') > it('adds')", true],
        ["describe('add') > test.each('doubles %i')", true],
      ],
    );
  });

  it('counts exactly the tokens js-tiktoken cl100k_base produces', () => {
    const reference = referenceEncoder();
    const tsText = fs.readFileSync(require.resolve('typescript/lib/typescript.js'), 'utf8');
    const samples = [
      '',
      SAMPLE,
      SAMPLE.replace(/\n/g, '\r\n'),
      readFixture('components.tsx'),
      tsText.slice(0, 120_000),
      tsText.slice(5_000_000, 5_060_000),
      'héllo wörld — ünïcode ✓ 日本語のテキスト 🚀🚀 emoji\n\n  \n\tx',
      'a\n\u00a0\nb\n \n  c  \n\n\n    d',
      'text with <|endoftext|> inside and <|fim_prefix|> too',
      ' '.repeat(5000) + 'x' + '\n'.repeat(300) + '='.repeat(700),
      "it's we're they'LL I'd 12345678 3.14159",
    ];
    for (const s of samples) assert.equal(countTokens(s), reference.encode(s, [], []).length, JSON.stringify(s.slice(0, 40)));
  });

  it('counts exactly across tens of thousands of distinct byte pairs (the pair cache grows)', () => {
    // Two- and three-byte characters from a fixed pseudo-random sequence: most byte pairs are new.
    let seed = 7;
    const next = (): number => (seed = (Math.imul(seed, 1103515245) + 12345) >>> 0);
    let text = '';
    for (let i = 0; i < 40_000; i++) {
      const r = next();
      text += String.fromCharCode(r % 3 === 0 ? 0x4e00 + (r >>> 8) % 0x5000 : 0xa0 + (r >>> 8) % 0x700);
      if (r % 11 === 0) text += ' ';
    }
    assert.equal(countTokens(text), referenceEncoder().encode(text, [], []).length);
  });

  it('stops counting past a limit, and is exact up to it', () => {
    const text = fs.readFileSync(require.resolve('typescript/lib/typescript.js'), 'utf8').slice(0, 200_000);
    const exact = countTokens(text);
    assert.equal(countTokensUpTo(text, exact), exact);
    assert.equal(countTokensUpTo(text, Infinity), exact);
    const over = countTokensUpTo(text, 1_000);
    assert.ok(over > 1_000 && over < exact);
  });

  it('cuts an over-budget embedding text at a line boundary, with the exact count of what is kept', () => {
    const body = Array.from({ length: 6_000 }, (_, i) => `  total += lookup("key${i}", ${i} * factor${i % 97}) ?? fallback;\n\n`);
    const text = `function huge(factor: number) {\n  let total = 0;\n${body.join('')}  return total;\n}`;
    const chunk = byQualifiedName(chunkText('src/huge.ts', text).chunks, 'huge');
    assert.equal(chunk.embeddingTokenCount, countTokens(chunk.embeddingText));
    assert.ok(chunk.embeddingTokenCount <= EMBEDDING_TOKEN_BUDGET);
    const marker = /\n\/\* … (\d+) lines truncated for embedding \*\/$/.exec(chunk.embeddingText);
    assert.ok(marker, chunk.embeddingText.slice(-80));
    const kept = chunk.embeddingText.slice(chunk.embeddingText.indexOf('\n---\n') + 5, marker.index);
    const lines = chunk.collapsedSource.split('\n');
    const keptLines = kept.split('\n').length;
    assert.equal(kept, lines.slice(0, keptLines).join('\n'));
    assert.equal(Number(marker[1]), lines.length - keptLines);
  });

});
