import assert from 'node:assert/strict';
import { call, createMerchant, sharedStack, type Stack } from '../src/harness/index.js';

describe('quickstart: the README flow', () => {
  let stack: Stack;
  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
  });

  it('gets a token with curl-style Basic auth and creates a product at the seed path (trailing slash)', async () => {
    const merchant = await createMerchant(stack);
    // The exact exchange the README shows: client id and API key as Basic credentials.
    const tokenResponse = await fetch(`${stack.baseUrl}/oauth/token`, {
      method: 'POST',
      headers: {
        authorization: `Basic ${Buffer.from(`${merchant.clientId}:${merchant.apiKey}`).toString('base64')}`,
        'content-type': 'application/x-www-form-urlencoded',
      },
      body: 'grant_type=client_credentials',
    });
    assert.equal(tokenResponse.status, 200);
    const token = (await tokenResponse.json()) as { access_token: string; token_type: string; expires_in: number; scope: string };
    assert.equal(token.token_type, 'Bearer');
    assert.equal(token.expires_in, 900);
    assert.ok(token.scope.split(' ').includes('products:write'));

    const created = await call(stack, 'POST', '/api/v1/products/', {
      token: token.access_token,
      body: { sku: 'SEED-1', title: 'Seed example', price: '19.99', currency: 'USD' },
    });
    assert.equal(created.status, 201);
    assert.match(created.body.id, /^prod_[0-9a-z]{26}$/);
    assert.equal(created.body.sku, 'SEED-1');
    assert.equal(created.body.title, 'Seed example');
    assert.equal(created.body.status, 'active');
    assert.equal(created.body.price, '19.99');

    const fetched = await call(stack, 'GET', `/api/v1/products/${created.body.id}`, { token: token.access_token });
    assert.deepEqual(fetched.body, created.body);

    const event = await stack.events.waitFor((e) => e.topic === 'products.created' && e.data.object.id === created.body.id, 10_000, 'products.created');
    assert.equal(event.merchant_id, merchant.merchantId);
    assert.deepEqual(event.data.object, created.body);
    assert.match(event.context?.request_id ?? '', /^req_/);
    assert.equal(event.context?.request_id, created.headers.get('x-request-id'));
    assert.deepEqual(event.context?.actor, { type: 'api_key', id: merchant.clientId });
  });

  it('serves the OpenAPI document without a token', async () => {
    const response = await call(stack, 'GET', '/api/v1/openapi.json');
    assert.equal(response.status, 200);
    assert.match(response.body.openapi, /^3\.1\./);
    assert.equal(response.body.servers[0].url, stack.baseUrl);
    assert.ok(response.body.paths['/api/v1/products']);
  });
});
