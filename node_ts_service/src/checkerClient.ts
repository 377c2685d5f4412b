// The main thread's handle on one checker worker (checkerWorker.ts): it
// queues jobs (one runs at a time), streams a chunk window's outputs back in
// order, turns a cancelled call into a cancelled job, and replaces a worker
// that crashed or would not stop. Nothing here blocks the event loop.
import * as path from 'node:path';
import { Worker } from 'node:worker_threads';
import type { ChunkText } from './chunker';
import type { CheckerJob, CheckerReply, CheckerWorkerData, ChunkDetail, FileResult, JobError, WindowFile } from './checkerProtocol';
import { CancelledError } from './errors';
import type { TraceRequest, TraceResult } from './trace';
import type { RenderedSymbol, RenderSpec } from './types';
import { RequestError } from './workspace';

export const CHECKER_WORKER_SCRIPT = path.join(__dirname, 'checkerWorker.js');

/** How often a job in flight asks whether its call was cancelled. */
const CANCEL_POLL_MS = 25;
/**
 * A chunk job notices a cancel between files, but not inside a Program
 * build (seconds on a cold window). Past this grace the worker is
 * terminated, losing its Programs, so that a call that went away stops
 * costing CPU; the next job starts a fresh worker.
 */
const CHUNK_CANCEL_GRACE_MS = 1000;
/**
 * Stack of each worker thread. The TypeScript parser, binder and checker
 * recurse once per nesting level (an array literal nested N deep costs about
 * 20 frames per level to parse), and the 4 MB a worker gets by default ends
 * somewhere between 2,000 and 5,000 levels. Measured with this limit: a file
 * of one array literal nested 100,000 deep parses and chunks (see
 * test/deepNesting.test.ts); deeper is skipped as chunk_failed. The stack is
 * reserved address space, touched only as deep as a file makes it go.
 */
export const WORKER_STACK_MB = 256;

/** The worker failed a job, crashed, or is gone; the message is one line, fit for a status. */
export class CheckerError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CheckerError';
  }
}

/** A job before it has an id and a cancel flag. */
type JobPayload = DistributiveOmit<CheckerJob, 'id' | 'cancel'>;
type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** The worker exited under a job: `why` says how ("crashed: …", "exited with code 1"). */
class WorkerGone extends CheckerError {
  constructor(
    name: string,
    readonly why: string,
  ) {
    super(`the ${name} worker ${why}; it is restarted for the next request`);
  }
}

/**
 * A chunk job that could not finish a file: the worker crashed (or failed
 * the job as a whole) or one file ran past the per-file limit. `index` is
 * the file of the window it was on; the files before it were answered.
 */
export class ChunkJobError extends CheckerError {
  constructor(
    readonly kind: 'crash' | 'timeout',
    readonly index: number,
    message: string,
  ) {
    super(message);
    this.name = 'ChunkJobError';
  }
}

/** No reply came within the time allowed. */
class ReplyTimeout extends Error {}

/** Replies of one job as they arrive; a failure or cancel ends it early. */
class Inbox {
  private readonly items: CheckerReply[] = [];
  private waiter: { resolve: (r: CheckerReply) => void; reject: (e: Error) => void } | undefined;
  private error: Error | undefined;
  /** When the worker last said something: a per-file limit counts the worker's time, not the reader's. */
  private lastArrivalMs = Date.now();

  push(reply: CheckerReply): void {
    if (this.error) return;
    this.lastArrivalMs = Date.now();
    if (this.waiter) {
      this.waiter.resolve(reply);
      this.waiter = undefined;
    } else this.items.push(reply);
  }

  fail(error: Error): void {
    if (this.error) return;
    this.error = error;
    this.items.length = 0;
    this.waiter?.reject(error);
    this.waiter = undefined;
  }

  /** The next reply; with `withinMs`, rejects with ReplyTimeout once that long has passed since the last one. */
  next(withinMs = Infinity): Promise<CheckerReply> {
    if (this.error) return Promise.reject(this.error);
    const item = this.items.shift();
    if (item) return Promise.resolve(item);
    return new Promise((resolve, reject) => {
      let timer: NodeJS.Timeout | undefined;
      const settle = <T>(fn: (value: T) => void) => (value: T) => {
        clearTimeout(timer);
        fn(value);
      };
      this.waiter = { resolve: settle(resolve), reject: settle(reject) };
      if (Number.isFinite(withinMs)) {
        timer = setTimeout(() => {
          this.waiter = undefined;
          reject(new ReplyTimeout());
        }, Math.max(0, this.lastArrivalMs + withinMs - Date.now()));
      }
    });
  }
}

interface Session {
  inbox: Inbox;
  worker: Worker;
  /** Asks the worker to stop this job; a no-op once it has finished. */
  cancel(): void;
}

interface ActiveJob {
  id: number;
  worker: Worker;
  onReply(reply: CheckerReply): void;
  onExit(error: Error): void;
}

function formatSeconds(ms: number): string {
  return `${Number((ms / 1000).toFixed(1))} s`;
}

function firstLine(text: string): string {
  return text.split('\n')[0].slice(0, 300);
}

function toError(error: JobError): Error {
  if (error.requestErrorKind) return new RequestError(error.requestErrorKind, error.message);
  return new CheckerError(`type checker failed: ${firstLine(error.message)}`);
}

function unexpected(reply: CheckerReply): Error {
  if (reply.kind === 'failed') return toError(reply.error);
  if (reply.kind === 'cancelled') return new CancelledError();
  return new CheckerError(`type checker sent an unexpected ${reply.kind} reply`);
}

/** Waits for `promise`, but gives up with CancelledError as soon as the call is cancelled. */
function unlessCancelled(promise: Promise<void>, isCancelled: () => boolean): Promise<void> {
  if (isCancelled()) return Promise.reject(new CancelledError());
  return new Promise((resolve, reject) => {
    const poll = setInterval(() => {
      if (!isCancelled()) return;
      clearInterval(poll);
      reject(new CancelledError());
    }, CANCEL_POLL_MS);
    void promise.then(() => {
      clearInterval(poll);
      resolve();
    });
  });
}

export class CheckerWorker {
  private worker: Worker | undefined;
  private active: ActiveJob | undefined;
  /** Settles when the job ahead has finished: jobs run one at a time, in call order. */
  private free: Promise<void> = Promise.resolve();
  private nextId = 1;
  private asked = false;
  private disposed = false;

  constructor(
    private readonly name: string,
    private readonly data: CheckerWorkerData,
    private readonly script: string = CHECKER_WORKER_SCRIPT,
  ) {}

  /** Whether anything, a warm-up or a request, has asked for the worker yet. */
  get started(): boolean {
    return this.asked;
  }

  /** Starts the worker ahead of the first request; with `libraries`, also parses the default libs in it. */
  warm(libraries: boolean): void {
    void this.start({ kind: 'warm', libraries }, () => false).then(
      (session) => session.inbox.next().catch(() => undefined),
      () => undefined,
    );
  }

  /**
   * Chunks a window of files and yields their results in the window's
   * order. Leaving the loop early cancels the rest of the job. A file that
   * takes longer than `fileTimeoutMs` of the worker's time (a Program build
   * does not count) or a worker that crashes ends the job with a
   * ChunkJobError naming the file it was on; the worker is replaced.
   */
  async *chunkWindow(
    workspaceRoot: string,
    files: WindowFile[],
    detail: ChunkDetail,
    isCancelled: () => boolean,
    fileTimeoutMs = Infinity,
  ): AsyncGenerator<FileResult> {
    if (files.length === 0) return;
    const session = await this.start({ kind: 'chunk', workspaceRoot, files, ...detail }, isCancelled, CHUNK_CANCEL_GRACE_MS);
    let index = 0;
    try {
      // With references the job opens with a Program build, which has no per-file limit.
      let building = detail.includeReferences;
      for (;;) {
        let reply: CheckerReply;
        try {
          reply = await session.inbox.next(building ? Infinity : fileTimeoutMs);
        } catch (err) {
          if (err instanceof ReplyTimeout) {
            this.retire(session.worker);
            throw new ChunkJobError('timeout', index, `chunking took longer than ${formatSeconds(fileTimeoutMs)}`);
          }
          if (err instanceof WorkerGone) throw new ChunkJobError('crash', index, `the chunk worker ${err.why} while chunking it`);
          throw err;
        }
        if (reply.kind === 'program') {
          building = reply.building;
          continue;
        }
        if (index === files.length && reply.kind === 'done') return;
        if (reply.kind === 'failed' && reply.error.requestErrorKind === undefined) {
          throw new ChunkJobError('crash', index, toError(reply.error).message);
        }
        if (reply.kind !== 'file' || reply.index !== index) throw unexpected(reply);
        index++;
        yield reply.failure !== undefined ? { failure: reply.failure } : { output: reply.output };
      }
    } finally {
      session.cancel();
    }
  }

  /** Renders symbols of one file in the worker, whose stack takes nesting the main thread's does not. */
  async render(file: ChunkText, specs: RenderSpec[], isCancelled: () => boolean): Promise<(RenderedSymbol | undefined)[]> {
    const session = await this.start({ kind: 'render', file, specs }, isCancelled);
    try {
      const reply = await session.inbox.next();
      if (reply.kind !== 'done' || !reply.rendered) throw unexpected(reply);
      return reply.rendered;
    } finally {
      session.cancel();
    }
  }

  async trace(
    workspaceRoot: string,
    files: string[],
    request: TraceRequest,
    deadlineMs: number,
    isCancelled: () => boolean,
  ): Promise<TraceResult> {
    // A cancelled trace is not cut short by terminating: the whole-workspace
    // Program it is building is what the next trace needs.
    const session = await this.start({ kind: 'trace', workspaceRoot, files, request, deadlineMs }, isCancelled);
    try {
      const reply = await session.inbox.next();
      if (reply.kind !== 'done' || !reply.trace) throw unexpected(reply);
      return reply.trace;
    } finally {
      session.cancel();
    }
  }

  dispose(): void {
    this.disposed = true;
    const worker = this.worker;
    this.worker = undefined;
    if (worker) void worker.terminate();
  }

  /**
   * Waits for the worker to be free (or the call to be cancelled), then
   * posts the job. `terminateAfterMs`: how long a cancelled job may take to
   * stop before its worker is terminated; undefined lets it finish.
   */
  private async start(payload: JobPayload, isCancelled: () => boolean, terminateAfterMs?: number): Promise<Session> {
    this.asked = true;
    const ahead = this.free;
    let release!: () => void;
    this.free = new Promise((resolve) => (release = resolve));
    try {
      await unlessCancelled(ahead, isCancelled);
    } catch (err) {
      void ahead.then(release);
      throw err;
    }
    let worker: Worker;
    try {
      worker = this.spawn();
    } catch (err) {
      release();
      throw err;
    }
    const flag = new Int32Array(new SharedArrayBuffer(4));
    const id = this.nextId++;
    const inbox = new Inbox();
    let finished = false;
    let grace: NodeJS.Timeout | undefined;
    const finish = () => {
      if (finished) return;
      finished = true;
      clearInterval(poll);
      clearTimeout(grace);
      if (this.active?.id === id) this.active = undefined;
      // An idle worker must not keep the process alive.
      worker.unref();
      release();
    };
    const cancel = () => {
      if (finished || Atomics.load(flag, 0) !== 0) return;
      Atomics.store(flag, 0, 1);
      inbox.fail(new CancelledError());
      if (terminateAfterMs !== undefined) grace = setTimeout(() => this.retire(worker), terminateAfterMs);
    };
    const poll = setInterval(() => {
      if (isCancelled()) cancel();
    }, CANCEL_POLL_MS);
    this.active = {
      id,
      worker,
      onReply: (reply) => {
        inbox.push(reply);
        if (reply.kind === 'file' || reply.kind === 'program') return;
        finish();
        // After an unexpected failure the worker's caches may be half updated: start afresh.
        if (reply.kind === 'failed' && reply.error.requestErrorKind === undefined) this.retire(worker);
      },
      onExit: (error) => {
        inbox.fail(error);
        finish();
      },
    };
    worker.ref();
    worker.postMessage({ ...payload, id, cancel: flag.buffer } satisfies CheckerJob);
    return { inbox, worker, cancel };
  }

  private spawn(): Worker {
    if (this.disposed) throw new CheckerError('the analysis service is shutting down');
    if (this.worker) return this.worker;
    const worker = new Worker(this.script, { workerData: this.data, name: this.name, resourceLimits: { stackSizeMb: WORKER_STACK_MB } });
    worker.unref();
    let crash: Error | undefined;
    worker.on('message', (reply: CheckerReply) => {
      if (this.active?.worker === worker && this.active.id === reply.id) this.active.onReply(reply);
    });
    worker.on('error', (err) => {
      // An uncaught exception or out-of-memory in the worker; 'exit' follows.
      crash = err;
    });
    worker.on('messageerror', (err) => {
      crash = err;
      this.retire(worker);
    });
    worker.on('exit', (code) => {
      if (this.worker === worker) this.worker = undefined;
      if (this.active?.worker !== worker) return;
      const why = crash ? `crashed: ${firstLine(crash.message)}` : `exited with code ${code}`;
      this.active.onExit(
        this.disposed ? new CheckerError('the analysis service is shutting down') : new WorkerGone(this.name, why),
      );
    });
    this.worker = worker;
    return worker;
  }

  /** Stops a worker for good; the next job starts a fresh one. */
  private retire(worker: Worker): void {
    if (this.worker === worker) this.worker = undefined;
    void worker.terminate();
  }
}
