// The walk of symbol discovery: one pass over a parsed file, depth first in
// source order, that asks classify.ts what each candidate node stands for
// and turns the answers into SymbolNodes (ids, qualified names, overload
// sets, JSDoc), then adds the module chunk, the file's card.
import ts from 'typescript';
import type { FileSymbols, SymbolNode } from '../symbols';
import { isIifeCallee } from './calls';
import { CANDIDATE_KINDS, classify } from './classify';
import { longLiterals } from './longLiterals';
import { headerSignature, SIGNATURE_LIMIT, type Site, type Spec } from './spec';
import { stableId, truncate } from './text';

/** Name of the module chunk: a file's card, its whole text with every top-level symbol collapsed. */
export const MODULE_CHUNK_NAME = '<module top level>';

function hasBody(node: ts.Node): boolean {
  return (
    (ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node) || ts.isConstructorDeclaration(node)) &&
    node.body !== undefined
  );
}

export class Discovery implements Site {
  private readonly all: SymbolNode[] = [];
  private readonly roots: SymbolNode[] = [];
  private readonly byNode = new Map<ts.Node, SymbolNode>();
  private readonly dupCounters = new Map<SymbolNode | undefined, Map<string, number>>();
  private readonly text: string;

  constructor(
    readonly sf: ts.SourceFile,
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
  /** The parent and scope of the node being visited: the Site that classify reads. */
  parentSym: SymbolNode | undefined;
  moduleScope = true;
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
      const specs = classify(this, child);
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
    if (ts.isArrowFunction(node) || ts.isFunctionExpression(node)) return isIifeCallee(node);
    return ts.isBlock(node) && (ts.isArrowFunction(node.parent) || ts.isFunctionExpression(node.parent));
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
      last.signature = truncate(`${last.signature}\n${headerSignature(this.sf, spec.header, undefined)}`, SIGNATURE_LIMIT * 4);
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
      signature: spec.signature ?? headerSignature(this.sf, spec.header, spec.body?.start),
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
}
