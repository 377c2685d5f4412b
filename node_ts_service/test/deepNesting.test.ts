// Deeply nested code (issue 15 §2): generated data, a long concatenation, a
// pathological literal. Nothing recurses per level on a small stack any more:
// our own walks use explicit stacks, the parser and checker run on workers
// with WORKER_STACK_MB of stack, and a file nested deeper than the type
// checker handles in reasonable time is kept out of Programs. What still
// cannot be parsed is one file skipped as chunk_failed, never a failed call.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MAX_CHECKED_NESTING } from '../src/program';
import { AnalysisService } from '../src/service';
import type { ChunkedFile } from '../src/types';
import { chunkText } from './chunkHelpers';

const LIMITS = { maxFileBytes: 8 * 1024 * 1024, maxPrograms: 2, maxRenderCacheFiles: 8, maxWorkspaces: 2 };

/** An array literal nested `depth` deep, one bracket per line (so it is not a minified line), and a function using it. */
function deepArray(depth: number): string {
  return `export const deep =\n${'[\n'.repeat(depth)}${']\n'.repeat(depth)};\n\n/** Counts the outer array. */\nexport function useDeep(): number {\n  return deep.length;\n}\n`;
}

const HELPER = `/** Doubles a number. */\nexport function double(x: number): number {\n  return x * 2;\n}\n`;
const USER = `import { double } from './helper';\nimport { deep } from './deep';\n\n/** Uses both. */\nexport function useBoth(): number {\n  return double(deep.length);\n}\n`;

describe('deep nesting', () => {
  let root: string;
  let service: AnalysisService;

  const write = (rel: string, text: string) => {
    fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), text);
  };
  const chunk = async (paths: string[], includeReferences: boolean): Promise<ChunkedFile[]> => {
    const out: ChunkedFile[] = [];
    for await (const file of service.chunkFiles({ workspaceRoot: root, paths, includeReferences, lexicalOnly: false })) out.push(file);
    return out;
  };

  before(() => {
    root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'cc-deep-')));
    service = new AnalysisService(LIMITS);
  });
  after(() => {
    service.dispose();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('a tsconfig project with a file nested 20,000 deep: every file is chunked, the others with their references', async () => {
    write('app/tsconfig.json', '{ "compilerOptions": { "strict": true } }\n');
    write('app/src/deep.ts', deepArray(20_000));
    write('app/src/helper.ts', HELPER);
    write('app/src/user.ts', USER);
    const files = await chunk(['app'], true);
    assert.deepEqual(
      files.map((f) => [f.relativePath, f.status]),
      [
        ['app/src/deep.ts', 'ok'],
        ['app/src/helper.ts', 'ok'],
        ['app/src/user.ts', 'ok'],
      ],
    );
    const [deep, , user] = files;
    assert.deepEqual(deep.chunks.map((c) => c.name), ['<module top level>', 'deep', 'useDeep']);
    // The checker never reads it (minutes of inference), and the file says so.
    assert.deepEqual(deep.diagnostics, [`references unavailable: nested more than ${MAX_CHECKED_NESTING} levels deep, too deep to type-check`]);
    const useBoth = user.chunks.find((c) => c.name === 'useBoth')!;
    assert.deepEqual(
      useBoth.references.map((r) => [r.name, r.relativePath]),
      [['double', 'app/src/helper.ts']],
    );
  });

  it('a concatenation of 100,000 terms (a tree 100,000 levels deep) chunks on this thread: no walk recurses per level', () => {
    const text = `export const banner =\n${Array.from({ length: 100_000 }, (_, i) => `  'part${i}'`).join(' +\n')};\n\nexport function shout(): string {\n  return banner.toUpperCase();\n}\n`;
    const out = chunkText('src/banner.ts', text);
    assert.deepEqual(out.chunks.map((c) => c.name), ['<module top level>', 'banner', 'shout']);
    assert.equal(out.chunks[1].endLine, 100_001);
  });

  it('nested deeper than a worker parses (1,000,000 levels): that file is skipped as chunk_failed, the files after it are chunked', async () => {
    write('huge/a.ts', deepArray(1_000_000));
    write('huge/b.ts', HELPER);
    for (const includeReferences of [false, true]) {
      const files = await chunk(['huge'], includeReferences);
      assert.deepEqual(
        files.map((f) => [f.relativePath, f.status, f.skipReason ?? '', f.skipDetail]),
        [
          ['huge/a.ts', 'skipped', 'chunk_failed', 'nested too deep to parse: the parser ran out of stack (Maximum call stack size exceeded)'],
          ['huge/b.ts', 'ok', '', ''],
        ],
      );
    }
  });

  it('RenderSymbols of a symbol in a file nested deeper than this thread parses answers from a worker', async () => {
    write('render/deep.ts', deepArray(5_000));
    const [file] = await chunk(['render/deep.ts'], false);
    const useDeep = file.chunks.find((c) => c.name === 'useDeep')!;
    const result = await service.render({ workspaceRoot: root, specs: [{ symbolId: useDeep.id, expandChildIds: [], relativePath: 'render/deep.ts' }] });
    assert.deepEqual(result.missingSymbolIds, []);
    assert.equal(result.symbols[0].source, 'export function useDeep(): number {\n  return deep.length;\n}');
    assert.equal(result.symbols[0].startLine, useDeep.startLine);
  });
});
