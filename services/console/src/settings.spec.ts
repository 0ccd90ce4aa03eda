import assert from 'node:assert/strict';
import { ConfigError, loadConfig } from '@merx/kit';
import { consoleConfig, cookieIsSecure } from './settings.js';

describe('console settings', () => {
  it('makes the session cookie Secure except for plain http on localhost, and refuses plain http elsewhere', () => {
    assert.equal(cookieIsSecure('https://merx.example'), true);
    assert.equal(cookieIsSecure('http://localhost:8080'), false);
    assert.equal(cookieIsSecure('http://127.0.0.1:8080'), false);
    assert.throws(() => cookieIsSecure('http://merx.internal'), /must be https/);
  });

  it('stops with one line naming each missing or bad setting', () => {
    const base = { DATABASE_URL: 'postgres://merx@localhost/merx', MERX_PUBLIC_URL: 'https://merx.example', MERX_CONSOLE_CLIENT_SECRET: 'x'.repeat(32) };
    assert.equal(loadConfig('console', consoleConfig, base).MERX_GATEWAY_URL, 'http://gateway:8080');
    assert.throws(
      () => loadConfig('console', consoleConfig, { ...base, MERX_CONSOLE_CLIENT_SECRET: undefined }),
      (error: unknown) => error instanceof ConfigError && /MERX_CONSOLE_CLIENT_SECRET is required/.test(error.message),
    );
    assert.throws(
      () => loadConfig('console', consoleConfig, { ...base, MERX_PUBLIC_URL: 'http://merx.internal' }),
      (error: unknown) => error instanceof ConfigError && /MERX_PUBLIC_URL .*https/.test(error.message),
    );
  });
});
