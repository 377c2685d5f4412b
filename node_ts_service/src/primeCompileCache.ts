// `node dist/src/primeCompileCache.js`: fills the compile cache (compileCache.ts) as a build step
// (`make setup`, the image), the way `compileall` fills Python's: the first start of the service
// then loads the TypeScript compiler from it too. It compiles what a start compiles, warm-up
// included, in the folder the service would use (ANALYSIS_COMPILE_CACHE_DIR, else .cache/v8).
import { installCompileCache, saveCompileCache } from './compileCache';
import { loadConfig } from './config';

async function prime(): Promise<void> {
  const dir = loadConfig().compileCacheDir;
  if (dir === undefined) {
    process.stdout.write('compile cache: off (ANALYSIS_COMPILE_CACHE_DIR)\n');
    return;
  }
  installCompileCache(dir);
  // Loaded only now, so that the hook compiles it.
  const { warmChunker } = await import('./chunker');
  warmChunker();
  process.stdout.write(`compile cache: ${saveCompileCache().length} module(s) written to ${dir}\n`);
}

prime().catch((err: unknown) => {
  // A build step that cannot prime leaves the service as it was: it compiles at start.
  process.stderr.write(`compile cache not primed: ${String(err)}\n`);
});
