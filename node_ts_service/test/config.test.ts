import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { loadConfig } from '../src/config';
import { configError } from './configHelpers';
import { hostPort, isLoopback, parseBindHost } from '../src/hosts';

describe('the bind host (CODECOMPASS_BIND_HOST)', () => {
  it('defaults to loopback', () => {
    assert.equal(loadConfig({}).host, '127.0.0.1');
  });

  it('takes IPv4, IPv6 (bracketed or not) and host names', () => {
    const cases: Array<[string, string]> = [
      ['0.0.0.0', '0.0.0.0'],
      [' 10.1.2.3 ', '10.1.2.3'],
      ['::', '::'],
      ['[::1]', '::1'],
      ['localhost', 'localhost'],
      ['analysis.codecompass.svc.cluster.local', 'analysis.codecompass.svc.cluster.local'],
    ];
    // Beyond loopback a service token is required (test/auth.test.ts).
    const token = { CODECOMPASS_GRPC_AUTH_TOKEN: 'config-test-token-0123' };
    for (const [raw, host] of cases) assert.equal(loadConfig({ CODECOMPASS_BIND_HOST: raw, ...token }).host, host, raw);
  });

  it('refuses a port, a URL, blanks and malformed addresses in one line naming the variable', () => {
    for (const raw of ['127.0.0.1:50051', 'http://0.0.0.0', '', ' ', '999.1.1.1', 'two words', '-host']) {
      assert.equal(
        configError({ CODECOMPASS_BIND_HOST: raw }),
        `invalid CODECOMPASS_BIND_HOST: expected an IP address or host name to listen on (e.g. 127.0.0.1, 0.0.0.0, ::), got ${JSON.stringify(raw)}`,
      );
    }
  });

  it('refuses the old ANALYSIS_HOST rather than ignore it', () => {
    assert.equal(
      configError({ ANALYSIS_HOST: '0.0.0.0' }),
      'invalid ANALYSIS_HOST: no longer read; set CODECOMPASS_BIND_HOST, the host every CodeCompass server listens on',
    );
  });
});

describe('hosts', () => {
  it('knows loopback from the rest', () => {
    for (const host of ['127.0.0.1', '127.5.6.7', '::1', '[::1]', 'localhost', 'LOCALHOST']) assert.equal(isLoopback(host), true, host);
    for (const host of ['0.0.0.0', '::', '10.0.0.1', 'example.com', '128.0.0.1']) assert.equal(isLoopback(host), false, host);
  });

  it('writes IPv6 hosts in brackets', () => {
    assert.equal(hostPort('::', 5), '[::]:5');
    assert.equal(hostPort('0.0.0.0', 5), '0.0.0.0:5');
    assert.equal(parseBindHost('[::]'), '::');
  });
});

describe('reflection (CODECOMPASS_GRPC_REFLECTION)', () => {
  it('is on unless turned off, in the spellings the Python services take', () => {
    assert.equal(loadConfig({}).reflection, true);
    for (const off of ['false', 'FALSE', '0', 'no', 'off']) assert.equal(loadConfig({ CODECOMPASS_GRPC_REFLECTION: off }).reflection, false, off);
    for (const on of ['true', '1', 'yes', 'On']) assert.equal(loadConfig({ CODECOMPASS_GRPC_REFLECTION: on }).reflection, true, on);
  });

  it('refuses anything else in one line naming the variable', () => {
    assert.throws(() => loadConfig({ CODECOMPASS_GRPC_REFLECTION: 'maybe' }), /invalid CODECOMPASS_GRPC_REFLECTION: expected true or false, got "maybe"/);
  });
});
