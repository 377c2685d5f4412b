// The folder watch: a scan of an unchanged workspace answers "unchanged"
// without walking it, and any change a walk could see (an edit, a new file or
// folder, an ignore file, a removal) makes the next scan walk again. Real
// files on disk and real inotify watches; no mocks of the file system.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { AnalysisService, type ScanRequest } from '../src/service';
import type { ScanResult } from '../src/types';
import { FolderWatch, MAX_LOGGED_EVENTS, MAX_TOKEN_AGE_MS, unwatchableReason } from '../src/watch';

const LIMITS = { maxFileBytes: 1 << 20, maxPrograms: 1, maxRenderCacheFiles: 4, maxWorkspaces: 2, maxWatchedFolders: 100 };

let root: string;
let service: AnalysisService;

function write(rel: string, content: string): void {
  const file = path.join(root, rel);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, content);
}

function scan(previous: ScanResult | undefined, unchangedSince = previous?.watchToken ?? '', excludePatterns: string[] = []): Promise<ScanResult> {
  const request: ScanRequest = { workspaceRoot: root, previous: previous?.files ?? [], excludePatterns, unchangedSince };
  return service.scan(request);
}

/** A scan that walked, as the caller applies it: the token of the walk that listed everything. */
async function settled(): Promise<ScanResult> {
  const first = await scan(undefined);
  assert.notEqual(first.watchToken, '', 'a watchable workspace gets a token');
  assert.equal(first.unchanged ?? false, false);
  return first;
}

const watchable = unwatchableReason(os.tmpdir()) === undefined;

describe('folder watch', { skip: watchable ? false : `temp dir not watchable: ${unwatchableReason(os.tmpdir())}` }, () => {
  beforeEach(() => {
    root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'cc-watch-')));
    write('src/a.ts', 'export const a = 1;\n');
    write('src/deep/b.ts', 'export const b = 2;\n');
    write('node_modules/dep/index.js', 'module.exports = 1;\n');
    service = new AnalysisService(LIMITS);
  });

  afterEach(() => {
    service.dispose();
    fs.rmSync(root, { recursive: true, force: true });
  });

  it('answers an unchanged workspace without listing it, and keeps answering so', async () => {
    const first = await settled();
    for (let i = 0; i < 3; i++) {
      const again = await scan(first);
      assert.equal(again.unchanged, true);
      assert.deepEqual(again.files, []);
      assert.equal(again.watchToken, first.watchToken);
    }
  });

  it('without the catalog, answers unchanged, then what an edit wrote, and asks for it after anything else', async () => {
    const first = await settled();
    const light = (token: string): Promise<ScanResult> =>
      service.scan({ workspaceRoot: root, previous: [], excludePatterns: [], unchangedSince: token, previousOmitted: true });
    assert.equal((await light(first.watchToken ?? '')).unchanged, true);
    fs.writeFileSync(path.join(root, 'src/a.ts'), 'export const a = 2;\n');
    const edited = await light(first.watchToken ?? '');
    assert.equal(edited.sinceToken, true, 'a write is read from the watch, without the catalog');
    assert.equal(edited.previousNeeded ?? false, false);
    assert.deepEqual([edited.added, edited.changed, edited.removed], [[], ['src/a.ts'], []]);
    const walk = await scan({ ...first, watchToken: '' }, '');
    assert.deepEqual(edited.files, walk.files, 'the same catalog as a walk');
    assert.deepEqual(edited.skipped, walk.skipped);
    assert.notEqual(edited.watchToken, first.watchToken);
    assert.equal((await light(edited.watchToken ?? '')).unchanged, true, 'its token stands for it');

    write('src/c.ts', 'export const c = 3;\n');
    const asked = await light(edited.watchToken ?? '');
    assert.equal(asked.previousNeeded, true, 'a new file: only a walk lists it');
    assert.deepEqual([asked.files, asked.added, asked.changed, asked.removed], [[], [], [], []], 'nothing walked');
    assert.equal((await light('')).previousNeeded, true, 'no token: the catalog is needed too');
    const full = await scan(edited);
    assert.deepEqual(full.added, ['src/c.ts']);
  });

  it('reads an atomic save (a write elsewhere renamed over the file) as a write', async () => {
    const first = await settled();
    fs.writeFileSync(path.join(root, 'src/.a.ts.tmp'), 'export const a = 5;\n');
    fs.renameSync(path.join(root, 'src/.a.ts.tmp'), path.join(root, 'src/a.ts'));
    const saved = await scan(first);
    assert.equal(saved.sinceToken, true);
    assert.deepEqual(saved.changed, ['src/a.ts']);
  });

  it('reads nothing again for files a walk never lists, and walks once too many events came', async () => {
    const first = await settled();
    write('README.md', 'notes\n');
    write('README.md', 'more notes\n');
    const notes = await scan(first);
    assert.equal(notes.sinceToken, true);
    assert.deepEqual([notes.added, notes.changed, notes.removed], [[], [], []]);
    // Alternating files: the kernel merges repeats of one event that are still queued.
    for (let i = 0; i <= MAX_LOGGED_EVENTS; i++) {
      fs.writeFileSync(path.join(root, i % 2 ? 'src/a.ts' : 'src/deep/b.ts'), `export const x = ${i};\n`);
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    const many = await scan(notes);
    assert.equal(many.sinceToken ?? false, false, 'the events kept do not reach back to the token: a walk');
    assert.deepEqual(many.changed, ['src/a.ts', 'src/deep/b.ts']);
  });

  it('sees an edit made just before the request, in the same tick', async () => {
    const first = await settled();
    for (let i = 0; i < 20; i++) {
      fs.writeFileSync(path.join(root, 'src/deep/b.ts'), `export const b = ${i + 10};\n`);
      const after = await scan(first);
      assert.equal(after.unchanged ?? false, false, `edit ${i} seen`);
      assert.deepEqual(after.changed, ['src/deep/b.ts']);
    }
  });

  it('walks again after a new file, a new folder, a removal or an ignore file', async () => {
    const changes: [string, () => void, (r: ScanResult) => void][] = [
      ['new file', () => write('src/c.ts', 'export const c = 3;\n'), (r) => assert.deepEqual(r.added, ['src/c.ts'])],
      ['new folder', () => write('src/new/d.ts', 'export const d = 4;\n'), (r) => assert.deepEqual(r.added, ['src/new/d.ts'])],
      ['file removed', () => fs.rmSync(path.join(root, 'src/a.ts')), (r) => assert.ok(r.removed.includes('src/a.ts'))],
      ['folder removed', () => fs.rmSync(path.join(root, 'src/new'), { recursive: true }), (r) => assert.ok(r.removed.includes('src/new/d.ts'))],
      ['ignore file', () => write('.gitignore', 'src/deep/\n'), (r) => assert.ok(r.removed.includes('src/deep/b.ts'))],
    ];
    let current = await settled();
    for (const [what, change, check] of changes) {
      change();
      const next = await scan(current);
      assert.equal(next.unchanged ?? false, false, `${what}: walked again`);
      check(next);
      assert.notEqual(next.watchToken, '', `${what}: a new token`);
      assert.equal((await scan(next)).unchanged, true, `${what}: settled again`);
      current = next;
    }
  });

  it('ignores changes in folders the walk does not enter', async () => {
    const first = await settled();
    write('node_modules/dep/index.js', 'module.exports = 2;\n');
    write('node_modules/other/x.js', 'module.exports = 3;\n');
    assert.equal((await scan(first)).unchanged, true);
  });

  it('walks when the token is empty, from another process or for other exclude patterns', async () => {
    const first = await settled();
    assert.equal((await scan(first, '')).unchanged ?? false, false);
    const other = new AnalysisService(LIMITS);
    try {
      const elsewhere = await other.scan({ workspaceRoot: root, previous: first.files, excludePatterns: [], unchangedSince: first.watchToken });
      assert.equal(elsewhere.unchanged ?? false, false, "another service's token is not honoured");
    } finally {
      other.dispose();
    }
    const excluded = await scan(first, first.watchToken, ['src/deep/']);
    assert.equal(excluded.unchanged ?? false, false);
    assert.deepEqual(excluded.removed, ['src/deep/b.ts']);
  });

  it('gives no token past its folder limit or with watching off', async () => {
    const small = new AnalysisService({ ...LIMITS, maxWatchedFolders: 1 });
    const off = new AnalysisService({ ...LIMITS, maxWatchedFolders: 0 });
    try {
      for (const s of [small, off]) {
        const result = await s.scan({ workspaceRoot: root, previous: [], excludePatterns: [], unchangedSince: '' });
        assert.equal(result.watchToken, '');
        assert.equal(result.files.length, 2, 'the scan itself is whole');
      }
      const offResult = await off.scan({ workspaceRoot: root, previous: [], excludePatterns: [] });
      assert.match(offResult.unwatchedReason ?? '', /off/);
      const smallResult = await small.scan({ workspaceRoot: root, previous: [], excludePatterns: [] });
      assert.match(smallResult.unwatchedReason ?? '', /more than 1 folders/);
    } finally {
      small.dispose();
      off.dispose();
    }
  });
});

describe('FolderWatch tokens', () => {
  it('expire after MAX_TOKEN_AGE_MS', () => {
    let now = 1_000;
    const watch = new FolderWatch(10, () => now);
    const mark = watch.begin();
    watch.folder(mark, os.tmpdir());
    const token = watch.finish(mark, 'k');
    try {
      if (!watchable) return;
      assert.equal(watch.unchangedSince(token, 'k'), true);
      assert.equal(watch.unchangedSince(token, 'other'), false);
      now += MAX_TOKEN_AGE_MS + 1;
      assert.equal(watch.unchangedSince(token, 'k'), false);
    } finally {
      watch.closeAll();
    }
  });

  it('are not given where folders cannot be watched', () => {
    assert.match(unwatchableReason('/', 'darwin') ?? '', /darwin/);
    assert.match(unwatchableReason('/no/such/folder', 'linux') ?? '', /statfs/);
  });
});
