import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as net from 'node:net';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { HealthImplementation } from 'grpc-health-check';
import { checkHealth, main, parseArgs, SERVICE_UNKNOWN, UNREACHABLE } from '../src/healthcheck';

const COMMAND = path.join(__dirname, '..', 'src', 'healthcheck.js');
const SERVICE = 'codecompass.v1.TestService';

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
    probe.on('error', reject);
  });
}

function run(args: string[]): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, [COMMAND, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stderr })));
}

describe('the health check command (node dist/src/healthcheck.js)', () => {
  const server = new grpc.Server();
  const health = new HealthImplementation({ '': 'NOT_SERVING', [SERVICE]: 'SERVING' });
  let address = '';

  before(async () => {
    health.addToServer(server);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound))),
    );
    address = `127.0.0.1:${port}`;
  });

  after(() => server.forceShutdown());

  it('reports the status the server set, and a service it does not have', async () => {
    assert.deepEqual(await checkHealth(address), { status: 'NOT_SERVING', detail: '' });
    assert.deepEqual(await checkHealth(address, SERVICE), { status: 'SERVING', detail: '' });
    assert.equal((await checkHealth(address, 'codecompass.v1.Nothing')).status, SERVICE_UNKNOWN);
  });

  it('reports a port nobody listens on as unreachable, with the reason', async () => {
    const result = await checkHealth(`127.0.0.1:${await freePort()}`, '', 1);
    assert.equal(result.status, UNREACHABLE);
    assert.match(result.detail, /^(UNAVAILABLE|DEADLINE_EXCEEDED): /);
  });

  it('exits 0 only when SERVING, else 1 with one line', async () => {
    health.setStatus('', 'SERVING');
    assert.deepEqual(await run([address]), { code: 0, stderr: '' });
    health.setStatus('', 'NOT_SERVING');
    assert.deepEqual(await run([address, '--timeout', '2']), { code: 1, stderr: `${address}: NOT_SERVING\n` });
    const unknown = await run([address, '--service', 'codecompass.v1.Nothing']);
    assert.equal(unknown.code, 1);
    assert.equal(unknown.stderr.split('\n').length, 2);
  });

  it('refuses a bad command line with exit code 2', async () => {
    const lines: string[] = [];
    for (const argv of [[], ['--timeout', '0', address], [address, 'extra'], [address, '--service']]) {
      assert.equal(await main(argv, (line) => lines.push(line)), 2, argv.join(' '));
    }
    assert.ok(lines.every((line) => line.includes('usage: node dist/src/healthcheck.js HOST:PORT')));
    assert.deepEqual(parseArgs(['--service', SERVICE, 'h:1', '--timeout', '0.5']), { address: 'h:1', service: SERVICE, timeoutS: 0.5 });
  });
});
