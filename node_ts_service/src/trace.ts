// Trace: follows one symbol through a LanguageService (callers, callees,
// references, implementations, supertypes, subtypes), bounded by depth, a
// node limit and a time budget, and names every location by the chunk that
// encloses it so answers line up with the index.
import * as fs from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';
import { type Project, openProject } from './program';
import { workspacePath } from './references';
import { discoverSymbols, endLineOf, lineOf, startLineOf, type SymbolNode } from './symbols';
import {
  type ChunkAt,
  ChunksByName,
  callablePosition,
  declarationNamePosition,
  enclosingChunk,
  isRealImplementation,
  namedSites,
  nodeAt,
  unresolvedCallees,
} from './traceByName';
import { RequestError, lexicalRelativePath, quoted } from './workspace';

export type TraceDirection = 'callers' | 'callees' | 'references' | 'implementations' | 'supertypes' | 'subtypes';
/** See TracePartialReason in analysis.proto; `unresolved`: name-matched sites were added. */
export type TracePartialReason = 'limit' | 'deadline' | 'depth' | 'unresolved';
/** How a node was found: resolved by the type checker, or matched by name where it could not resolve. */
export type TraceResolution = 'checker' | 'name';

export interface TraceRequest {
  workspaceRoot: string;
  symbol: string;
  relativePath: string;
  direction: TraceDirection;
  /** 0 means the default. */
  depth: number;
  /** 0 means the default. */
  limit: number;
}

export interface TraceSymbol {
  relativePath: string;
  qualifiedName: string;
  startLine: number;
  endLine: number;
  chunkId: string;
}

export interface TraceNode {
  relativePath: string;
  qualifiedName: string;
  chunkId: string;
  line: number;
  snippet: string;
  depth: number;
  resolvedBy: TraceResolution;
}

export interface TraceResult {
  root: TraceSymbol;
  nodes: TraceNode[];
  partial: boolean;
  partialReason: TracePartialReason | undefined;
  totalFound: number;
  returned: number;
}

export const DEFAULT_TRACE_DEPTH = 1;
export const MAX_TRACE_DEPTH = 3;
export const DEFAULT_TRACE_LIMIT = 50;
/** Even with a generous client deadline a trace holds its checker worker at most this long. */
export const TRACE_BUDGET_MS = 5000;
const SNIPPET_LIMIT = 160;

/** The LanguageService of a workspace and the files it covers. */
export interface TraceProject {
  service: ts.LanguageService;
  root: string;
}

interface Location {
  fileName: string;
  pos: number;
  /** Found by name where the checker could not resolve; absent: by the checker. */
  resolvedBy?: TraceResolution;
}

class Budget {
  constructor(
    private readonly deadlineMs: number,
    private readonly isCancelled: () => boolean,
  ) {}
  get expired(): boolean {
    return Date.now() >= this.deadlineMs || this.isCancelled();
  }
}

class Collector {
  readonly nodes: TraceNode[] = [];
  private readonly seen = new Set<string>();
  totalFound = 0;
  partialReason: TracePartialReason | undefined;

  constructor(
    private readonly project: TraceProject,
    private readonly program: ts.Program,
    readonly limit: number,
  ) {}

  get full(): boolean {
    return this.nodes.length >= this.limit;
  }

  /** Adds a location once; returns false when it was already there or lies outside the workspace. */
  add(loc: Location, depth: number, resolvedBy: TraceResolution = 'checker'): boolean {
    const sf = this.program.getSourceFile(loc.fileName);
    if (!sf) return false;
    const rel = workspacePath(this.project.root, sf.fileName);
    if (rel === undefined) return false;
    const line = lineOf(sf, loc.pos);
    const key = `${rel}:${line}:${loc.pos}`;
    if (this.seen.has(key)) return false;
    this.seen.add(key);
    this.totalFound++;
    if (this.full) {
      this.partialReason ??= 'limit';
      return true;
    }
    const chunk = enclosingChunk(sf, rel, loc.pos);
    this.nodes.push({
      relativePath: rel,
      qualifiedName: chunk?.qualifiedName ?? '',
      chunkId: chunk?.id ?? '',
      line,
      snippet: snippetAt(sf, loc.pos),
      depth,
      resolvedBy,
    });
    return true;
  }
}

function snippetAt(sf: ts.SourceFile, pos: number): string {
  const { line } = sf.getLineAndCharacterOfPosition(pos);
  const starts = sf.getLineStarts();
  const end = line + 1 < starts.length ? starts[line + 1] : sf.text.length;
  const text = sf.text.slice(starts[line], end).trim();
  return text.length <= SNIPPET_LIMIT ? text : `${text.slice(0, SNIPPET_LIMIT - 1)}…`;
}

interface ResolvedRoot {
  root: TraceSymbol;
  fileName: string;
  pos: number;
  chunk: ChunkAt;
}

const LOCATION = /^(.+):(\d+)$/;

function resolveRoot(project: TraceProject, program: ts.Program, request: TraceRequest): ResolvedRoot {
  const symbol = request.symbol.trim();
  if (symbol === '') throw new RequestError('invalid_argument', 'symbol is empty: give a qualified name or path:line');
  const files = program
    .getSourceFiles()
    .map((sf) => ({ sf, rel: workspacePath(project.root, sf.fileName) }))
    .filter((f): f is { sf: ts.SourceFile; rel: string } => f.rel !== undefined && !f.sf.isDeclarationFile);
  const located = LOCATION.exec(symbol);
  const toRoot = (sf: ts.SourceFile, rel: string, sym: SymbolNode): ResolvedRoot => ({
    root: { relativePath: rel, qualifiedName: sym.qualifiedName, startLine: startLineOf(sf, sym), endLine: endLineOf(sf, sym), chunkId: sym.id },
    fileName: sf.fileName,
    pos: declarationNamePosition({ sf, sym }),
    chunk: { sf, sym },
  });
  // `\` read as `/` (a Windows-style path from an agent), `..` resolved within the workspace.
  const relativeOf = (given: string) => lexicalRelativePath([project.root], given.replace(/\\/g, '/'));
  if (located) {
    const wanted = relativeOf(located[1]);
    const line = Number(located[2]);
    const file = files.find((f) => f.rel === wanted);
    if (!file) throw new RequestError('not_found', `no TypeScript or JavaScript file ${quoted(wanted)} in the workspace`);
    const starts = file.sf.getLineStarts();
    if (line < 1 || line > starts.length) throw new RequestError('invalid_argument', `line ${line} is outside ${wanted} (${starts.length} lines)`);
    // The innermost chunk that starts on the line, else the innermost one that spans it.
    const symbols = discoverSymbols(file.sf, file.rel).all.filter((s) => s !== discoverSymbols(file.sf, file.rel).module);
    const startsHere = symbols.filter((s) => startLineOf(file.sf, s) === line);
    const spans = symbols.filter((s) => startLineOf(file.sf, s) <= line && line <= endLineOf(file.sf, s));
    const sym = startsHere.at(-1) ?? spans.at(-1);
    if (!sym) throw new RequestError('not_found', `no symbol is declared at ${wanted}:${line}`);
    return toRoot(file.sf, file.rel, sym);
  }
  const wantedPath = request.relativePath.trim() === '' ? '' : relativeOf(request.relativePath);
  const matches: ResolvedRoot[] = [];
  for (const { sf, rel } of files) {
    if (wantedPath !== '' && rel !== wantedPath) continue;
    for (const sym of discoverSymbols(sf, rel).all) {
      if (sym.qualifiedName === symbol) matches.push(toRoot(sf, rel, sym));
    }
  }
  if (matches.length === 0) {
    const where = wantedPath === '' ? 'the workspace' : quoted(wantedPath);
    throw new RequestError('not_found', `no symbol named ${quoted(symbol)} in ${where}`);
  }
  const distinctFiles = new Set(matches.map((m) => m.root.relativePath));
  if (distinctFiles.size > 1) {
    const some = [...distinctFiles].slice(0, 5).join(', ');
    throw new RequestError('invalid_argument', `${quoted(symbol)} is declared in ${distinctFiles.size} files (${some}); set relative_path`);
  }
  return matches[0];
}

/** Class and interface declarations around a heritage-clause reference. */
function heritageOwner(node: ts.Node): ts.ClassLikeDeclaration | ts.InterfaceDeclaration | undefined {
  let n: ts.Node | undefined = node;
  while (n && !ts.isHeritageClause(n)) {
    if (ts.isBlock(n) || ts.isSourceFile(n)) return undefined;
    n = n.parent;
  }
  const owner = n?.parent;
  return owner && (ts.isClassLike(owner) || ts.isInterfaceDeclaration(owner)) ? owner : undefined;
}

function declarationNamePos(decl: ts.Node): number {
  const name = (decl as ts.Node & { name?: ts.Node }).name;
  return (name ?? decl).getStart(decl.getSourceFile());
}

/**
 * Runs a trace against a project whose Program already holds the workspace.
 * The budget (deadline, or the caller cancelling) is checked between
 * LanguageService calls: one call (the references of a very hot symbol) is
 * the unit that cannot be interrupted.
 */
export function trace(project: TraceProject, request: TraceRequest, deadlineMs: number, isCancelled: () => boolean = () => false): TraceResult {
  const program = project.service.getProgram();
  if (!program) throw new Error('the LanguageService has no Program');
  const budget = new Budget(Math.min(deadlineMs, Date.now() + TRACE_BUDGET_MS), isCancelled);
  const resolved = resolveRoot(project, program, request);
  let partialReason: TracePartialReason | undefined;
  let depth = request.depth === 0 ? DEFAULT_TRACE_DEPTH : request.depth;
  if (depth > MAX_TRACE_DEPTH) {
    depth = MAX_TRACE_DEPTH;
    partialReason = 'depth';
  }
  const limit = request.limit === 0 ? DEFAULT_TRACE_LIMIT : request.limit;
  const out = new Collector(project, program, limit);
  const ls = project.service;
  const checker = program.getTypeChecker();
  // Set when the checker left a site unresolved that the answer depends on: it is then not complete.
  let unresolved = false;
  const expired = () => budget.expired;
  /** The chunk at a location: the root itself, else the innermost chunk around it. */
  const chunkAt = (loc: Location): ChunkAt | undefined => {
    if (loc.fileName === resolved.fileName && loc.pos === resolved.pos) return resolved.chunk;
    const sf = program.getSourceFile(loc.fileName);
    const rel = sf && workspacePath(project.root, sf.fileName);
    const sym = sf && rel !== undefined ? enclosingChunk(sf, rel, loc.pos) : undefined;
    return sf && sym ? { sf, sym } : undefined;
  };
  const byName = (sites: { sf: ts.SourceFile; node: ts.Node }[]): Location[] => {
    if (sites.length > 0) unresolved = true;
    return sites.map(({ sf, node }) => ({ fileName: sf.fileName, pos: node.getStart(sf), resolvedBy: 'name' as const }));
  };

  const bfs = (expand: (loc: Location) => Location[]): void => {
    let frontier: Location[] = [{ fileName: resolved.fileName, pos: resolved.pos }];
    const expanded = new Set<string>();
    for (let level = 1; level <= depth && frontier.length > 0; level++) {
      const next: Location[] = [];
      for (const loc of frontier) {
        if (budget.expired) {
          partialReason ??= 'deadline';
          return;
        }
        const key = `${loc.fileName}:${loc.pos}`;
        if (expanded.has(key)) continue;
        expanded.add(key);
        for (const found of expand(loc)) {
          if (out.add(found, level, found.resolvedBy)) next.push(found);
        }
      }
      frontier = next;
    }
  };

  switch (request.direction) {
    case 'references': {
      const referenced = ls.findReferences(resolved.fileName, resolved.pos) ?? [];
      for (const group of referenced) {
        for (const ref of group.references) {
          if (ref.isDefinition) continue;
          out.add({ fileName: ref.fileName, pos: ref.textSpan.start }, 1);
        }
      }
      for (const found of byName(namedSites(program, project.root, checker, resolved.chunk, 'references', expired).unresolved)) out.add(found, 1, 'name');
      break;
    }
    case 'callers':
    case 'callees': {
      // Call-hierarchy items are the functions themselves; a caller node sits
      // at its call site, a callee node at the callee's declaration.
      const itemsAt = (loc: Location): ts.CallHierarchyItem[] => {
        const prepared = ls.prepareCallHierarchy(loc.fileName, loc.pos);
        return prepared === undefined ? [] : Array.isArray(prepared) ? prepared : [prepared];
      };
      const expand = (loc: Location): Location[] => {
        const found: Location[] = [];
        for (const item of itemsAt(loc)) {
          if (request.direction === 'callers') {
            for (const call of ls.provideCallHierarchyIncomingCalls(item.file, item.selectionSpan.start)) {
              for (const span of call.fromSpans) found.push({ fileName: call.from.file, pos: span.start });
            }
          } else {
            for (const call of ls.provideCallHierarchyOutgoingCalls(item.file, item.selectionSpan.start)) {
              found.push({ fileName: call.to.file, pos: call.to.selectionSpan.start });
            }
          }
        }
        return found;
      };
      if (request.direction === 'callers') {
        // A caller node is a call site; the next hop starts from the function around it. Where
        // the call hierarchy finds none (it does not see `exports.f = function`), the calls the
        // checker resolves to the function are its callers all the same.
        bfs((loc) => {
          const chunk = chunkAt(loc);
          if (!chunk) return [];
          const named = namedSites(program, project.root, checker, chunk, 'calls', expired);
          let calls = expand({ fileName: chunk.sf.fileName, pos: callablePosition(chunk) });
          if (calls.length === 0) calls = named.target.map(({ sf, node }) => ({ fileName: sf.fileName, pos: node.getStart(sf) }));
          return [...calls, ...byName(named.unresolved)];
        });
      } else {
        const chunks = new ChunksByName(program, project.root);
        bfs((loc) => {
          const chunk = chunkAt(loc);
          if (!chunk) return expand(loc);
          const named = unresolvedCallees(checker, chunk, chunks);
          if (named.unresolved > 0) unresolved = true;
          return [
            // The chunk's own declaration is asked where the call hierarchy sees its function;
            // any other location (a function inside the chunk) as it is.
            ...expand(loc.pos === declarationNamePosition(chunk) ? { fileName: loc.fileName, pos: callablePosition(chunk) } : loc),
            ...named.candidates.map((c) => ({ fileName: c.sf.fileName, pos: declarationNamePosition(c), resolvedBy: 'name' as const })),
          ];
        });
      }
      break;
    }
    case 'implementations': {
      // A member (an interface's method, an abstract method) is implemented by members; a type by classes and objects.
      const declaration = resolved.chunk.sym.nodes[0];
      const memberRoot = declaration !== undefined && declaration.parent !== undefined && (ts.isClassLike(declaration.parent) || ts.isInterfaceDeclaration(declaration.parent) || ts.isTypeLiteralNode(declaration.parent));
      for (const impl of ls.getImplementationAtPosition(resolved.fileName, resolved.pos) ?? []) {
        if (impl.fileName === resolved.fileName && impl.textSpan.start <= resolved.pos && resolved.pos < impl.textSpan.start + impl.textSpan.length) continue;
        const sf = program.getSourceFile(impl.fileName);
        if (!sf || !isRealImplementation(sf, impl.textSpan.start, impl.textSpan.length, memberRoot)) continue;
        out.add({ fileName: impl.fileName, pos: impl.textSpan.start }, 1);
      }
      break;
    }
    case 'supertypes': {
      bfs((loc) => {
        const sf = program.getSourceFile(loc.fileName);
        if (!sf) return [];
        let decl: ts.Node | undefined = nodeAt(sf, loc.pos);
        while (decl && !ts.isClassLike(decl) && !ts.isInterfaceDeclaration(decl)) decl = decl.parent;
        if (!decl) return [];
        const found: Location[] = [];
        for (const clause of decl.heritageClauses ?? []) {
          for (const type of clause.types) {
            let sym = checker.getSymbolAtLocation(type.expression);
            if (sym && sym.flags & ts.SymbolFlags.Alias) sym = checker.getAliasedSymbol(sym);
            for (const d of sym?.declarations ?? []) {
              if (ts.isClassLike(d) || ts.isInterfaceDeclaration(d)) found.push({ fileName: d.getSourceFile().fileName, pos: declarationNamePos(d) });
            }
          }
        }
        return found;
      });
      break;
    }
    case 'subtypes': {
      bfs((loc) => {
        const found: Location[] = [];
        for (const group of ls.findReferences(loc.fileName, loc.pos) ?? []) {
          for (const ref of group.references) {
            if (ref.isDefinition) continue;
            const sf = program.getSourceFile(ref.fileName);
            const owner = sf && heritageOwner(nodeAt(sf, ref.textSpan.start));
            if (owner) found.push({ fileName: ref.fileName, pos: declarationNamePos(owner) });
          }
        }
        return found;
      });
      break;
    }
  }
  // One LanguageService call cannot be interrupted; a budget it overran still
  // makes the answer partial, since later hops or groups were not looked at.
  if (budget.expired && out.partialReason === undefined) partialReason ??= 'deadline';
  partialReason = out.partialReason ?? partialReason ?? (unresolved ? 'unresolved' : undefined);
  return {
    root: resolved.root,
    nodes: out.nodes,
    partial: partialReason !== undefined,
    partialReason,
    totalFound: out.totalFound,
    returned: out.nodes.length,
  };
}

/**
 * One LanguageService per workspace over every source file the scanner
 * lists; texts come from disk and are re-read when their mtime moves, so an
 * unchanged workspace reuses its Program. It is separate from
 * ProjectRegistry because a trace needs the whole workspace in one Program
 * (callers live anywhere), while chunking deliberately keeps inferred
 * Programs to the requested files; both come from the same host factory.
 */
export class TraceProjectHost {
  private readonly live: Project;

  constructor(private readonly root: string) {
    this.live = openProject(compilerOptionsFor(root), root, root, []);
  }

  /** The project over exactly these workspace files (absolute paths), edits since the last call picked up. */
  project(absolutePaths: string[]): TraceProject {
    this.live.host.setRoots([...absolutePaths].sort());
    this.live.host.refreshFromDisk();
    return { service: this.live.service, root: this.root };
  }

  dispose(): void {
    this.live.service.dispose();
  }
}

function compilerOptionsFor(root: string): ts.CompilerOptions {
  const configPath = ['tsconfig.json', 'jsconfig.json'].map((n) => path.join(root, n)).find((p) => fs.existsSync(p));
  const base: ts.CompilerOptions = {
    allowJs: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    allowImportingTsExtensions: true,
    esModuleInterop: true,
    jsx: ts.JsxEmit.Preserve,
  };
  if (!configPath) return { ...base, skipLibCheck: true, noEmit: true };
  const read = ts.readConfigFile(configPath, (file) => ts.sys.readFile(file));
  const parsed = ts.parseJsonConfigFileContent(read.config ?? {}, ts.sys, root, undefined, configPath);
  // The roots are every indexed file, JavaScript too: a TypeScript config without `allowJs`
  // (scripts and tools beside the sources) left them out, and a trace or read of a JS symbol the
  // search had returned failed with "no symbol named".
  return { ...parsed.options, allowJs: true, noEmit: true, skipLibCheck: true };
}
