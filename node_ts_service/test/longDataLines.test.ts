// A very long line of data in otherwise normal code (issue 15 §2): a base64
// image, a JSON blob, a number table. The file is indexed, not skipped as
// minified, and its chunks show the literal as a short marker; minified code
// is still skipped. Fixtures are built here and found by substring.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { detectMinified, isDataLine } from '../src/fileio';
import { AnalysisService } from '../src/service';
import type { ChunkedFile } from '../src/types';
import { byQualifiedName, chunkText } from './chunkHelpers';

const BASE64 = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=='.repeat(400);
const ICON_LINE = `export const ICON = "data:image/png;base64,${BASE64}";`;
const TABLE_LINE = `export const PRIMES = [${Array.from({ length: 3000 }, (_, i) => i * 7 + 1).join(', ')}];`;
const JSON_LINE = `export const ROUTES = ${JSON.stringify(Array.from({ length: 300 }, (_, i) => ({ path: `/r${i}`, auth: i % 2 === 0, tags: ['a', 'b'], limit: null })))} as const;`;
const MINIFIED_LINE = '!function(e){var t={};function n(r){if(t[r])return t[r].exports;var o=t[r]={i:r,l:!1,exports:{}};return e[r].call(o.exports,o,o.exports,n),o.l=!0,o.exports}n.m=e}([]);'.repeat(60);

/** Normal code around one long line. */
function fileWith(longLine: string): string {
  return [
    "import { render } from './render';",
    '',
    '/** Draws the application icon at a size. */',
    'export function drawIcon(size: number): string {',
    '  return render(ICON, size);',
    '}',
    '',
    longLine,
    '',
    '/** Whether a number is in the prime table. */',
    'export function isKnownPrime(n: number): boolean {',
    '  return PRIMES.includes(n);',
    '}',
    '',
  ].join('\n');
}

describe('long data lines', () => {
  it('tells a line of data from a line of minified code', () => {
    for (const line of [ICON_LINE, TABLE_LINE, JSON_LINE]) assert.equal(isDataLine(line), true, line.slice(0, 40));
    assert.equal(isDataLine(MINIFIED_LINE), false);
    // Signs are part of numbers only where a value starts: a chain of additions is code.
    assert.equal(isDataLine('var a=' + '1+'.repeat(3000) + '1;'), false);
    assert.equal(isDataLine('export const T = [' + '-1, +2.5, '.repeat(300) + '];'), true);
    // Strings inside code are still code: calls and statements around them.
    assert.equal(isDataLine(Array.from({ length: 100 }, (_, i) => `list.push("item${i}")`).join(';')), false);
  });

  it('a file of normal code with one long data line is not minified; a bundle still is', () => {
    for (const line of [ICON_LINE, TABLE_LINE, JSON_LINE]) assert.equal(detectMinified('src/icon.ts', fileWith(line)), undefined);
    const bundle = detectMinified('dist/app.js', `/*! app v1 | MIT */\n${MINIFIED_LINE}\n`);
    assert.equal(bundle?.reason, 'minified');
    // A long line of code among normal lines makes most of the text code on long lines.
    assert.equal(detectMinified('src/app.js', fileWith(MINIFIED_LINE))?.reason, 'minified');
  });

  it('chunks show a long literal as a marker with its length, and the code around it in full', () => {
    const out = chunkText('src/icon.ts', fileWith(ICON_LINE));
    const icon = byQualifiedName(out.chunks, 'ICON');
    const literal = ICON_LINE.slice(ICON_LINE.indexOf('"'), ICON_LINE.lastIndexOf('"') + 1);
    assert.equal(icon.fullSource, `export const ICON = "…" /* ${literal.length} characters of data not indexed */;`);
    assert.equal(icon.startLine, 8);
    assert.ok(!out.chunks.some((c) => c.fullSource.includes(BASE64.slice(0, 200)) || c.embeddingText.includes(BASE64.slice(0, 200))));
    const module = byQualifiedName(out.chunks, '<module top level>');
    assert.ok(module.collapsedSource.includes(`characters of data not indexed */;\n\n/** Whether a number is in the prime table. */`));
    assert.equal(byQualifiedName(out.chunks, 'drawIcon').fullSource, 'export function drawIcon(size: number): string {\n  return render(ICON, size);\n}');
  });

  it('arrays and objects of data are shortened the same way; short literals are left alone', () => {
    const table = byQualifiedName(chunkText('src/primes.ts', fileWith(TABLE_LINE)).chunks, 'PRIMES');
    assert.match(table.fullSource, /^export const PRIMES = \[…\] \/\* \d+ characters of data not indexed \*\/;$/);
    const routes = byQualifiedName(chunkText('src/routes.ts', fileWith(JSON_LINE)).chunks, 'ROUTES');
    assert.match(routes.fullSource, /^export const ROUTES = \[…\] \/\* \d+ characters of data not indexed \*\/ as const;$/);
    const short = byQualifiedName(chunkText('src/short.ts', 'export const SHORT = [1, 2, 3];\n').chunks, 'SHORT');
    assert.equal(short.fullSource, 'export const SHORT = [1, 2, 3];');
  });

  describe('through ChunkFiles and RenderSymbols', () => {
    let root: string;
    let service: AnalysisService;
    before(() => {
      root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'cc-long-')));
      service = new AnalysisService({ maxFileBytes: 1 << 20, maxPrograms: 2, maxRenderCacheFiles: 4, maxWorkspaces: 2 });
    });
    after(() => {
      service.dispose();
      fs.rmSync(root, { recursive: true, force: true });
    });

    it('indexes the file (its functions whole, the literal as a marker) and renders the marker too', async () => {
      fs.writeFileSync(path.join(root, 'icon.ts'), fileWith(ICON_LINE));
      fs.writeFileSync(path.join(root, 'app.min.js'), MINIFIED_LINE);
      const files: ChunkedFile[] = [];
      for await (const file of service.chunkFiles({ workspaceRoot: root, paths: ['app.min.js', 'icon.ts'], includeReferences: true, lexicalOnly: false })) {
        files.push(file);
      }
      assert.deepEqual(
        files.map((f) => [f.relativePath, f.status, f.skipReason ?? '']),
        [
          ['app.min.js', 'skipped', 'minified'],
          ['icon.ts', 'ok', ''],
        ],
      );
      const names = files[1].chunks.map((c) => c.qualifiedName);
      assert.deepEqual(names, ['<module top level>', 'drawIcon', 'ICON', 'isKnownPrime']);
      const module = files[1].chunks[0];
      const rendered = await service.render({ workspaceRoot: root, specs: [{ symbolId: module.id, expandChildIds: [], relativePath: 'icon.ts' }] });
      assert.ok(rendered.symbols[0].source.includes('export const ICON = "…" /* '));
      assert.ok(!rendered.symbols[0].source.includes(BASE64.slice(0, 200)));
    });
  });
});
