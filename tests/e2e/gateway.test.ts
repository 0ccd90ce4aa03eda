import assert from 'node:assert/strict';
import { call, createMerchant, sharedStack, type Stack } from '../src/harness/index.js';

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

  it('reports health, readiness and metrics', async () => {
    assert.deepEqual(await fetch(`${stack.baseUrl}/healthz`).then((r) => r.json()), { status: 'ok' });
    const ready = await call(stack, 'GET', '/readyz');
    assert.equal(ready.status, 200);
    assert.deepEqual(ready.body.checks, { oauth: 'ok', catalog: 'ok' });
    const metrics = await fetch(`${stack.baseUrl}/metrics`).then((r) => r.text());
    assert.match(metrics, /merx_http_request_duration_seconds_bucket/);
  });
});
