import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import ts from 'typescript';
import { chunkSourceFile, type ChunkOutput } from '../src/chunker';
import type { Chunk } from '../src/types';
import { assertInvariants, byQualifiedName, FIXTURES } from './chunkHelpers';

const ROOT = path.join(FIXTURES, 'refs');

function buildProgram(): ts.Program {
  const configPath = path.join(ROOT, 'tsconfig.json');
  const parsed = ts.getParsedCommandLineOfConfigFile(configPath, {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => assert.fail(ts.flattenDiagnosticMessageText(d.messageText, '\n')),
  });
  assert.ok(parsed);
  return ts.createProgram({ rootNames: parsed.fileNames, options: parsed.options });
}

function chunkWithChecker(program: ts.Program, relativePath: string): ChunkOutput {
  const sourceFile = program.getSourceFile(path.join(ROOT, relativePath));
  assert.ok(sourceFile, relativePath);
  return chunkSourceFile({
    absolutePath: sourceFile.fileName,
    relativePath,
    text: sourceFile.text,
    language: 'typescript',
    sourceFile,
    checker: program.getTypeChecker(),
    workspaceRoot: ROOT,
  });
}

const program = buildProgram();
const token = chunkWithChecker(program, 'src/services/token.ts');
const auth = chunkWithChecker(program, 'src/models/auth.ts');
const refNames = (c: Chunk): string[] => c.references.map((r) => r.name);

describe('one-hop references', () => {
  it('resolves symbols across files and through tsconfig paths aliases', () => {
    const check = byQualifiedName(token.chunks, 'TokenService.check');
    const isExpired = check.references.find((r) => r.name === 'isExpired');
    assert.deepEqual(isExpired, {
      name: 'isExpired',
      signature: 'export function isExpired(payload: JwtPayload, now: number): boolean',
      relativePath: 'src/models/auth.ts',
      chunkId: byQualifiedName(auth.chunks, 'isExpired').id,
    });
    const payload = check.references.find((r) => r.name === 'JwtPayload');
    assert.deepEqual(payload, {
      name: 'JwtPayload',
      signature: 'export interface JwtPayload { userId: string; exp: number; iat: number; }',
      relativePath: 'src/models/auth.ts',
      chunkId: byQualifiedName(auth.chunks, 'JwtPayload').id,
    });
    const clock = check.references.find((r) => r.name === 'nowSeconds');
    assert.equal(clock?.relativePath, 'src/util/clock.ts');
    assert.equal(clock?.signature, 'export function nowSeconds(): number');
    const log = check.references.find((r) => r.name === 'BaseService.log');
    assert.equal(log?.signature, 'protected log(message: string): void');
    // Most used first: isExpired is called twice.
    assert.equal(check.references[0].name, 'isExpired');
    assert.ok(check.embeddingText.includes('\nReferenced symbols:\n- isExpired: export function isExpired(payload: JwtPayload, now: number): boolean\n'));
  });

  it('leaves out the chunk itself, its parameters and locals, and lib declarations', () => {
    const check = byQualifiedName(token.chunks, 'TokenService.check');
    for (const name of ['payload', 'now', 'check', 'TokenService.check', 'Math', 'Date', 'console']) {
      assert.ok(!refNames(check).includes(name), name);
    }
  });

  it('gives a class the references of its own source, not of its collapsed method bodies', () => {
    const cls = byQualifiedName(token.chunks, 'TokenService');
    assert.deepEqual(refNames(cls).sort(), ['BaseService', 'DEFAULT_ROLE', 'JwtPayload', 'Role']);
    const base = cls.references.find((r) => r.name === 'BaseService');
    assert.equal(base?.signature, 'export class BaseService');
    const role = cls.references.find((r) => r.name === 'DEFAULT_ROLE');
    assert.equal(role?.signature, 'const DEFAULT_ROLE: Role');
    assertInvariants(program.getSourceFile(path.join(ROOT, 'src/services/token.ts'))!.text, token.chunks);
  });

  describe('members of a callback\'s parameters, typed by the call it is passed to', () => {
    const operators = chunkWithChecker(program, 'src/streams/operators.ts');
    const stream = chunkWithChecker(program, 'src/streams/stream.ts');
    const refTo = (chunk: string, name: string) => byQualifiedName(operators.chunks, chunk).references.find((r) => r.name === name);

    it('resolves the member of the declared parameter type', () => {
      assert.deepEqual(refTo('mapValues', 'Stream.subscribe'), {
        name: 'Stream.subscribe',
        signature: 'subscribe(sink: Sink<T>): void',
        relativePath: 'src/streams/stream.ts',
        chunkId: byQualifiedName(stream.chunks, 'Stream.subscribe').id,
      });
    });

    it('follows a narrowing to the subclass\'s own member', () => {
      assert.equal(refTo('replayOnly', 'Stream.subscribe'), undefined);
      assert.equal(refTo('replayOnly', 'ReplayStream.subscribe')?.chunkId, byQualifiedName(stream.chunks, 'ReplayStream.subscribe').id);
    });

    it('finds an inherited member where the declared type does not declare it', () => {
      assert.equal(refTo('pipeReplay', 'Stream.pipe')?.chunkId, byQualifiedName(stream.chunks, 'Stream.pipe').id);
    });
  });

  it('is absent without a checker', () => {
    const sourceFile = ts.createSourceFile('token.ts', program.getSourceFile(path.join(ROOT, 'src/services/token.ts'))!.text, ts.ScriptTarget.Latest, true);
    const out = chunkSourceFile({
      absolutePath: '/w/token.ts',
      relativePath: 'src/services/token.ts',
      text: sourceFile.text,
      language: 'typescript',
      sourceFile,
      workspaceRoot: '/w',
    });
    assert.ok(out.chunks.every((c) => c.references.length === 0 && !c.embeddingText.includes('Referenced symbols')));
    assert.deepEqual(out.chunks.map((c) => c.id), token.chunks.map((c) => c.id));
  });
});
