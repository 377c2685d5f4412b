import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Metadata } from '@grpc/grpc-js';
import { loadConfig } from '../src/config';
import { initTelemetry, recordCacheLookup, recordRpcStatus, withServerSpan } from '../src/tracing';

describe('metrics (ANALYSIS_METRICS_PORT)', () => {
  it('is a setting of its own, off unless set', () => {
    assert.equal(loadConfig({}).metricsPort, undefined);
    assert.equal(loadConfig({ ANALYSIS_METRICS_PORT: '9464' }).metricsPort, 9464);
    assert.throws(() => loadConfig({ ANALYSIS_METRICS_PORT: 'x' }), /ANALYSIS_METRICS_PORT/);
  });

  it('serves RPC latency and cache lookups for Prometheus, named as the Python services name theirs', async () => {
    const telemetry = initTelemetry({ otlpEndpoint: undefined, traceFile: undefined, metricsPort: 0 });
    try {
      const address = await telemetry.metricsAddress;
      assert.ok(address);
      await withServerSpan('codecompass.v1.CodeAnalysisService', 'Trace', new Metadata(), (span) => Promise.resolve(recordRpcStatus(span, 5, 'no such symbol')));
      recordCacheLookup('analysis.render', true);
      recordCacheLookup('analysis.render', false);
      const text = await (await fetch(`http://${address}/metrics`)).text();
      const series = (name: string) => text.split('\n').filter((line) => line.startsWith(`${name}{`));
      const [count] = series('rpc_server_call_duration_seconds_count');
      assert.match(count, /rpc_method="Trace"/);
      assert.match(count, /rpc_grpc_status_code="5"/);
      assert.match(count, /service_name="analysis",service_namespace="codecompass"/);
      assert.match(count, / 1$/);
      assert.ok(series('rpc_server_call_duration_seconds_bucket').some((line) => line.includes('le="0.005"')));
      const lookups = series('codecompass_cache_requests_total');
      assert.deepEqual(lookups.map((line) => /codecompass_cache_result="(\w+)"/.exec(line)?.[1]).sort(), ['hit', 'miss']);
      assert.equal((await fetch(`http://${address}/other`)).status, 404);
    } finally {
      await telemetry.shutdown();
    }
  });
});
