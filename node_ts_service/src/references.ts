// One-hop references: the workspace symbols a chunk's own source mentions,
// resolved with the type checker, rendered as short signatures for the
// "Referenced symbols" part of the embedding text.
import path from 'node:path';
import ts from 'typescript';
import { compact, discoverSymbols, isCollapsible, type SymbolNode } from './symbols';
import type { SymbolReference } from './types';
import { walkTree } from './walk';

export interface ReferenceContext {
  checker: ts.TypeChecker;
  sourceFile: ts.SourceFile;
  relativePath: string;
  workspaceRoot: string;
}

/** Enough to show what a chunk depends on without drowning its own source. */
export const MAX_REFERENCES = 15;
const SIGNATURE_LIMIT = 200;

/** Workspace-relative path with forward slashes, or undefined outside the workspace or in node_modules. */
export function workspacePath(workspaceRoot: string, fileName: string): string | undefined {
  const rel = path.relative(workspaceRoot, fileName);
  if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return undefined;
  const posix = rel.split(path.sep).join('/');
  return posix.split('/').includes('node_modules') ? undefined : posix;
}

function isPropertyName(id: ts.Identifier): boolean {
  const p = id.parent;
  return (ts.isPropertyAccessExpression(p) && p.name === id) || (ts.isQualifiedName(p) && p.right === id);
}

/**
 * `this.x` and `a.x` name members worth resolving; longer chains
 * (`f().a.b`) make the checker infer every link for little gain, and on large
 * untyped JavaScript such inference is slow enough to matter.
 */
function hasSimpleReceiver(id: ts.Identifier): boolean {
  const p = id.parent;
  if (!ts.isPropertyAccessExpression(p)) return ts.isQualifiedName(p) && ts.isIdentifier(p.left);
  return p.expression.kind === ts.SyntaxKind.ThisKeyword || ts.isIdentifier(p.expression);
}

function isDeclarationName(id: ts.Identifier): boolean {
  const p = id.parent as ts.Node & { name?: ts.Node };
  return p !== undefined && p.name === id && !ts.isPropertyAccessExpression(p) && !ts.isQualifiedName(p) && !ts.isJsxAttribute(p);
}

/** `symbol`, or what it aliases when it is an import; undefined for an import the checker could not resolve. */
function unaliased(checker: ts.TypeChecker, symbol: ts.Symbol | undefined): ts.Symbol | undefined {
  if (!symbol || !(symbol.flags & ts.SymbolFlags.Alias)) return symbol;
  const target = checker.getAliasedSymbol(symbol);
  // An alias to a module that could not be resolved comes back as the "unknown" symbol.
  return target.declarations && target.declarations.length > 0 ? target : undefined;
}

/** The type a parameter of a plain function type names, `(a: Foo<T>) => …` → `Foo<T>`; undefined otherwise. */
function namedParameterType(type: ts.TypeNode | undefined, index: number): ts.TypeReferenceNode | undefined {
  while (type && ts.isParenthesizedTypeNode(type)) type = type.type;
  if (!type || !ts.isFunctionTypeNode(type) || type.parameters.some(isThisParameter)) return undefined;
  const param = type.parameters[index];
  return param && !param.dotDotDotToken && param.type && ts.isTypeReferenceNode(param.type) ? param.type : undefined;
}

/** `this: T`, which declares no argument: the parameters after it are one place off the arguments. */
function isThisParameter(param: ts.ParameterDeclaration): boolean {
  return ts.isIdentifier(param.name) && param.name.text === 'this';
}

const LOGICAL = new Set([ts.SyntaxKind.AmpersandAmpersandToken, ts.SyntaxKind.BarBarToken, ts.SyntaxKind.QuestionQuestionToken]);

/** Whether `node` lies in a condition that can narrow what it mentions, up to `stop`. */
function inCondition(node: ts.Node, stop: ts.Node): boolean {
  for (let at = node; at !== stop && at.parent; at = at.parent) {
    const p = at.parent;
    if ((ts.isIfStatement(p) || ts.isWhileStatement(p) || ts.isDoStatement(p) || ts.isSwitchStatement(p)) && p.expression === at) return true;
    if ((ts.isConditionalExpression(p) || ts.isForStatement(p)) && p.condition === at) return true;
    if (ts.isBinaryExpression(p) && LOGICAL.has(p.operatorToken.kind)) return true;
  }
  return false;
}

/** Per parameter: whether its function only reads members of it or passes it on (see isNeverNarrowed). */
const neverNarrowed = new WeakMap<ts.ParameterDeclaration, boolean>();

/**
 * Whether the parameter keeps its declared type everywhere in its function: each mention
 * reads a member of it, or passes it to a call that is not a statement of its own (an
 * `asserts` function) nor in a condition (a type guard). No assignment, `instanceof`, `in`
 * or guard can have narrowed it to a subtype whose member of the same name is another.
 */
function isNeverNarrowed(param: ts.ParameterDeclaration, fn: ts.ArrowFunction | ts.FunctionExpression): boolean {
  let known = neverNarrowed.get(param);
  if (known !== undefined) return known;
  const name = (param.name as ts.Identifier).text;
  let plain = true;
  const visit = (node: ts.Node): void => {
    if (!plain) return;
    if (ts.isIdentifier(node) && node.text === name && node !== param.name) {
      const p = node.parent;
      const read = ts.isPropertyAccessExpression(p) && p.expression === node;
      const passed = (ts.isCallExpression(p) || ts.isNewExpression(p)) && p.arguments?.includes(node) === true
        && !ts.isExpressionStatement(p.parent) && !inCondition(p, fn);
      if (!read && !passed) plain = false;
    }
    ts.forEachChild(node, visit);
  };
  visit(fn.body);
  known = plain;
  neverNarrowed.set(param, known);
  return known;
}

/**
 * The member `p.name` names when `p` is an unannotated parameter of a function passed
 * straight to a call of a named function — `operate((source, subscriber) => {
 * source.subscribe(…) })` — read from the callee's declaration: its one signature declares
 * that parameter as a function type whose parameter there names a class or interface, and
 * the member is that type's own. The checker gets there by inferring the whole call (for a
 * generic callee, checking the callback's body and every overload it calls): 15-75 ms on
 * rxjs's map.ts, redone after each edit since an edit means a new checker, most of that
 * one-file edit's chunking. Undefined whenever a step is less plain than that (overloads,
 * a type parameter or alias, an inherited member, a narrowed receiver): the checker decides.
 */
function callbackParameterMember(checker: ts.TypeChecker, id: ts.Identifier): ts.Symbol | undefined {
  const access = id.parent;
  if (!ts.isPropertyAccessExpression(access) || access.name !== id || !ts.isIdentifier(access.expression)) return undefined;
  const receiver = checker.getSymbolAtLocation(access.expression)?.valueDeclaration;
  if (!receiver || !ts.isParameter(receiver) || receiver.type || receiver.initializer || receiver.dotDotDotToken) return undefined;
  const fn = receiver.parent;
  if (!(ts.isArrowFunction(fn) || ts.isFunctionExpression(fn)) || fn.parameters.some(isThisParameter)) return undefined;
  const call = fn.parent;
  if (!ts.isCallExpression(call) || !ts.isIdentifier(call.expression)) return undefined;
  const argument = call.arguments.indexOf(fn);
  if (argument < 0 || call.arguments.slice(0, argument).some(ts.isSpreadElement)) return undefined;
  const callee = unaliased(checker, checker.getSymbolAtLocation(call.expression));
  const declaration = callee?.declarations?.length === 1 ? callee.declarations[0] : undefined;
  if (!declaration || !ts.isFunctionDeclaration(declaration) || declaration.parameters.some(isThisParameter)) return undefined;
  const declared = declaration.parameters[argument];
  if (!declared || declared.dotDotDotToken) return undefined;
  const named = namedParameterType(declared.type, fn.parameters.indexOf(receiver));
  if (!named || !isNeverNarrowed(receiver, fn)) return undefined;
  const type = unaliased(checker, checker.getSymbolAtLocation(named.typeName));
  if (!type || !(type.flags & (ts.SymbolFlags.Class | ts.SymbolFlags.Interface))) return undefined;
  return type.members?.get(id.escapedText);
}

function resolve(checker: ts.TypeChecker, id: ts.Identifier): ts.Symbol | undefined {
  let symbol = callbackParameterMember(checker, id) ?? checker.getSymbolAtLocation(id);
  if (ts.isShorthandPropertyAssignment(id.parent)) {
    symbol = checker.getShorthandAssignmentValueSymbol(id.parent) ?? symbol;
  }
  return unaliased(checker, symbol);
}

function variableKeyword(decl: ts.VariableDeclaration): string {
  const list = decl.parent;
  if (!ts.isVariableDeclarationList(list)) return 'var';
  if (list.flags & ts.NodeFlags.Const) return 'const';
  if (list.flags & ts.NodeFlags.Let) return 'let';
  return 'var';
}

function limit(text: string): string {
  return text.length <= SIGNATURE_LIMIT ? text : `${text.slice(0, SIGNATURE_LIMIT - 1)}…`;
}

// The checker names a file it cannot name in scope by its absolute path:
// `import("/home/me/app/node_modules/x/index").Foo` qualifies a type,
// `typeof import("/home/me/app/src/mod")` is the type of a module itself.
const IMPORT_TYPE = /\bimport\(\s*(["'])([^"'\n]*)\1\s*\)(\.)?/g;
const ABSOLUTE_PATH = /^(\/|[A-Za-z]:[\\/])/;

/** A module path as the checker prints it, without the machine's part. */
function portableModulePath(modulePath: string, workspaceRoot: string): string {
  if (!ABSOLUTE_PATH.test(modulePath)) return modulePath;
  const inWorkspace = workspacePath(workspaceRoot, modulePath);
  if (inWorkspace !== undefined) return inWorkspace;
  const posix = modulePath.replace(/\\/g, '/');
  const packageStart = posix.lastIndexOf('/node_modules/');
  return packageStart >= 0 ? posix.slice(packageStart + '/node_modules/'.length) : path.posix.basename(posix);
}

/**
 * Text that may carry machine paths (checker type strings, error messages)
 * made machine-independent: `import("…")` qualifiers are dropped (the type
 * name stays), a module's own `import("…")` keeps a workspace-relative or
 * package path, then any remaining mention of the workspace root becomes
 * workspace-relative. Chunks are indexed and may move between machines.
 */
export function withoutMachinePaths(text: string, workspaceRoot: string): string {
  let out = text.includes('import(')
    ? text.replace(IMPORT_TYPE, (_m, quote: string, modulePath: string, qualifier: string | undefined) =>
        qualifier ? '' : `import(${quote}${portableModulePath(modulePath, workspaceRoot)}${quote})`,
      )
    : text;
  if (workspaceRoot !== '' && out.includes(workspaceRoot)) {
    const root = workspaceRoot.replace(/[\\/]+$/, '');
    out = out.split(`${root}/`).join('').split(`${root}\\`).join('').split(root).join('.');
  }
  return out;
}

/** A declaration's one-line signature, uncut: the caller removes machine paths before cutting, so none is left half. */
function renderSignature(
  checker: ts.TypeChecker,
  decl: ts.Declaration,
  symbol: ts.Symbol,
  chunk: SymbolNode | undefined,
): string {
  const sf = decl.getSourceFile();
  if (ts.isInterfaceDeclaration(decl) || ts.isTypeAliasDeclaration(decl) || ts.isEnumDeclaration(decl)) {
    const head = sf.text.slice(decl.getStart(sf), Math.min(decl.end, decl.getStart(sf) + 2000));
    return compact(head.replace(/\/\*[\s\S]*?\*\/|\/\/[^\n]*/g, ''));
  }
  if (chunk && chunk.kind !== 'variable') return chunk.signature;
  if (ts.isVariableDeclaration(decl) || ts.isParameter(decl) || ts.isPropertyDeclaration(decl) || ts.isBindingElement(decl)) {
    const typed = (decl as ts.VariableDeclaration).type;
    const type = typed ? compact(sf.text.slice(typed.getStart(sf), typed.end)) : checker.typeToString(checker.getTypeOfSymbolAtLocation(symbol, decl));
    const keyword = ts.isVariableDeclaration(decl) ? `${variableKeyword(decl)} ` : '';
    return `${keyword}${symbol.name}: ${type}`;
  }
  if (chunk) return chunk.signature;
  const start = decl.getStart(sf);
  const newline = sf.text.indexOf('\n', start);
  return compact(sf.text.slice(start, newline < 0 || newline > decl.end ? decl.end : newline));
}

/**
 * References from `sym`'s own source: its text minus the bodies of children
 * that collapse (those references belong to the children's chunks). The
 * chunk itself, its parameters and locals (declared inside its range), and
 * declarations outside the workspace or in node_modules are left out. Most
 * used first, at most MAX_REFERENCES.
 */
export function resolveReferences(sym: SymbolNode, ctx: ReferenceContext): SymbolReference[] {
  const { checker, sourceFile: sf } = ctx;
  // Collapsed bodies in source order (inner symbols do not overlap), searched
  // by bisection: the module chunk of a bundle has thousands of them.
  const skipStarts: number[] = [];
  const skipEnds: number[] = [];
  for (const c of sym.inner) {
    if (!isCollapsible(sf, c)) continue;
    skipStarts.push(c.bodyStart);
    skipEnds.push(c.bodyEnd);
  }
  /** Whether [pos, end) lies inside one collapsed body. */
  const insideSkipped = (pos: number, end: number): boolean => {
    let lo = 0;
    let hi = skipStarts.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (skipStarts[mid] <= pos) lo = mid + 1;
      else hi = mid;
    }
    return lo > 0 && end <= skipEnds[lo - 1];
  };
  const found = new Map<ts.Symbol, { count: number; first: number; ref: SymbolReference }>();
  const rejected = new Set<ts.Symbol>();
  const visit = (node: ts.Node): boolean => {
    if (node.end <= sym.start || node.pos >= sym.end) return false;
    if (insideSkipped(node.pos, node.end)) return false;
    if (!ts.isIdentifier(node)) return true;
    visitIdentifier(node);
    return false;
  };
  const visitIdentifier = (id: ts.Identifier): void => {
    if (isDeclarationName(id) || ts.isJsxAttribute(id.parent)) return;
    if (isPropertyName(id) && !hasSimpleReceiver(id)) return;
    const start = id.getStart(sf);
    if (insideSkipped(start, start + 1)) return;
    const symbol = resolve(checker, id);
    if (!symbol || rejected.has(symbol)) return;
    const seen = found.get(symbol);
    if (seen) {
      seen.count++;
      return;
    }
    const ref = toReference(symbol, isPropertyName(id));
    if (!ref) {
      rejected.add(symbol);
      return;
    }
    found.set(symbol, { count: 1, first: start, ref });
  };
  const toReference = (symbol: ts.Symbol, viaProperty: boolean): SymbolReference | undefined => {
    const decl = symbol.declarations?.[0];
    // A whole module (`import * as m`, `require('./m')`): the checker names it by its absolute
    // path, and the Dependencies line already names it by its specifier.
    if (!decl || ts.isSourceFile(decl)) return undefined;
    const declFile = decl.getSourceFile();
    if (declFile === sf && decl.pos >= sym.start && decl.end <= sym.end) return undefined;
    // Default lib files (lib.*.d.ts) carry no-default-lib; they are never workspace code,
    // even when a workspace happens to contain a copy of TypeScript.
    if (declFile.hasNoDefaultLib) return undefined;
    const rel = workspacePath(ctx.workspaceRoot, declFile.fileName);
    if (rel === undefined) return undefined;
    const chunk = discoverSymbols(declFile, rel).byNode.get(decl);
    // Member names after a dot resolve to every field of every workspace type;
    // only those that are chunks of their own (methods, class properties) say something.
    if (viaProperty && !chunk) return undefined;
    if (chunk === sym) return undefined;
    return {
      name: chunk ? chunk.qualifiedName : symbol.name,
      signature: limit(withoutMachinePaths(renderSignature(checker, decl, symbol, chunk), ctx.workspaceRoot)),
      relativePath: rel,
      chunkId: chunk ? chunk.id : '',
    };
  };
  for (const root of sym.roots) walkTree(root, visit);
  return [...found.values()]
    .sort((a, b) => b.count - a.count || a.first - b.first)
    .slice(0, MAX_REFERENCES)
    .map((f) => f.ref);
}
