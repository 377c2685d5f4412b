// Declared symbols: functions, classes, interfaces, enums, type aliases,
// namespaces and the members of classes and API objects (methods,
// constructors, accessors): each named by its own declaration.
import ts from 'typescript';
import type { NodeKind } from '../types';
import { someNode } from '../walk';
import { functionBody, headerSignature, type Spec } from './spec';

const isJsx = (n: ts.Node): boolean => ts.isJsxElement(n) || ts.isJsxSelfClosingElement(n) || ts.isJsxFragment(n);

function containsJsx(node: ts.Node): boolean {
  return someNode(node, isJsx);
}

function looksLikeComponentName(name: string): boolean {
  const c = name.charCodeAt(0);
  return c >= 65 && c <= 90;
}

const REACT_BASES = new Set(['Component', 'PureComponent', 'React.Component', 'React.PureComponent']);

function isClassComponent(cls: ts.ClassLikeDeclaration): boolean {
  for (const clause of cls.heritageClauses ?? []) {
    if (clause.token !== ts.SyntaxKind.ExtendsKeyword) continue;
    for (const t of clause.types) {
      const e = t.expression;
      const name = ts.isIdentifier(e)
        ? e.text
        : ts.isPropertyAccessExpression(e) && ts.isIdentifier(e.expression)
          ? `${e.expression.text}.${e.name.text}`
          : '';
      if (REACT_BASES.has(name)) return true;
    }
  }
  return false;
}

export function functionKind(name: string, fn: ts.Node, fallback: NodeKind): NodeKind {
  return looksLikeComponentName(name) && containsJsx(fn) ? 'component' : fallback;
}

export function braceBody(sf: ts.SourceFile, openBraceAfter: number, end: number): Spec['body'] {
  const open = sf.text.lastIndexOf('{', openBraceAfter);
  return open < 0 ? undefined : { start: open, end, style: 'brace' };
}

export function classSpec(sf: ts.SourceFile, cls: ts.ClassLikeDeclaration, outer: ts.Node, name: string, nodes: ts.Node[]): Spec {
  const body = braceBody(sf, cls.members.pos - 1, cls.end);
  return {
    kind: isClassComponent(cls) ? 'component' : 'class',
    idKind: 'class',
    name,
    localName: name,
    outer,
    nodes,
    header: outer,
    body,
    walk: [{ node: cls, moduleScope: false }],
    overloadable: false,
    signature: outer === cls ? undefined : headerSignature(sf, outer, body?.start),
  };
}

/** A function, method, constructor or accessor whose own declaration is the whole symbol. */
export function functionLikeSpec(
  sf: ts.SourceFile,
  fn: ts.FunctionDeclaration | ts.FunctionExpression | ts.MethodDeclaration | ts.ConstructorDeclaration | ts.AccessorDeclaration,
  kind: NodeKind,
  idKind: string,
  name: string,
  overloadable: boolean,
): Spec {
  return {
    kind,
    idKind,
    name,
    localName: name,
    outer: fn,
    nodes: [fn],
    header: fn,
    body: functionBody(sf, fn),
    walk: fn.body ? [{ node: fn.body, moduleScope: false }] : [],
    overloadable,
  };
}

/** `function f() {…}`, or a function expression that names itself (`return function retry() {…}`). */
export function namedFunctionSpec(sf: ts.SourceFile, fn: ts.FunctionDeclaration | ts.FunctionExpression, name: string, overloadable: boolean): Spec {
  const kind = functionKind(name, fn, 'function');
  return functionLikeSpec(sf, fn, kind, kind, name, overloadable);
}

/** An interface, an enum or a type alias. */
export function declarationSpec(d: ts.DeclarationStatement, kind: NodeKind, name: string, body: Spec['body']): Spec {
  return {
    kind,
    idKind: kind,
    name,
    localName: name,
    outer: d,
    nodes: [d],
    header: d,
    body,
    walk: [],
    overloadable: false,
  };
}

/** `namespace a.b { … }`: one symbol for the whole dotted chain. */
export function namespaceSpec(sf: ts.SourceFile, decl: ts.ModuleDeclaration): Spec {
  const names: string[] = [];
  const nodes: ts.Node[] = [];
  let inner: ts.ModuleDeclaration = decl;
  for (;;) {
    nodes.push(inner);
    names.push(inner.name.text);
    if (inner.body && ts.isModuleDeclaration(inner.body)) inner = inner.body;
    else break;
  }
  const name = names.join('.');
  const block = inner.body && ts.isModuleBlock(inner.body) ? inner.body : undefined;
  return {
    kind: 'namespace',
    idKind: 'namespace',
    name,
    localName: name,
    outer: decl,
    nodes,
    header: decl,
    body: block ? { start: block.getStart(sf), end: block.end, style: 'brace' } : undefined,
    walk: block ? [{ node: block, moduleScope: true }] : [],
    overloadable: false,
  };
}
