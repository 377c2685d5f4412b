import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { skippedFileFromPb, skippedFileToPb } from '../src/convert';
import { type FsOps, realFs } from '../src/fileio';
import { listSourceFiles, scanWorkspace } from '../src/scanner';
import type { SkippedFile } from '../src/types';

let root: string;

function write(rel: string, text = 'export {};\n'): void {
  const file = path.join(root, rel);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

/** [path, reason, folder] of every skip: the shape `index --show-skipped` prints. */
function skips(skipped: SkippedFile[]): [string, string, boolean][] {
  return skipped.map((s) => [s.relativePath, s.reason, s.folder ?? false]);
}

describe('scanner skips: every path left out has a reason', () => {
  beforeEach(() => {
    root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'cc-skips-')));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('root .gitignore: an ignored folder is one entry, an ignored file names the rule', async () => {
    write('.gitignore', 'generated/\n*.gen.ts\n');
    write('src/a.ts');
    write('src/a.gen.ts');
    for (let i = 0; i < 5; i++) write(`generated/api${i}.ts`);
    const listing = await listSourceFiles({ root });
    assert.deepEqual(listing.files.map((f) => f.relativePath), ['src/a.ts']);
    assert.deepEqual(skips(listing.skipped), [
      ['generated', 'ignored', true],
      ['src/a.gen.ts', 'ignored', false],
    ]);
    assert.equal(listing.skipped[0].detail, 'matches "generated/" in .gitignore');
    assert.equal(listing.skipped[1].detail, 'matches "*.gen.ts" in .gitignore');
  });

  it('nested .gitignore applies below its folder and can re-include what a parent ignores', async () => {
    write('.gitignore', '*.gen.ts\n');
    write('packages/p/.gitignore', 'local.ts\n!keep.gen.ts\n');
    write('packages/p/local.ts');
    write('packages/p/keep.gen.ts');
    write('packages/p/drop.gen.ts');
    write('packages/q/local.ts');
    const listing = await listSourceFiles({ root });
    assert.deepEqual(listing.files.map((f) => f.relativePath), ['packages/p/keep.gen.ts', 'packages/q/local.ts']);
    assert.deepEqual(
      listing.skipped.map((s) => [s.relativePath, s.detail]),
      [
        ['packages/p/drop.gen.ts', 'matches "*.gen.ts" in .gitignore'],
        ['packages/p/local.ts', 'matches "local.ts" in packages/p/.gitignore'],
      ],
    );
  });

  it('.codecompassignore: same syntax, read after .gitignore so it can re-include', async () => {
    write('.gitignore', 'src/generated/\n');
    write('.codecompassignore', 'fixtures/\n!src/generated/\n*.story.tsx\n');
    write('src/generated/client.ts');
    write('src/button.tsx');
    write('src/button.story.tsx');
    write('fixtures/big.ts');
    write('lib/.codecompassignore', 'legacy.js\n');
    write('lib/legacy.js', 'x();\n');
    write('lib/current.js', 'x();\n');
    const listing = await listSourceFiles({ root });
    assert.deepEqual(listing.files.map((f) => f.relativePath), ['lib/current.js', 'src/button.tsx', 'src/generated/client.ts']);
    assert.deepEqual(
      listing.skipped.map((s) => [s.relativePath, s.reason, s.detail]),
      [
        ['fixtures', 'ignored', 'matches "fixtures/" in .codecompassignore'],
        ['lib/legacy.js', 'ignored', 'matches "legacy.js" in lib/.codecompassignore'],
        ['src/button.story.tsx', 'ignored', 'matches "*.story.tsx" in .codecompassignore'],
      ],
    );
  });

  it('inside a repository: nested repositories and worktrees are skipped whole, .git never entered nor listed', async () => {
    fs.mkdirSync(path.join(root, '.git'));
    write('.git/hooks/pre-commit.js', 'x();\n');
    write('src/a.ts');
    fs.mkdirSync(path.join(root, 'vendor/clone/.git'), { recursive: true });
    write('vendor/clone/index.ts');
    write('worktrees/feature/.git', 'gitdir: ../../.git/worktrees/feature\n');
    write('worktrees/feature/src/a.ts');
    const reads: string[] = [];
    const counting: FsOps = { ...realFs, readdir: (dir) => (reads.push(path.relative(root, dir)), realFs.readdir(dir)) };
    const listing = await listSourceFiles({ root, fsOps: counting });
    assert.deepEqual(listing.files.map((f) => f.relativePath), ['src/a.ts']);
    assert.deepEqual(skips(listing.skipped), [
      ['vendor/clone', 'nested_repository', true],
      ['worktrees/feature', 'nested_repository', true],
    ]);
    assert.equal(listing.skipped[0].detail, 'holds its own .git folder: another repository');
    assert.equal(listing.skipped[1].detail, 'holds a .git file: a worktree or submodule');
    assert.ok(!reads.some((dir) => dir.split(path.sep).includes('.git')), `read ${reads.join(', ')}`);
    assert.ok(!reads.includes(path.join('worktrees', 'feature', 'src')));
  });

  it('a plain folder of repositories (no .git above it) indexes each of them', async () => {
    fs.mkdirSync(path.join(root, 'one/.git'), { recursive: true });
    write('one/src/a.ts');
    write('two/.git', 'gitdir: elsewhere\n');
    write('two/b.ts');
    const listing = await listSourceFiles({ root });
    assert.deepEqual(listing.files.map((f) => f.relativePath), ['one/src/a.ts', 'two/b.ts']);
    assert.deepEqual(listing.skipped, []);
  });

  it('declaration files are skipped with their reason; dependencies and build output are one excluded entry each', async () => {
    write('src/index.ts');
    write('src/types.d.ts', 'declare const x: number;\n');
    write('src/env.d.mts', 'declare const y: number;\n');
    write('node_modules/dep/index.js', 'module.exports = 1;\n');
    write('node_modules/dep/index.d.ts', 'export {};\n');
    write('dist/out.js', 'x();\n');
    const scan = await scanWorkspace({ root, maxFileBytes: 1 << 20 });
    assert.deepEqual(scan.files.map((f) => f.relativePath), ['src/index.ts']);
    assert.deepEqual(skips(scan.skipped), [
      ['dist', 'excluded', true],
      ['node_modules', 'excluded', true],
      ['src/env.d.mts', 'declaration_file', false],
      ['src/types.d.ts', 'declaration_file', false],
    ]);
    assert.match(scan.skipped[3].detail, /^declarations only/);
  });

  it('a walk restricted to a folder reports only skips on its way', async () => {
    write('.gitignore', 'ignored-sibling/\n');
    write('ignored-sibling/a.ts');
    write('src/a/x.ts');
    write('src/a/y.d.ts');
    write('src/b/z.d.ts');
    const listing = await listSourceFiles({ root, under: 'src/a' });
    assert.deepEqual(listing.files.map((f) => f.relativePath), ['src/a/x.ts']);
    assert.deepEqual(skips(listing.skipped), [['src/a/y.d.ts', 'declaration_file', false]]);
  });

  it('the folder flag survives the wire', () => {
    for (const skipped of [
      { relativePath: 'vendor/clone', reason: 'nested_repository', detail: 'd', folder: true },
      { relativePath: 'a.d.ts', reason: 'declaration_file', detail: 'd' },
    ] as SkippedFile[]) {
      assert.deepEqual(skippedFileFromPb(skippedFileToPb(skipped)), skipped);
    }
  });
});
