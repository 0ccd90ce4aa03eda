import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import Merx from '@merx/sdk';
import { FaultProxy } from './support/proxy.js';
import { WebhookReceiver } from './support/receiver.js';
import { merxServer, packageRoot, type MerxServer } from './support/server.js';

const run = promisify(execFile);

describe('both module systems: the same tour through import (ESM) and require (CommonJS)', function () {
  this.timeout(120_000);
  let server: MerxServer;

  before(async () => {
    server = await merxServer();
  });

  for (const file of ['esm.mjs', 'cjs.cjs']) {
    it(`${file}: create retried without a duplicate, pages, ifMatch, token refresh, every error class, webhook verification`, async () => {
      const merchant = await server.createMerchant();
      const proxy = await FaultProxy.start(server.baseUrl);
      const receiver = await WebhookReceiver.start();
      const work = mkdtempSync(path.join(tmpdir(), 'merx-node-modules-'));
      try {
        // A real delivery for the tour to verify.
        const merx = new Merx({ apiKey: merchant.apiKey, baseUrl: server.baseUrl });
        const subscription = await merx.webhooks.subscriptions.create({ url: receiver.url, topics: ['products.created'] });
        await merx.products.create({ sku: 'TOUR-HOOK', title: 'Hook', price: '3.00', currency: 'USD' });
        const [delivery] = await receiver.waitFor('products.created');
        const deliveryFile = path.join(work, 'delivery.json');
        writeFileSync(deliveryFile, JSON.stringify({ body: delivery!.body.toString('base64'), headers: delivery!.headers, secret: subscription.secret }));

        proxy.inject({ kind: 'cutAfterForward', method: 'POST', path: '/api/v1/products' });
        proxy.inject({ kind: 'respond', method: 'GET', path: '/api/v1/products', status: 401, body: JSON.stringify({ status: 401, code: 'invalid_token' }) });
        proxy.inject({
          kind: 'respond',
          method: 'GET',
          path: '/api/v1/merchant',
          status: 429,
          headers: { 'Retry-After': '3600' },
          body: JSON.stringify({ status: 429, code: 'rate_limited' }),
        });
        const { stdout } = await run(process.execPath, [path.join(packageRoot, 'test/fixtures', file)], {
          cwd: packageRoot,
          env: { ...process.env, MERX_API_KEY: merchant.apiKey, MERX_BASE_URL: proxy.url, DELIVERY_FILE: deliveryFile },
        });
        const out = JSON.parse(stdout) as Record<string, unknown>;

        assert.equal(out.sameClass, true, 'the default export, the named Merx and (CommonJS) the module itself are one class');
        assert.deepEqual(out.skus, ['TOUR-B', 'TOUR-A', 'TOUR-HOOK'], 'every product once, newest first, one page at a time');
        assert.equal(out.version, 2);
        assert.deepEqual(out.errors, {
          stale: 'PreconditionFailedError',
          missing: 'NotFoundError',
          duplicate: 'ConflictError',
          invalid: 'UnprocessableEntityError',
          unauthenticated: 'AuthenticationError',
          rateLimited: 'RateLimitError',
        });
        assert.deepEqual(out.event, { topic: 'products.created', sku: 'TOUR-HOOK' });
        assert.equal(out.tampered, 'WebhookVerificationError');

        const creates = proxy.seen({ method: 'POST', path: '/api/v1/products' });
        assert.equal(creates[0]!.fault, 'cutAfterForward');
        assert.equal(creates[1]!.headers['idempotency-key'], creates[0]!.headers['idempotency-key'], 'the retry reused the key');
        assert.equal(proxy.seen({ method: 'GET', path: '/api/v1/products' }).filter((seen) => seen.status === 200).length, 3, 'three pages of one');
        assert.equal(
          proxy.seen({ method: 'POST', path: '/oauth/token' }).filter((seen) => seen.status === 200).length,
          2,
          'one token, then one refresh after the 401',
        );
        assert.equal(proxy.pendingFaults(), 0);
      } finally {
        await Promise.all([proxy.close(), receiver.close()]);
        rmSync(work, { recursive: true, force: true });
      }
    });
  }

  it('the package resolves to dist/esm for import and dist/cjs for require', async () => {
    const script = `
      import { createRequire } from 'node:module';
      const require = createRequire(import.meta.url);
      console.log(JSON.stringify({ esm: import.meta.resolve('@merx/sdk'), cjs: require.resolve('@merx/sdk') }));`;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: packageRoot });
    const resolved = JSON.parse(stdout) as { esm: string; cjs: string };
    assert.match(resolved.esm, /dist\/esm\/index\.js$/);
    assert.match(resolved.cjs, /dist\/cjs\/index\.js$/);
  });
});
