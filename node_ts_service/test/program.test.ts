import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import ts from 'typescript';
import { sha256Hex } from '../src/fileio';
import { type ProgramFile, ProjectRegistry } from '../src/program';
import { AnalysisService } from '../src/service';

let root: string;

function write(rel: string, text: string): string {
  const file = path.join(root, rel);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  return file;
}

function programFile(absolutePath: string, text = fs.readFileSync(absolutePath, 'utf8')): ProgramFile {
  return { absolutePath, text, contentHash: sha256Hex(Buffer.from(text)) };
}

/** The file that declares the symbol an identifier in `file` refers to. */
function declarationFileOf(registry: ProjectRegistry, file: ProgramFile, identifier: string): string | undefined {
  let found: string | undefined;
  registry.withPrograms([file], (_f, view) => {
    assert.ok(view, 'file should be in a program');
    const visit = (node: ts.Node): void => {
      if (found === undefined && ts.isIdentifier(node) && node.text === identifier && !ts.isImportSpecifier(node.parent)) {
        let symbol = view.checker.getSymbolAtLocation(node);
        if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = view.checker.getAliasedSymbol(symbol);
        found = symbol?.declarations?.[0]?.getSourceFile().fileName;
      }
      ts.forEachChild(node, visit);
    };
    visit(view.sourceFile);
  });
  return found;
}

describe('projects', () => {
  before(() => {
    root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'cc-prog-')));
    write('tsconfig.base.json', JSON.stringify({ compilerOptions: { strict: true, baseUrl: '.', paths: { '@lib/*': ['packages/lib/src/*'] } } }));
    write('packages/app/tsconfig.json', JSON.stringify({ extends: '../../tsconfig.base.json', include: ['src'] }));
    write('packages/app/src/main.ts', "import { add } from '@lib/math';\nexport const total = add(1, 2);\n");
    write('packages/lib/tsconfig.json', JSON.stringify({ compilerOptions: { strict: true }, include: ['src'] }));
    write('packages/lib/src/math.ts', '/** Adds. */\nexport function add(a: number, b: number): number {\n  return a + b;\n}\n');
    write('packages/web/jsconfig.json', JSON.stringify({ include: ['src'] }));
    write('packages/web/src/ui.js', "export function render() { return 'ui'; }\n");
    write('scripts/tool.js', "import { add } from '../packages/lib/src/math';\nexport const four = add(2, 2);\n");
  });
  after(() => fs.rmSync(root, { recursive: true, force: true }));

  it('assigns each file to the nearest config that includes it, others to the inferred project', () => {
    const registry = new ProjectRegistry(root, 4);
    assert.equal(registry.projectKeyFor(path.join(root, 'packages/app/src/main.ts')), path.join(root, 'packages/app/tsconfig.json'));
    assert.equal(registry.projectKeyFor(path.join(root, 'packages/lib/src/math.ts')), path.join(root, 'packages/lib/tsconfig.json'));
    assert.equal(registry.projectKeyFor(path.join(root, 'packages/web/src/ui.js')), path.join(root, 'packages/web/jsconfig.json'));
    assert.equal(registry.projectKeyFor(path.join(root, 'scripts/tool.js')), '<inferred>');
  });

  it('resolves tsconfig paths aliases inherited through extends', () => {
    const registry = new ProjectRegistry(root, 4);
    const main = programFile(path.join(root, 'packages/app/src/main.ts'));
    assert.equal(declarationFileOf(registry, main, 'add'), path.join(root, 'packages/lib/src/math.ts'));
  });

  it('resolves imports of loose JS files in the inferred project', () => {
    const registry = new ProjectRegistry(root, 4);
    const tool = programFile(path.join(root, 'scripts/tool.js'));
    assert.equal(declarationFileOf(registry, tool, 'add'), path.join(root, 'packages/lib/src/math.ts'));
  });

  it('keeps the parsed file when the text is unchanged and reparses when it changes', () => {
    const registry = new ProjectRegistry(root, 4);
    const main = programFile(path.join(root, 'packages/app/src/main.ts'));
    const seen: ts.SourceFile[] = [];
    const capture = (file: ProgramFile) => registry.withPrograms([file], (_f, view) => seen.push(view!.sourceFile));
    capture(main);
    capture(main);
    capture(programFile(main.absolutePath, main.text + 'export const more = 1;\n'));
    assert.equal(seen[0], seen[1]);
    assert.notEqual(seen[1], seen[2]);
    assert.match(seen[2].text, /more/);
  });

  it('sees edits on disk to files a program loaded itself', () => {
    const registry = new ProjectRegistry(root, 4);
    const lib = write('scripts/helper.ts', 'export function helper(): number { return 1; }\n');
    const user = write('scripts/user.ts', "import { helper } from './helper';\nexport const h = helper();\n");
    const typeOfH = () => {
      let shown = '';
      registry.withPrograms([programFile(user)], (_f, view) => {
        const decl = view!.sourceFile.statements[1] as ts.VariableStatement;
        shown = view!.checker.typeToString(view!.checker.getTypeAtLocation(decl.declarationList.declarations[0].name));
      });
      return shown;
    };
    assert.equal(typeOfH(), 'number');
    write('scripts/helper.ts', "export function helper(): string { return 'one'; }\n");
    fs.utimesSync(lib, new Date(), new Date(Date.now() + 10_000));
    assert.equal(typeOfH(), 'string');
  });

  it('keeps at most the configured number of live LanguageServices', () => {
    const registry = new ProjectRegistry(root, 1);
    for (const rel of ['packages/app/src/main.ts', 'packages/lib/src/math.ts', 'scripts/tool.js', 'packages/app/src/main.ts']) {
      registry.withPrograms([programFile(path.join(root, rel))], (_f, view) => assert.ok(view));
      assert.equal(registry.liveProjectCount, 1);
    }
    registry.dispose();
    assert.equal(registry.liveProjectCount, 0);
  });

  it('gives the chunker a checker: references cross files through path aliases', async () => {
    const service = new AnalysisService({ maxFileBytes: 1 << 20, maxPrograms: 2, maxRenderCacheFiles: 8, maxWorkspaces: 2 });
    try {
      const results = [];
      for await (const file of service.chunkFiles({ workspaceRoot: root, paths: ['packages/app/src/main.ts'], includeReferences: true, lexicalOnly: false })) {
        results.push(file);
      }
      assert.equal(results.length, 1);
      const refs = results[0].chunks.flatMap((c) => c.references);
      const add = refs.find((r) => r.name === 'add');
      assert.ok(add, `expected a reference to add, got ${JSON.stringify(refs)}`);
      assert.equal(add.relativePath, 'packages/lib/src/math.ts');
      assert.match(add.signature, /add\(a: number, b: number\): number/);
    } finally {
      service.dispose();
    }
  });
});
