// Values bound to names: variables, class properties, properties of API
// objects, assignments (`exports.x = …`, `X.prototype.y = …`) and
// `export default`. A function or class bound to a name is that name's
// symbol; so is a module-level value, and an object whose members are API.
import ts from 'typescript';
import type { NodeKind } from '../types';
import { isCallArgumentObject } from './calls';
import { classSpec, functionKind } from './declarations';
import { functionBody, headerSignature, SIGNATURE_LIMIT, unwrap, type FunctionLike, type Site, type Spec } from './spec';
import { compact, truncate } from './text';

const INITIALIZER_PREVIEW = 80;

const COMPONENT_WRAPPERS = new Set(['forwardRef', 'memo', 'React.forwardRef', 'React.memo']);
// useCallback binds a named callback inside a component body; it is a function like any other.
const CALLBACK_WRAPPERS = new Set(['useCallback', 'React.useCallback']);

export interface BoundValue {
  fn?: FunctionLike;
  cls?: ts.ClassExpression;
  object?: ts.ObjectLiteralExpression;
  wrappedComponent: boolean;
}

/** Shared by every initializer that binds nothing chunkable (most of them); never mutated. */
const NO_BOUND_VALUE: BoundValue = Object.freeze({ wrappedComponent: false });

function calleeName(call: ts.CallExpression): string {
  const callee = call.expression;
  if (ts.isIdentifier(callee)) return callee.text;
  if (ts.isPropertyAccessExpression(callee) && ts.isIdentifier(callee.expression)) {
    return `${callee.expression.text}.${callee.name.text}`;
  }
  return '';
}

export function boundValue(init: ts.Expression | undefined): BoundValue {
  if (!init) return NO_BOUND_VALUE;
  const e = unwrap(init);
  if (ts.isArrowFunction(e) || ts.isFunctionExpression(e)) return { fn: e, wrappedComponent: false };
  if (ts.isClassExpression(e)) return { cls: e, wrappedComponent: false };
  if (ts.isObjectLiteralExpression(e)) return { object: e, wrappedComponent: false };
  if (ts.isCallExpression(e)) {
    const name = calleeName(e);
    if (COMPONENT_WRAPPERS.has(name) && e.arguments.length > 0) {
      const inner = boundValue(e.arguments[0]);
      if (inner.fn || inner.cls) return { fn: inner.fn, cls: inner.cls, wrappedComponent: true };
    }
    if (CALLBACK_WRAPPERS.has(name) && e.arguments.length > 0) {
      const inner = unwrap(e.arguments[0]);
      if (ts.isArrowFunction(inner) || ts.isFunctionExpression(inner)) return { fn: inner, wrappedComponent: false };
    }
  }
  return NO_BOUND_VALUE;
}

function isRequireCall(init: ts.Expression | undefined): boolean {
  if (!init) return false;
  let e = unwrap(init);
  while (ts.isPropertyAccessExpression(e)) e = e.expression;
  return ts.isCallExpression(e) && ts.isIdentifier(e.expression) && e.expression.text === 'require';
}

function spansLines(sf: ts.SourceFile, start: number, end: number): boolean {
  const nl = sf.text.indexOf('\n', start);
  return nl >= 0 && nl < end;
}

function variableSignature(sf: ts.SourceFile, outer: ts.Node, decl: ts.VariableDeclaration | ts.PropertyDeclaration): string {
  const init = decl.initializer;
  const head = headerSignature(sf, outer, init ? init.getStart(sf) : undefined);
  if (!init || decl.type) return truncate(head.replace(/\s*=$/, '').replace(/;$/, ''), SIGNATURE_LIMIT);
  const initText = sf.text.slice(init.getStart(sf), init.end);
  const newline = initText.indexOf('\n');
  const firstLine = newline < 0 ? initText : initText.slice(0, newline);
  const preview = compact(firstLine) + (firstLine.length < initText.length ? ' …' : '');
  return truncate(`${head} ${truncate(preview, INITIALIZER_PREVIEW)}`, SIGNATURE_LIMIT);
}

function initializerBody(sf: ts.SourceFile, init: ts.Expression): Spec['body'] {
  const e = unwrap(init);
  const start = init.getStart(sf);
  if (ts.isObjectLiteralExpression(e) && init === e) return { start, end: init.end, style: 'brace' };
  if (ts.isArrayLiteralExpression(e) && init === e) return { start, end: init.end, style: 'bracket' };
  return { start, end: init.end, style: 'expr' };
}

/**
 * The symbol `value` makes of the name it is bound to: a function, a class,
 * a value (`declForVariable`: variables and class properties), or an object.
 */
export function boundSpec(
  sf: ts.SourceFile,
  outer: ts.Node,
  nameNode: ts.Node,
  name: string,
  localName: string,
  value: BoundValue,
  fnKind: NodeKind,
  declForVariable: ts.VariableDeclaration | ts.PropertyDeclaration | undefined,
): Spec | undefined {
  if (value.fn) {
    const kind: NodeKind = value.wrappedComponent ? 'component' : functionKind(name, value.fn, fnKind);
    const body = functionBody(sf, value.fn);
    return {
      kind,
      idKind: kind === 'component' ? 'component' : fnKind,
      name,
      localName,
      outer,
      nodes: [outer, nameNode, value.fn],
      header: outer,
      body,
      walk: [{ node: value.fn, moduleScope: false }],
      overloadable: false,
    };
  }
  if (value.cls) {
    const spec = classSpec(sf, value.cls, outer, name, [outer, nameNode, value.cls]);
    if (value.wrappedComponent) spec.kind = 'component';
    spec.localName = localName;
    return spec;
  }
  // A name bound to a value: the same spec but for the body shown, what is walked and the signature.
  const variable = (body: Spec['body'], walk: Spec['walk'], signature: string): Spec => ({
    kind: 'variable', idKind: 'variable', name, localName, outer, nodes: [outer, nameNode], header: outer,
    body, walk, signature, overloadable: false,
  });
  if (declForVariable) {
    const init = declForVariable.initializer;
    const multiLine = init !== undefined && spansLines(sf, init.getStart(sf), init.end);
    return variable(init && multiLine ? initializerBody(sf, init) : undefined,
      init ? [{ node: init, moduleScope: false }] : [], variableSignature(sf, outer, declForVariable));
  }
  if (value.object) {
    const object = value.object;
    return variable(
      spansLines(sf, object.getStart(sf), object.end)
        ? { start: object.getStart(sf), end: object.end, style: 'brace' }
        : undefined,
      [{ node: object, moduleScope: false }],
      truncate(`${compact(sf.text.slice(outer.getStart(sf), object.getStart(sf)))} { … }`, SIGNATURE_LIMIT),
    );
  }
  return undefined;
}

export function variableSpecs(site: Site, stmt: ts.VariableStatement): Spec[] {
  const decls = stmt.declarationList.declarations;
  const specs: Spec[] = [];
  for (const decl of decls) {
    if (!ts.isIdentifier(decl.name)) continue;
    const value = boundValue(decl.initializer);
    const isValue = !value.fn && !value.cls;
    if (isValue && (!site.moduleScope || isRequireCall(decl.initializer))) continue;
    // A one-declaration statement is the symbol (export, keyword and ';' included);
    // in `const a = 1, b = 2` each declaration stands alone.
    const outer: ts.Node = decls.length === 1 ? stmt : decl;
    const name = decl.name.text;
    const spec = boundSpec(site.sf, outer, decl, name, name, value, 'function', isValue ? decl : undefined);
    if (!spec) continue;
    if (outer === stmt) spec.nodes.push(stmt.declarationList);
    if (spec.kind === 'variable' && outer !== stmt) spec.signature = `${declarationKeyword(stmt)} ${spec.signature}`;
    specs.push(spec);
  }
  return specs;
}

function declarationKeyword(stmt: ts.VariableStatement): string {
  const flags = stmt.declarationList.flags;
  if (flags & ts.NodeFlags.Const) return 'const';
  if (flags & ts.NodeFlags.Let) return 'let';
  return 'var';
}

/** `exports.x = …`, `module.exports = …`, `X.prototype.y = …`, `a.b = function …`. */
export function assignmentSpec(sf: ts.SourceFile, stmt: ts.ExpressionStatement): Spec | undefined {
  const expr = stmt.expression;
  if (!ts.isBinaryExpression(expr) || expr.operatorToken.kind !== ts.SyntaxKind.EqualsToken) return undefined;
  const left = expr.left;
  if (!ts.isPropertyAccessExpression(left) && !ts.isElementAccessExpression(left)) return undefined;
  const value = boundValue(expr.right);
  if (!value.fn && !value.cls && !value.object) return undefined;
  const target = assignmentTarget(left);
  if (!target) return undefined;
  const { path } = target;
  let parts = target.parts;
  const kind: NodeKind = target.method ? 'method' : 'function';
  const ownName = value.fn && ts.isFunctionExpression(value.fn) && value.fn.name ? value.fn.name.text : undefined;
  if (parts.length === 0) parts = [ownName ?? 'module.exports'];
  // Object literals only count when they are the module's exports object.
  if (value.object && !(path[0] === 'module' || path[0] === 'exports')) return undefined;
  const name = parts[parts.length - 1];
  const spec = boundSpec(sf, stmt, left, name, parts.join('.'), value, kind, undefined);
  if (spec) spec.nodes.push(expr);
  return spec;
}

/**
 * How an assignment target names what is assigned: `module.exports.x` / `exports.x` /
 * `this.x` → `x`, `X.prototype.y` → `X.y` as a method (so is `this.x`). `parts` may be
 * empty (`module.exports = …`); undefined when the target is not a plain name chain.
 */
export function assignmentTarget(left: ts.Expression): { path: string[]; parts: string[]; method: boolean } | undefined {
  const path = accessPath(left);
  if (path.length === 0) return undefined;
  let parts = path;
  if (parts[0] === 'module' && parts[1] === 'exports') parts = parts.slice(2);
  else if (parts[0] === 'exports' || parts[0] === 'this') parts = parts.slice(1);
  const protoAt = parts.indexOf('prototype');
  if (protoAt > 0) return { path, parts: [...parts.slice(0, protoAt), ...parts.slice(protoAt + 1)], method: true };
  return { path, parts, method: path[0] === 'this' };
}

/** `a.b['c'].d` as its parts; [] when the chain does not start at a name or `this`. */
function accessPath(e: ts.Expression): string[] {
  const parts: string[] = [];
  let cur: ts.Expression = e;
  for (;;) {
    if (ts.isPropertyAccessExpression(cur)) {
      parts.unshift(cur.name.text);
      cur = cur.expression;
    } else if (ts.isElementAccessExpression(cur) && ts.isStringLiteralLike(cur.argumentExpression)) {
      parts.unshift(cur.argumentExpression.text);
      cur = cur.expression;
    } else if (ts.isIdentifier(cur)) {
      parts.unshift(cur.text);
      return parts;
    } else if (cur.kind === ts.SyntaxKind.ThisKeyword) {
      parts.unshift('this');
      return parts;
    } else {
      return [];
    }
  }
}

/** Object literals whose members are named API: bound to a variable, property, export or return. */
export function isBoundObject(site: Site, obj: ts.ObjectLiteralExpression): boolean {
  let e: ts.Node = obj;
  while (ts.isParenthesizedExpression(e.parent) || ts.isAsExpression(e.parent) || ts.isSatisfiesExpression(e.parent)) {
    e = e.parent;
  }
  const p = e.parent;
  return (
    (ts.isVariableDeclaration(p) && p.initializer === e) ||
    (ts.isPropertyDeclaration(p) && p.initializer === e) ||
    (ts.isBinaryExpression(p) && p.right === e && p.operatorToken.kind === ts.SyntaxKind.EqualsToken) ||
    ts.isExportAssignment(p) ||
    ts.isReturnStatement(p) ||
    (e === obj && isCallArgumentObject(site, obj)) ||
    (e === obj && isNestedChunkObject(site, obj))
  );
}

/** `methods: { … }` inside an object whose members are chunks: a chunk too when it spans lines. */
export function isNestedChunkObject(site: Site, obj: ts.ObjectLiteralExpression): boolean {
  const p = obj.parent;
  return (
    ts.isPropertyAssignment(p) &&
    p.initializer === obj &&
    ts.isObjectLiteralExpression(p.parent) &&
    spansLines(site.sf, obj.getStart(site.sf), obj.end) &&
    isBoundObject(site, p.parent)
  );
}
