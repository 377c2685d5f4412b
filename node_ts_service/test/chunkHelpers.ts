// Shared helpers for the chunker, render and reference tests.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { chunkSourceFile, type ChunkOutput } from '../src/chunker';
import type { Chunk, Language } from '../src/types';

export const FIXTURES = path.resolve(__dirname, '..', '..', 'test', 'fixtures', 'chunker');

export function readFixture(name: string): string {
  return fs.readFileSync(path.join(FIXTURES, name), 'utf8');
}

export function scriptKindOf(language: Language): ts.ScriptKind {
  return { typescript: ts.ScriptKind.TS, tsx: ts.ScriptKind.TSX, javascript: ts.ScriptKind.JS, jsx: ts.ScriptKind.JSX }[language];
}

export function chunkText(relativePath: string, text: string, language: Language = 'typescript'): ChunkOutput {
  const sourceFile = ts.createSourceFile(relativePath, text, ts.ScriptTarget.Latest, true, scriptKindOf(language));
  return chunkSourceFile({
    absolutePath: path.join('/workspace', relativePath),
    relativePath,
    text,
    language,
    sourceFile,
    workspaceRoot: '/workspace',
  });
}

export function byQualifiedName(chunks: Chunk[], qualifiedName: string, index = 0): Chunk {
  const found = chunks.filter((c) => c.qualifiedName === qualifiedName);
  assert.ok(found.length > index, `no chunk ${qualifiedName} #${index}; have ${chunks.map((c) => c.qualifiedName).join(', ')}`);
  return found[index];
}

function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1);
  return starts;
}

/** Character offset of a chunk's fullSource in the file: it must begin on its start line. */
export function offsetOf(text: string, starts: number[], chunk: Chunk): number {
  const lineStart = starts[chunk.startLine - 1];
  const at = text.indexOf(chunk.fullSource, lineStart);
  const nextLine = chunk.startLine < starts.length ? starts[chunk.startLine] : text.length + 1;
  assert.ok(at >= lineStart && at < nextLine, `${chunk.qualifiedName}: fullSource does not start on line ${chunk.startLine}`);
  return at;
}

/**
 * The invariants every chunking must keep: exact source at the stated lines,
 * consistent hierarchy, children sorted and tiled inside their parent.
 */
export function assertInvariants(text: string, chunks: Chunk[]): void {
  const starts = lineStarts(text);
  const byId = new Map(chunks.map((c) => [c.id, c]));
  assert.equal(byId.size, chunks.length, 'chunk ids are unique');
  const span = new Map<string, [number, number]>();
  for (const c of chunks) {
    const at = offsetOf(text, starts, c);
    assert.equal(c.fullSource, text.slice(at, at + c.fullSource.length));
    const endLine = c.startLine + (c.fullSource.match(/\n/g)?.length ?? 0);
    assert.equal(c.endLine, endLine, `${c.qualifiedName}: endLine`);
    span.set(c.id, [at, at + c.fullSource.length]);
    if (c.jsdoc) assert.ok(c.jsdocStartLine > 0 && c.jsdocStartLine <= c.startLine);
    else assert.equal(c.jsdocStartLine, 0);
    assert.ok(c.embeddingText.endsWith(c.collapsedSource) || c.embeddingText.includes('lines truncated for embedding'));
  }
  for (const c of chunks) {
    if (c.parentId === '') {
      assert.equal(c.depth, 0);
    } else {
      const parent = byId.get(c.parentId);
      assert.ok(parent, `${c.qualifiedName}: parent exists`);
      assert.equal(c.depth, parent.depth + 1);
      assert.ok(parent.childIds.includes(c.id));
      // Qualified names skip scope wrappers (top-level IIFEs); context-named chunks join with ' > '.
      if (!parent.name.startsWith('<iife>')) {
        assert.ok(
          c.qualifiedName.startsWith(`${parent.qualifiedName}.`) || c.qualifiedName.startsWith(`${parent.qualifiedName} > `),
          `${c.qualifiedName} extends ${parent.qualifiedName}`,
        );
      }
    }
    const [ps, pe] = span.get(c.id)!;
    let prevEnd = ps;
    for (const childId of c.childIds) {
      const child = byId.get(childId);
      assert.ok(child, `${c.qualifiedName}: child exists`);
      assert.equal(child.parentId, c.id);
      const [cs, ce] = span.get(childId)!;
      assert.ok(cs >= prevEnd && ce <= pe, `${child.qualifiedName} lies inside ${c.qualifiedName}, after its previous sibling`);
      assert.ok(child.startLine >= c.startLine && child.endLine <= c.endLine);
      prevEnd = ce;
    }
  }
}
