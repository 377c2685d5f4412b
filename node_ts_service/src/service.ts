// The analysis service's use cases in domain terms: scan a workspace, chunk
// files, render symbols. The gRPC layer (server.ts) only converts and maps
// errors; everything here is testable without a network.
import { createHash } from 'node:crypto';
import * as path from 'node:path';
import type ts from 'typescript';
import { type ChunkText, chunkText, warmChunker } from './chunker';
import { CHECKER_WORKER_SCRIPT, ChunkJobError, CheckerWorker } from './checkerClient';
import type { ChunkDetail, FileResult, WindowFile } from './checkerProtocol';
import { type AnalysisConfig, DEFAULT_CHUNK_FILE_TIMEOUT_MS } from './config';
import { CancelledError } from './errors';
import { type FsOps, type Skip, isSourceFileName, languageOf, loadSource, realFs, skipForError } from './fileio';
import { isStackOverflow } from './program';
import { parseForRender, renderFromSource } from './render';
import { discoverSymbols } from './symbols';
import { RULE_SKIPS, ScanCancelledError, compareStrings, listSourceFiles, rescanWritten, scanWorkspace } from './scanner';
import { recordCacheLookup } from './tracing';
import type { TraceRequest, TraceResult } from './trace';
import type { ChunkedFile, FileEntry, RenderedSymbol, RenderSpec, ScanResult } from './types';
import { MissingPathError, RequestError, type Workspace, WorkspaceRegistry, quoted, resolveRequestPath } from './workspace';

export { CancelledError } from './errors';

export interface ScanRequest {
  workspaceRoot: string;
  previous: FileEntry[];
  excludePatterns: string[];
  /** A previous result's watchToken: see ScanWorkspaceRequest.unchanged_since. '' to always walk. */
  unchangedSince?: string;
  /** `previous` left out on purpose (ScanWorkspaceRequest.previous_omitted): walk nothing without it. */
  previousOmitted?: boolean;
}

export interface ChunkRequest {
  workspaceRoot: string;
  paths: string[];
  includeReferences: boolean;
  /** See ChunkFilesRequest.lexical_only: no embedding text, no references. */
  lexicalOnly: boolean;
}

/** A file parsed for rendering, one nested too deep for this thread's stack, or none to render from. */
type RenderSource = { sourceFile: ts.SourceFile; relativePath: string } | { tooDeep: ChunkText } | undefined;

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

interface ChunkTarget {
  relativePath: string;
  absolutePath: string;
  skip: Skip | undefined;
}

/** A window of files, read, and the worker job that chunks them. */
interface OpenWindow {
  loaded: LoadedTarget[];
  outputs: AsyncGenerator<FileResult>;
  /** The first output, asked for when the window opened, so that its job queued right away. */
  first: Promise<IteratorResult<FileResult>> | undefined;
}

/** What one ChunkFiles call has learnt about its workers so far. */
interface ChunkCallState {
  /** The detail jobs are started with; references are dropped after repeated crashes in a Program build. */
  detail: ChunkDetail;
  /** Jobs in a row that crashed before their first file. */
  buildCrashes: number;
  /** The call's deadline (epoch ms), Infinity when it has none. */
  deadlineMs: number;
}

interface LoadedTarget {
  target: ChunkTarget;
  sizeBytes: number;
  mtimeNs: number;
  load: ReturnType<typeof loadSource> | undefined;
}

/**
 * Files per Program update when references are on. Every update that
 * changes a Program builds a new type checker (hundreds of ms with the DOM
 * lib), so updates are per window rather than per file; the window bounds
 * the texts and outputs held ahead of the stream.
 */
const REFERENCE_WINDOW = 512;
/** Files per job of a syntax chunker: enough to keep it busy between jobs, few texts held. */
const SYNTAX_WINDOW = 32;
/**
 * Syntax chunkers: consecutive windows alternate between them, so the window
 * read ahead is parsed while this one streams. Two, because a cold index's
 * lexical-first pass is parse-bound and the machines we size for have two
 * cores or more; each worker holds its own parser (about 60 MiB).
 */
const SYNTAX_CHUNKERS = 2;
/**
 * How long after start-up the chunk checker parses the default libs, unless a
 * request has started it first. A cold start's first answer needs only the
 * syntax chunkers; on two cores the libs' parse (over a CPU-second) started
 * with them delayed that answer by as much, while every service was starting.
 */
const CHECKER_WARM_DELAY_MS = 5000;
/**
 * A chunk worker that crashes with the type checker on: the file it was on is
 * chunked alone without references. A job that crashes before its first file,
 * again and again, is crashing in the Program build (a project too big for
 * memory), so after this many such crashes in a row the rest of the call goes
 * without references rather than rebuilding and crashing once per file.
 */
const MAX_BUILD_CRASHES = 2;
/** Time kept back from a call's deadline to send the answers for the files left. */
const DEADLINE_MARGIN_MS = 2000;
/** A file gets at least this long, however little of the deadline is left. */
const MIN_FILE_TIMEOUT_MS = 1000;

export interface ServiceOptions {
  /** The checker worker's module; tests substitute one that misbehaves. */
  checkerWorkerScript?: string;
  /** Overrides CHECKER_WARM_DELAY_MS (tests). */
  checkerWarmDelayMs?: number;
}

type ServiceConfig = Pick<AnalysisConfig, 'maxFileBytes' | 'maxPrograms' | 'maxRenderCacheFiles' | 'maxWorkspaces'> &
  Partial<Pick<AnalysisConfig, 'chunkFileTimeoutMs' | 'maxRenderCacheChars' | 'maxWatchedFolders' | 'indexGenerated' | 'compileCacheDir'>>;

/**
 * Neither parsing for ChunkFiles nor the type checker runs on this thread:
 * chunking and Trace run in worker threads (checkerWorker.ts), one for
 * chunking with references (Programs), SYNTAX_CHUNKERS for syntax-only
 * chunking and one for Trace, so a cold index delays no health check or
 * RenderSymbols, a Trace does not queue behind a Program build, and the
 * lexical-first pass does not wait for one either. Listing, reading and
 * vetting files, ordering the stream and cancellation stay here; so does
 * RenderSymbols (one file, parsed once into the render cache).
 *
 * Measured on the 300k-line workspace (bench/speed/health_during_index.py)
 * with syntax-only chunking still on this thread, health answered in up to
 * 1.2 s on a loaded 2-core machine: a multi-megabyte file's parse is one
 * uninterruptible piece of work, hence its own worker.
 */
export class AnalysisService {
  private readonly workspaces: WorkspaceRegistry;
  private readonly chunkChecker: CheckerWorker;
  private readonly syntaxChunkers: CheckerWorker[];
  private readonly traceChecker: CheckerWorker;
  private checkerWarm: NodeJS.Timeout | undefined;
  private readonly checkerWarmDelayMs: number;

  constructor(
    private readonly config: ServiceConfig,
    private readonly fsOps: FsOps = realFs,
    options: ServiceOptions = {},
  ) {
    this.workspaces = new WorkspaceRegistry(config.maxWorkspaces, {
      files: config.maxRenderCacheFiles,
      chars: config.maxRenderCacheChars ?? Number.MAX_SAFE_INTEGER,
    });
    const limits = { maxPrograms: config.maxPrograms, maxWorkspaces: config.maxWorkspaces, compileCacheDir: config.compileCacheDir };
    const script = options.checkerWorkerScript ?? CHECKER_WORKER_SCRIPT;
    this.checkerWarmDelayMs = options.checkerWarmDelayMs ?? CHECKER_WARM_DELAY_MS;
    this.chunkChecker = new CheckerWorker('chunk checker', limits, script);
    this.syntaxChunkers = Array.from({ length: SYNTAX_CHUNKERS }, (_, i) => new CheckerWorker(`syntax chunker ${i + 1}`, limits, script));
    this.traceChecker = new CheckerWorker('trace checker', limits, script);
  }

  /**
   * Loads the parser, chunker and tokenizer here (RenderSymbols parses on
   * this thread) so the first real request pays no start-up cost, starts the
   * chunk workers, and has the checker worker parse the default libs a few
   * seconds later (CHECKER_WARM_DELAY_MS): they take over a second, which
   * would otherwise land on the first sync after a start (one edited file).
   */
  warmUp(): void {
    warmChunker();
    // Only a head start: a failure recurs, and is reported, on the first request that needs it.
    for (const chunker of this.syntaxChunkers) chunker.warm(false);
    this.checkerWarm = setTimeout(() => {
      this.checkerWarm = undefined;
      // A request that got there first parses the libs itself.
      if (!this.chunkChecker.started) this.chunkChecker.warm(true);
    }, this.checkerWarmDelayMs);
    this.checkerWarm.unref();
  }

  async scan(request: ScanRequest, isCancelled: () => boolean = () => false): Promise<ScanResult> {
    const workspace = this.workspaces.get(request.workspaceRoot);
    const { watch, reason } = workspace.folderWatch(this.config.maxWatchedFolders ?? 0);
    // What else decides a scan's answer: the same folders under other exclude patterns list other files.
    const key = createHash('sha256').update(JSON.stringify(request.excludePatterns)).digest('hex').slice(0, 16);
    if (watch && request.unchangedSince) {
      // The caller may have written a file just before it asked: the kernel queued that change
      // before the request arrived, and this lets the loop deliver it before the answer.
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (watch.unchangedSince(request.unchangedSince, key)) {
        return { files: [], added: [], changed: [], removed: [], skipped: [], durationMs: 0, watchToken: request.unchangedSince, unchanged: true };
      }
      // An agent's edit writes a file or two: those are read again, and the walk (45 ms on
      // ws-300k's 972 files, then the caller's catalog sent and compared) is saved.
      const since = watch.writesSince(request.unchangedSince, key);
      const walked = since && workspace.scanOf(request.unchangedSince);
      const rescanned = since && walked &&
        rescanWritten(walked, since.events, { root: workspace.root, maxFileBytes: this.config.maxFileBytes, indexGenerated: this.config.indexGenerated, fsOps: this.fsOps });
      if (since && rescanned) {
        workspace.rememberScan(since.next, rescanned);
        return { ...rescanned, watchToken: since.next, sinceToken: true };
      }
    }
    // Without the caller's catalog a walk would count every file as added: ask for it.
    if (request.previousOmitted) {
      return { files: [], added: [], changed: [], removed: [], skipped: [], durationMs: 0, previousNeeded: true };
    }
    const mark = watch?.begin();
    try {
      const result = await scanWorkspace({
        root: workspace.root,
        previous: request.previous,
        excludePatterns: request.excludePatterns,
        maxFileBytes: this.config.maxFileBytes,
        indexGenerated: this.config.indexGenerated,
        fsOps: this.fsOps,
        isCancelled,
        beforeFolder: watch && mark ? (folder) => watch.folder(mark, folder) : undefined,
      });
      const watchToken = watch && mark ? watch.finish(mark, key) : '';
      workspace.rememberScan(watchToken, result);
      const unwatchedReason = watchToken === '' ? (watch?.problem || reason) : undefined;
      return { ...result, watchToken, ...(unwatchedReason ? { unwatchedReason } : {}) };
    } catch (err) {
      if (err instanceof ScanCancelledError) throw new CancelledError();
      throw err;
    }
  }

  /**
   * Yields one result per file in path order. Every path is validated before
   * the first result, so a bad request fails as a whole instead of midway;
   * a path that does not exist (a file deleted or renamed since the caller
   * listed it) is a file skipped as vanished. A file the parser or checker
   * cannot chunk (too deep, a crash, the per-file time limit) is skipped as
   * chunk_failed, and the files after it are chunked as usual.
   */
  async *chunkFiles(request: ChunkRequest, isCancelled: () => boolean = () => false, deadlineMs = Infinity): AsyncGenerator<ChunkedFile> {
    const workspace = this.workspaces.get(request.workspaceRoot);
    if (request.paths.length === 0) throw new RequestError('invalid_argument', 'paths is empty: name at least one file or directory');
    const targets = await this.expandTargets(workspace, request.paths, isCancelled);
    const includeReferences = request.includeReferences && !request.lexicalOnly;
    const windowSize = includeReferences ? REFERENCE_WINDOW : SYNTAX_WINDOW;
    const chunkerOf = (start: number) =>
      includeReferences ? this.chunkChecker : this.syntaxChunkers[(start / windowSize) % this.syntaxChunkers.length];
    const state: ChunkCallState = { detail: { includeReferences, lexicalOnly: request.lexicalOnly }, buildCrashes: 0, deadlineMs };
    // Syntax-only windows are small: the next one is read and queued while
    // this one streams, so the worker never waits on this thread. Windows
    // with references stay one at a time, each holding a Program's worth.
    const prefetch = !includeReferences;
    const open = (start: number): OpenWindow => {
      const loaded = targets.slice(start, start + windowSize).map((t) => this.loadTarget(t));
      // The readable files go to a worker, which sends their outputs back in
      // window order; skipped files are answered here.
      const files = loaded.flatMap((l) => windowFile(l) ?? []);
      const outputs = this.chunkWindow(chunkerOf(start), workspace.root, files, state, isCancelled);
      const first = prefetch ? outputs.next() : undefined;
      first?.catch(() => undefined); // awaited later; a cancel before then is not unhandled
      return { loaded, outputs, first };
    };
    let current: OpenWindow | undefined;
    let ahead: OpenWindow | undefined;
    try {
      for (let start = 0; start < targets.length; start += windowSize) {
        if (isCancelled()) throw new CancelledError();
        current = ahead ?? open(start);
        ahead = prefetch && start + windowSize < targets.length ? open(start + windowSize) : undefined;
        let first = current.first;
        for (const loaded of current.loaded) {
          if (isCancelled()) throw new CancelledError();
          let output: FileResult | undefined;
          if (loaded.load?.ok) {
            const next = await (first ?? current.outputs.next());
            first = undefined;
            if (next.done) throw new Error(`the chunk worker sent no output for ${loaded.target.relativePath}`);
            output = next.value;
          }
          const result = this.toChunkedFile(workspace, loaded, output);
          workspace.rememberSymbols(result.relativePath, result.chunks);
          yield result;
          // Let cancellation and health checks through between files.
          await new Promise<void>((resolve) => setImmediate(resolve));
        }
        await current.outputs.return(undefined);
        current = undefined;
      }
    } finally {
      // Stops the workers' jobs when the stream ends early (an error, a cancel).
      await Promise.all([current?.outputs.return(undefined), ahead?.outputs.return(undefined)]);
    }
  }

  async render(request: RenderRequest, isCancelled: () => boolean = () => false): Promise<RenderResult> {
    const workspace = this.workspaces.get(request.workspaceRoot);
    const symbols: RenderedSymbol[] = [];
    const missingSymbolIds: string[] = [];
    // An answer asks for several symbols of one file: the file is read, hashed and looked up
    // once per call, not once per symbol (a large file's read and hash cost as much as a render).
    const sources = new Map<string, RenderSource>();
    for (const spec of request.specs) {
      const candidates = [spec.relativePath, workspace.pathOfSymbol(spec.symbolId)].filter(
        (p, i, all): p is string => !!p && all.indexOf(p) === i,
      );
      let rendered: RenderedSymbol | undefined;
      for (const relativePath of candidates) {
        if (!sources.has(relativePath)) sources.set(relativePath, this.renderSource(workspace, relativePath));
        const source = sources.get(relativePath);
        if (source && 'tooDeep' in source) {
          // Nested deeper than this thread's stack parses: a worker's stack does.
          [rendered] = await this.syntaxChunkers[0].render(source.tooDeep, [spec], isCancelled);
        } else {
          rendered = source && renderFromSource(source.sourceFile, source.relativePath, spec);
        }
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
    const files = listing.files.map((f) => f.absolutePath);
    return this.traceChecker.trace(workspace.root, files, request, deadlineMs, isCancelled);
  }

  /** Stops the checker workers; calls still in flight fail. */
  dispose(): void {
    clearTimeout(this.checkerWarm);
    this.workspaces.close();
    this.chunkChecker.dispose();
    for (const chunker of this.syntaxChunkers) chunker.dispose();
    this.traceChecker.dispose();
  }

  private async expandTargets(workspace: Workspace, paths: string[], isCancelled: () => boolean): Promise<ChunkTarget[]> {
    const byPath = new Map<string, ChunkTarget>();
    for (const raw of paths) {
      let resolved;
      try {
        resolved = resolveRequestPath(workspace, raw);
      } catch (err) {
        if (!(err instanceof MissingPathError)) throw err;
        // Deleted or renamed since the caller listed it (a checkout under a
        // sync): that file's answer, not the whole call's.
        byPath.set(err.relativePath, {
          relativePath: err.relativePath,
          absolutePath: path.join(workspace.root, err.relativePath),
          skip: { reason: 'vanished', detail: 'no longer exists' },
        });
        continue;
      }
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
          // A folder's answer is its files; what the workspace rules leave out
          // is the scan's to report (`codecompass index --show-skipped`).
          if (RULE_SKIPS.has(skipped.reason)) continue;
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
          throw new RequestError('invalid_argument', `not a TypeScript or JavaScript source file: ${quoted(raw)}`);
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
    const load = loadSource(target.absolutePath, Number(stats.size), this.config, this.fsOps);
    // A file rewritten between the stat and the read is answered as read: the
    // size and hash of those bytes. Its mtime is the older one, so the next
    // scan re-reads it, finds the same hash and converges.
    const sizeBytes = load.ok ? load.bytes.length : Number(stats.size);
    return { target, sizeBytes, mtimeNs: Number(stats.mtimeNs), load };
  }

  /**
   * A window's results from its worker, one per file, whatever happens to
   * the worker: a file that runs past the time limit is a failure of its own;
   * after a crash the file it was on is chunked alone without references (a
   * crash of that too makes it a failure), and the rest of the window goes to
   * a fresh job.
   */
  private async *chunkWindow(
    chunker: CheckerWorker,
    root: string,
    files: WindowFile[],
    state: ChunkCallState,
    isCancelled: () => boolean,
  ): AsyncGenerator<FileResult> {
    let next = 0;
    while (next < files.length) {
      const detail = state.detail;
      const timeoutMs = this.fileTimeoutMs(state.deadlineMs);
      try {
        for await (const result of chunker.chunkWindow(root, files.slice(next), detail, isCancelled, timeoutMs)) {
          next++;
          state.buildCrashes = 0;
          yield result;
        }
        return;
      } catch (err) {
        if (!(err instanceof ChunkJobError)) throw err;
        if (err.kind === 'timeout') {
          yield { failure: err.message };
        } else {
          if (detail.includeReferences && err.index === 0 && ++state.buildCrashes >= MAX_BUILD_CRASHES) {
            state.detail = { ...detail, includeReferences: false };
          }
          yield await this.chunkAlone(root, files[next], detail, err, isCancelled, this.fileTimeoutMs(state.deadlineMs));
        }
        next++;
      }
    }
  }

  /**
   * The per-file limit, and never more than the call has left: a file that
   * would outlast the caller's deadline is skipped as chunk_failed while the
   * stream can still answer, instead of the whole call failing with
   * DEADLINE_EXCEEDED (and failing again on every sync after it).
   */
  private fileTimeoutMs(deadlineMs: number): number {
    const configured = this.config.chunkFileTimeoutMs ?? DEFAULT_CHUNK_FILE_TIMEOUT_MS;
    return Math.max(MIN_FILE_TIMEOUT_MS, Math.min(configured, deadlineMs - Date.now() - DEADLINE_MARGIN_MS));
  }

  /** One file on a fresh syntax-only job, after `crash` ended the job it was in. */
  private async chunkAlone(
    root: string,
    file: WindowFile,
    detail: ChunkDetail,
    crash: ChunkJobError,
    isCancelled: () => boolean,
    timeoutMs: number,
  ): Promise<FileResult> {
    try {
      const alone = { includeReferences: false, lexicalOnly: detail.lexicalOnly };
      for await (const result of this.syntaxChunkers[0].chunkWindow(root, [file], alone, isCancelled, timeoutMs)) {
        if (result.output && detail.includeReferences) result.output.diagnostics.push(`references unavailable: ${crash.message}`);
        return result;
      }
    } catch (err) {
      if (!(err instanceof ChunkJobError)) throw err;
      return { failure: err.message };
    }
    return { failure: crash.message };
  }

  /** `result` is a chunk worker's, for ChunkFiles; without it (RenderSymbols) the file is parsed here. */
  private toChunkedFile(workspace: Workspace, loaded: LoadedTarget, result: FileResult | undefined): ChunkedFile {
    const { target, load } = loaded;
    const base = {
      relativePath: target.relativePath,
      diagnostics: [] as string[],
      chunks: [],
      mtimeNs: loaded.mtimeNs,
      sizeBytes: loaded.sizeBytes,
    };
    const skip = target.skip ?? (load && !load.ok ? load : result?.failure !== undefined ? { reason: 'chunk_failed' as const, detail: result.failure } : undefined);
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
    const out =
      result?.output ??
      chunkText(
        { absolutePath: target.absolutePath, relativePath: target.relativePath, text: load.text, language: languageOf(target.relativePath) ?? 'typescript' },
        workspace.root,
      );
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

  private renderSource(workspace: Workspace, relativePath: string): RenderSource {
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
    recordCacheLookup('analysis.render', cached !== undefined);
    if (cached) return { sourceFile: cached.sourceFile, relativePath: resolved.relativePath };
    // Parse and discover only: rendering needs the symbol tree, not chunks with their
    // embedding texts and token counts (most of a full chunking's cost on a large file).
    const language = languageOf(resolved.relativePath) ?? 'typescript';
    let sourceFile: ts.SourceFile;
    try {
      sourceFile = parseForRender(resolved.relativePath, loaded.load.text, language);
      workspace.rememberSymbolIds(resolved.relativePath, discoverSymbols(sourceFile, resolved.relativePath).byId.keys());
    } catch (err) {
      if (!isStackOverflow(err)) throw err;
      return { tooDeep: { absolutePath: resolved.absolutePath, relativePath: resolved.relativePath, text: loaded.load.text, language } };
    }
    workspace.cacheRender(resolved.relativePath, { contentHash: loaded.load.contentHash, sourceFile });
    return { sourceFile, relativePath: resolved.relativePath };
  }
}

/** What the checker worker needs of a loaded file; undefined for a file that is skipped. */
function windowFile(loaded: LoadedTarget): WindowFile | undefined {
  const { target, load } = loaded;
  if (!load?.ok) return undefined;
  return {
    absolutePath: target.absolutePath,
    relativePath: target.relativePath,
    text: load.text,
    contentHash: load.contentHash,
    language: languageOf(target.relativePath) ?? 'typescript',
  };
}
