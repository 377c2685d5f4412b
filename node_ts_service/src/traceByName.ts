// The part of a trace the type checker cannot do: in untyped JavaScript,
// inside a function assigned to a property (`res.send = function () {
// this.send(body) }`), or through a value of type any, a call names its
// target but the checker resolves it to nothing. Each such site that uses
// the root's name is added to the answer, marked as found by name, and the
// answer is not called complete. A site the checker resolves is its answer
// alone: a call it resolves to another `send` is not a caller of this one.
import ts from 'typescript';
import { workspacePath } from './references';
import { discoverSymbols, type SymbolNode } from './symbols';
import { walkTree } from './walk';

/** A chunk of the workspace: the symbol and the file it is declared in. */
export interface ChunkAt {
  sf: ts.SourceFile;
  sym: SymbolNode;
}

/** What the checker makes of a site: the target itself, another declaration, or nothing. */
export type SiteResolution = 'target' | 'other' | 'unresolved';

/**
 * A callee that matches by name is a candidate only when few chunks have
 * that name: `this.send()` is likely one of three `send`s, not one of forty.
 */
const MAX_NAME_CANDIDATES = 3;

/** The method or function name a call goes to: `f` of `f()`, `a.f()`, `a['f']()`, `a.f.call()`. */
export function calleeNameNode(call: ts.CallExpression | ts.NewExpression): ts.Identifier | ts.StringLiteralLike | undefined {
  let callee: ts.Expression = call.expression;
  while (ts.isParenthesizedExpression(callee)) callee = callee.expression;
  if (ts.isPropertyAccessExpression(callee) && ['call', 'apply', 'bind'].includes(callee.name.text) && !ts.isIdentifier(callee.expression)) {
    callee = callee.expression;
  }
  if (ts.isIdentifier(callee)) return callee;
  if (ts.isPropertyAccessExpression(callee) && ts.isIdentifier(callee.name)) return callee.name;
  if (ts.isElementAccessExpression(callee) && ts.isStringLiteralLike(callee.argumentExpression)) return callee.argumentExpression;
  return undefined;
}

function nameText(node: ts.Identifier | ts.StringLiteralLike): string {
  return node.text;
}

/** Whether `decl` lies inside the chunk (its declaration, the function assigned, or the statement around both). */
function isInside(decl: ts.Node, chunk: ChunkAt): boolean {
  // Where the declaration's text starts, not `pos`: that includes the comments before it, which
  // lie before the chunk of the statement a declaration opens (`// doc\nexports.f = function`).
  return decl.getSourceFile() === chunk.sf && decl.getStart(chunk.sf) >= chunk.sym.start - 1 && decl.end <= chunk.sym.end + 1;
}

export function resolutionAt(checker: ts.TypeChecker, name: ts.Node, target: ChunkAt): SiteResolution {
  let symbol = checker.getSymbolAtLocation(name);
  if (symbol && symbol.flags & ts.SymbolFlags.Alias) symbol = checker.getAliasedSymbol(symbol);
  const declarations = (symbol?.declarations ?? []).map((d) => destructuredProperty(checker, d) ?? [d]).flat();
  if (declarations.length === 0) return 'unresolved';
  return declarations.some((d) => isInside(d, target)) ? 'target' : 'other';
}

/**
 * The declarations of the property a destructuring binding takes (`parse` of
 * `const { parse } = require('./m')`): CommonJS's import, where the binding is
 * a local variable to the checker, not an alias of what the module exports.
 */
function destructuredProperty(checker: ts.TypeChecker, decl: ts.Declaration): ts.Declaration[] | undefined {
  if (!ts.isBindingElement(decl) || !ts.isObjectBindingPattern(decl.parent)) return undefined;
  const holder = decl.parent.parent;
  if (!ts.isVariableDeclaration(holder) || !holder.initializer) return undefined;
  const key = decl.propertyName ?? decl.name;
  if (!ts.isIdentifier(key) && !ts.isStringLiteralLike(key)) return undefined;
  return checker.getTypeAtLocation(holder.initializer).getProperty(key.text)?.declarations;
}

/**
 * `this.name` inside `obj.method` when `obj.name` is a chunk other than the
 * target: the sibling is what `this` most likely means, so the site is its
 * caller, not a name match for every other `name`.
 */
function belongsToSibling(sf: ts.SourceFile, relativePath: string, site: ts.Node, target: ChunkAt): boolean {
  if (!ts.isPropertyAccessExpression(site.parent) || site.parent.expression.kind !== ts.SyntaxKind.ThisKeyword) return false;
  const sibling = siblingNamed(sf, relativePath, enclosingChunk(sf, relativePath, site.getStart(sf)), (site as ts.Identifier).text);
  return sibling !== undefined && sibling !== target.sym;
}

/** The chunk `C.name` beside `C.method`, in the same file. */
function siblingNamed(sf: ts.SourceFile, relativePath: string, method: SymbolNode | undefined, name: string): SymbolNode | undefined {
  if (!method || !method.qualifiedName.includes('.')) return undefined;
  const wanted = `${method.qualifiedName.slice(0, method.qualifiedName.lastIndexOf('.'))}.${name}`;
  return discoverSymbols(sf, relativePath).all.find((s) => s.qualifiedName === wanted);
}

function isDeclarationName(node: ts.Node): boolean {
  const parent = node.parent as ts.Node & { name?: ts.Node };
  return parent !== undefined && parent.name === node && !ts.isPropertyAccessExpression(parent);
}

/** Sites that name a target, by what the checker makes of each (see `namedSites`). */
export interface NamedSites {
  /** Sites the checker leaves unresolved: candidates by name alone. */
  unresolved: { sf: ts.SourceFile; node: ts.Node }[];
  /**
   * Sites the checker resolves to the target: for calls, what the call hierarchy misses for a
   * function assigned to a property (`exports.parse = function`, `module.exports.parse = …`),
   * which it does not treat as a declaration, called as `require('./m').parse()`, `m.parse()` or
   * through `const { parse } = require('./m')`.
   */
  target: { sf: ts.SourceFile; node: ts.Node }[];
}

/**
 * Sites that name `target`, sorted by the checker's resolution in one walk of the files that
 * hold its name: calls for callers, every use of the name for references. The target's own
 * declaration is not a site, nor a site that resolves to another declaration. `expired` is
 * asked between files.
 */
export function namedSites(
  program: ts.Program,
  workspaceRoot: string,
  checker: ts.TypeChecker,
  target: ChunkAt,
  kind: 'calls' | 'references',
  expired: () => boolean,
): NamedSites {
  const name = target.sym.name;
  const sites: NamedSites = { unresolved: [], target: [] };
  for (const sf of program.getSourceFiles()) {
    const rel = workspacePath(workspaceRoot, sf.fileName);
    if (sf.isDeclarationFile || !sf.text.includes(name) || rel === undefined) continue;
    if (expired()) break;
    walkTree(sf, (node) => {
      let site: ts.Node | undefined;
      if (kind === 'calls' && (ts.isCallExpression(node) || ts.isNewExpression(node))) {
        const callee = calleeNameNode(node);
        if (callee && nameText(callee) === name) site = callee;
      } else if (kind === 'references' && ts.isIdentifier(node) && node.text === name && !isDeclarationName(node)) {
        site = node;
      }
      if (site && !(target.sf === sf && site.getStart(sf) === declarationNamePosition(target)) && !belongsToSibling(sf, rel, site, target)) {
        const resolution = resolutionAt(checker, site, target);
        if (resolution !== 'other') sites[resolution].push({ sf, node: site });
      }
      return true;
    });
  }
  return sites;
}

/** The innermost chunk whose source holds `pos`, or undefined at a bare top level. */
export function enclosingChunk(sf: ts.SourceFile, relativePath: string, pos: number): SymbolNode | undefined {
  const symbols = discoverSymbols(sf, relativePath);
  let best: SymbolNode | undefined;
  // Parents come before their children, so the last match is the innermost.
  for (const sym of symbols.all) {
    if (sym === symbols.module) continue;
    if (sym.start <= pos && pos < sym.end) best = sym;
  }
  return best;
}

/** The position of the chunk's declared name, where the trace asks the LanguageService about it. */
export function declarationNamePosition(chunk: ChunkAt): number {
  for (const node of chunk.sym.nodes) {
    const name = (node as ts.Node & { name?: ts.Node }).name;
    if (name && (ts.isIdentifier(name) || ts.isPrivateIdentifier(name) || ts.isStringLiteral(name))) return name.getStart(chunk.sf);
  }
  return chunk.sym.nodes[0]?.getStart(chunk.sf) ?? chunk.sym.start;
}

/**
 * Where the call hierarchy sees a chunk's function: the name of its own function or class node
 * when it has one. `module.exports = function rollupBundle() {}` is declared by the assignment,
 * whose first name is `exports`, and the call hierarchy has no item there.
 */
export function callablePosition(chunk: ChunkAt): number {
  for (const node of chunk.sym.nodes) {
    if (!ts.isFunctionLike(node) && !ts.isClassLike(node)) continue;
    const name = node.name;
    if (name && ts.isIdentifier(name) && name.text === chunk.sym.name) return name.getStart(chunk.sf);
  }
  return declarationNamePosition(chunk);
}

/** Every function-like chunk of the workspace by simple name, built on first use. */
export class ChunksByName {
  private byName: Map<string, ChunkAt[]> | undefined;

  constructor(
    private readonly program: ts.Program,
    private readonly workspaceRoot: string,
  ) {}

  get(name: string): ChunkAt[] {
    if (!this.byName) {
      this.byName = new Map();
      for (const sf of this.program.getSourceFiles()) {
        const rel = workspacePath(this.workspaceRoot, sf.fileName);
        if (rel === undefined || sf.isDeclarationFile) continue;
        for (const sym of discoverSymbols(sf, rel).all) {
          if (sym.kind !== 'function' && sym.kind !== 'method' && sym.kind !== 'accessor') continue;
          const list = this.byName.get(sym.name);
          if (list) list.push({ sf, sym });
          else this.byName.set(sym.name, [{ sf, sym }]);
        }
      }
    }
    return this.byName.get(name) ?? [];
  }
}

/**
 * Calls in the chunk's own source (its nested chunks aside) that the checker
 * leaves unresolved, and the chunks each may go to: for `this.name()` inside
 * `obj.method`, `obj.name` of the same file when there is one; else every
 * function or method of that name, when there are at most MAX_NAME_CANDIDATES.
 */
export function unresolvedCallees(checker: ts.TypeChecker, source: ChunkAt, chunks: ChunksByName): { unresolved: number; candidates: ChunkAt[] } {
  const { sf, sym } = source;
  const nested = sym.inner.filter((c) => c.bodyStart >= 0);
  const container = sym.qualifiedName.includes('.') ? sym.qualifiedName.slice(0, sym.qualifiedName.lastIndexOf('.')) : undefined;
  const candidates = new Map<SymbolNode, ChunkAt>();
  let unresolved = 0;
  for (const root of sym.roots) {
    walkTree(root, (node) => {
      if (nested.some((c) => node.pos >= c.bodyStart && node.end <= c.bodyEnd)) return false;
      if (!ts.isCallExpression(node) && !ts.isNewExpression(node)) return true;
      const callee = calleeNameNode(node);
      if (!callee || resolutionAt(checker, callee, source) !== 'unresolved') return true;
      unresolved++;
      const named = chunks.get(nameText(callee)).filter((c) => c.sym !== sym);
      const onThis = ts.isPropertyAccessExpression(callee.parent) && callee.parent.expression.kind === ts.SyntaxKind.ThisKeyword;
      const sibling = onThis && container !== undefined ? named.filter((c) => c.sf === sf && c.sym.qualifiedName === `${container}.${nameText(callee)}`) : [];
      for (const c of sibling.length > 0 ? sibling : named.length <= MAX_NAME_CANDIDATES ? named : []) candidates.set(c.sym, c);
      return true;
    });
  }
  return { unresolved, candidates: [...candidates.values()] };
}

/**
 * Whether an implementation the LanguageService reports is one: a class (or
 * class expression) or an object literal for a type, a member with a body
 * (or a value) for a member. It also reports interfaces that extend the
 * type and every array or variable of it, which implement nothing.
 */
export function isRealImplementation(sf: ts.SourceFile, start: number, length: number, memberRoot: boolean): boolean {
  let node = nodeAt(sf, start);
  // Up to the node the reported text is: a declaration's name, or an object literal as a whole.
  while (node.parent && node.end < start + length) node = node.parent;
  const decl = (ts.isIdentifier(node) || ts.isPrivateIdentifier(node) || ts.isStringLiteral(node)) && node.parent ? node.parent : node;
  if (!memberRoot) return ts.isClassLike(decl) || ts.isObjectLiteralExpression(decl);
  return (
    ((ts.isMethodDeclaration(decl) || ts.isGetAccessor(decl) || ts.isSetAccessor(decl) || ts.isFunctionDeclaration(decl)) && decl.body !== undefined) ||
    (ts.isPropertyDeclaration(decl) && decl.initializer !== undefined) ||
    ts.isPropertyAssignment(decl) ||
    ts.isShorthandPropertyAssignment(decl)
  );
}

/** The innermost node that spans `pos`; a loop down the tree, which may be deeper than the stack. */
export function nodeAt(sf: ts.SourceFile, pos: number): ts.Node {
  let node: ts.Node = sf;
  for (;;) {
    const child: ts.Node | undefined = ts.forEachChild(node, (c) => (c.getStart(sf) <= pos && pos < c.end ? c : undefined));
    if (!child) return node;
    node = child;
  }
}
