// Rendering: a symbol's source with chosen descendants expanded inline and
// every other body-bearing child collapsed, the form answers are made of.
import ts from 'typescript';
import { discoverSymbols, endLineOf, indentBefore, sourceWithChildren, startLineOf, textWithoutLongLiterals, type SymbolNode } from './symbols';
import { countTokens } from './tokens';
import type { Chunk, Language, RenderSpec, RenderedSymbol } from './types';

function scriptKind(language: Language): ts.ScriptKind {
  switch (language) {
    case 'tsx':
      return ts.ScriptKind.TSX;
    case 'javascript':
      return ts.ScriptKind.JS;
    case 'jsx':
      return ts.ScriptKind.JSX;
    default:
      return ts.ScriptKind.TS;
  }
}

/**
 * Removes the indentation the symbol's first line had in the file from every
 * following line, so a method renders as if it were written at column 0
 * while keeping its inner indentation exactly as in the file. Selection
 * applies the same rule to a chunk's collapsedSource and indent
 * (clients/python/src/codecompass/common/chunks.py, dedent) to render a
 * symbol with no child expanded without asking this service.
 */
export function dedent(source: string, firstLineIndent: string): string {
  if (firstLineIndent === '') return source;
  return source
    .split('\n')
    .map((line, i) => (i > 0 && line.startsWith(firstLineIndent) ? line.slice(firstLineIndent.length) : line))
    .join('\n');
}

/** Parses a file the way the chunker does, for rendering its symbols. */
export function parseForRender(relativePath: string, text: string, language: Language): ts.SourceFile {
  return ts.createSourceFile(relativePath, text, ts.ScriptTarget.Latest, true, scriptKind(language));
}

/**
 * `chunks` are all chunks of the symbol's file and `text` its current text;
 * the symbol tree is rebuilt from the text (the same discovery the chunker
 * uses, so ids agree) to get the exact body offsets that chunks do not carry.
 */
export function renderSymbol(chunks: Chunk[], text: string, spec: RenderSpec): RenderedSymbol | undefined {
  const chunk = chunks.find((c) => c.id === spec.symbolId);
  if (!chunk) return undefined;
  return renderFromSource(parseForRender(chunk.relativePath, text, chunk.language), chunk.relativePath, spec);
}

/**
 * Renders from a parsed file. A caller that keeps the SourceFile (the render
 * cache) pays for parsing and symbol discovery once per file version instead
 * of once per symbol: a 30,000-line file takes a few hundred ms to parse.
 */
export function renderFromSource(sf: ts.SourceFile, relativePath: string, spec: RenderSpec): RenderedSymbol | undefined {
  const symbols = discoverSymbols(sf, relativePath);
  const root = symbols.byId.get(spec.symbolId);
  if (!root) return undefined;

  const expanded = new Set<string>();
  const unknownChildIds: string[] = [];
  for (const id of spec.expandChildIds) {
    let s = symbols.byId.get(id);
    const path: string[] = [];
    while (s && s !== root) {
      path.push(s.id);
      // The module chunk holds the top-level symbols without being their parent.
      if (s.parent === undefined && root === symbols.module && s !== root) {
        s = root;
        break;
      }
      s = s.parent;
    }
    if (s !== root || path.length === 0) {
      unknownChildIds.push(id);
      continue;
    }
    // Expanding a grandchild shows the way to it expanded too.
    for (const p of path) expanded.add(p);
  }

  const render = (sym: SymbolNode): string =>
    sourceWithChildren(sf, sym, (child) => (expanded.has(child.id) ? render(child) : undefined));
  const whole = dedent(render(root), indentBefore(sf.text, root.start));
  const startLine = startLineOf(sf, root);
  const endLine = endLineOf(sf, root);
  const focus = spec.focusLine ?? 0;
  const window =
    focus > startLine && focus < endLine && lineCount(whole) > FOCUS_RENDER_LIMIT ? focusWindow(sf, root, startLine, endLine, focus) : undefined;
  const source = window?.source ?? whole;
  return {
    symbolId: root.id,
    relativePath,
    qualifiedName: root.qualifiedName,
    source,
    tokenCount: countTokens(source),
    startLine,
    endLine,
    unknownChildIds,
    windowStartLine: window?.from ?? 0,
    windowEndLine: window?.to ?? 0,
  };
}

/**
 * A symbol whose rendering is longer than this many lines is shown around a
 * focus line, when one is asked for, instead of from its top: `read_symbol
 * src/gen.ts:61234` inside a 100,000-line function wants line 61,234, and
 * any answer is cut to a few hundred lines on its way to an agent.
 */
export const FOCUS_RENDER_LIMIT = 200;
/** Lines shown on each side of the focus line. */
export const FOCUS_CONTEXT_LINES = 40;

function lineCount(text: string): number {
  let lines = 1;
  for (let at = text.indexOf('\n'); at >= 0; at = text.indexOf('\n', at + 1)) lines++;
  return lines;
}

/**
 * The symbol's first line, the file's lines around `focus` as they are (its
 * children not collapsed: the focus may be inside one), and its last line,
 * with a marker line for each run of lines left out in between.
 */
function focusWindow(sf: ts.SourceFile, root: SymbolNode, startLine: number, endLine: number, focus: number): { source: string; from: number; to: number } {
  const starts = sf.getLineStarts();
  const lineEnd = (line: number) => (line < starts.length ? starts[line] - 1 : sf.text.length);
  const text = (from: number, to: number) => textWithoutLongLiterals(sf, from, to).replace(/\r$/gm, '');
  const from = Math.max(startLine + 1, focus - FOCUS_CONTEXT_LINES);
  const to = Math.min(endLine - 1, focus + FOCUS_CONTEXT_LINES);
  const indentOf = (line: number) => /^[ \t]*/.exec(sf.text.slice(starts[line - 1], lineEnd(line)))![0];
  const leftOut = (a: number, b: number, besideLine: number) => `${indentOf(besideLine)}/* … lines ${a}-${b} not shown (${b - a + 1} lines) */`;
  const parts = [text(root.start, lineEnd(startLine))];
  if (from > startLine + 1) parts.push(leftOut(startLine + 1, from - 1, from));
  parts.push(text(starts[from - 1], lineEnd(to)));
  if (to < endLine - 1) parts.push(leftOut(to + 1, endLine - 1, to));
  parts.push(text(starts[endLine - 1], root.end));
  return { source: dedent(parts.join('\n'), indentBefore(sf.text, root.start)), from, to };
}
