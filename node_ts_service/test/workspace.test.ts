import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import ts from 'typescript';
import { Workspace } from '../src/workspace';

function parsed(name: string, chars: number) {
  const text = `// ${'x'.repeat(Math.max(chars - 3, 0))}`;
  return { contentHash: name, sourceFile: ts.createSourceFile(name, text, ts.ScriptTarget.Latest) };
}

describe('render cache', () => {
  it('keeps files within both bounds, the least recently used out first', () => {
    const workspace = new Workspace('/w', '/w', { files: 3, chars: 250 });
    workspace.cacheRender('a.ts', parsed('a', 100));
    workspace.cacheRender('b.ts', parsed('b', 100));
    assert.ok(workspace.cachedRender('a.ts', 'a'), 'a read: b is now the oldest');
    workspace.cacheRender('c.ts', parsed('c', 100)); // 300 chars: over 250, b goes
    assert.equal(workspace.cachedRender('b.ts', 'b'), undefined);
    assert.ok(workspace.cachedRender('a.ts', 'a'));
    assert.ok(workspace.cachedRender('c.ts', 'c'));
    workspace.cacheRender('d.ts', parsed('d', 10));
    workspace.cacheRender('e.ts', parsed('e', 10)); // four files: over 3, the least recently read (a) goes
    assert.equal(workspace.cachedRender('a.ts', 'a'), undefined);
    assert.ok(workspace.cachedRender('c.ts', 'c'));
  });

  it('keeps the newest file even when it alone is over the size bound', () => {
    const workspace = new Workspace('/w', '/w', { files: 10, chars: 50 });
    workspace.cacheRender('small.ts', parsed('s', 20));
    workspace.cacheRender('huge.ts', parsed('h', 500));
    assert.ok(workspace.cachedRender('huge.ts', 'h'));
    assert.equal(workspace.cachedRender('small.ts', 's'), undefined);
  });

  it('replacing a file with new content counts its size once', () => {
    const workspace = new Workspace('/w', '/w', { files: 10, chars: 250 });
    workspace.cacheRender('a.ts', parsed('a1', 100));
    workspace.cacheRender('a.ts', parsed('a2', 100));
    workspace.cacheRender('b.ts', parsed('b', 100)); // 200 chars in all, nothing goes
    assert.ok(workspace.cachedRender('a.ts', 'a2'));
    assert.equal(workspace.cachedRender('a.ts', 'a1'), undefined, 'a stale hash is a miss');
    assert.ok(workspace.cachedRender('b.ts', 'b'));
  });
});
