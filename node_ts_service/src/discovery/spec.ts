// What a discoverer reports for a node that is a symbol (a Spec), where the
// walk stands when it looks (a Site), and the spec-building helpers the
// discoverers share. The walk (walker.ts) turns specs into SymbolNodes.
import ts from 'typescript';
import type { BodyStyle, SymbolNode } from '../symbols';
import type { NodeKind } from '../types';
import { compact, truncate } from './text';

export const SIGNATURE_LIMIT = 300;

export interface Spec {
  kind: NodeKind;
  idKind: string;
  name: string;
  localName: string;
  /** Node whose extent is the symbol's extent. */
  outer: ts.Node;
  nodes: ts.Node[];
  /** Node whose text, up to the body, is the signature. */
  header: ts.Node;
  body?: { start: number; end: number; style: BodyStyle };
  /** Where to keep looking for children, and whether declarations there are module-level. */
  walk: { node: ts.Node; moduleScope: boolean }[];
  /** Signature given outright (variables, types) instead of "header up to body". */
  signature?: string;
  overloadable: boolean;
  contextNamed?: boolean;
  transparent?: boolean;
  /** The callback of a test function (`describe`, `it`, `beforeEach`, …). */
  testBlock?: boolean;
}

/** Where the walk stands at the node being classified. */
export interface Site {
  readonly sf: ts.SourceFile;
  /** The symbol the node was reached under; undefined at the top level. */
  readonly parentSym: SymbolNode | undefined;
  /** Whether declarations at the node are module-level. */
  readonly moduleScope: boolean;
}

/** What most candidate nodes classify as; shared, never mutated. */
export const NO_SPECS: readonly Spec[] = Object.freeze([]);

export type FunctionLike = ts.ArrowFunction | ts.FunctionExpression;

export function unwrap(expr: ts.Expression): ts.Expression {
  let e = expr;
  while (
    ts.isParenthesizedExpression(e) ||
    ts.isAsExpression(e) ||
    ts.isSatisfiesExpression(e) ||
    ts.isTypeAssertionExpression(e) ||
    ts.isNonNullExpression(e)
  ) {
    e = e.expression;
  }
  return e;
}

/** Position of the first token at or after `pos`, skipping whitespace and comments. */
function skipTrivia(text: string, pos: number): number {
  const re = /(?:\s+|\/\/[^\n]*|\/\*[\s\S]*?\*\/)*/y;
  re.lastIndex = pos;
  re.exec(text);
  return re.lastIndex;
}

/** Header text from the first non-decorator token up to the body, on one line. */
export function headerSignature(sf: ts.SourceFile, node: ts.Node, bodyStart: number | undefined): string {
  let from = node.getStart(sf);
  const modifiers = ts.canHaveModifiers(node) ? node.modifiers : undefined;
  if (modifiers && modifiers.length > 0) {
    const firstKeyword = modifiers.find((m) => !ts.isDecorator(m));
    from = firstKeyword ? firstKeyword.getStart(sf) : skipTrivia(sf.text, modifiers[modifiers.length - 1].end);
  }
  const to = bodyStart !== undefined && bodyStart >= from ? bodyStart : node.end;
  return truncate(compact(sf.text.slice(from, to)).replace(/\s*;$/, ''), SIGNATURE_LIMIT);
}

export function functionBody(sf: ts.SourceFile, fn: ts.FunctionLikeDeclaration): Spec['body'] {
  const body = fn.body;
  if (!body) return undefined;
  const start = body.getStart(sf);
  if (ts.isBlock(body)) return { start, end: body.end, style: 'brace' };
  return { start, end: body.end, style: 'expr' };
}

/** An object literal that is a chunk: bound as a nested API object, or passed to a call. */
export function objectSpec(
  sf: ts.SourceFile,
  outer: ts.Node,
  nameNode: ts.Node,
  name: string,
  obj: ts.ObjectLiteralExpression,
  signature: string,
  contextNamed: boolean,
): Spec {
  return {
    kind: 'variable',
    idKind: 'variable',
    name,
    localName: name,
    outer,
    nodes: outer === obj ? [obj] : [outer, nameNode, obj],
    header: outer,
    body: { start: obj.getStart(sf), end: obj.end, style: 'brace' },
    walk: [{ node: obj, moduleScope: false }],
    signature: truncate(signature, SIGNATURE_LIMIT),
    overloadable: false,
    contextNamed,
  };
}
