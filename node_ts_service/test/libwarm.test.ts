// Its own file, so its own process: no other live project holds the lib files
// in the shared DocumentRegistry, and only warmLibraries() can keep them.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import ts from 'typescript';
import { sha256Hex } from '../src/fileio';
import { ProjectRegistry, warmLibraries } from '../src/program';

let root: string;

describe('lib warm-up', () => {
  before(() => {
    root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'cc-libwarm-')));
  });
  after(() => fs.rmSync(root, { recursive: true, force: true }));

  it('keeps warmed lib files parsed across projects, even after their disposal', () => {
    warmLibraries();
    const absolutePath = path.join(root, 'list.ts');
    const text = 'export const xs: Array<number> = [];\n';
    fs.writeFileSync(absolutePath, text);
    const file = { absolutePath, text, contentHash: sha256Hex(Buffer.from(text)) };
    const libOfArray = (registry: ProjectRegistry): ts.SourceFile => {
      let lib: ts.SourceFile | undefined;
      registry.withPrograms([file], (_f, view) => {
        assert.ok(view, 'file should be in a program');
        const array = view.checker.getSymbolsInScope(view.sourceFile, ts.SymbolFlags.Interface).find((s) => s.name === 'Array');
        lib = array?.declarations?.[0]?.getSourceFile();
      });
      assert.ok(lib, 'Array should come from a lib file');
      return lib;
    };
    const first = new ProjectRegistry(root, 4);
    const lib = libOfArray(first);
    first.dispose();
    const second = new ProjectRegistry(root, 4);
    assert.equal(libOfArray(second), lib, 'the lib SourceFile should be reused, not reparsed');
    second.dispose();
  });
});
