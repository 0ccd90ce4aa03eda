import assert from 'node:assert/strict';
import { call, createMerchant, issueToken, sharedStack, type ApiResponse, type Stack, type TestMerchant } from '../src/harness/index.js';

const newProduct = (sku: string, extra: Record<string, unknown> = {}) => ({ sku, title: `Product ${sku}`, price: '10.00', currency: 'EUR', ...extra });

describe('products through the gateway', () => {
  let stack: Stack;
  let merchant: TestMerchant;

  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
  });
  beforeEach(async () => {
    merchant = await createMerchant(stack);
  });

  async function countProducts(token = merchant.token): Promise<number> {
    const list = await call(stack, 'GET', '/api/v1/products?limit=100', { token });
    return list.body.data.length;
  }

  it('creates, reads, lists, updates and deletes, emitting one event per change', async () => {
    const created = await call(stack, 'POST', '/api/v1/products', {
      token: merchant.token,
      body: newProduct('LIFE-1', { status: 'draft', inventory_quantity: 3, attributes: { color: 'red' } }),
    });
    assert.equal(created.status, 201);
    assert.equal(created.headers.get('etag'), '"v1"');
    assert.equal(created.headers.get('location'), `/api/v1/products/${created.body.id}`);
    const id = created.body.id as string;

    const activated = await call(stack, 'PATCH', `/api/v1/products/${id}`, {
      token: merchant.token,
      body: { status: 'active', price: '12.5' },
      headers: { 'if-match': '"v1"' },
    });
    assert.equal(activated.status, 200);
    assert.equal(activated.body.version, 2);
    assert.equal(activated.body.price, '12.50');
    assert.equal(activated.headers.get('etag'), '"v2"');

    const list = await call(stack, 'GET', '/api/v1/products', { token: merchant.token });
    assert.deepEqual(
      list.body.data.map((p: { id: string }) => p.id),
      [id],
    );
    assert.equal(list.body.has_more, false);

    const deleted = await call(stack, 'DELETE', `/api/v1/products/${id}`, { token: merchant.token });
    assert.equal(deleted.status, 204);
    assert.equal(deleted.text, '');
    assert.equal((await call(stack, 'GET', `/api/v1/products/${id}`, { token: merchant.token })).status, 404);

    const updated = await stack.events.waitFor((e) => e.topic === 'products.updated' && e.data.object.id === id);
    assert.deepEqual(updated.data.previous, { status: 'draft', price: '10.00' });
    const gone = await stack.events.waitFor((e) => e.topic === 'products.deleted' && e.data.object.id === id);
    assert.equal(gone.data.object.version, 2);
    const topics = stack.events
      .forMerchant(merchant.merchantId)
      .filter((e) => e.topic.startsWith('products.'))
      .map((e) => e.topic);
    assert.deepEqual(topics, ['products.created', 'products.updated', 'products.deleted']);
  });

  it('keeps tenants apart: another merchant gets 404 for our ids and never sees our rows', async () => {
    const other = await createMerchant(stack);
    const ours = await call(stack, 'POST', '/api/v1/products', { token: merchant.token, body: newProduct('MINE-1') });
    const id = ours.body.id as string;
    for (const [method, body] of [['GET'], ['PATCH', { title: 'stolen' }], ['DELETE']] as const) {
      const response = await call(stack, method, `/api/v1/products/${id}`, { token: other.token, body });
      assert.equal(response.status, 404, `${method} on another tenant's product`);
      assert.ok(!response.text.includes('MINE-1'));
    }
    const unknown = await call(stack, 'GET', '/api/v1/products/prod_00000000000000000000000000', { token: other.token });
    assert.equal(unknown.body.title, 'Not found');
    assert.equal(await countProducts(other.token), 0);
    const still = await call(stack, 'GET', `/api/v1/products/${id}`, { token: merchant.token });
    assert.equal(still.body.title, 'Product MINE-1');
    // The same sku is free for another tenant.
    assert.equal((await call(stack, 'POST', '/api/v1/products', { token: other.token, body: newProduct('MINE-1') })).status, 201);
  });

  it('answers every kind of bad input with problem+json and writes nothing', async () => {
    const cases: Array<{ name: string; status: number; code: string; options: Parameters<typeof call>[3] }> = [
      { name: 'malformed JSON', status: 400, code: 'malformed_request', options: { token: merchant.token, rawBody: '{"sku": ' } },
      {
        name: 'not JSON',
        status: 415,
        code: 'unsupported_media_type',
        options: { token: merchant.token, rawBody: 'sku=x', contentType: 'application/x-www-form-urlencoded' },
      },
      {
        name: 'over 1 MiB',
        status: 413,
        code: 'payload_too_large',
        options: { token: merchant.token, rawBody: JSON.stringify(newProduct('BIG', { description: 'x'.repeat(1_100_000) })) },
      },
      { name: 'float price', status: 422, code: 'validation_failed', options: { token: merchant.token, body: newProduct('BAD-1', { price: 10.5 }) } },
      {
        name: 'too many decimals',
        status: 422,
        code: 'validation_failed',
        options: { token: merchant.token, body: newProduct('BAD-2', { price: '1.5', currency: 'JPY' }) },
      },
      { name: 'no token', status: 401, code: 'unauthenticated', options: { body: newProduct('BAD-3') } },
      { name: 'garbage token', status: 401, code: 'unauthenticated', options: { token: 'not.a.jwt', body: newProduct('BAD-4') } },
    ];
    for (const { name, status, code, options } of cases) {
      const response = await call(stack, 'POST', '/api/v1/products', options);
      assert.equal(response.status, status, name);
      assert.equal(response.body.code, code, name);
      assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/, name);
      assert.equal(response.body.request_id, response.headers.get('x-request-id'), name);
      assert.ok(!/\bat .+\(.+:\d+:\d+\)/.test(response.text), `${name}: no stack trace`);
    }
    const unauthenticated = await call(stack, 'POST', '/api/v1/products', { body: newProduct('BAD-5') });
    assert.match(unauthenticated.headers.get('www-authenticate') ?? '', /^Bearer error="invalid_token"/);
    const field = await call(stack, 'POST', '/api/v1/products', { token: merchant.token, body: { sku: 'has space', title: '', price: '1', currency: 'usd' } });
    assert.deepEqual(field.body.errors.map((e: { field: string }) => e.field).sort(), ['currency', 'sku', 'title']);
    assert.equal(await countProducts(), 0);
    assert.equal(stack.events.forMerchant(merchant.merchantId).filter((e) => e.topic.startsWith('products.')).length, 0);
  });

  it('refuses a duplicate sku (409), a stale If-Match (412) and an impossible transition (409) without changing anything', async () => {
    const first = await call(stack, 'POST', '/api/v1/products', { token: merchant.token, body: newProduct('DUP-1') });
    const duplicate = await call(stack, 'POST', '/api/v1/products', { token: merchant.token, body: newProduct('DUP-1') });
    assert.equal(duplicate.status, 409);
    assert.equal(duplicate.body.code, 'conflict');
    const id = first.body.id as string;
    await call(stack, 'PATCH', `/api/v1/products/${id}`, { token: merchant.token, body: { title: 'v2' } });
    const stale = await call(stack, 'PATCH', `/api/v1/products/${id}`, {
      token: merchant.token,
      body: { title: 'lost update' },
      headers: { 'if-match': '"v1"' },
    });
    assert.equal(stale.status, 412);
    assert.equal(stale.body.code, 'precondition_failed');
    const unquoted = await call(stack, 'PATCH', `/api/v1/products/${id}`, {
      token: merchant.token,
      body: { title: 'lost update' },
      headers: { 'if-match': 'v2' },
    });
    assert.equal(unquoted.status, 412);
    assert.match(unquoted.body.detail, /must be \* or quoted entity tags such as "v2"/, 'an unquoted tag is named as such, not reported as a mismatch');
    const toDraft = await call(stack, 'PATCH', `/api/v1/products/${id}`, { token: merchant.token, body: { status: 'draft' } });
    assert.equal(toDraft.status, 409);
    const current = await call(stack, 'GET', `/api/v1/products/${id}`, { token: merchant.token });
    assert.equal(current.body.title, 'v2');
    assert.equal(current.body.status, 'active');
    assert.equal(current.body.version, 2);
    assert.equal(await countProducts(), 1);
  });

  it('checks scopes: a read-only token can list but not create (403 insufficient_scope)', async () => {
    const readOnly = await issueToken(stack, merchant.apiKey, 'products:read');
    assert.equal((await call(stack, 'GET', '/api/v1/products', { token: readOnly })).status, 200);
    const denied = await call(stack, 'POST', '/api/v1/products', { token: readOnly, body: newProduct('SCOPE-1') });
    assert.equal(denied.status, 403);
    assert.equal(denied.body.code, 'insufficient_scope');
    assert.match(denied.headers.get('www-authenticate') ?? '', /insufficient_scope/);
    assert.equal(await countProducts(), 0);
  });

  it('replays an idempotent POST byte for byte and refuses the key with another body', async () => {
    const headers = { 'idempotency-key': `order-${Math.random()}` };
    const first = await call(stack, 'POST', '/api/v1/products', { token: merchant.token, body: newProduct('IDEM-1'), headers });
    const again = await call(stack, 'POST', '/api/v1/products', { token: merchant.token, body: newProduct('IDEM-1'), headers });
    assert.equal(first.status, 201);
    assert.equal(again.status, 201);
    assert.equal(again.text, first.text);
    assert.equal(again.headers.get('idempotent-replayed'), 'true');
    const reused = await call(stack, 'POST', '/api/v1/products', { token: merchant.token, body: newProduct('IDEM-2'), headers });
    assert.equal(reused.status, 422);
    assert.equal(reused.body.code, 'idempotency_key_reused');
    assert.equal(await countProducts(), 1);
    await stack.events.waitFor((e) => e.topic === 'products.created' && e.merchant_id === merchant.merchantId);
    assert.equal(stack.events.forMerchant(merchant.merchantId).filter((e) => e.topic === 'products.created').length, 1);
  });

  it('pages through a list newest first with an opaque cursor', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await call(stack, 'POST', '/api/v1/products', { token: merchant.token, body: newProduct(`PAGE-${i}`) })).body.id);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: ApiResponse = await call(stack, 'GET', `/api/v1/products?limit=2${cursor ? `&cursor=${cursor}` : ''}`, { token: merchant.token });
      seen.push(...page.body.data.map((p: { id: string }) => p.id));
      cursor = page.body.next_cursor;
      assert.equal(page.body.has_more, cursor !== null);
    } while (cursor);
    assert.deepEqual(seen, [...ids].reverse());
    const bad = await call(stack, 'GET', '/api/v1/products?limit=500', { token: merchant.token });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.errors[0].field, 'limit');
  });
});
