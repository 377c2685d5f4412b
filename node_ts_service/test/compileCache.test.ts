import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { loadConfig } from '../src/config';

const COMPILE_CACHE = path.join(__dirname, '..', 'src', 'compileCache.js');

/** A module large enough to be cached, whose export says it ran and can require a neighbour. */
function largeModule(dir: string): string {
  const file = path.join(dir, 'large.js');
  fs.writeFileSync(path.join(dir, 'neighbour.js'), 'module.exports = 41;\n');
  const filler = Array.from({ length: 12_000 }, (_, i) => `function f${i}(x) { return x + ${i}; }`).join('\n');
  fs.writeFileSync(file, `${filler}\nmodule.exports = { answer: require('./neighbour') + 1, file: __filename, dir: __dirname };\n`);
  assert.ok(fs.statSync(file).size > 256 * 1024);
  return file;
}

/** A fresh process installs the cache over `cacheDir`, loads `file`, saves, and says what happened. */
interface Loaded {
  answer: number;
  file: string;
  dir: string;
  stats: { fromCache: number; compiled: number };
  written: number;
}

function load(cacheDir: string, file: string): Loaded {
  const script = `
    const cache = require(${JSON.stringify(COMPILE_CACHE)});
    cache.installCompileCache(${JSON.stringify(cacheDir)});
    const loaded = require(${JSON.stringify(file)});
    const stats = cache.compileCacheStats();
    const written = cache.saveCompileCache().length;
    process.stdout.write(JSON.stringify({ ...loaded, stats, written }));`;
  const run = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  return JSON.parse(run.stdout) as Loaded;
}

describe('the compile cache (compileCache.ts)', () => {
  it('compiles a large module once, then loads it from the cache, with the same exports', () => {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'compile-cache-'));
    const file = largeModule(work);
    const cacheDir = path.join(work, 'cache');

    const first = load(cacheDir, file);
    assert.deepEqual(first.stats, { fromCache: 0, compiled: 1 });
    assert.equal(first.written, 1);
    // What a module sees: its exports, require relative to itself, __filename, __dirname.
    assert.deepEqual([first.answer, first.file, first.dir], [42, file, work]);

    const second = load(cacheDir, file);
    assert.deepEqual(second.stats, { fromCache: 1, compiled: 0 });
    assert.equal(second.written, 0);
    assert.equal(second.answer, 42);
  });

  it('compiles as without a cache when the cache is damaged or the module changed, and writes it again', () => {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'compile-cache-'));
    const file = largeModule(work);
    const cacheDir = path.join(work, 'cache');
    load(cacheDir, file);
    const [cached] = fs.readdirSync(cacheDir);
    fs.writeFileSync(path.join(cacheDir, cached), 'not a V8 code cache');

    const damaged = load(cacheDir, file);
    assert.deepEqual(damaged.stats, { fromCache: 0, compiled: 1 });
    assert.equal(damaged.answer, 42);
    assert.equal(load(cacheDir, file).stats.fromCache, 1);

    fs.appendFileSync(file, 'module.exports.answer = 7;\n');
    const changed = load(cacheDir, file);
    assert.deepEqual([changed.stats.compiled, changed.answer], [1, 7]);
  });

  it("resolves a cached module's dynamic import() as Node's own loader does", () => {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'compile-cache-'));
    const file = path.join(work, 'dynamic.js');
    fs.writeFileSync(file, `/*${' '.repeat(300_000)}*/\nmodule.exports = () => import('node:path').then((m) => typeof m.join);\n`);
    const script = `
      const cache = require(${JSON.stringify(COMPILE_CACHE)});
      cache.installCompileCache(${JSON.stringify(path.join(work, 'cache'))});
      require(${JSON.stringify(file)})().then((kind) => process.stdout.write(kind));`;
    const run = spawnSync(process.execPath, ['--no-warnings', '-e', script], { encoding: 'utf8' });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(run.stdout, 'function');
  });

  it('loads as without a cache when the folder cannot be written', () => {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'compile-cache-'));
    const file = largeModule(work);
    // A file where the folder should be: nothing can be written under it.
    const blocked = path.join(work, 'blocked');
    fs.writeFileSync(blocked, '');
    const run = load(path.join(blocked, 'cache'), file);
    assert.deepEqual([run.answer, run.written], [42, 0]);
  });

  it('lives beside the package unless ANALYSIS_COMPILE_CACHE_DIR says where, or off', () => {
    assert.equal(loadConfig({}).compileCacheDir, path.resolve(__dirname, '..', '..', '.cache', 'v8'));
    assert.equal(loadConfig({ ANALYSIS_COMPILE_CACHE_DIR: '/tmp/v8' }).compileCacheDir, '/tmp/v8');
    for (const off of ['off', 'OFF', '', ' ']) {
      assert.equal(loadConfig({ ANALYSIS_COMPILE_CACHE_DIR: off }).compileCacheDir, undefined, off);
    }
  });
});
