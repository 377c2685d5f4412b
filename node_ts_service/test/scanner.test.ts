import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { type FsOps, realFs } from '../src/fileio';
import { listSourceFiles, scanWorkspace } from '../src/scanner';

let root: string;

function write(rel: string, text: string): void {
  const file = path.join(root, rel);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
}

describe('scanner', () => {
  beforeEach(() => {
    root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'cc-scan-')));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('lists every source extension, sorted, and leaves out other files and .d.ts', async () => {
    for (const ext of ['ts', 'tsx', 'js', 'jsx', 'mts', 'cts', 'mjs', 'cjs']) write(`src/file.${ext}`, 'export {};\n');
    write('src/types.d.ts', 'declare const x: number;\n');
    write('README.md', '# hi\n');
    write('package.json', '{}');
    const listing = await listSourceFiles({ root });
    assert.deepEqual(
      listing.files.map((f) => f.relativePath),
      ['src/file.cjs', 'src/file.cts', 'src/file.js', 'src/file.jsx', 'src/file.mjs', 'src/file.mts', 'src/file.ts', 'src/file.tsx'],
    );
  });

  it('honours .gitignore at every level, default excludes and extra patterns', async () => {
    write('.gitignore', 'generated/\n*.gen.ts\n');
    write('src/a.ts', 'export {};\n');
    write('src/a.gen.ts', 'export {};\n');
    write('generated/x.ts', 'export {};\n');
    write('packages/p/.gitignore', 'local.ts\n!keep.gen.ts\n');
    write('packages/p/local.ts', 'export {};\n');
    write('packages/p/other.ts', 'export {};\n');
    write('packages/q/local.ts', 'export {};\n');
    write('node_modules/dep/index.js', 'module.exports = 1;\n');
    write('packages/p/node_modules/dep/index.ts', 'export {};\n');
    write('dist/out.js', 'x();\n');
    write('coverage/lcov.js', 'x();\n');
    write('.next/server.js', 'x();\n');
    write('legacy/old.js', 'x();\n');
    const listing = await listSourceFiles({ root, excludePatterns: ['legacy/'] });
    assert.deepEqual(listing.files.map((f) => f.relativePath), ['packages/p/other.ts', 'packages/q/local.ts', 'src/a.ts']);
  });

  it('restricts a walk to a folder while still applying ignore files above it', async () => {
    write('.gitignore', 'secret.ts\n');
    write('src/a/x.ts', 'export {};\n');
    write('src/a/secret.ts', 'export {};\n');
    write('src/b/y.ts', 'export {};\n');
    const listing = await listSourceFiles({ root, under: 'src/a' });
    assert.deepEqual(listing.files.map((f) => f.relativePath), ['src/a/x.ts']);
  });

  it('reports added, changed and removed against a previous catalog', async () => {
    write('a.ts', 'export const a = 1;\n');
    write('b.ts', 'export const b = 1;\n');
    write('c.ts', 'export const c = 1;\n');
    const first = await scanWorkspace({ root, maxFileBytes: 1 << 20 });
    assert.deepEqual(first.added, ['a.ts', 'b.ts', 'c.ts']);
    assert.ok(first.files.every((f) => /^[0-9a-f]{64}$/.test(f.contentHash) && f.sizeBytes > 0 && f.mtimeNs > 1e18));

    write('b.ts', 'export const b = 2;\n');
    fs.rmSync(path.join(root, 'c.ts'));
    write('d.ts', 'export const d = 1;\n');
    // Same size and content, new mtime: not a change.
    fs.utimesSync(path.join(root, 'a.ts'), new Date(), new Date(Date.now() + 5000));
    const second = await scanWorkspace({ root, maxFileBytes: 1 << 20, previous: first.files });
    assert.deepEqual(second.added, ['d.ts']);
    assert.deepEqual(second.changed, ['b.ts']);
    assert.deepEqual(second.removed, ['c.ts']);
    assert.deepEqual(second.files.map((f) => f.relativePath), ['a.ts', 'b.ts', 'd.ts']);
  });

  it('reuses the previous hash without reading when size and mtime match', async () => {
    for (let i = 0; i < 50; i++) write(`src/f${i}.ts`, `export const v${i} = ${i};\n`);
    const first = await scanWorkspace({ root, maxFileBytes: 1 << 20 });
    const reads: string[] = [];
    const counting: FsOps = { ...realFs, readFile: (p) => (reads.push(p), realFs.readFile(p)) };
    const again = await scanWorkspace({ root, maxFileBytes: 1 << 20, previous: first.files, fsOps: counting });
    assert.deepEqual(reads, []);
    assert.deepEqual(again.files, first.files);
    assert.deepEqual([again.added, again.changed, again.removed], [[], [], []]);
  });

  it('follows in-workspace symlinks, refuses loops and links leaving the workspace', async () => {
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'cc-outside-'));
    try {
      fs.writeFileSync(path.join(outside, 'secret.ts'), 'export const s = 1;\n');
      write('src/a.ts', 'export {};\n');
      fs.symlinkSync(path.join(root, 'src'), path.join(root, 'src', 'loop'));
      fs.symlinkSync(outside, path.join(root, 'escape'));
      fs.symlinkSync(path.join(outside, 'secret.ts'), path.join(root, 'secret.ts'));
      fs.symlinkSync(path.join(root, 'src', 'a.ts'), path.join(root, 'alias.ts'));
      fs.symlinkSync(path.join(root, 'self1.ts'), path.join(root, 'self2.ts'));
      fs.symlinkSync(path.join(root, 'self2.ts'), path.join(root, 'self1.ts'));
      const scan = await scanWorkspace({ root, maxFileBytes: 1 << 20 });
      assert.deepEqual(scan.files.map((f) => f.relativePath), ['src/a.ts']);
      assert.deepEqual(
        scan.skipped.map((s) => [s.relativePath, s.reason]),
        [
          ['alias.ts', 'duplicate'],
          ['escape', 'outside_workspace'],
          ['secret.ts', 'outside_workspace'],
          ['self1.ts', 'symlink_loop'],
          ['self2.ts', 'symlink_loop'],
          ['src/loop', 'symlink_loop'],
        ],
      );
    } finally {
      fs.rmSync(outside, { recursive: true, force: true });
    }
  });

  it('lists each real file once, under its real path, whatever links lead to it (sibling folders linked both ways)', async () => {
    write('src/a/alpha.ts', 'export const alpha = 1;\n');
    write('src/b/beta.ts', 'export const beta = 2;\n');
    write('vendor/lib/gamma.ts', 'export const gamma = 3;\n');
    write('.gitignore', 'vendor/\n');
    // A cycle through two siblings: walking it by links alone never ends (a/toB/toA/toB/...).
    fs.symlinkSync('../b', path.join(root, 'src', 'a', 'toB'));
    fs.symlinkSync('../a', path.join(root, 'src', 'b', 'toA'));
    // Two names for one file, and two links into a folder the walk does not reach by itself.
    fs.symlinkSync('a/alpha.ts', path.join(root, 'src', 'alpha-link.ts'));
    fs.symlinkSync('../vendor/lib', path.join(root, 'src', 'lib2'));
    fs.symlinkSync('../vendor/lib', path.join(root, 'src', 'lib1'));
    const listing = await listSourceFiles({ root });
    assert.deepEqual(
      listing.files.map((f) => f.relativePath),
      ['src/a/alpha.ts', 'src/b/beta.ts', 'src/lib1/gamma.ts'],
    );
    assert.deepEqual(
      listing.skipped.map((s) => [s.relativePath, s.reason, s.detail, s.folder ?? false]),
      [
        ['src/a/toB', 'duplicate', 'symbolic link to src/b/, indexed there', true],
        ['src/alpha-link.ts', 'duplicate', 'symbolic link to src/a/alpha.ts, indexed there', false],
        ['src/b/toA', 'duplicate', 'symbolic link to src/a/, indexed there', true],
        ['src/lib2', 'duplicate', 'symbolic link to src/lib1/, indexed there', true],
        ['vendor', 'ignored', 'matches "vendor/" in .gitignore', true],
      ],
    );
  });
});
