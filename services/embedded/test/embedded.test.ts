import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createLogger } from '@merx/kit';
import { startEmbedded, type DevCredentials } from '../src/index.js';

async function tokenFor(baseUrl: string, apiKey: string): Promise<string> {
  const clientId = apiKey.split('_').slice(0, 3).join('_');
  const response = await fetch(`${baseUrl}/oauth/token`, {
    method: 'POST',
    headers: { authorization: `Basic ${Buffer.from(`${clientId}:${apiKey}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: 'grant_type=client_credentials',
  });
  assert.equal(response.status, 200);
  return ((await response.json()) as { access_token: string }).access_token;
}

describe('embedded mode (npm start)', () => {
  let dataDir: string;
  beforeEach(async () => {
    dataDir = await mkdtemp(path.join(tmpdir(), 'merx-embedded-'));
  });
  afterEach(() => rm(dataDir, { recursive: true, force: true }));

  it('creates a sandbox merchant and dev.json on first start, and reuses data and credentials on the next', async function () {
    this.timeout(60_000);
    const logger = createLogger('embedded-test', 'silent');
    const first = await startEmbedded({ dataDir, port: 0, logger });
    let productId: string;
    try {
      assert.equal(first.firstStart, true);
      const written = JSON.parse(await readFile(path.join(dataDir, 'dev.json'), 'utf8')) as DevCredentials;
      assert.deepEqual(written, first.credentials);
      assert.equal(written.base_url, first.baseUrl);
      assert.equal(written.grpc_url, first.grpcUrl);
      assert.match(written.grpc_url, /^localhost:\d+$/);
      assert.match(written.merchant_id, /^mch_/);
      assert.match(written.api_key, /^mx_test_[0-9A-Za-z]{16}_[0-9A-Za-z]{32}$/);
      assert.ok(written.operator_token.length >= 32);
      assert.equal((await stat(path.join(dataDir, 'dev.json'))).mode & 0o077, 0, 'dev.json is private to its owner');
      assert.equal(written.admin_url, first.admin.url, 'dev.json names the admin listener');
      assert.equal((await fetch(`${written.admin_url}/metrics`)).status, 200);

      const token = await tokenFor(first.baseUrl, written.api_key);
      const created = await fetch(`${first.baseUrl}/api/v1/products`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ sku: 'PERSIST-1', title: 'Kept across restarts', price: '5.00', currency: 'USD' }),
      });
      assert.equal(created.status, 201);
      productId = ((await created.json()) as { id: string }).id;
    } finally {
      await first.stop();
    }

    const second = await startEmbedded({ dataDir, port: 0, logger });
    try {
      assert.equal(second.firstStart, false);
      assert.equal(second.credentials.merchant_id, first.credentials.merchant_id);
      assert.equal(second.credentials.api_key, first.credentials.api_key);
      const token = await tokenFor(second.baseUrl, second.credentials.api_key);
      const fetched = await fetch(`${second.baseUrl}/api/v1/products/${productId}`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(fetched.status, 200);
      assert.equal(((await fetched.json()) as { sku: string }).sku, 'PERSIST-1');
    } finally {
      await second.stop();
    }
  });

  it("keeps an operator's throttle override across a restart, and listens on loopback only unless told otherwise", async function () {
    this.timeout(60_000);
    const logger = createLogger('embedded-test', 'silent');
    const first = await startEmbedded({ dataDir, port: 0, logger });
    try {
      const changed = await fetch(`${first.baseUrl}/admin/v1/merchants/${first.credentials.merchant_id}/throttle`, {
        method: 'PUT',
        headers: { authorization: `Bearer ${first.credentials.operator_token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ burst: { capacity: 3, refill_per_second: 1 } }),
      });
      assert.equal(changed.status, 200, await changed.clone().text());
      assert.equal((first.gateway.server.address() as AddressInfo).address, '127.0.0.1');
      assert.equal((first.admin.server.address() as AddressInfo).address, '127.0.0.1', 'metrics and readiness details stay on the machine');
    } finally {
      await first.stop();
    }

    const second = await startEmbedded({ dataDir, port: 0, logger });
    try {
      const token = await tokenFor(second.baseUrl, second.credentials.api_key);
      for (let deadline = Date.now() + 10_000; ;) {
        const ready = (await (await fetch(`${second.admin.url}/readyz`)).json()) as { checks: Record<string, string> };
        if (ready.checks['gateway.limiter'] === 'ok') break;
        assert.ok(Date.now() < deadline, `the overrides were not loaded: ${JSON.stringify(ready)}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const listed = await fetch(`${second.baseUrl}/api/v1/products`, { headers: { authorization: `Bearer ${token}` } });
      assert.equal(listed.status, 200);
      assert.match(listed.headers.get('ratelimit-policy') ?? '', /^"burst";q=3;w=3,/, 'the stored override applies after the restart, not the plan');
    } finally {
      await second.stop();
    }
  });
});
