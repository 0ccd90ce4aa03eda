import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../..');

function runEntryPoint(service: string, env: Record<string, string>): Promise<{ code: number | null; stderr: string; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(repoRoot, 'services', service, 'dist/src/main.js')], {
      env: { PATH: process.env.PATH ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    let stdout = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.on('exit', (code) => resolve({ code, stderr, stdout }));
  });
}

describe('configuration is checked before a port opens', () => {
  const cases: Array<{ service: string; env: Record<string, string>; mentions: string[] }> = [
    { service: 'catalog', env: { ADMIN_PORT: 'metrics' }, mentions: ['DATABASE_URL', 'AMQP_URL', 'MERX_PUBLIC_URL', 'ADMIN_PORT'] },
    {
      service: 'audit',
      env: { MERX_AUDIT_QUEUE: 'audit.events', MERX_DEPLOYMENT: 'Not Valid' },
      mentions: ['DATABASE_URL', 'MERX_AUDIT_QUEUE', 'MERX_DEPLOYMENT'],
    },
    {
      service: 'oauth',
      env: {
        DATABASE_URL: 'postgres://x@localhost/x',
        AMQP_URL: 'amqp://localhost',
        MERX_PUBLIC_URL: 'http://localhost:8080',
        MERX_JWKS_URL: 'http://localhost:3001/oauth/jwks',
        MERX_OPERATOR_TOKEN: 'short',
      },
      mentions: ['MERX_OPERATOR_TOKEN', 'MERX_COOKIE_SECRET'],
    },
    {
      service: 'gateway',
      env: { MERX_PUBLIC_URL: 'not a url', PORT: 'eighty', MERX_THROTTLE_KEY_PREFIX: 'x:' },
      mentions: ['MERX_PUBLIC_URL', 'PORT', 'MERX_OAUTH_URL', 'MERX_CATALOG_URL', 'MERX_THROTTLE_KEY_PREFIX'],
    },
    {
      service: 'merchants',
      env: {
        DATABASE_URL: 'postgres://x@localhost/x',
        AMQP_URL: 'amqp://localhost',
        MERX_PUBLIC_URL: 'http://localhost:8080',
        MERX_JWKS_URL: 'http://localhost:3001/oauth/jwks',
        MERX_RULE_TIMEOUT_MS: 'soon',
        MERX_MERCHANTS_QUEUE: 'merchants.events',
      },
      mentions: ['MERX_RULE_TIMEOUT_MS', 'MERX_MERCHANTS_QUEUE', 'MERX_SECRETS_KEYS is required'],
    },
    {
      service: 'webhooks',
      env: {
        DATABASE_URL: 'postgres://x@localhost/x',
        AMQP_URL: 'amqp://localhost',
        MERX_PUBLIC_URL: 'http://localhost:8080',
        MERX_JWKS_URL: 'http://localhost:3001/oauth/jwks',
        MERX_WEBHOOK_RETRY_SCHEDULE: '5s,never',
      },
      mentions: ['MERX_WEBHOOK_RETRY_SCHEDULE'],
    },
    // A key ring that cannot seal: one byte short of AES-256, a second entry without an id.
    {
      service: 'webhooks',
      env: {
        DATABASE_URL: 'postgres://x@localhost/x',
        AMQP_URL: 'amqp://localhost',
        MERX_PUBLIC_URL: 'http://localhost:8080',
        MERX_JWKS_URL: 'http://localhost:3001/oauth/jwks',
        MERX_SECRETS_KEYS: `k1:${Buffer.alloc(31).toString('base64')}`,
      },
      mentions: ['MERX_SECRETS_KEYS', 'key k1 must be base64 of exactly 32 bytes'],
    },
    {
      service: 'merchants',
      env: {
        DATABASE_URL: 'postgres://x@localhost/x',
        AMQP_URL: 'amqp://localhost',
        MERX_PUBLIC_URL: 'http://localhost:8080',
        MERX_JWKS_URL: 'http://localhost:3001/oauth/jwks',
        MERX_SECRETS_KEYS: `k1:${Buffer.alloc(32).toString('base64')},${Buffer.alloc(32).toString('base64')}`,
      },
      mentions: ['MERX_SECRETS_KEYS', 'entry 2 must be keyId:base64'],
    },
    { service: 'embedded', env: { MERX_SECRETS_KEYS: 'k1' }, mentions: ['MERX_SECRETS_KEYS'] },
    {
      service: 'console',
      env: { MERX_PUBLIC_URL: 'http://merx.internal', MERX_CONSOLE_CLIENT_SECRET: 'short' },
      mentions: ['DATABASE_URL', 'MERX_PUBLIC_URL', 'MERX_CONSOLE_CLIENT_SECRET'],
    },
    { service: 'embedded', env: { PORT: '99999', ADMIN_PORT: '-1' }, mentions: ['PORT', 'ADMIN_PORT'] },
  ];
  for (const { service, env, mentions } of cases) {
    it(`${service}: a bad or missing setting stops it (${mentions.join(', ')}) with one line naming the variables`, async function () {
      this.timeout(20_000);
      const { code, stderr, stdout } = await runEntryPoint(service, env);
      assert.equal(code, 78, stderr);
      const lines = stderr.trim().split('\n');
      assert.equal(lines.length, 1, `expected one line, got:\n${stderr}`);
      assert.match(lines[0]!, new RegExp(`^(merx|${service}): configuration error: `));
      for (const name of mentions) assert.ok(lines[0]!.includes(name), `${name} in: ${lines[0]}`);
      assert.equal(stdout, '');
    });
  }
});
