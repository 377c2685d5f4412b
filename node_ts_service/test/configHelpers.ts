import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '../src/config';

/** The one-line message loadConfig refuses `env` with (fails the test when it accepts it). */
export function configError(env: NodeJS.ProcessEnv): string {
  try {
    loadConfig(env);
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.message;
  }
  assert.fail('expected a ConfigError');
}
