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

/** A long literal of data as chunks show it (symbols.ts elidedLiteral): the length is of the original. */
const ELIDED = /(.)…(.) \/\* (\d+) characters of data not indexed \*\//gs;

/**
 * Where a chunk's fullSource lies in the file, [start, end): it must begin on
 * its start line, and be the file's text there except for long literals,
 * each shown as a marker whose delimiters and length match the original.
 */
export function spanOf(text: string, starts: number[], chunk: Chunk): [number, number] {
  const source = chunk.fullSource;
  const pieces: { text: string; literal?: { open: string; close: string; length: number } }[] = [];
  let last = 0;
  for (const m of source.matchAll(ELIDED)) {
    pieces.push({ text: source.slice(last, m.index) }, { text: '', literal: { open: m[1], close: m[2], length: Number(m[3]) } });
    last = m.index + m[0].length;
  }
  pieces.push({ text: source.slice(last) });
  const lineStart = starts[chunk.startLine - 1];
  const at = text.indexOf(pieces[0].text, lineStart);
  const nextLine = chunk.startLine < starts.length ? starts[chunk.startLine] : text.length + 1;
  assert.ok(at >= lineStart && at < nextLine, `${chunk.qualifiedName}: fullSource does not start on line ${chunk.startLine}`);
  let pos = at;
  for (const piece of pieces) {
    if (piece.literal) {
      const { open, close, length } = piece.literal;
      assert.ok(text[pos] === open && text[pos + length - 1] === close && !text.slice(pos, pos + length).includes('\n'), `${chunk.qualifiedName}: elided literal at ${pos}`);
      pos += length;
    } else {
      assert.equal(text.slice(pos, pos + piece.text.length), piece.text, `${chunk.qualifiedName}: exact source`);
      pos += piece.text.length;
    }
  }
  return [at, pos];
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
    const [at, end] = spanOf(text, starts, c);
    const endLine = c.startLine + (c.fullSource.match(/\n/g)?.length ?? 0);
    assert.equal(c.endLine, endLine, `${c.qualifiedName}: endLine`);
    span.set(c.id, [at, end]);
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
