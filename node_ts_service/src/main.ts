// Entry point: `node dist/src/main.js`. Order matters: configuration first
// (a bad value exits 2 before anything starts), telemetry before any gRPC
// object exists, then bind, announce the port, warm up, report SERVING.
import { compileCacheStats, installCompileCache, saveCompileCache } from './compileCache';
import { ConfigError, loadConfig, type AnalysisConfig } from './config';
import { hostPort, isLoopback } from './hosts';
import { createLogger } from './logging';
import { SERVICE_NAME } from './names';
import { initTelemetry } from './tracing';

function readConfig(): AnalysisConfig {
  try {
    return loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${SERVICE_NAME}: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
}

async function main(): Promise<void> {
  const config = readConfig();
  // Before anything loads the TypeScript compiler (./service, below).
  installCompileCache(config.compileCacheDir);
  const telemetry = initTelemetry({
    otlpEndpoint: config.otlpEndpoint,
    traceFile: config.traceFile,
    metricsPort: config.metricsPort,
    metricsHost: config.host,
  });
  const logger = createLogger(SERVICE_NAME, config.logLevel);
  // Loaded after telemetry so nothing in the gRPC stack predates the tracer provider.
  const { AnalysisService } = await import('./service');
  const { startServer } = await import('./server');

  const service = new AnalysisService(config);
  const server = await startServer({
    host: config.host,
    port: config.port,
    service,
    logger,
    reflection: config.reflection,
    auth: config.auth,
    tls: config.tls,
  });
  const address = hostPort(config.host, server.port);
  process.stdout.write(`LISTENING ${address}\n`);
  // What the server asks of its callers: never the token, only where it comes from.
  const security = {
    tls: config.tls === undefined ? 'off' : config.tls.clientCaFile === undefined ? 'tls' : 'mtls',
    auth: config.auth === undefined ? 'none' : `service token from ${config.auth.file === undefined ? config.auth.setting : `${config.auth.setting} ${config.auth.file}`}`,
  };
  logger.info('listening', { host: config.host, port: server.port, ...security });
  if (!isLoopback(config.host)) {
    // Beyond loopback the service token is required (config.ts); what it does not hide without TLS
    // is the traffic itself.
    logger.warn('listening beyond this machine: calls need the service token', { address, ...security });
  }

  let exiting = false;
  const stop = async (signal: string) => {
    if (exiting) return;
    exiting = true;
    logger.info('shutting down', { signal, grace_ms: config.shutdownGraceMs });
    await server.shutdown(config.shutdownGraceMs);
    service.dispose();
    await telemetry.shutdown().catch((err: unknown) => logger.warn('telemetry flush failed', { error: String(err) }));
    logger.info('stopped', { signal });
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));

  // Warm up after announcing the port so a launcher can watch health go
  // from NOT_SERVING to SERVING instead of guessing when start-up is over.
  setImmediate(() => {
    const started = performance.now();
    try {
      service.warmUp();
    } catch (err) {
      logger.error('warm-up failed; staying NOT_SERVING', { error: err instanceof Error ? err.message : String(err) });
      return;
    }
    server.setServing();
    const modules = compileCacheStats();
    logger.info('serving', {
      warmup_ms: Math.round(performance.now() - started),
      ...(config.compileCacheDir === undefined ? {} : { modules_from_cache: modules.fromCache, modules_compiled: modules.compiled }),
    });
    // After SERVING, not before: a first start writes its cache (~20 ms) off the start's path.
    setImmediate(() => {
      const written = saveCompileCache();
      if (written.length > 0) logger.debug('compile cache written', { files: written.length, dir: config.compileCacheDir });
    });
  });
}

main().catch((err: unknown) => {
  process.stderr.write(
    JSON.stringify({ ts: new Date().toISOString(), level: 'error', service: SERVICE_NAME, msg: 'start-up failed', error: String(err) }) + '\n',
  );
  process.exit(1);
});
