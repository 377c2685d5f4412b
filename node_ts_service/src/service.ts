// The analysis service's use cases in domain terms: scan a workspace, chunk
// files, render symbols. The gRPC layer (server.ts) only converts and maps
// errors; everything here is testable without a network.
import * as path from 'node:path';
import ts from 'typescript';
import { chunkSourceFile } from './chunker';
import type { AnalysisConfig } from './config';
import { type FsOps, type Skip, isSourceFileName, languageOf, loadSource, realFs, skipForError } from './fileio';
import { type ProgramView, warmLibraries } from './program';
import { renderSymbol } from './render';
import { ScanCancelledError, compareStrings, listSourceFiles, scanWorkspace } from './scanner';
import { countTokens } from './tokens';
import { type TraceRequest, type TraceResult, TraceProjectHost, trace } from './trace';
import type { ChunkedFile, FileEntry, Language, RenderedSymbol, RenderSpec, ScanResult } from './types';
import { RequestError, type Workspace, WorkspaceRegistry, resolveRequestPath } from './workspace';

export interface ScanRequest {
  workspaceRoot: string;
  previous: FileEntry[];
  excludePatterns: string[];
}

export interface ChunkRequest {
  workspaceRoot: string;
  paths: string[];
  includeReferences: boolean;
}

/** A render spec plus the file the caller indexed the symbol from. */
export interface RenderTarget extends RenderSpec {
  relativePath: string;
}

export interface RenderRequest {
  workspaceRoot: string;
  specs: RenderTarget[];
}

export interface RenderResult {
  symbols: RenderedSymbol[];
  missingSymbolIds: string[];
}

export class CancelledError extends Error {
  constructor() {
    super('request cancelled by the client');
    this.name = 'CancelledError';
  }
}

interface ChunkTarget {
  relativePath: string;
  absolutePath: string;
  skip: Skip | undefined;
}

interface LoadedTarget {
  target: ChunkTarget;
  sizeBytes: number;
  mtimeNs: number;
  load: ReturnType<typeof loadSource> | undefined;
}

const SCRIPT_KIND: Record<Language, ts.ScriptKind> = {
  typescript: ts.ScriptKind.TS,
  tsx: ts.ScriptKind.TSX,
  javascript: ts.ScriptKind.JS,
  jsx: ts.ScriptKind.JSX,
};

/**
 * Files per Program update when references are on. Every update that
 * changes a Program builds a new type checker (hundreds of ms with the DOM
 * lib), so updates are per window rather than per file; the window bounds
 * the texts held ahead of the stream.
 */
const REFERENCE_WINDOW = 512;

export class AnalysisService {
  private readonly workspaces: WorkspaceRegistry;
  /** Whole-workspace LanguageServices for Trace, least recently used first. */
  private readonly traceHosts = new Map<string, TraceProjectHost>();

  constructor(
    private readonly config: Pick<AnalysisConfig, 'maxFileBytes' | 'maxPrograms' | 'maxRenderCacheFiles' | 'maxWorkspaces'>,
    private readonly fsOps: FsOps = realFs,
  ) {
    this.workspaces = new WorkspaceRegistry(config.maxWorkspaces, config.maxPrograms, config.maxRenderCacheFiles);
  }

  /**
   * Loads the parser, chunker and tokenizer so the first real request pays
   * no start-up cost, then parses the default libs in the background: they
   * take over a second, which would otherwise land on the first sync after a
   * start (one edited file), while the caller's other services start.
   */
  warmUp(): void {
    const text = '/** Greets. */\nexport function greet(name: string): string {\n  return `hi ${name}`;\n}\n';
    const sourceFile = ts.createSourceFile('/warmup/warmup.ts', text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
    const out = chunkSourceFile({
      absolutePath: '/warmup/warmup.ts',
      relativePath: 'warmup.ts',
      text,
      language: 'typescript',
      sourceFile,
      workspaceRoot: '/warmup',
    });
    if (out.chunks.length === 0 || countTokens(out.chunks[0].embeddingText) === 0) {
      throw new Error('warm-up chunking produced no chunks');
    }
    setImmediate(() => {
      try {
        warmLibraries();
      } catch {
        // Only a head start: the same failure recurs, and is reported, on the first request that needs a Program.
      }
    });
  }

  async scan(request: ScanRequest, isCancelled: () => boolean = () => false): Promise<ScanResult> {
    const workspace = this.workspaces.get(request.workspaceRoot);
    try {
      return await scanWorkspace({
        root: workspace.root,
        previous: request.previous,
        excludePatterns: request.excludePatterns,
        maxFileBytes: this.config.maxFileBytes,
        fsOps: this.fsOps,
        isCancelled,
      });
    } catch (err) {
      if (err instanceof ScanCancelledError) throw new CancelledError();
      throw err;
    }
  }

  /**
   * Yields one result per file in path order. Every path is validated before
   * the first result, so a bad request fails as a whole instead of midway.
   */
  async *chunkFiles(request: ChunkRequest, isCancelled: () => boolean = () => false): AsyncGenerator<ChunkedFile> {
    const workspace = this.workspaces.get(request.workspaceRoot);
    if (request.paths.length === 0) throw new RequestError('invalid_argument', 'paths is empty: name at least one file or directory');
    const targets = await this.expandTargets(workspace, request.paths, isCancelled);
    const windowSize = request.includeReferences ? REFERENCE_WINDOW : 1;
    for (let start = 0; start < targets.length; start += windowSize) {
      if (isCancelled()) throw new CancelledError();
      const window = targets.slice(start, start + windowSize).map((t) => this.loadTarget(t));
      const views = request.includeReferences ? this.programViews(workspace, window) : undefined;
      for (const loaded of window) {
        if (isCancelled()) throw new CancelledError();
        const result = this.toChunkedFile(workspace, loaded, views?.get(loaded.target.absolutePath));
        workspace.rememberSymbols(result.relativePath, result.chunks);
        yield result;
        // Let cancellation and health checks through between files.
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    }
  }

  render(request: RenderRequest): RenderResult {
    const workspace = this.workspaces.get(request.workspaceRoot);
    const symbols: RenderedSymbol[] = [];
    const missingSymbolIds: string[] = [];
    for (const spec of request.specs) {
      const candidates = [spec.relativePath, workspace.pathOfSymbol(spec.symbolId)].filter(
        (p, i, all): p is string => !!p && all.indexOf(p) === i,
      );
      let rendered: RenderedSymbol | undefined;
      for (const relativePath of candidates) {
        const source = this.renderSource(workspace, relativePath);
        rendered = source && renderSymbol(source.chunks, source.text, { symbolId: spec.symbolId, expandChildIds: spec.expandChildIds });
        if (rendered) break;
      }
      if (rendered) symbols.push(rendered);
      else missingSymbolIds.push(spec.symbolId);
    }
    return { symbols, missingSymbolIds };
  }

  /**
   * Traces a symbol across the whole workspace. The Program covers every
   * source file the scanner lists, because callers and subtypes can be anywhere.
   */
  async trace(request: TraceRequest, deadlineMs: number, isCancelled: () => boolean = () => false): Promise<TraceResult> {
    const workspace = this.workspaces.get(request.workspaceRoot);
    let listing;
    try {
      listing = await listSourceFiles({ root: workspace.root, fsOps: this.fsOps, isCancelled });
    } catch (err) {
      if (err instanceof ScanCancelledError) throw new CancelledError();
      throw err;
    }
    if (isCancelled()) throw new CancelledError();
    let host = this.traceHosts.get(workspace.root);
    if (host) this.traceHosts.delete(workspace.root);
    else host = new TraceProjectHost(workspace.root);
    this.traceHosts.set(workspace.root, host);
    while (this.traceHosts.size > this.config.maxWorkspaces) {
      const [oldestRoot, oldest] = this.traceHosts.entries().next().value as [string, TraceProjectHost];
      oldest.dispose();
      this.traceHosts.delete(oldestRoot);
    }
    const project = host.project(listing.files.map((f) => f.absolutePath));
    return trace(project, request, deadlineMs);
  }

  dispose(): void {
    for (const host of this.traceHosts.values()) host.dispose();
    this.traceHosts.clear();
    this.workspaces.dispose();
  }

  private async expandTargets(workspace: Workspace, paths: string[], isCancelled: () => boolean): Promise<ChunkTarget[]> {
    const byPath = new Map<string, ChunkTarget>();
    for (const raw of paths) {
      const resolved = resolveRequestPath(workspace, raw);
      if (resolved.realOutside !== undefined) {
        byPath.set(resolved.relativePath, {
          relativePath: resolved.relativePath,
          absolutePath: resolved.absolutePath,
          skip: { reason: 'outside_workspace', detail: `resolves to ${resolved.realOutside}` },
        });
      } else if (resolved.isDirectory) {
        let listing;
        try {
          listing = await listSourceFiles({ root: workspace.root, under: resolved.relativePath, fsOps: this.fsOps, isCancelled });
        } catch (err) {
          if (err instanceof ScanCancelledError) throw new CancelledError();
          throw err;
        }
        for (const file of listing.files) byPath.set(file.relativePath, { ...file, skip: undefined });
        for (const skipped of listing.skipped) {
          byPath.set(skipped.relativePath, {
            relativePath: skipped.relativePath,
            absolutePath: path.join(workspace.root, skipped.relativePath),
            skip: { reason: skipped.reason, detail: skipped.detail },
          });
        }
      } else {
        // A file named explicitly is chunked even when .gitignore hides it:
        // the caller asked for it. It must still be JS/TS source.
        if (languageOf(resolved.relativePath) === undefined) {
          throw new RequestError('invalid_argument', `not a TypeScript or JavaScript source file: ${JSON.stringify(raw)}`);
        }
        byPath.set(resolved.relativePath, { relativePath: resolved.relativePath, absolutePath: resolved.absolutePath, skip: undefined });
      }
    }
    return [...byPath.values()].sort((a, b) => compareStrings(a.relativePath, b.relativePath));
  }

  private loadTarget(target: ChunkTarget): LoadedTarget {
    if (target.skip) return { target, sizeBytes: 0, mtimeNs: 0, load: undefined };
    let stats;
    try {
      stats = this.fsOps.stat(target.absolutePath);
    } catch (err) {
      return { target: { ...target, skip: skipForError(err) }, sizeBytes: 0, mtimeNs: 0, load: undefined };
    }
    const sizeBytes = Number(stats.size);
    const load = loadSource(target.absolutePath, sizeBytes, this.config.maxFileBytes, this.fsOps);
    return { target, sizeBytes, mtimeNs: Number(stats.mtimeNs), load };
  }

  private programViews(workspace: Workspace, window: LoadedTarget[]): Map<string, ProgramView | undefined> {
    const views = new Map<string, ProgramView | undefined>();
    const programFiles = window.flatMap((b) =>
      b.load?.ok ? [{ absolutePath: b.target.absolutePath, text: b.load.text, contentHash: b.load.contentHash }] : [],
    );
    workspace.projects.withPrograms(programFiles, (file, view) => views.set(file.absolutePath, view));
    return views;
  }

  private toChunkedFile(workspace: Workspace, loaded: LoadedTarget, view: ProgramView | undefined): ChunkedFile {
    const { target, load } = loaded;
    const base = {
      relativePath: target.relativePath,
      diagnostics: [] as string[],
      chunks: [],
      mtimeNs: loaded.mtimeNs,
      sizeBytes: loaded.sizeBytes,
    };
    const skip = target.skip ?? (load && !load.ok ? load : undefined);
    if (skip || !load || !load.ok) {
      return {
        ...base,
        status: 'skipped',
        skipReason: skip?.reason ?? 'unreadable',
        skipDetail: skip?.detail ?? '',
        contentHash: load?.contentHash ?? '',
        lineCount: 0,
      };
    }
    const language = languageOf(target.relativePath) ?? 'typescript';
    const sourceFile =
      view?.sourceFile ?? ts.createSourceFile(target.absolutePath, load.text, ts.ScriptTarget.Latest, true, SCRIPT_KIND[language]);
    const out = chunkSourceFile({
      absolutePath: target.absolutePath,
      relativePath: target.relativePath,
      text: load.text,
      language,
      sourceFile,
      checker: view?.checker,
      workspaceRoot: workspace.root,
    });
    return {
      ...base,
      status: out.hasSyntaxErrors ? 'syntax_errors' : 'ok',
      skipDetail: '',
      diagnostics: out.diagnostics,
      chunks: out.chunks,
      contentHash: load.contentHash,
      lineCount: load.lineCount,
    };
  }

  private renderSource(workspace: Workspace, relativePath: string): { text: string; chunks: ChunkedFile['chunks'] } | undefined {
    let resolved;
    try {
      resolved = resolveRequestPath(workspace, relativePath);
    } catch (err) {
      // A stale or foreign hint is not the caller's fault: the symbol is just not there.
      if (err instanceof RequestError) return undefined;
      throw err;
    }
    if (resolved.isDirectory || resolved.realOutside !== undefined || !isSourceFileName(resolved.relativePath)) return undefined;
    const loaded = this.loadTarget({ relativePath: resolved.relativePath, absolutePath: resolved.absolutePath, skip: undefined });
    if (!loaded.load?.ok) return undefined;
    const cached = workspace.cachedRender(resolved.relativePath, loaded.load.contentHash);
    if (cached) return cached;
    const chunked = this.toChunkedFile(workspace, loaded, undefined);
    workspace.rememberSymbols(chunked.relativePath, chunked.chunks);
    const entry = { contentHash: loaded.load.contentHash, text: loaded.load.text, chunks: chunked.chunks };
    workspace.cacheRender(resolved.relativePath, entry);
    return entry;
  }
}
