import assert from 'node:assert/strict';
import { call, createMerchant, eventually, issueToken, sharedStack, type ApiResponse, type Stack, type TestMerchant } from '../src/harness/index.js';

describe('sandbox reset', () => {
  let stack: Stack;

  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
  });

  const as =
    (merchant: TestMerchant) =>
    (method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<ApiResponse> =>
      call(stack, method, path, { token: merchant.token, ...(body === undefined ? {} : { body }), ...(headers ? { headers } : {}) });

  /** Products, configuration, records, a subscription, deliveries and events: something in every service. */
  async function populate(merchant: TestMerchant): Promise<void> {
    const api = as(merchant);
    assert.equal((await api('POST', '/api/v1/products', { sku: 'KEEP-OR-WIPE', title: 'Thing', price: '1.00', currency: 'EUR' })).status, 201);
    const source = await api('POST', '/api/v1/sources', { name: 'Shop', kind: 'storefront' });
    const destination = await api('POST', '/api/v1/destinations', { name: 'ERP', url: 'http://127.0.0.1:9/erp', status: 'paused' });
    const rule = await api('POST', '/api/v1/rules', { name: 'All', action: 'forward' });
    assert.equal(
      (await api('POST', '/api/v1/connections', { source_id: source.body.id, destination_id: destination.body.id, rule_ids: [rule.body.id] })).status,
      201,
    );
    assert.equal((await api('POST', '/api/v1/webhooks/subscriptions', { url: 'http://127.0.0.1:9/hooks', topics: ['*'], status: 'disabled' })).status, 201);
    const ingested = await api('POST', `/api/v1/sources/${source.body.id}/records`, {
      records: [{ type: 'order', external_id: 'O-1', occurred_at: '2026-11-22T10:00:00Z', data: { total: 1 } }],
    });
    assert.equal(ingested.body.accepted, 1, ingested.text);
    await eventually(
      () => api('GET', `/api/v1/webhooks/deliveries?destination_id=${destination.body.id}`),
      (r) => r.body.data.length === 1,
      'the routed delivery',
    );
    await eventually(
      () => api('GET', '/api/v1/events?topic=orders'),
      (r) => r.body.data.length === 1,
      'the stored order event',
    );
  }

  const countsOf = async (merchant: TestMerchant) => {
    const api = as(merchant);
    const length = async (path: string) => (await api('GET', path)).body.data.length as number;
    return {
      products: await length('/api/v1/products'),
      sources: await length('/api/v1/sources'),
      destinations: await length('/api/v1/destinations'),
      rules: await length('/api/v1/rules'),
      connections: await length('/api/v1/connections'),
      subscriptions: await length('/api/v1/webhooks/subscriptions'),
      deliveries: await length('/api/v1/webhooks/deliveries'),
      orderEvents: await length('/api/v1/events?topic=orders'),
    };
  };

  it("wipes the sandbox merchant's data in every service, keeps its keys and audit log, and leaves other merchants alone", async function () {
    this.timeout(60_000);
    const merchant = await createMerchant(stack);
    const bystander = await createMerchant(stack);
    await populate(merchant);
    await populate(bystander);
    const before = await countsOf(bystander);
    const api = as(merchant);

    const requested = await api('POST', '/api/v1/sandbox/reset', {});
    assert.equal(requested.status, 202, requested.text);
    assert.equal(requested.body.status, 'running');
    assert.equal(requested.headers.get('location'), `/api/v1/sandbox/resets/${requested.body.id}`);
    assert.deepEqual(
      requested.body.services.map((s: any) => [s.service, s.status]),
      [
        ['catalog', 'pending'],
        ['merchants', 'pending'],
        ['webhooks', 'pending'],
      ],
    );

    const done = await eventually(
      () => api('GET', `/api/v1/sandbox/resets/${requested.body.id}`),
      (r) => r.body.status === 'completed',
      'the reset to complete',
    );
    assert.ok(done.body.services.every((s: any) => s.status === 'completed' && s.completed_at));
    const byService = Object.fromEntries(done.body.services.map((s: any) => [s.service, s.removed]));
    assert.equal(byService.catalog.products, 1);
    assert.deepEqual(
      [byService.merchants.sources, byService.merchants.destinations, byService.merchants.rules, byService.merchants.connections, byService.merchants.records],
      [1, 1, 1, 1, 1],
    );
    assert.equal(byService.webhooks.subscriptions, 1);
    // The only delivery is the destination's routed record (the subscription is disabled): it goes with
    // the destination's versioned removal, which the webhooks service applies on its own, not with its part of the reset.
    assert.equal(byService.webhooks.deliveries, 0);
    const emptied = { products: 0, sources: 0, destinations: 0, rules: 0, connections: 0, subscriptions: 0, deliveries: 0, orderEvents: 0 };
    assert.deepEqual(
      await eventually(
        () => countsOf(merchant),
        (counts) => JSON.stringify(counts) === JSON.stringify(emptied),
        "the merchant's data gone everywhere",
      ),
      emptied,
    );
    assert.deepEqual(await countsOf(bystander), before, 'another merchant keeps everything');

    // The API key still works (a new token), and the audit log still holds what happened before.
    const fresh = await issueToken(stack, merchant.apiKey);
    const audit = await call(stack, 'GET', '/api/v1/audit?action=products.created', { token: fresh });
    assert.equal(audit.body.data.length, 1, 'the audit log survives a reset');
    const completed = await stack.events.waitFor((e) => e.topic === 'sandbox.reset_completed' && e.data.object.id === requested.body.id);
    assert.equal(completed.merchant_id, merchant.merchantId);
    await eventually(
      () => call(stack, 'GET', '/api/v1/audit?action=sandbox.reset', { token: fresh }),
      (r) => r.body.data.length === 1,
      'the reset in the audit log',
    );
  });

  it('reseeds a small fixture set when asked', async function () {
    this.timeout(60_000);
    const merchant = await createMerchant(stack);
    const api = as(merchant);
    await populate(merchant);
    const requested = await api('POST', '/api/v1/sandbox/reset', { seed: true });
    assert.equal(requested.status, 202, requested.text);
    const done = await eventually(
      () => api('GET', `/api/v1/sandbox/resets/${requested.body.id}`),
      (r) => r.body.status === 'completed',
      'the seeded reset',
    );
    const seeded = Object.fromEntries(done.body.services.map((s: any) => [s.service, s.seeded]));
    assert.deepEqual(seeded.catalog, { products: 3 });
    assert.deepEqual(seeded.merchants, { sources: 1, destinations: 1, rules: 1, connections: 1 });
    const counts = await countsOf(merchant);
    assert.deepEqual([counts.products, counts.sources, counts.destinations, counts.rules, counts.connections, counts.subscriptions], [3, 1, 1, 1, 1, 0]);
    const products = (await api('GET', '/api/v1/products')).body.data;
    assert.ok(products.every((p: any) => p.sku.startsWith('SANDBOX-')));
    const connection = (await api('GET', '/api/v1/connections')).body.data[0];
    const destination = (await api('GET', `/api/v1/destinations/${connection.destination_id}`)).body;
    assert.equal(destination.status, 'paused', 'the seeded destination sends nothing until the merchant points it somewhere');
  });

  it('refuses live merchants (409), needs sandbox:reset, and checks its body', async () => {
    const live = await createMerchant(stack, { mode: 'live' });
    const refused = await as(live)('POST', '/api/v1/sandbox/reset', {});
    assert.equal(refused.status, 409);
    assert.match(refused.body.detail, /sandbox/);
    const merchant = await createMerchant(stack);
    const narrow = await issueToken(stack, merchant.apiKey, 'products:write');
    assert.equal((await call(stack, 'POST', '/api/v1/sandbox/reset', { token: narrow, body: {} })).status, 403);
    const bad = await as(merchant)('POST', '/api/v1/sandbox/reset', { seed: 'yes', wipe: 'all' });
    assert.equal(bad.status, 422);
    assert.deepEqual(bad.body.errors.map((e: any) => e.field).sort(), ['seed', 'wipe']);
    assert.equal((await as(merchant)('GET', '/api/v1/sandbox/resets/rst_00000000000000000000000000')).status, 404);
  });
});
