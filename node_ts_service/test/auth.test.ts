// The service token (src/auth.ts, src/config.ts): refused starts, the per-call check on a real
// in-process server (health exempt, reflection not), and a token file rotated under a running server.
// TLS and the same rules on the real process are tested from Python (tests/integration/test_service_auth.py).
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { UNAUTHENTICATED_MESSAGE } from '../src/auth';
import { loadConfig } from '../src/config';
import { configError } from './configHelpers';
import { CodeAnalysisServiceClient, type ScanWorkspaceResponse } from '../src/gen/codecompass/v1/analysis';
import { createLogger } from '../src/logging';
import { SERVICE_NAME } from '../src/names';
import { type RunningServer, startServer } from '../src/server';
import { AnalysisService } from '../src/service';

const MAIN = path.join(__dirname, '..', 'src', 'main.js');
const TOKEN = 'node-auth-test-token-5b0c1f';
const HealthClient = grpc.makeClientConstructor(healthService, 'grpc.health.v1.Health');
type Health = InstanceType<typeof HealthClient> & {
  check(req: { service: string }, opts: grpc.CallOptions, cb: (err: grpc.ServiceError | null, res?: { status: string }) => void): void;
};

describe('the service token setting', () => {
  it('is optional on loopback and required beyond it, in one line naming what to set', () => {
    assert.equal(loadConfig({}).auth, undefined);
    assert.deepEqual(loadConfig({ CODECOMPASS_GRPC_AUTH_TOKEN: TOKEN }).auth, { token: TOKEN, setting: 'CODECOMPASS_GRPC_AUTH_TOKEN' });
    assert.equal(
      configError({ CODECOMPASS_BIND_HOST: '0.0.0.0' }),
      'invalid CODECOMPASS_BIND_HOST: 0.0.0.0 listens beyond this machine: set CODECOMPASS_GRPC_AUTH_TOKEN or ' +
        'CODECOMPASS_GRPC_AUTH_TOKEN_FILE to the service token clients must send, or listen on 127.0.0.1',
    );
    assert.equal(loadConfig({ CODECOMPASS_BIND_HOST: '0.0.0.0', CODECOMPASS_GRPC_AUTH_TOKEN: TOKEN }).host, '0.0.0.0');
  });

  it('refuses a short token, and a token file that cannot be read or holds none, never showing a token', () => {
    const short = configError({ CODECOMPASS_GRPC_AUTH_TOKEN: 'abc' });
    assert.match(short, /^invalid CODECOMPASS_GRPC_AUTH_TOKEN: the bearer token from CODECOMPASS_GRPC_AUTH_TOKEN is 3 characters long: a token must have at least 16 characters/);
    assert.ok(!short.includes('abc;'));
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cc-auth-'));
    try {
      const file = path.join(dir, 'token');
      assert.match(configError({ CODECOMPASS_GRPC_AUTH_TOKEN_FILE: file }), /cannot read it \(ENOENT\)$/);
      fs.writeFileSync(file, '# only a comment\n\n');
      assert.match(configError({ CODECOMPASS_GRPC_AUTH_TOKEN_FILE: file }), /it holds no token/);
      fs.writeFileSync(file, `${TOKEN}\n`);
      assert.deepEqual(loadConfig({ CODECOMPASS_GRPC_AUTH_TOKEN_FILE: file, CODECOMPASS_BIND_HOST: '::' }).auth, { file, setting: 'CODECOMPASS_GRPC_AUTH_TOKEN_FILE' });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('TLS files come in pairs and must be PEM', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cc-tls-'));
    try {
      const pem = path.join(dir, 'cert.pem');
      fs.writeFileSync(pem, '-----BEGIN CERTIFICATE-----\n');
      assert.equal(configError({ CODECOMPASS_GRPC_TLS_CERT_FILE: pem }), 'invalid CODECOMPASS_GRPC_TLS_CERT_FILE: needs CODECOMPASS_GRPC_TLS_KEY_FILE too');
      assert.equal(configError({ CODECOMPASS_GRPC_TLS_CLIENT_CA_FILE: pem }), 'invalid CODECOMPASS_GRPC_TLS_CLIENT_CA_FILE: needs CODECOMPASS_GRPC_TLS_CERT_FILE too');
      const text = path.join(dir, 'key.txt');
      fs.writeFileSync(text, 'not a key');
      assert.equal(configError({ CODECOMPASS_GRPC_TLS_CERT_FILE: pem, CODECOMPASS_GRPC_TLS_KEY_FILE: text }), `invalid CODECOMPASS_GRPC_TLS_KEY_FILE: ${text}: not PEM (no -----BEGIN line)`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the process bound beyond loopback without a token exits 2 in one line, listening nowhere', async () => {
    const child = spawn(process.execPath, [MAIN], { env: { ...process.env, CODECOMPASS_BIND_HOST: '0.0.0.0', ANALYSIS_PORT: '0' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let err = '';
    let out = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    assert.equal(code, 2);
    assert.equal(
      err,
      `${SERVICE_NAME}: invalid CODECOMPASS_BIND_HOST: 0.0.0.0 listens beyond this machine: set CODECOMPASS_GRPC_AUTH_TOKEN or ` +
        'CODECOMPASS_GRPC_AUTH_TOKEN_FILE to the service token clients must send, or listen on 127.0.0.1\n',
    );
    assert.equal(out, '');
  });
});

describe('a server with a token file', () => {
  let dir: string;
  let tokenFile: string;
  let server: RunningServer;
  let service: AnalysisService;
  const logged: string[] = [];

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cc-auth-server-'));
    tokenFile = path.join(dir, 'token');
    fs.writeFileSync(tokenFile, `${TOKEN}\n`);
    service = new AnalysisService(loadConfig({}));
    server = await startServer({
      host: '127.0.0.1',
      port: 0,
      service,
      logger: createLogger('test', 'info', (line) => logged.push(line)),
      auth: loadConfig({ CODECOMPASS_GRPC_AUTH_TOKEN_FILE: tokenFile }).auth,
    });
    server.setServing();
  });

  after(async () => {
    await server.shutdown(0);
    service.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const scan = (authorization: string | undefined): Promise<grpc.ServiceError | ScanWorkspaceResponse> => {
    const client = new CodeAnalysisServiceClient(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure());
    const metadata = new grpc.Metadata();
    if (authorization !== undefined) metadata.set('authorization', authorization);
    return new Promise((resolve) => {
      client.scanWorkspace({ workspaceRoot: dir, previous: [], excludePatterns: [], unchangedSince: '', previousOmitted: false }, metadata, { deadline: Date.now() + 20_000 }, (err, res) => {
        client.close();
        resolve(err ?? res);
      });
    });
  };

  const refused = (answer: grpc.ServiceError | ScanWorkspaceResponse) => {
    assert.ok(answer instanceof Error, 'refused');
    assert.equal(answer.code, grpc.status.UNAUTHENTICATED);
    assert.equal(answer.details, UNAUTHENTICATED_MESSAGE);
  };

  it('refuses a call without a token or with a wrong one, answers one with the token', async () => {
    refused(await scan(undefined));
    refused(await scan(`Bearer ${TOKEN}x`));
    refused(await scan(`Basic ${TOKEN}`));
    refused(await scan('Bearer '));
    const answer = await scan(`Bearer ${TOKEN}`);
    assert.ok(!(answer instanceof Error), answer instanceof Error ? answer.message : '');
    assert.ok(!logged.some((line) => line.includes(TOKEN)), 'no token in the logs');
    assert.ok(logged.some((line) => line.includes('refused a call without a valid service token')));
  });

  it('answers health without a token', async () => {
    const health = new HealthClient(`127.0.0.1:${server.port}`, grpc.credentials.createInsecure()) as Health;
    const status = await new Promise<string>((resolve, reject) =>
      health.check({ service: '' }, { deadline: Date.now() + 10_000 }, (err, res) => (err ? reject(err) : resolve(res!.status))),
    );
    health.close();
    assert.equal(status, 'SERVING');
  });

  it('takes a rotated token file at once, keeping the tokens it had when the file is left empty', async () => {
    const next = 'node-auth-next-token-77aa10';
    fs.writeFileSync(tokenFile, `${next}\n${TOKEN}\n`);
    assert.ok(!((await scan(`Bearer ${next}`)) instanceof Error));
    assert.ok(!((await scan(`Bearer ${TOKEN}`)) instanceof Error));
    fs.writeFileSync(tokenFile, `${next}\n`);
    refused(await scan(`Bearer ${TOKEN}`));
    fs.writeFileSync(tokenFile, '');
    assert.ok(!((await scan(`Bearer ${next}`)) instanceof Error));
    assert.ok(logged.some((line) => line.includes('kept the bearer tokens read before')));
  });
});
