// The first import of checkerWorker.ts, so that it runs before the worker's other imports load the
// TypeScript compiler: they compile it from the main thread's code cache (compileCache.ts).
import { workerData } from 'node:worker_threads';
import type { CheckerWorkerData } from './checkerProtocol';
import { installCompileCache } from './compileCache';

installCompileCache((workerData as CheckerWorkerData | undefined)?.compileCacheDir);
