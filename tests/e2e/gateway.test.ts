import assert from 'node:assert/strict';
import { adminReadiness, call, createMerchant, sharedStack, type Stack } from '../src/harness/index.js';

describe('gateway edge behaviour', () => {
  let stack: Stack;
  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
  });

  it('answers unknown routes with a 404 problem and gives every response its own request id', async () => {
    const merchant = await createMerchant(stack);
    const ids = new Set<string>();
    for (const path of ['/api/v1/nothing-here', '/api/v2/products', '/favicon.ico']) {
      const response = await call(stack, 'GET', path, { token: merchant.token });
      assert.equal(response.status, 404, path);
      assert.equal(response.body.code, 'not_found');
      ids.add(response.headers.get('x-request-id')!);
    }
    assert.equal(ids.size, 3);
  });

  it('does not let a client choose its request id', async () => {
    const response = await call(stack, 'GET', '/api/v1/openapi.json', { headers: { 'x-request-id': 'req_00000000000000000000000000' } });
    assert.notEqual(response.headers.get('x-request-id'), 'req_00000000000000000000000000');
  });

  it('answers a wrong method on a known path with 405 and Allow', async () => {
    const merchant = await createMerchant(stack);
    const response = await call(stack, 'PUT', '/api/v1/products', { token: merchant.token, body: {} });
    assert.equal(response.status, 405);
    assert.equal(response.body.code, 'method_not_allowed');
    assert.match(response.headers.get('allow') ?? '', /POST/);
  });

  it('survives clients that hang up mid-request', async function () {
    this.timeout(30_000);
    const merchant = await createMerchant(stack);
    const created = await call(stack, 'POST', '/api/v1/products', {
      token: merchant.token,
      body: { sku: 'HANGUP-1', title: 'Hang up', price: '1.00', currency: 'USD' },
    });
    // Abort at staggered moments so some requests die before the upstream answers, some while it does.
    const attempts = Array.from({ length: 60 }, async (_, i) => {
      const controller = new AbortController();
      const request = fetch(`${stack.baseUrl}/api/v1/products/${created.body.id}`, {
        headers: { authorization: `Bearer ${merchant.token}` },
        signal: controller.signal,
      });
      for (let tick = 0; tick < i % 6; tick++) await new Promise((resolve) => setImmediate(resolve));
      controller.abort();
      await request.then((response) => response.arrayBuffer()).catch(() => undefined);
    });
    await Promise.all(attempts);
    const after = await call(stack, 'GET', `/api/v1/products/${created.body.id}`, { token: merchant.token });
    assert.equal(after.status, 200);
    assert.equal((await fetch(`${stack.baseUrl}/healthz`)).status, 200);
  });

  it('serves a load balancer what it needs on the public port, and nothing more', async () => {
    assert.deepEqual(await fetch(`${stack.baseUrl}/healthz`).then((r) => r.json()), { status: 'ok' });
    const ready = await call(stack, 'GET', '/readyz');
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.body, { status: 'ready' }, 'no dependency names or errors on the public port');
    const metrics = await call(stack, 'GET', '/metrics');
    assert.equal(metrics.status, 404, metrics.text);
    assert.match(metrics.headers.get('content-type') ?? '', /^application\/problem\+json/);
    assert.equal(metrics.body.code, 'not_found');
  });

  it("serves metrics and every service's detailed readiness on the admin port", async () => {
    const health = await fetch(`${stack.adminUrl('gateway')}/healthz`);
    assert.deepEqual([health.status, await health.json()], [200, { status: 'ok' }]);
    const gateway = await adminReadiness(stack, 'gateway');
    assert.equal(gateway.status, 200, JSON.stringify(gateway.body));
    for (const upstream of ['oauth', 'catalog', 'audit', 'webhooks', 'merchants', 'console'])
      assert.equal(gateway.body.checks[`gateway.${upstream}`], 'ok', upstream);
    // Other tests may leave poisoned messages behind (a degraded service); no upstream is degraded.
    assert.deepEqual(
      gateway.body.degraded.filter((name) => name.startsWith('gateway.')),
      [],
    );
    for (const service of ['oauth', 'catalog', 'audit', 'webhooks', 'merchants', 'console'] as const) {
      const ready = await adminReadiness(stack, service);
      assert.equal(ready.status, 200, `${service}: ${JSON.stringify(ready.body)}`);
      assert.equal(ready.body.checks[`${service}.database`], 'ok', service);
    }
    const metrics = await fetch(`${stack.adminUrl('gateway')}/metrics`);
    assert.equal(metrics.status, 200);
    const text = await metrics.text();
    assert.match(text, /merx_http_request_duration_seconds_bucket\{[^}]*service="gateway"/);
    assert.match(text, /merx_readiness_check\{service="gateway",check="catalog"\} 1/);
  });

  it('labels proxied requests in its metrics by their route prefix, not as unmatched and not by their path', async () => {
    const merchant = await createMerchant(stack);
    const missing = await call(stack, 'GET', '/api/v1/products/prd_00000000000000000000000000', { token: merchant.token });
    assert.equal(missing.status, 404);
    const text = await (await fetch(`${stack.adminUrl('gateway')}/metrics`)).text();
    assert.match(text, /merx_http_request_duration_seconds_count\{service="gateway",method="GET",route="\/api\/v1\/products\/\*",status="404"\} [1-9]/);
    assert.doesNotMatch(text, /route="\/api\/v1\/products\/prd_/);
  });

  // A service's own port is reachable from the whole service network: status only there as well (both modes).
  it("keeps metrics and readiness details off every service's own port", async () => {
    for (const service of ['oauth', 'catalog', 'webhooks', 'merchants'] as const) {
      const origin = stack.directUrl(service);
      const ready = await fetch(`${origin}/readyz`);
      assert.deepEqual([ready.status, await ready.json()], [200, { status: 'ready' }], service);
      const metrics = await fetch(`${origin}/metrics`);
      assert.equal(metrics.status, 404, service);
      assert.match(metrics.headers.get('content-type') ?? '', /^application\/problem\+json/, service);
      const admin = await fetch(`${stack.adminUrl(service)}/metrics`);
      assert.equal(admin.status, 200, service);
      assert.match(await admin.text(), new RegExp(`merx_readiness_check\\{service="${service}",check="database"\\} 1`), service);
    }
  });
});
