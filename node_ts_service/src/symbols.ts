// Symbol discovery: one walk of a parsed file that finds every chunkable
// symbol at every depth, with the offsets the chunker and renderer need.
// Kept separate from chunk building so that ids can be recomputed for any
// declaration (references, rendering) without building chunk text.
import { createHash, hash } from 'node:crypto';
import ts from 'typescript';
import { LONG_LINE } from './fileio';
import type { NodeKind } from './types';
import { someNode, walkTree } from './walk';

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

const SIGNATURE_LIMIT = 300;
const INITIALIZER_PREVIEW = 80;

/** Name of the module chunk: a file's card, its whole text with every top-level symbol collapsed. */
export const MODULE_CHUNK_NAME = '<module top level>';
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

const cache = new WeakMap<ts.SourceFile, { relativePath: string; symbols: FileSymbols }>();

// One-shot hashing (Node >= 20.12) skips the Hash object a digest of a short
// id otherwise costs; a chunk id and a snippet hash are taken per symbol.
const oneShotHash = typeof hash === 'function' ? hash : undefined;

/** Hex digest of the UTF-8 bytes of `text`. */
export function hexDigest(algorithm: 'sha1' | 'sha256', text: string): string {
  return oneShotHash ? oneShotHash(algorithm, text, 'hex') : createHash(algorithm).update(text).digest('hex');
}

export function stableId(parts: string[]): string {
  return hexDigest('sha1', parts.join('\0')).slice(0, 20);
}

export function compact(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

function truncate(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit - 1)}…`;
}

type FunctionLike = ts.ArrowFunction | ts.FunctionExpression;

function unwrap(expr: ts.Expression): ts.Expression {
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

function calleeName(call: ts.CallExpression): string {
  const callee = call.expression;
  if (ts.isIdentifier(callee)) return callee.text;
  if (ts.isPropertyAccessExpression(callee) && ts.isIdentifier(callee.expression)) {
    return `${callee.expression.text}.${callee.name.text}`;
  }
  return '';
}

const COMPONENT_WRAPPERS = new Set(['forwardRef', 'memo', 'React.forwardRef', 'React.memo']);
// useCallback binds a named callback inside a component body; it is a function like any other.
const CALLBACK_WRAPPERS = new Set(['useCallback', 'React.useCallback']);

interface BoundValue {
  fn?: FunctionLike;
  cls?: ts.ClassExpression;
  object?: ts.ObjectLiteralExpression;
  wrappedComponent: boolean;
}

/** Shared by every initializer that binds nothing chunkable (most of them); never mutated. */
const NO_BOUND_VALUE: BoundValue = Object.freeze({ wrappedComponent: false });

function boundValue(init: ts.Expression | undefined): BoundValue {
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

/** Property names as written: computed names keep their brackets, private names their '#'. */
export function propertyNameText(name: ts.PropertyName | undefined, sf: ts.SourceFile): string {
  if (!name) return '';
  if (ts.isIdentifier(name) || ts.isPrivateIdentifier(name)) return name.text;
  if (ts.isStringLiteral(name) || ts.isNumericLiteral(name) || ts.isNoSubstitutionTemplateLiteral(name)) return name.text;
  return compact(sf.text.slice(name.getStart(sf), name.end));
}

function hasBody(node: ts.Node): boolean {
  return (
    (ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isConstructorDeclaration(node)) &&
    node.body !== undefined
  );
}

const CANDIDATE_KINDS = new Uint8Array(ts.SyntaxKind.Count);
for (const kind of [
  ts.SyntaxKind.FunctionDeclaration,
  ts.SyntaxKind.FunctionExpression,
  ts.SyntaxKind.ClassDeclaration,
  ts.SyntaxKind.InterfaceDeclaration,
  ts.SyntaxKind.EnumDeclaration,
  ts.SyntaxKind.TypeAliasDeclaration,
  ts.SyntaxKind.ModuleDeclaration,
  ts.SyntaxKind.MethodDeclaration,
  ts.SyntaxKind.Constructor,
  ts.SyntaxKind.GetAccessor,
  ts.SyntaxKind.SetAccessor,
  ts.SyntaxKind.PropertyDeclaration,
  ts.SyntaxKind.PropertyAssignment,
  ts.SyntaxKind.VariableStatement,
  ts.SyntaxKind.ExpressionStatement,
  ts.SyntaxKind.ExportAssignment,
  ts.SyntaxKind.ArrowFunction,
  ts.SyntaxKind.ObjectLiteralExpression,
]) {
  CANDIDATE_KINDS[kind] = 1;
}

interface Spec {
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

/** What most candidate nodes classify as; shared, never mutated. */
const NO_SPECS: readonly Spec[] = Object.freeze([]);

class Discovery {
  private readonly all: SymbolNode[] = [];
  private readonly roots: SymbolNode[] = [];
  private readonly byNode = new Map<ts.Node, SymbolNode>();
  private readonly dupCounters = new Map<SymbolNode | undefined, Map<string, number>>();
  private readonly text: string;

  constructor(
    private readonly sf: ts.SourceFile,
    private readonly relativePath: string,
  ) {
    this.text = sf.text;
  }

  run(): FileSymbols {
    this.descend(this.sf, undefined, true);
    this.drain();
    const module = this.moduleSymbol();
    if (module) this.all.unshift(module);
    const byId = new Map<string, SymbolNode>();
    for (const s of this.all) byId.set(s.id, s);
    return { roots: this.roots, module, all: this.all, byNode: this.byNode, byId, longLiterals: longLiterals(this.sf) };
  }

  /**
   * The module chunk, the file's card: the whole file (trimmed of surrounding
   * blank space) with every top-level symbol collapsed, so its own text is
   * the file's outline (header comment, imports, exports, top-level code and
   * each top-level symbol's signature). Every file with code gets one: a
   * question about what a file or module does is answered by the file, and a
   * file of declarations alone needs a card as much as one with top-level
   * calls. What the card says beyond its text (the header comment's purpose,
   * the names it exports) is in its embedding text: see fileCard.ts.
   */
  private moduleSymbol(): SymbolNode | undefined {
    const text = this.text;
    // A file of comments alone has no code to outline.
    if (this.sf.statements.length === 0) return undefined;
    const roots = [...this.roots].sort((a, b) => a.start - b.start);
    const start = text.length - text.trimStart().length;
    const end = text.trimEnd().length;
    return {
      id: stableId([this.relativePath, '', 'module', MODULE_CHUNK_NAME, '0']),
      kind: 'module',
      idKind: 'module',
      name: MODULE_CHUNK_NAME,
      localName: MODULE_CHUNK_NAME,
      qualifiedName: MODULE_CHUNK_NAME,
      parent: undefined,
      children: [],
      depth: 0,
      start,
      end,
      jsdocStart: -1,
      jsdocEnd: -1,
      bodyStart: -1,
      bodyEnd: -1,
      bodyStyle: 'brace',
      signature: `module ${this.relativePath}`,
      nodes: [],
      roots: [this.sf],
      inner: roots,
      contextNamed: false,
      transparent: false,
      inTestBlock: false,
    };
  }

  // The walk is depth first in source order, on an explicit stack rather than
  // by recursion: generated code nests deeper than any thread's stack (a
  // 100,000-term concatenation is a tree 100,000 levels deep). Each entry is a
  // node to visit with the parent and scope it was reached under, or a step
  // that must run after everything pushed above it (the next declaration of
  // a statement that declares several). Parallel arrays and one shared
  // visitor: allocating an object or closure per AST node doubled discovery
  // time on typescript.js (1M nodes).
  private readonly stackItems: (ts.Node | (() => void))[] = [];
  private readonly stackParents: (SymbolNode | undefined)[] = [];
  private readonly stackScopes: boolean[] = [];
  /** The parent and scope of the node being visited. */
  private parentSym: SymbolNode | undefined;
  private moduleScope = true;
  /** An overload set whose implementation has not been seen yet. */
  private openOverload: SymbolNode | undefined;
  private pushParent: SymbolNode | undefined;
  private pushScope = true;
  private readonly pushChild = (child: ts.Node): void => {
    this.stackItems.push(child);
    this.stackParents.push(this.pushParent);
    this.stackScopes.push(this.pushScope);
  };

  /** Schedules `node`'s children, in source order, ahead of everything already scheduled. */
  private descend(node: ts.Node, parent: SymbolNode | undefined, moduleScope: boolean): void {
    const from = this.stackItems.length;
    this.pushParent = parent;
    this.pushScope = moduleScope;
    ts.forEachChild(node, this.pushChild);
    // Pushed in source order; popped last-in first-out, so the run is reversed.
    for (let lo = from, hi = this.stackItems.length - 1; lo < hi; lo++, hi--) {
      const item = this.stackItems[lo];
      this.stackItems[lo] = this.stackItems[hi];
      this.stackItems[hi] = item;
      const parentSym = this.stackParents[lo];
      this.stackParents[lo] = this.stackParents[hi];
      this.stackParents[hi] = parentSym;
      const scope = this.stackScopes[lo];
      this.stackScopes[lo] = this.stackScopes[hi];
      this.stackScopes[hi] = scope;
    }
  }

  private then(step: () => void): void {
    this.stackItems.push(step);
    this.stackParents.push(undefined);
    this.stackScopes.push(false);
  }

  private drain(): void {
    while (this.stackItems.length > 0) {
      const item = this.stackItems.pop()!;
      this.parentSym = this.stackParents.pop();
      this.moduleScope = this.stackScopes.pop()!;
      if (typeof item === 'function') item();
      else this.visit(item);
    }
  }

  private visit(child: ts.Node): void {
    if (CANDIDATE_KINDS[child.kind] === 1) {
      const specs = this.classify(child, this.moduleScope);
      if (specs.length > 0) {
        this.handle(child, specs);
        return;
      }
    }
    if (this.moduleScope && !this.isTransparent(child)) {
      this.descend(child, this.parentSym, false);
      return;
    }
    this.descend(child, this.parentSym, this.moduleScope);
  }

  /**
   * Creates the symbols of `specs` in order, each followed by the walk of its
   * own subtree, and then walks the declarations of a variable statement
   * that are not symbols. Scheduled last to first, so they run first to last.
   */
  private handle(child: ts.Node, specs: readonly Spec[]): void {
    const parent = this.parentSym;
    if (ts.isVariableStatement(child)) {
      // Declarations that are not symbols (locals, destructuring) can still hold named functions.
      this.then(() => {
        const decls = child.declarationList.declarations;
        for (let i = decls.length - 1; i >= 0; i--) if (!this.byNode.has(decls[i])) this.descend(decls[i], parent, false);
      });
    }
    for (let i = specs.length - 1; i >= 0; i--) {
      const spec = specs[i];
      this.then(() => {
        const open = this.openOverload;
        const sym = open && spec.overloadable && this.extendsOverloadSet(open, spec) ? open : this.create(spec, parent);
        // An overload set stays open until the declaration that has a body.
        this.openOverload = spec.overloadable && !hasBody(spec.outer) ? sym : undefined;
        for (let w = spec.walk.length - 1; w >= 0; w--) this.descend(spec.walk[w].node, sym, spec.walk[w].moduleScope);
      });
    }
  }

  /**
   * Statements of a top-level IIFE (`(function (ts) { … })(ts || (ts = {}))`,
   * `((module) => { … })(…)`) are module-level in all but syntax: bundles and
   * old namespace emit put a whole library there, so they chunk like a file.
   */
  private isTransparent(node: ts.Node): boolean {
    if (ts.isExpressionStatement(node)) return true;
    if (
      ts.isCallExpression(node) ||
      ts.isParenthesizedExpression(node) ||
      ts.isPropertyAccessExpression(node) ||
      ts.isPrefixUnaryExpression(node) ||
      ts.isVoidExpression(node)
    ) {
      return true;
    }
    if (ts.isArrowFunction(node) || ts.isFunctionExpression(node)) return this.isIifeCallee(node);
    return ts.isBlock(node) && (ts.isArrowFunction(node.parent) || ts.isFunctionExpression(node.parent));
  }

  private isIifeCallee(fn: FunctionLike): boolean {
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

  private extendsOverloadSet(last: SymbolNode, spec: Spec): boolean {
    const prev = last.nodes[last.nodes.length - 1];
    if (prev.kind !== spec.outer.kind || prev.parent !== spec.outer.parent) return false;
    if (last.idKind !== spec.idKind || last.localName !== spec.localName) return false;
    last.end = spec.outer.end;
    last.nodes.push(spec.outer);
    last.roots.push(spec.outer);
    this.byNode.set(spec.outer, last);
    if (spec.body) {
      last.bodyStart = spec.body.start;
      last.bodyEnd = spec.body.end;
      last.bodyStyle = spec.body.style;
    } else {
      last.signature = truncate(`${last.signature}\n${this.headerSignature(spec.header, undefined)}`, SIGNATURE_LIMIT * 4);
    }
    return true;
  }

  private create(spec: Spec, parent: SymbolNode | undefined): SymbolNode {
    let counters = this.dupCounters.get(parent);
    if (!counters) {
      counters = new Map<string, number>();
      this.dupCounters.set(parent, counters);
    }
    const dupKey = `${spec.idKind}\0${spec.localName}`;
    const dup = counters.get(dupKey) ?? 0;
    counters.set(dupKey, dup + 1);
    const id = stableId([this.relativePath, parent ? parent.id : '', spec.idKind, spec.localName, String(dup)]);
    const start = spec.outer.getStart(this.sf);
    const jsdoc = this.leadingJsDoc(spec.outer, start);
    // Qualified names skip transparent wrappers; context names join with ' > '
    // because they hold dots and parentheses of their own.
    let scope = parent;
    while (scope && scope.transparent) scope = scope.parent;
    const contextNamed = spec.contextNamed === true;
    const separator = contextNamed || (scope !== undefined && scope.contextNamed) ? ' > ' : '.';
    const children: SymbolNode[] = [];
    const sym: SymbolNode = {
      id,
      kind: spec.kind,
      idKind: spec.idKind,
      name: spec.name,
      localName: spec.localName,
      qualifiedName: scope ? `${scope.qualifiedName}${separator}${spec.localName}` : spec.localName,
      parent,
      children,
      depth: parent ? parent.depth + 1 : 0,
      start,
      end: spec.outer.end,
      jsdocStart: jsdoc ? jsdoc.pos : -1,
      jsdocEnd: jsdoc ? jsdoc.end : -1,
      bodyStart: spec.body ? spec.body.start : -1,
      bodyEnd: spec.body ? spec.body.end : -1,
      bodyStyle: spec.body ? spec.body.style : 'brace',
      signature: spec.signature ?? this.headerSignature(spec.header, spec.body?.start),
      nodes: spec.nodes,
      roots: [spec.outer],
      inner: children,
      contextNamed,
      transparent: spec.transparent === true,
      inTestBlock: spec.testBlock === true || parent?.inTestBlock === true,
    };
    for (const n of spec.nodes) this.byNode.set(n, sym);
    (parent ? parent.children : this.roots).push(sym);
    this.all.push(sym);
    return sym;
  }

  private leadingJsDoc(node: ts.Node, start: number): ts.CommentRange | undefined {
    // Every comment starts with '/': most symbols have none, and this spares the comment scan.
    let slash = node.pos;
    while (slash < start && this.text.charCodeAt(slash) !== 47) slash++;
    if (slash >= start) return undefined;
    const ranges = ts.getLeadingCommentRanges(this.text, node.pos);
    if (!ranges || ranges.length === 0) return undefined;
    const last = ranges[ranges.length - 1];
    if (last.kind !== ts.SyntaxKind.MultiLineCommentTrivia) return undefined;
    if (!this.text.startsWith('/**', last.pos) || this.text.startsWith('/**/', last.pos)) return undefined;
    if (this.text.slice(last.end, start).trim() !== '') return undefined;
    return last;
  }

  /** Header text from the first non-decorator token up to the body, on one line. */
  private headerSignature(node: ts.Node, bodyStart: number | undefined): string {
    let from = node.getStart(this.sf);
    const modifiers = ts.canHaveModifiers(node) ? node.modifiers : undefined;
    if (modifiers && modifiers.length > 0) {
      const firstKeyword = modifiers.find((m) => !ts.isDecorator(m));
      from = firstKeyword ? firstKeyword.getStart(this.sf) : skipTrivia(this.text, modifiers[modifiers.length - 1].end);
    }
    const to = bodyStart !== undefined && bodyStart >= from ? bodyStart : node.end;
    return truncate(compact(this.text.slice(from, to)).replace(/\s*;$/, ''), SIGNATURE_LIMIT);
  }

  private variableSignature(outer: ts.Node, decl: ts.VariableDeclaration | ts.PropertyDeclaration): string {
    const init = decl.initializer;
    const head = this.headerSignature(outer, init ? init.getStart(this.sf) : undefined);
    if (!init || decl.type) return truncate(head.replace(/\s*=$/, '').replace(/;$/, ''), SIGNATURE_LIMIT);
    const initText = this.text.slice(init.getStart(this.sf), init.end);
    const newline = initText.indexOf('\n');
    const firstLine = newline < 0 ? initText : initText.slice(0, newline);
    const preview = compact(firstLine) + (firstLine.length < initText.length ? ' …' : '');
    return truncate(`${head} ${truncate(preview, INITIALIZER_PREVIEW)}`, SIGNATURE_LIMIT);
  }

  private braceBody(openBraceAfter: number, end: number): Spec['body'] {
    const open = this.text.lastIndexOf('{', openBraceAfter);
    return open < 0 ? undefined : { start: open, end, style: 'brace' };
  }

  private functionBody(fn: ts.FunctionLikeDeclaration): Spec['body'] {
    const body = fn.body;
    if (!body) return undefined;
    const start = body.getStart(this.sf);
    if (ts.isBlock(body)) return { start, end: body.end, style: 'brace' };
    return { start, end: body.end, style: 'expr' };
  }

  private initializerBody(init: ts.Expression): Spec['body'] {
    const e = unwrap(init);
    const start = init.getStart(this.sf);
    if (ts.isObjectLiteralExpression(e) && init === e) return { start, end: init.end, style: 'brace' };
    if (ts.isArrayLiteralExpression(e) && init === e) return { start, end: init.end, style: 'bracket' };
    return { start, end: init.end, style: 'expr' };
  }

  private functionKind(name: string, fn: ts.Node, fallback: NodeKind): NodeKind {
    return looksLikeComponentName(name) && containsJsx(fn) ? 'component' : fallback;
  }

  private classSpec(cls: ts.ClassLikeDeclaration, outer: ts.Node, name: string, nodes: ts.Node[]): Spec {
    const body = this.braceBody(cls.members.pos - 1, cls.end);
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
      signature: outer === cls ? undefined : this.headerSignature(outer, body?.start),
    };
  }

  private boundSpec(
    outer: ts.Node,
    nameNode: ts.Node,
    name: string,
    localName: string,
    value: BoundValue,
    fnKind: NodeKind,
    declForVariable: ts.VariableDeclaration | ts.PropertyDeclaration | undefined,
  ): Spec | undefined {
    if (value.fn) {
      const kind: NodeKind = value.wrappedComponent ? 'component' : this.functionKind(name, value.fn, fnKind);
      const body = this.functionBody(value.fn);
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
      const spec = this.classSpec(value.cls, outer, name, [outer, nameNode, value.cls]);
      if (value.wrappedComponent) spec.kind = 'component';
      spec.localName = localName;
      return spec;
    }
    if (declForVariable) {
      const init = declForVariable.initializer;
      const multiLine = init !== undefined && this.spansLines(init.getStart(this.sf), init.end);
      return {
        kind: 'variable',
        idKind: 'variable',
        name,
        localName,
        outer,
        nodes: [outer, nameNode],
        header: outer,
        body: init && multiLine ? this.initializerBody(init) : undefined,
        walk: init ? [{ node: init, moduleScope: false }] : [],
        signature: this.variableSignature(outer, declForVariable),
        overloadable: false,
      };
    }
    if (value.object) {
      return {
        kind: 'variable',
        idKind: 'variable',
        name,
        localName,
        outer,
        nodes: [outer, nameNode],
        header: outer,
        body: this.spansLines(value.object.getStart(this.sf), value.object.end)
          ? { start: value.object.getStart(this.sf), end: value.object.end, style: 'brace' }
          : undefined,
        walk: [{ node: value.object, moduleScope: false }],
        signature: truncate(`${compact(this.text.slice(outer.getStart(this.sf), value.object.getStart(this.sf)))} { … }`, SIGNATURE_LIMIT),
        overloadable: false,
      };
    }
    return undefined;
  }

  private spansLines(start: number, end: number): boolean {
    const nl = this.text.indexOf('\n', start);
    return nl >= 0 && nl < end;
  }

  private classify(node: ts.Node, moduleScope: boolean): readonly Spec[] {
    switch (node.kind) {
      case ts.SyntaxKind.FunctionDeclaration: {
        const fn = node as ts.FunctionDeclaration;
        const name = fn.name ? fn.name.text : 'default';
        const kind = this.functionKind(name, fn, 'function');
        return [
          {
            kind,
            idKind: kind,
            name,
            localName: name,
            outer: fn,
            nodes: [fn],
            header: fn,
            body: this.functionBody(fn),
            walk: fn.body ? [{ node: fn.body, moduleScope: false }] : [],
            overloadable: true,
          },
        ];
      }
      case ts.SyntaxKind.ClassDeclaration: {
        const cls = node as ts.ClassDeclaration;
        const name = cls.name ? cls.name.text : 'default';
        return [this.classSpec(cls, cls, name, [cls])];
      }
      case ts.SyntaxKind.InterfaceDeclaration: {
        const d = node as ts.InterfaceDeclaration;
        return [this.declarationSpec(d, 'interface', d.name.text, this.braceBody(d.members.pos - 1, d.end))];
      }
      case ts.SyntaxKind.EnumDeclaration: {
        const d = node as ts.EnumDeclaration;
        return [this.declarationSpec(d, 'enum', d.name.text, this.braceBody(d.members.pos - 1, d.end))];
      }
      case ts.SyntaxKind.TypeAliasDeclaration: {
        const d = node as ts.TypeAliasDeclaration;
        const body: Spec['body'] = ts.isTypeLiteralNode(d.type)
          ? { start: d.type.getStart(this.sf), end: d.type.end, style: 'brace' }
          : undefined;
        const spec = this.declarationSpec(d, 'type', d.name.text, body);
        spec.signature = truncate(compact(this.text.slice(d.getStart(this.sf), Math.min(d.end, d.getStart(this.sf) + 1000))), 200);
        return [spec];
      }
      case ts.SyntaxKind.ModuleDeclaration:
        return [this.namespaceSpec(node as ts.ModuleDeclaration)];
      case ts.SyntaxKind.MethodDeclaration: {
        const m = node as ts.MethodDeclaration;
        if (ts.isObjectLiteralExpression(m.parent) && !this.isBoundObject(m.parent)) return NO_SPECS;
        const name = propertyNameText(m.name, this.sf);
        return [this.memberSpec(m, 'method', 'method', name, m.body ? [{ node: m.body, moduleScope: false }] : [])];
      }
      case ts.SyntaxKind.Constructor: {
        const c = node as ts.ConstructorDeclaration;
        return [this.memberSpec(c, 'constructor', 'constructor', 'constructor', c.body ? [{ node: c.body, moduleScope: false }] : [])];
      }
      case ts.SyntaxKind.GetAccessor:
      case ts.SyntaxKind.SetAccessor: {
        const a = node as ts.AccessorDeclaration;
        if (ts.isObjectLiteralExpression(a.parent) && !this.isBoundObject(a.parent)) return NO_SPECS;
        const idKind = ts.isGetAccessor(a) ? 'accessor:get' : 'accessor:set';
        const spec = this.memberSpec(a, 'accessor', idKind, propertyNameText(a.name, this.sf), a.body ? [{ node: a.body, moduleScope: false }] : []);
        spec.overloadable = false;
        return [spec];
      }
      case ts.SyntaxKind.PropertyDeclaration: {
        const p = node as ts.PropertyDeclaration;
        const name = propertyNameText(p.name, this.sf);
        const spec = this.boundSpec(p, p.name, name, name, boundValue(p.initializer), 'method', p);
        return spec ? [spec] : NO_SPECS;
      }
      case ts.SyntaxKind.PropertyAssignment: {
        const p = node as ts.PropertyAssignment;
        if (!this.isBoundObject(p.parent)) return NO_SPECS;
        const value = boundValue(p.initializer);
        const name = propertyNameText(p.name, this.sf);
        if (value.object && p.initializer === value.object && this.isNestedChunkObject(value.object)) {
          return [this.objectSpec(p, p.name, name, value.object, `${name}: { … }`, false)];
        }
        if (!value.fn && !value.cls) return NO_SPECS;
        const spec = this.boundSpec(p, p.name, name, name, value, 'method', undefined);
        return spec ? [spec] : NO_SPECS;
      }
      case ts.SyntaxKind.VariableStatement:
        return this.variableSpecs(node as ts.VariableStatement, moduleScope);
      case ts.SyntaxKind.ExpressionStatement: {
        const spec = this.assignmentSpec(node as ts.ExpressionStatement) ?? this.callStatementSpec(node as ts.ExpressionStatement);
        return spec ? [spec] : NO_SPECS;
      }
      case ts.SyntaxKind.ArrowFunction: {
        const spec = this.anonymousFunctionSpec(node as ts.ArrowFunction, moduleScope);
        return spec ? [spec] : NO_SPECS;
      }
      case ts.SyntaxKind.ObjectLiteralExpression: {
        const obj = node as ts.ObjectLiteralExpression;
        const call = this.callOfArgument(obj);
        if (!call || !this.isCallArgumentObject(obj)) return NO_SPECS;
        return [this.callObjectSpec(call, obj, obj)];
      }
      case ts.SyntaxKind.FunctionExpression: {
        // Reached only when not bound to a name (bound ones are claimed by their binding):
        // a named function expression still names a function, e.g. `return function retry() {…}`.
        const fn = node as ts.FunctionExpression;
        if (!fn.name) {
          const spec = this.anonymousFunctionSpec(fn, moduleScope);
          return spec ? [spec] : NO_SPECS;
        }
        if (this.isIifeCallee(fn)) {
          const spec = this.anonymousFunctionSpec(fn, moduleScope, fn.name.text);
          return spec ? [spec] : NO_SPECS;
        }
        const name = fn.name.text;
        const kind = this.functionKind(name, fn, 'function');
        return [
          {
            kind,
            idKind: kind,
            name,
            localName: name,
            outer: fn,
            nodes: [fn],
            header: fn,
            body: this.functionBody(fn),
            walk: [{ node: fn.body, moduleScope: false }],
            overloadable: false,
          },
        ];
      }
      case ts.SyntaxKind.ExportAssignment: {
        const ea = node as ts.ExportAssignment;
        const value = boundValue(ea.expression);
        const fnName = value.fn && ts.isFunctionExpression(value.fn) && value.fn.name ? value.fn.name.text : 'default';
        const spec = this.boundSpec(ea, ea, fnName, fnName, value, 'function', undefined);
        return spec ? [spec] : NO_SPECS;
      }
      default:
        return NO_SPECS;
    }
  }

  /** Object literals whose members are named API: bound to a variable, property, export or return. */
  private isBoundObject(obj: ts.ObjectLiteralExpression): boolean {
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
      (e === obj && this.isCallArgumentObject(obj)) ||
      (e === obj && this.isNestedChunkObject(obj))
    );
  }

  /** `methods: { … }` inside an object whose members are chunks: a chunk too when it spans lines. */
  private isNestedChunkObject(obj: ts.ObjectLiteralExpression): boolean {
    const p = obj.parent;
    return (
      ts.isPropertyAssignment(p) &&
      p.initializer === obj &&
      ts.isObjectLiteralExpression(p.parent) &&
      this.spansLines(obj.getStart(this.sf), obj.end) &&
      this.isBoundObject(p.parent)
    );
  }

  /** An object literal passed straight to a call (`defineConfig({ … })`) that is big enough to be a chunk. */
  private isCallArgumentObject(obj: ts.ObjectLiteralExpression): boolean {
    return (
      this.callOfArgument(obj) !== undefined &&
      this.lineSpan(obj.getStart(this.sf), obj.end) >= MIN_CALLBACK_LINES &&
      !this.insideFunctionBody()
    );
  }

  /** The call or `new` that `node` (through parentheses) is an argument of. */
  private callOfArgument(node: ts.Node): ts.CallExpression | ts.NewExpression | undefined {
    let e: ts.Node = node;
    while (ts.isParenthesizedExpression(e.parent)) e = e.parent;
    const p = e.parent;
    if ((ts.isCallExpression(p) || ts.isNewExpression(p)) && p.arguments !== undefined && p.arguments.includes(e as ts.Expression)) {
      return p;
    }
    return undefined;
  }

  private lineSpan(start: number, end: number): number {
    return lineOf(this.sf, Math.max(start, end - 1)) - lineOf(this.sf, start) + 1;
  }

  /**
   * An anonymous function that is not bound to a name: a call argument
   * (handler, listener, callback, test block) or an IIFE, when big enough.
   */
  private anonymousFunctionSpec(fn: FunctionLike, moduleScope: boolean, ownName?: string): Spec | undefined {
    if (this.isIifeCallee(fn) || (!moduleScope && this.isNestedIifeCallee(fn))) {
      if (this.lineSpan(fn.getStart(this.sf), fn.end) < MIN_CALLBACK_LINES || this.insideFunctionBody()) return undefined;
      // A top-level IIFE is a scope wrapper (UMD, namespace emit, bundles): its
      // declarations stay module-level in scope and in their qualified names.
      return this.functionSpec(fn, fn, ownName ?? IIFE_NAME, this.headerSignature(fn, fn.body.getStart(this.sf)), moduleScope, moduleScope);
    }
    const call = this.callOfArgument(fn);
    if (!call) return undefined;
    const test = testBlockName(call, this.sf);
    if (test === undefined && (this.lineSpan(fn.getStart(this.sf), fn.end) < MIN_CALLBACK_LINES || this.insideFunctionBody())) {
      return undefined;
    }
    // The factory of a top-level IIFE (`(function (root, factory) {…})(this, function () {…})`) is a wrapper too.
    const iifeFactory = moduleScope && this.isIifeCall(call);
    const name = iifeFactory ? `${IIFE_NAME} factory` : (test ?? callbackName(call, this.sf));
    return { ...this.callbackSpec(call, fn, fn, name, iifeFactory), testBlock: test !== undefined };
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
  private insideFunctionBody(): boolean {
    let scope = this.parentSym;
    while (scope && scope.transparent) scope = scope.parent;
    return scope !== undefined && FUNCTION_LIKE_KINDS.has(scope.kind);
  }

  private isIifeCall(call: ts.CallExpression | ts.NewExpression): boolean {
    if (!ts.isCallExpression(call)) return false;
    const callee = unwrap(call.expression);
    return (ts.isFunctionExpression(callee) || ts.isArrowFunction(callee)) && this.isIifeCallee(callee);
  }

  private isNestedIifeCallee(fn: FunctionLike): boolean {
    let e: ts.Node = fn;
    while (ts.isParenthesizedExpression(e.parent)) e = e.parent;
    const p = e.parent;
    if (ts.isCallExpression(p) && p.expression === e) return true;
    return ts.isPropertyAccessExpression(p) && p.expression === e && ts.isCallExpression(p.parent) && p.parent.expression === p;
  }

  private functionSpec(fn: FunctionLike, outer: ts.Node, name: string, signature: string, walkModuleScope: boolean, transparent: boolean): Spec {
    return {
      kind: 'function',
      idKind: 'function',
      name,
      localName: name,
      outer,
      nodes: outer === fn ? [fn] : [outer, fn],
      header: outer,
      body: this.functionBody(fn),
      walk: [{ node: fn, moduleScope: walkModuleScope }],
      signature,
      overloadable: false,
      contextNamed: true,
      transparent,
    };
  }

  private callbackSpec(call: ts.CallExpression | ts.NewExpression, fn: FunctionLike, outer: ts.Node, name: string, transparent: boolean): Spec {
    // The call up to the body says what the callback is for: `app.get('/users/:id', async (req, res) =>`.
    const signature = truncate(compact(this.text.slice(call.getStart(this.sf), fn.body.getStart(this.sf))), SIGNATURE_LIMIT);
    return this.functionSpec(fn, outer, name, signature, transparent, transparent);
  }

  private callObjectSpec(call: ts.CallExpression | ts.NewExpression, obj: ts.ObjectLiteralExpression, outer: ts.Node): Spec {
    const label = firstStringArgument(call, this.sf);
    const name = `${calleeLabel(call, this.sf)}(${label ? `${label}, ` : ''}{…})`;
    const signature = truncate(`${compact(this.text.slice(call.getStart(this.sf), obj.getStart(this.sf)))}{ … })`, SIGNATURE_LIMIT);
    return this.objectSpec(outer, obj, name, obj, signature, true);
  }

  private objectSpec(outer: ts.Node, nameNode: ts.Node, name: string, obj: ts.ObjectLiteralExpression, signature: string, contextNamed: boolean): Spec {
    return {
      kind: 'variable',
      idKind: 'variable',
      name,
      localName: name,
      outer,
      nodes: outer === obj ? [obj] : [outer, nameNode, obj],
      header: outer,
      body: { start: obj.getStart(this.sf), end: obj.end, style: 'brace' },
      walk: [{ node: obj, moduleScope: false }],
      signature: truncate(signature, SIGNATURE_LIMIT),
      overloadable: false,
      contextNamed,
    };
  }

  /**
   * `describe('cart', () => { … });`, `app.get('/x', (req, res) => { … });`,
   * `Vue.component('x', { … });`: a statement that is one call with one
   * chunkable argument is that chunk, so its source starts with the call
   * (`it('adds items', …)`) and collapses to it inside its parent.
   */
  private callStatementSpec(stmt: ts.ExpressionStatement): Spec | undefined {
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
      return this.isCallArgumentObject(chosen) ? this.callObjectSpec(call, chosen, stmt) : undefined;
    }
    const fn = chosen as FunctionLike;
    const test = testBlockName(call, this.sf);
    if (test === undefined && (this.lineSpan(fn.getStart(this.sf), fn.end) < MIN_CALLBACK_LINES || this.insideFunctionBody())) {
      return undefined;
    }
    return { ...this.callbackSpec(call, fn, stmt, test ?? callbackName(call, this.sf), false), testBlock: test !== undefined };
  }

  private declarationSpec(d: ts.DeclarationStatement, kind: NodeKind, name: string, body: Spec['body']): Spec {
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

  private memberSpec(
    m: ts.MethodDeclaration | ts.ConstructorDeclaration | ts.AccessorDeclaration,
    kind: NodeKind,
    idKind: string,
    name: string,
    walk: Spec['walk'],
  ): Spec {
    return {
      kind,
      idKind,
      name,
      localName: name,
      outer: m,
      nodes: [m],
      header: m,
      body: this.functionBody(m),
      walk,
      overloadable: true,
    };
  }

  private namespaceSpec(decl: ts.ModuleDeclaration): Spec {
    const names: string[] = [];
    const nodes: ts.Node[] = [];
    let inner: ts.ModuleDeclaration = decl;
    for (;;) {
      nodes.push(inner);
      names.push(ts.isIdentifier(inner.name) ? inner.name.text : inner.name.text);
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
      body: block ? { start: block.getStart(this.sf), end: block.end, style: 'brace' } : undefined,
      walk: block ? [{ node: block, moduleScope: true }] : [],
      overloadable: false,
    };
  }

  private variableSpecs(stmt: ts.VariableStatement, moduleScope: boolean): Spec[] {
    const decls = stmt.declarationList.declarations;
    const specs: Spec[] = [];
    for (const decl of decls) {
      if (!ts.isIdentifier(decl.name)) continue;
      const value = boundValue(decl.initializer);
      const isValue = !value.fn && !value.cls;
      if (isValue && (!moduleScope || isRequireCall(decl.initializer))) continue;
      // A one-declaration statement is the symbol (export, keyword and ';' included);
      // in `const a = 1, b = 2` each declaration stands alone.
      const outer: ts.Node = decls.length === 1 ? stmt : decl;
      const name = decl.name.text;
      const spec = this.boundSpec(outer, decl, name, name, value, 'function', isValue ? decl : undefined);
      if (!spec) continue;
      if (outer === stmt) spec.nodes.push(stmt.declarationList);
      if (spec.kind === 'variable' && outer !== stmt) spec.signature = `${this.declarationKeyword(stmt)} ${spec.signature}`;
      specs.push(spec);
    }
    return specs;
  }

  private declarationKeyword(stmt: ts.VariableStatement): string {
    const flags = stmt.declarationList.flags;
    if (flags & ts.NodeFlags.Const) return 'const';
    if (flags & ts.NodeFlags.Let) return 'let';
    return 'var';
  }

  /** `exports.x = …`, `module.exports = …`, `X.prototype.y = …`, `a.b = function …`. */
  private assignmentSpec(stmt: ts.ExpressionStatement): Spec | undefined {
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
    const spec = this.boundSpec(stmt, left, name, parts.join('.'), value, kind, undefined);
    if (spec) spec.nodes.push(expr);
    return spec;
  }
}

const TEST_FUNCTIONS = new Set([
  'describe', 'it', 'test', 'suite', 'context', 'specify', 'fdescribe', 'fit', 'xdescribe', 'xit',
  'beforeEach', 'afterEach', 'beforeAll', 'afterAll', 'before', 'after', 'setup', 'teardown',
]);
const TEST_MODIFIERS = new Set([
  'only', 'skip', 'each', 'concurrent', 'todo', 'failing', 'sequential', 'fixme', 'fail', 'slow',
  'describe', 'parallel', 'serial', 'step', 'beforeEach', 'afterEach', 'beforeAll', 'afterAll', 'extend',
]);

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

/** Whether an argument holds anything that could be a chunk of its own (kept out of call-statement chunks' prefix). */
function containsNested(node: ts.Node): boolean {
  return someNode(node, isNestable);
}

const isNestable = (n: ts.Node): boolean => ts.isFunctionLike(n) || ts.isObjectLiteralExpression(n) || ts.isClassLike(n);

/** Position of the first token at or after `pos`, skipping whitespace and comments. */
function skipTrivia(text: string, pos: number): number {
  const re = /(?:\s+|\/\/[^\n]*|\/\*[\s\S]*?\*\/)*/y;
  re.lastIndex = pos;
  re.exec(text);
  return re.lastIndex;
}

function outerExpression(node: ts.Node): ts.Node {
  let e = node;
  while (ts.isParenthesizedExpression(e.parent) || ts.isPrefixUnaryExpression(e.parent) || ts.isVoidExpression(e.parent)) {
    e = e.parent;
  }
  return e;
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

const LITERAL_KINDS = new Set<ts.SyntaxKind>([
  ts.SyntaxKind.StringLiteral,
  ts.SyntaxKind.NoSubstitutionTemplateLiteral,
  ts.SyntaxKind.TemplateExpression,
  ts.SyntaxKind.RegularExpressionLiteral,
  ts.SyntaxKind.ArrayLiteralExpression,
  ts.SyntaxKind.ObjectLiteralExpression,
]);

const isCode = (n: ts.Node): boolean => ts.isFunctionLike(n) || ts.isClassLike(n);

/**
 * Literals longer than LONG_LINE characters on a single line that hold no
 * code (no function or class inside): a base64 image, a JSON blob, a number
 * table. A file with such a line is indexed (fileio's detectMinified tells it
 * from minified code), but a chunk shows each as a short marker
 * (elidedLiteral): tens of thousands of characters of data would drown the
 * words that describe the code in search, and an agent reading the chunk
 * learns nothing from them. Rendered symbols show the marker too.
 */
function longLiterals(sf: ts.SourceFile): Span[] {
  const text = sf.text;
  let longLine = false;
  for (let start = 0; start < text.length && !longLine; ) {
    const end = text.indexOf('\n', start);
    const stop = end < 0 ? text.length : end;
    longLine = stop - start > LONG_LINE;
    start = stop + 1;
  }
  if (!longLine) return [];
  const spans: Span[] = [];
  walkTree(sf, (node) => {
    if (node.end - node.pos <= LONG_LINE) return false;
    if (!LITERAL_KINDS.has(node.kind)) return true;
    const start = node.getStart(sf);
    if (node.end - start <= LONG_LINE || lineOf(sf, start) !== lineOf(sf, node.end - 1) || someNode(node, isCode)) return true;
    spans.push({ start, end: node.end });
    return false;
  });
  return spans;
}

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

/** 1-based line of a character offset (CRLF-aware: TypeScript's line map splits on \r\n, \n and \r). */
export function lineOf(sf: ts.SourceFile, pos: number): number {
  return sf.getLineAndCharacterOfPosition(pos).line + 1;
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
