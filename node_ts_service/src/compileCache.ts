// V8 code cache for this service's large modules, kept on disk between starts. Node 22 has this
// built in (module.enableCompileCache); Node 20, which we support, does not.
//
// Why: every start compiles the TypeScript compiler (lib/typescript.js, 9 MB) once in the main
// thread and once in each worker thread that chunks or type-checks, ~190 ms of CPU each, and
// js-tiktoken's rank table once more per thread. On two cores a cold start runs four services at
// once, so that CPU is the first answer's wait. From a cache each load takes ~60 ms: measured
// 0.45 CPU-seconds less from process start to two seconds after SERVING (1.44-1.58 -> 0.97-1.06 s).
//
// Only modules of at least MIN_SOURCE_CHARS are cached: the rest compile in microseconds and a
// file per module would cost more than it saves. A cache V8 rejects (another Node or V8 build,
// another source) is compiled normally and written again.
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import Module from 'node:module';
import * as path from 'node:path';
import * as vm from 'node:vm';

const MIN_SOURCE_CHARS = 256 * 1024;

interface Pending {
  script: vm.Script;
  file: string;
}

interface CompilingModule {
  exports: unknown;
  _compile: (this: CompilingModule, content: string, filename: string) => unknown;
}

/** The scripts compiled without a usable cache, written by `saveCompileCache`. */
const pending: Pending[] = [];
let installedDir: string | undefined;

/** What this thread's large modules were compiled from, for the start-up log. */
export interface CompileCacheStats {
  fromCache: number;
  compiled: number;
}
const stats: CompileCacheStats = { fromCache: 0, compiled: 0 };

export function compileCacheStats(): CompileCacheStats {
  return { ...stats };
}

/** The cache file of one module: its path, the Node build and platform, as a name. */
function cacheFile(dir: string, filename: string): string {
  const key = createHash('sha256').update(`${process.version}\0${process.arch}\0${filename}`).digest('hex').slice(0, 32);
  return path.join(dir, `${key}.v8`);
}

/**
 * Compiles large CommonJS modules loaded from now on from `dir`'s cache when it holds one. Call it
 * before the first such `require` (main.ts at start; each checker worker first thing). Never
 * throws: an unreadable cache compiles as without one.
 */
export function installCompileCache(dir: string | undefined): void {
  if (dir === undefined || installedDir !== undefined) return;
  installedDir = dir;
  const proto = (Module as unknown as { prototype: CompilingModule }).prototype;
  const compile = proto._compile;
  proto._compile = function (this: CompilingModule, content: string, filename: string): unknown {
    if (content.length < MIN_SOURCE_CHARS) return compile.call(this, content, filename);
    const file = cacheFile(dir, filename);
    let cachedData: Buffer | undefined;
    try {
      cachedData = fs.readFileSync(file);
    } catch {
      cachedData = undefined;
    }
    // What Node's own loader does with a module's text: wrap it in the CommonJS function and run it
    // with this module's exports, require, module, file name and folder.
    // A dynamic import() in the module resolves as it would under Node's own loader.
    const script = new vm.Script(Module.wrap(content), {
      filename,
      cachedData,
      importModuleDynamically: vm.constants.USE_MAIN_CONTEXT_DEFAULT_LOADER,
    });
    if (cachedData === undefined || script.cachedDataRejected === true) {
      pending.push({ script, file });
      stats.compiled += 1;
    } else {
      stats.fromCache += 1;
    }
    const wrapper = script.runInThisContext({ displayErrors: true }) as (...args: unknown[]) => unknown;
    return wrapper.call(this.exports, this.exports, Module.createRequire(filename), this, filename, path.dirname(filename));
  };
}

/**
 * Writes the cache of each module compiled without one. Called once the service has warmed up, so
 * that the functions warm-up compiled are in it too. Returns the files written; a folder it cannot
 * write to leaves the service as it was (it only starts slower next time).
 */
export function saveCompileCache(): string[] {
  const dir = installedDir;
  if (dir === undefined) return [];
  const written: string[] = [];
  for (const { script, file } of pending.splice(0)) {
    try {
      fs.mkdirSync(dir, { recursive: true });
      // Whole or not at all: a start reading a half-written cache would have V8 reject it.
      const partial = `${file}.${process.pid}.tmp`;
      fs.writeFileSync(partial, script.createCachedData());
      fs.renameSync(partial, file);
      written.push(file);
    } catch {
      // Read-only or full: the next start compiles as this one did.
    }
  }
  return written;
}
