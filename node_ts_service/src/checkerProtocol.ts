// Messages between the main thread and a checker worker (checkerWorker.ts).
// Only plain data crosses: texts go in, ChunkOutputs and TraceResults come
// out, so the main thread never holds a Program or a checker.
import type { ChunkOutput, ChunkText } from './chunker';
import type { RenderedSymbol, RenderSpec } from './types';
import type { TraceRequest, TraceResult } from './trace';
import type { RequestErrorKind } from './workspace';

/** Fixed for a worker's lifetime: the bounds on what it keeps between jobs. */
export interface CheckerWorkerData {
  maxPrograms: number;
  maxWorkspaces: number;
  /** The V8 code cache the worker compiles the TypeScript compiler from (compileCache.ts). */
  compileCacheDir?: string;
}

/** A file of a chunk window, read and vetted by the main thread. */
export interface WindowFile extends ChunkText {
  contentHash: string;
}

interface JobBase {
  id: number;
  /** One Int32 the main thread sets to 1 to cancel; read between files and between LanguageService calls. */
  cancel: SharedArrayBuffer;
}

/** How much a chunk job computes: references need a Program; lexical-only skips the embedding text. */
export interface ChunkDetail {
  includeReferences: boolean;
  lexicalOnly: boolean;
}

/** Chunk a window of files: with references, in one Program update per project; else each parsed alone. */
export interface ChunkJob extends JobBase, ChunkDetail {
  kind: 'chunk';
  workspaceRoot: string;
  files: WindowFile[];
}

/** Trace one symbol over the workspace's whole-workspace LanguageService. */
export interface TraceJob extends JobBase {
  kind: 'trace';
  workspaceRoot: string;
  /** Every source file of the workspace (absolute paths), as the main thread listed them. */
  files: string[];
  request: TraceRequest;
  deadlineMs: number;
}

/** Answered once the worker has loaded its modules; with `libraries`, also parses and binds the default libs. */
export interface WarmJob extends JobBase {
  kind: 'warm';
  libraries: boolean;
}

/**
 * Render symbols of one file whose parse overflowed the main thread's stack
 * (about 1 MB, against the workers' WORKER_STACK_MB): deeply nested code.
 */
export interface RenderJob extends JobBase {
  kind: 'render';
  file: ChunkText;
  specs: RenderSpec[];
}

export type CheckerJob = ChunkJob | TraceJob | WarmJob | RenderJob;

/** One file of a chunk job: its chunks, or why it could not be chunked (one line). */
export type FileResult = { output: ChunkOutput; failure?: undefined } | { output?: undefined; failure: string };

/** A failure as it crosses threads: a request error keeps its kind, anything else is one line. */
export interface JobError {
  requestErrorKind: RequestErrorKind | undefined;
  message: string;
}

export type CheckerReply =
  /** The result of `files[index]` of a ChunkJob; files come in order. */
  | ({ kind: 'file'; id: number; index: number } & FileResult)
  /**
   * A chunk job starts (`building`) or ends (`built`) building a Program: the
   * per-file time limit does not run while a whole project is parsed.
   */
  | { kind: 'program'; id: number; building: boolean }
  | { kind: 'done'; id: number; trace?: TraceResult; rendered?: (RenderedSymbol | undefined)[] }
  | { kind: 'cancelled'; id: number }
  | { kind: 'failed'; id: number; error: JobError };
