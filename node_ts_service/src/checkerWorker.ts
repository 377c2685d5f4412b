// A worker thread that chunks and owns the type checker: Programs,
// LanguageServices and the chunking that needs them. Building a Program for
// a window of files or a whole workspace takes seconds of synchronous work,
// and parsing a multi-megabyte file most of one; here it blocks only this
// thread, so the main thread keeps answering health checks, RenderSymbols
// and Trace. One job at a time; checkerClient.ts queues them.
import './workerStart';
import { parentPort, workerData } from 'node:worker_threads';
import { type ChunkOutput, chunkText } from './chunker';
import type { CheckerJob, CheckerReply, CheckerWorkerData, ChunkJob, FileResult, JobError, RenderJob, TraceJob, WindowFile } from './checkerProtocol';
import { type ProgramView, ProjectRegistry, isStackOverflow, warmLibraries } from './program';
import { parseForRender, renderFromSource } from './render';
import { TraceProjectHost, trace } from './trace';
import { RequestError } from './workspace';

if (!parentPort) throw new Error('checkerWorker.js runs only as a worker thread');
const port = parentPort;
const limits = workerData as CheckerWorkerData;

/** Chunking Programs per workspace root, least recently used first. */
const registries = new Map<string, ProjectRegistry>();
/** Whole-workspace LanguageServices for Trace, least recently used first. */
const traceHosts = new Map<string, TraceProjectHost>();

/** Thrown out of a Program visit when the job is cancelled, to skip the rest of the window. */
class JobCancelled extends Error {}

function recent<T extends { dispose(): void }>(map: Map<string, T>, key: string, create: () => T): T {
  let value = map.get(key);
  if (value) map.delete(key);
  else value = create();
  map.set(key, value);
  while (map.size > limits.maxWorkspaces) {
    const [oldestKey, oldest] = map.entries().next().value as [string, T];
    oldest.dispose();
    map.delete(oldestKey);
  }
  return value;
}

function post(reply: CheckerReply): void {
  port.postMessage(reply);
}

/** Why a file could not be chunked, in one line a user can act on. */
function failureOf(err: unknown): string {
  if (isStackOverflow(err)) return 'nested too deep to parse: the parser ran out of stack (Maximum call stack size exceeded)';
  return `chunking failed: ${(err instanceof Error ? err.message : String(err)).split('\n')[0].slice(0, 300)}`;
}

/**
 * One file's chunks. A failure is the file's alone: with a Program it is
 * retried without one (the checker is the likelier culprit), and if it fails
 * again the file is reported as not chunkable while the window goes on.
 */
function chunkOne(file: WindowFile, job: ChunkJob, view: ProgramView | undefined, note: string | undefined): FileResult {
  let output: ChunkOutput;
  try {
    output = chunkText(file, job.workspaceRoot, view, job.lexicalOnly);
  } catch (err) {
    if (!view) return { failure: failureOf(err) };
    try {
      output = chunkText(file, job.workspaceRoot, undefined, job.lexicalOnly);
      note = `references unavailable: ${failureOf(err)}`;
    } catch (again) {
      return { failure: failureOf(again) };
    }
  }
  if (note) output.diagnostics.push(note);
  return { output };
}

function chunkWindow(job: ChunkJob, isCancelled: () => boolean): void {
  const views = new Map<string, { view: ProgramView | undefined; note?: string }>();
  if (job.includeReferences) {
    const registry = recent(registries, job.workspaceRoot, () => new ProjectRegistry(job.workspaceRoot, limits.maxPrograms));
    // A window spanning several projects builds one Program per project; a
    // cancel is noticed between them.
    registry.withPrograms(
      job.files,
      (file, view, note) => {
        if (isCancelled()) throw new JobCancelled();
        views.set(file.absolutePath, { view, note });
      },
      (building) => post({ kind: 'program', id: job.id, building }),
    );
  }
  job.files.forEach((file, index) => {
    if (isCancelled()) throw new JobCancelled();
    const program = views.get(file.absolutePath);
    post({ kind: 'file', id: job.id, index, ...chunkOne(file, job, program?.view, program?.note) });
  });
  post({ kind: 'done', id: job.id });
}

function renderFile(job: RenderJob): void {
  const sourceFile = parseForRender(job.file.relativePath, job.file.text, job.file.language);
  post({ kind: 'done', id: job.id, rendered: job.specs.map((spec) => renderFromSource(sourceFile, job.file.relativePath, spec)) });
}

function traceSymbol(job: TraceJob, isCancelled: () => boolean): void {
  const host = recent(traceHosts, job.workspaceRoot, () => new TraceProjectHost(job.workspaceRoot));
  const result = trace(host.project(job.files), job.request, job.deadlineMs, isCancelled);
  if (isCancelled()) throw new JobCancelled();
  post({ kind: 'done', id: job.id, trace: result });
}

function jobError(err: unknown): JobError {
  if (err instanceof RequestError) return { requestErrorKind: err.kind, message: err.message };
  const message = err instanceof Error ? err.message : String(err);
  return { requestErrorKind: undefined, message: message.split('\n')[0] };
}

port.on('message', (job: CheckerJob) => {
  const flag = new Int32Array(job.cancel);
  const isCancelled = () => Atomics.load(flag, 0) !== 0;
  try {
    if (job.kind === 'chunk') chunkWindow(job, isCancelled);
    else if (job.kind === 'trace') traceSymbol(job, isCancelled);
    else if (job.kind === 'render') renderFile(job);
    else {
      if (job.libraries) warmLibraries();
      post({ kind: 'done', id: job.id });
    }
  } catch (err) {
    if (err instanceof JobCancelled) post({ kind: 'cancelled', id: job.id });
    else post({ kind: 'failed', id: job.id, error: jobError(err) });
  }
});
