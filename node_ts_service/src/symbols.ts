// Symbol discovery: one walk of a parsed file that finds every chunkable
// symbol at every depth, with the offsets the chunker and renderer need.
// Kept separate from chunk building so that ids can be recomputed for any
// declaration (references, rendering) without building chunk text. The
// discoverers live in discovery/; this module is their public face: the
// symbol types, the per-file cache, and the text of a symbol with its
// children collapsed.
import type ts from 'typescript';
import { lineOf } from './discovery/text';
import { Discovery } from './discovery/walker';
import type { NodeKind } from './types';

export { compact, hexDigest, lineOf } from './discovery/text';
// The benchmark's symbol extractor (codecompass_dev/queries/extract_symbols.js) names CommonJS assignments as
// the chunker does, through this one function.
export { assignmentTarget } from './discovery/bindings';

export type BodyStyle = 'brace' | 'bracket' | 'expr';

export interface SymbolNode {
  id: string;
  kind: NodeKind;
  /** Kind as used in the id; accessors add get/set so a getter and setter of one name stay apart. */
  idKind: string;
  /** Simple name, e.g. "y" for `X.prototype.y = …`. */
  name: string;
  /** Name relative to the parent, e.g. "X.y" for a prototype assignment, "a.b" for `namespace a.b`. */
  localName: string;
  qualifiedName: string;
  parent: SymbolNode | undefined;
  children: SymbolNode[];
  depth: number;
  /** Start of the symbol text: after leading trivia and JSDoc, decorators and modifiers included. */
  start: number;
  end: number;
  jsdocStart: number; // -1 when there is no leading JSDoc
  jsdocEnd: number;
  /** The body that collapses when this symbol is shown inside its parent; -1 when it has none. */
  bodyStart: number;
  bodyEnd: number;
  bodyStyle: BodyStyle;
  signature: string;
  /** The declaration nodes that stand for this symbol (overloads, the variable and its initializer, …). */
  nodes: ts.Node[];
  /** Nodes whose subtrees hold the symbol's own source, in order. */
  roots: ts.Node[];
  /**
   * Symbols directly inside this one's source, in order, that collapse in it:
   * its children, or for the module chunk the file's top-level symbols (which
   * keep depth 0 and no parent, so the module chunk lists no children).
   */
  inner: SymbolNode[];
  /** Named from its context (`app.get('/x') handler`, `describe('cart')`): joins qualified names with ' > '. */
  contextNamed: boolean;
  /**
   * A scope wrapper (an IIFE, a UMD factory) whose declarations read as if
   * declared around it: it is a chunk, but its children's qualified names skip it.
   */
  transparent: boolean;
  /** A test block (`describe`, `it`, `test`, a hook) or a symbol inside one: test code wherever its file is. */
  inTestBlock: boolean;
}

export interface FileSymbols {
  roots: SymbolNode[];
  /** The file's card (the module chunk), when the file has any statement; also first in `all`. */
  module: SymbolNode | undefined;
  /** Every symbol in source order (parents before their children). */
  all: SymbolNode[];
  byNode: Map<ts.Node, SymbolNode>;
  byId: Map<string, SymbolNode>;
  /** Literals of data too long for a chunk's text, in source order: see longLiterals. */
  longLiterals: Span[];
}

/** A range of a file's text, [start, end). */
export interface Span {
  start: number;
  end: number;
}

const cache = new WeakMap<ts.SourceFile, { relativePath: string; symbols: FileSymbols }>();

/** What a chunk shows for a long literal: its delimiters and how much was left out. */
export function elidedLiteral(literal: string): string {
  return `${literal[0]}…${literal[literal.length - 1]} /* ${literal.length} characters of data not indexed */`;
}

/** `sf.text` from `from` to `to`, each long literal inside it shortened to its marker. */
export function textWithoutLongLiterals(sf: ts.SourceFile, from: number, to: number): string {
  const spans = cache.get(sf)?.symbols.longLiterals ?? [];
  const text = sf.text;
  let out = '';
  let at = from;
  for (const span of spans) {
    if (span.start < at || span.end > to) continue;
    out += text.slice(at, span.start) + elidedLiteral(text.slice(span.start, span.end));
    at = span.end;
  }
  return out + text.slice(at, to);
}

/** Every chunkable symbol of `sf`, cached per SourceFile object. */
export function discoverSymbols(sf: ts.SourceFile, relativePath: string): FileSymbols {
  const hit = cache.get(sf);
  if (hit && hit.relativePath === relativePath) return hit.symbols;
  const symbols = new Discovery(sf, relativePath).run();
  cache.set(sf, { relativePath, symbols });
  return symbols;
}

/**
 * The whitespace that indents the line `pos` is on: all of what precedes
 * `pos` on its line when that is whitespace, else the line's leading
 * whitespace (a symbol that starts mid-line, after `export const x = `).
 */
export function indentBefore(text: string, pos: number): string {
  const lineStart = Math.max(text.lastIndexOf('\n', pos - 1) + 1, 0);
  const prefix = text.slice(lineStart, pos);
  return /^[ \t]*$/.test(prefix) ? prefix : (/^[ \t]*/.exec(prefix)?.[0] ?? '');
}

export function startLineOf(sf: ts.SourceFile, sym: SymbolNode): number {
  return lineOf(sf, sym.start);
}

export function endLineOf(sf: ts.SourceFile, sym: SymbolNode): number {
  return lineOf(sf, Math.max(sym.start, sym.end - 1));
}

/**
 * A child collapses when its body spans two or more lines. A one-line body
 * (`get id() { return this._id; }`) is already as short as its collapsed form
 * would be, and keeping it verbatim keeps its meaning visible in the parent.
 */
export function isCollapsible(sf: ts.SourceFile, child: SymbolNode): boolean {
  return child.bodyStart >= 0 && lineOf(sf, child.bodyStart) !== lineOf(sf, Math.max(child.bodyStart, child.bodyEnd - 1));
}

export function collapsedBody(style: BodyStyle, lines: number): string {
  const marker = `/* ${lines} lines collapsed */`;
  if (style === 'brace') return `{ ${marker} }`;
  if (style === 'bracket') return `[ ${marker} ]`;
  return marker;
}

/**
 * The symbol's text with each direct child either rendered by `expand`
 * (when it returns a string) or collapsed to its signature when it has a
 * multi-line body.
 */
export function sourceWithChildren(
  sf: ts.SourceFile,
  sym: SymbolNode,
  expand?: (child: SymbolNode) => string | undefined,
): string {
  let out = '';
  let at = sym.start;
  for (const child of sym.inner) {
    const expanded = expand ? expand(child) : undefined;
    if (expanded !== undefined) {
      out += textWithoutLongLiterals(sf, at, child.start) + expanded;
      at = child.end;
    } else if (isCollapsible(sf, child)) {
      const lines = endLineOf(sf, child) - startLineOf(sf, child) + 1;
      out += textWithoutLongLiterals(sf, at, child.bodyStart) + collapsedBody(child.bodyStyle, lines);
      at = child.bodyEnd;
    }
  }
  return out + textWithoutLongLiterals(sf, at, sym.end);
}
