// Code passed to calls: callbacks and handlers (`app.get('/x', (req, res) =>
// …)`), test blocks (`describe`, `it`, hooks), objects passed to calls
// (`defineConfig({ … })`), IIFEs, and the statements that are one such call.
// None has a name of its own: each is named from its call.
import ts from 'typescript';
import type { NodeKind } from '../types';
import { someNode } from '../walk';
import { functionBody, headerSignature, objectSpec, SIGNATURE_LIMIT, unwrap, type FunctionLike, type Site, type Spec } from './spec';
import { compact, lineOf, truncate } from './text';

/** Name of an anonymous immediately invoked function expression. */
export const IIFE_NAME = '<iife>';
/**
 * An anonymous function or object literal passed to a call (a route handler,
 * an event listener, a `.map` callback, `defineConfig({ … })`) is a chunk of
 * its own when it spans at least this many lines. Shorter ones read fine
 * inside their parent's source and would only add near-duplicate chunks.
 * Test blocks (`describe`, `it`, hooks) are chunks whatever their size: each
 * is a named unit a search should find.
 */
export const MIN_CALLBACK_LINES = 3;
const FUNCTION_LIKE_KINDS = new Set<NodeKind>(['function', 'method', 'constructor', 'accessor', 'component']);
const LABEL_LIMIT = 60;

const TEST_FUNCTIONS = new Set([
  'describe', 'it', 'test', 'suite', 'context', 'specify', 'fdescribe', 'fit', 'xdescribe', 'xit',
  'beforeEach', 'afterEach', 'beforeAll', 'afterAll', 'before', 'after', 'setup', 'teardown',
]);
const TEST_MODIFIERS = new Set([
  'only', 'skip', 'each', 'concurrent', 'todo', 'failing', 'sequential', 'fixme', 'fail', 'slow',
  'describe', 'parallel', 'serial', 'step', 'beforeEach', 'afterEach', 'beforeAll', 'afterAll', 'extend',
]);

function outerExpression(node: ts.Node): ts.Node {
  let e = node;
  while (ts.isParenthesizedExpression(e.parent) || ts.isPrefixUnaryExpression(e.parent) || ts.isVoidExpression(e.parent)) {
    e = e.parent;
  }
  return e;
}

/** Whether `fn` is the callee of a call that is a statement of its own: `(function () { … })();`, `(function () { … }).call(this);`. */
export function isIifeCallee(fn: FunctionLike): boolean {
  let e: ts.Node = fn;
  while (ts.isParenthesizedExpression(e.parent)) e = e.parent;
  const p = e.parent;
  if (ts.isCallExpression(p) && p.expression === e) return ts.isExpressionStatement(outerExpression(p).parent);
  // (function () { … }).call(this)
  if (ts.isPropertyAccessExpression(p) && p.expression === e && ts.isCallExpression(p.parent)) {
    return ts.isExpressionStatement(outerExpression(p.parent).parent);
  }
  return false;
}

function isNestedIifeCallee(fn: FunctionLike): boolean {
  let e: ts.Node = fn;
  while (ts.isParenthesizedExpression(e.parent)) e = e.parent;
  const p = e.parent;
  if (ts.isCallExpression(p) && p.expression === e) return true;
  return ts.isPropertyAccessExpression(p) && p.expression === e && ts.isCallExpression(p.parent) && p.parent.expression === p;
}

function isIifeCall(call: ts.CallExpression | ts.NewExpression): boolean {
  if (!ts.isCallExpression(call)) return false;
  const callee = unwrap(call.expression);
  return (ts.isFunctionExpression(callee) || ts.isArrowFunction(callee)) && isIifeCallee(callee);
}

function lineSpan(sf: ts.SourceFile, start: number, end: number): number {
  return lineOf(sf, Math.max(start, end - 1)) - lineOf(sf, start) + 1;
}

/**
 * Whether the walk is inside a function's own body (named or a handler).
 * There, callbacks, objects passed to calls and IIFEs are that function's
 * code, as the blueprint's "method body with nested function definitions
 * collapsed" has it: they stay in its text instead of becoming chunks of
 * their own, so the function keeps the words that describe it and answers
 * stay whole symbols. Outside any function (module level, a transparent
 * top-level IIFE, objects) nothing else covers them, so they are chunks.
 * Test blocks are chunks everywhere.
 */
function insideFunctionBody(site: Site): boolean {
  let scope = site.parentSym;
  while (scope && scope.transparent) scope = scope.parent;
  return scope !== undefined && FUNCTION_LIKE_KINDS.has(scope.kind);
}

/** The call or `new` that `node` (through parentheses) is an argument of. */
export function callOfArgument(node: ts.Node): ts.CallExpression | ts.NewExpression | undefined {
  let e: ts.Node = node;
  while (ts.isParenthesizedExpression(e.parent)) e = e.parent;
  const p = e.parent;
  if ((ts.isCallExpression(p) || ts.isNewExpression(p)) && p.arguments !== undefined && p.arguments.includes(e as ts.Expression)) {
    return p;
  }
  return undefined;
}

/** An object literal passed straight to a call (`defineConfig({ … })`) that is big enough to be a chunk. */
export function isCallArgumentObject(site: Site, obj: ts.ObjectLiteralExpression): boolean {
  return (
    callOfArgument(obj) !== undefined &&
    lineSpan(site.sf, obj.getStart(site.sf), obj.end) >= MIN_CALLBACK_LINES &&
    !insideFunctionBody(site)
  );
}

/**
 * An anonymous function that is not bound to a name: a call argument
 * (handler, listener, callback, test block) or an IIFE, when big enough.
 */
export function anonymousFunctionSpec(site: Site, fn: FunctionLike, ownName?: string): Spec | undefined {
  const sf = site.sf;
  if (isIifeCallee(fn) || (!site.moduleScope && isNestedIifeCallee(fn))) {
    if (lineSpan(sf, fn.getStart(sf), fn.end) < MIN_CALLBACK_LINES || insideFunctionBody(site)) return undefined;
    // A top-level IIFE is a scope wrapper (UMD, namespace emit, bundles): its
    // declarations stay module-level in scope and in their qualified names.
    return functionSpec(sf, fn, fn, ownName ?? IIFE_NAME, headerSignature(sf, fn, fn.body.getStart(sf)), site.moduleScope);
  }
  const call = callOfArgument(fn);
  if (!call) return undefined;
  // The factory of a top-level IIFE (`(function (root, factory) {…})(this, function () {…})`) is a wrapper too.
  return callbackSpec(site, call, fn, fn, site.moduleScope && isIifeCall(call));
}

/** `transparent`: a scope wrapper, whose declarations are module-level in scope and in their qualified names. */
function functionSpec(sf: ts.SourceFile, fn: FunctionLike, outer: ts.Node, name: string, signature: string, transparent: boolean): Spec {
  return {
    kind: 'function',
    idKind: 'function',
    name,
    localName: name,
    outer,
    nodes: outer === fn ? [fn] : [outer, fn],
    header: outer,
    body: functionBody(sf, fn),
    walk: [{ node: fn, moduleScope: transparent }],
    signature,
    overloadable: false,
    contextNamed: true,
    transparent,
  };
}

/**
 * `fn`, an argument of `call`, as a chunk: a test block whatever its size,
 * any other callback when it is big enough and not part of a function's own
 * code. `iifeFactory`: it is the factory a top-level IIFE is passed, a scope wrapper.
 */
function callbackSpec(
  site: Site,
  call: ts.CallExpression | ts.NewExpression,
  fn: FunctionLike,
  outer: ts.Node,
  iifeFactory: boolean,
): Spec | undefined {
  const sf = site.sf;
  const test = testBlockName(call, sf);
  if (test === undefined && (lineSpan(sf, fn.getStart(sf), fn.end) < MIN_CALLBACK_LINES || insideFunctionBody(site))) {
    return undefined;
  }
  const name = iifeFactory ? `${IIFE_NAME} factory` : (test ?? callbackName(call, sf));
  // The call up to the body says what the callback is for: `app.get('/users/:id', async (req, res) =>`.
  const signature = truncate(compact(sf.text.slice(call.getStart(sf), fn.body.getStart(sf))), SIGNATURE_LIMIT);
  const spec = functionSpec(sf, fn, outer, name, signature, iifeFactory);
  spec.testBlock = test !== undefined;
  return spec;
}

export function callObjectSpec(sf: ts.SourceFile, call: ts.CallExpression | ts.NewExpression, obj: ts.ObjectLiteralExpression, outer: ts.Node): Spec {
  const label = firstStringArgument(call, sf);
  const name = `${calleeLabel(call, sf)}(${label ? `${label}, ` : ''}{…})`;
  const signature = truncate(`${compact(sf.text.slice(call.getStart(sf), obj.getStart(sf)))}{ … })`, SIGNATURE_LIMIT);
  return objectSpec(sf, outer, obj, name, obj, signature, true);
}

/** Whether an argument holds anything that could be a chunk of its own (kept out of call-statement chunks' prefix). */
function containsNested(node: ts.Node): boolean {
  return someNode(node, isNestable);
}

const isNestable = (n: ts.Node): boolean => ts.isFunctionLike(n) || ts.isObjectLiteralExpression(n) || ts.isClassLike(n);

/**
 * `describe('cart', () => { … });`, `app.get('/x', (req, res) => { … });`,
 * `Vue.component('x', { … });`: a statement that is one call with one
 * chunkable argument is that chunk, so its source starts with the call
 * (`it('adds items', …)`) and collapses to it inside its parent.
 */
export function callStatementSpec(site: Site, stmt: ts.ExpressionStatement): Spec | undefined {
  let e = stmt.expression;
  while (ts.isAwaitExpression(e) || ts.isVoidExpression(e)) e = e.expression;
  if (!ts.isCallExpression(e) || !isPlainCallee(e.expression)) return undefined;
  const call = e;
  let chosen: ts.Expression | undefined;
  for (const arg of call.arguments) {
    const a = unwrap(arg);
    if (((ts.isArrowFunction(a) || ts.isFunctionExpression(a)) && !(ts.isFunctionExpression(a) && a.name)) || ts.isObjectLiteralExpression(a)) {
      if (chosen) return undefined;
      chosen = a;
    }
  }
  if (!chosen) return undefined;
  // Walked only once one argument qualifies: most statements are calls without one.
  for (const arg of call.arguments) {
    if (unwrap(arg) !== chosen && containsNested(arg)) return undefined;
  }
  if (ts.isObjectLiteralExpression(chosen)) {
    return isCallArgumentObject(site, chosen) ? callObjectSpec(site.sf, call, chosen, stmt) : undefined;
  }
  return callbackSpec(site, call, chosen as FunctionLike, stmt, false);
}

/** Identifiers and property accesses only (`app.get`, `router.route.use`, `it.each(table)`): names worth quoting. */
function isPlainCallee(callee: ts.Expression): boolean {
  let e = callee;
  // A loop, not recursion: a member chain can be as long as the file.
  while (ts.isPropertyAccessExpression(e)) {
    if (e.expression.kind === ts.SyntaxKind.ThisKeyword) return true;
    e = e.expression;
  }
  if (ts.isIdentifier(e)) return true;
  // `it.each(table)(…)`, `test.describe.configure(…)`-style chains of a test function.
  if (ts.isCallExpression(e)) return testBase(e.expression) !== undefined;
  return false;
}

/** The test function a callee chain starts from (`it` for `it.only.each`), or undefined. */
function testBase(callee: ts.Expression): string | undefined {
  let e = callee;
  for (;;) {
    if (ts.isCallExpression(e)) e = e.expression;
    else if (ts.isPropertyAccessExpression(e)) {
      if (!TEST_MODIFIERS.has(e.name.text)) return undefined;
      e = e.expression;
    } else break;
  }
  return ts.isIdentifier(e) && TEST_FUNCTIONS.has(e.text) ? e.text : undefined;
}

/** Text of a callee with call arguments elided: `fetch(url).then` → `fetch().then`. */
function calleeText(e: ts.Expression, sf: ts.SourceFile, depth = 0): string {
  if (depth > 8) return '…';
  if (ts.isIdentifier(e)) return e.text;
  if (e.kind === ts.SyntaxKind.ThisKeyword) return 'this';
  if (ts.isPropertyAccessExpression(e)) return `${calleeText(e.expression, sf, depth + 1)}.${e.name.text}`;
  if (ts.isElementAccessExpression(e)) return `${calleeText(e.expression, sf, depth + 1)}[…]`;
  if (ts.isCallExpression(e)) return `${calleeText(e.expression, sf, depth + 1)}()`;
  if (ts.isNewExpression(e)) return `new ${calleeText(e.expression, sf, depth + 1)}()`;
  if (ts.isParenthesizedExpression(e) || ts.isNonNullExpression(e)) return calleeText(e.expression, sf, depth + 1);
  if (ts.isFunctionExpression(e) || ts.isArrowFunction(e)) return IIFE_NAME;
  return '…';
}

function calleeLabel(call: ts.CallExpression | ts.NewExpression, sf: ts.SourceFile): string {
  const text = calleeText(call.expression, sf);
  const label = text.length <= LABEL_LIMIT ? text : `…${text.slice(text.length - LABEL_LIMIT + 1)}`;
  return ts.isNewExpression(call) ? `new ${label}` : label;
}

function quote(text: string): string {
  return `'${truncate(compact(text), LABEL_LIMIT)}'`;
}

function stringLabel(arg: ts.Expression, sf: ts.SourceFile): string | undefined {
  if (ts.isStringLiteralLike(arg)) return quote(arg.text);
  if (ts.isTemplateExpression(arg)) return `\`${truncate(compact(sf.text.slice(arg.getStart(sf) + 1, arg.end - 1)), LABEL_LIMIT)}\``;
  return undefined;
}

function firstStringArgument(call: ts.CallExpression | ts.NewExpression, sf: ts.SourceFile): string | undefined {
  for (const arg of call.arguments ?? []) {
    const label = stringLabel(arg, sf);
    if (label !== undefined) return label;
  }
  return undefined;
}

/** `describe('cart')`, `it.each('adds %s')`, `beforeEach()`: the name of a test block, or undefined for other calls. */
function testBlockName(call: ts.CallExpression | ts.NewExpression, sf: ts.SourceFile): string | undefined {
  if (!ts.isCallExpression(call) || testBase(call.expression) === undefined) return undefined;
  const title = call.arguments.length > 0 ? stringLabel(call.arguments[0], sf) : undefined;
  return `${calleeLabel(call, sf).replace(/\(\)/g, '')}(${title ?? ''})`;
}

/**
 * `app.get('/users/:id') handler`, `emitter.on('data') handler`,
 * `router.use(auth) callback`, `app.listen(3000) callback`, `arr.map() callback`:
 * the callee, then the first string argument (a route, an event) or else the
 * first short name or number argument; "handler" when a string names what is handled.
 */
function callbackName(call: ts.CallExpression | ts.NewExpression, sf: ts.SourceFile): string {
  const callee = calleeLabel(call, sf);
  const label = firstStringArgument(call, sf);
  if (label) return `${callee}(${label}) handler`;
  for (const arg of call.arguments ?? []) {
    if (ts.isIdentifier(arg) || ts.isNumericLiteral(arg) || (ts.isPropertyAccessExpression(arg) && isPlainCallee(arg))) {
      const text = compact(sf.text.slice(arg.getStart(sf), arg.end));
      if (text.length <= 40) return `${callee}(${text}) callback`;
    }
  }
  return `${callee}() callback`;
}
