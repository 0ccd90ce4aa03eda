import assert from 'node:assert/strict';
import { resetServices } from '@merx/contracts';
import { newId, type MerxEvent } from '@merx/kit';
import { startHarness, useHarness, type ApiClient, type Harness } from './harness.js';

const REQUESTER = { type: 'api_key', id: 'mx_test_Requester0000001' } as const;

/**
 * A `sandbox.reset` as the merchants service publishes it: the reset, running, every part
 * pending, in the context of the request that asked for it (unless `context` is null).
 */
function sandboxReset(merchantId: string, seed: boolean, context: MerxEvent['context'] | null = { request_id: newId('req'), actor: REQUESTER }): MerxEvent {
  const requestedAt = new Date().toISOString();
  return {
    id: newId('evt'),
    topic: 'sandbox.reset',
    merchant_id: merchantId,
    created_at: requestedAt,
    api_version: 'v1',
    ...(context ? { context } : {}),
    data: {
      object: {
        id: newId('rst'),
        object: 'sandbox_reset',
        status: 'running',
        seed,
        services: resetServices.map((service) => ({ service, status: 'pending', removed: {}, seeded: {}, completed_at: null })),
        requested_at: requestedAt,
        completed_at: null,
      },
    },
  };
}

const products = async (client: ApiClient) => (await client.get('/api/v1/products?limit=100')).body.data;
const reportsIn = (events: MerxEvent[]) => events.filter((event) => event.topic === 'internal.sandbox_service_reset');
const countOf = (events: MerxEvent[], topic: string) => events.filter((event) => event.topic === topic).length;

/** The report without its completion time, which only has to be a time. */
function reportOf(event: MerxEvent): Record<string, unknown> {
  const { completed_at: completedAt, ...rest } = event.data.object;
  assert.match(String(completedAt), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  return rest;
}

const SEEDED = [
  ['SANDBOX-MUG', '12.50', 'USD'],
  ['SANDBOX-POSTER', '24.00', 'USD'],
  ['SANDBOX-TSHIRT', '19.99', 'USD'],
];

describe('catalog: sandbox reset (PostgreSQL)', () => {
  let harness: Harness;
  let api: ApiClient;

  useHarness(
    (started) => (harness = started),
    (merchant) => (api = merchant),
  );

  it("deletes every product of the merchant, leaves another merchant's alone, and reports what it removed", async () => {
    const other = await harness.merchant();
    const keyed = await api.post(
      '/api/v1/products',
      { sku: 'KEYED', title: 'Keyed', price: '5.00', currency: 'USD' },
      { headers: { 'idempotency-key': 'before-reset' } },
    );
    assert.equal(keyed.status, 201, keyed.text);
    await api.create();
    const theirs = await other.create();
    const before = await api.events();
    const reset = sandboxReset(api.merchantId, false);

    await harness.deliver(reset);

    assert.deepEqual(await products(api), []);
    assert.equal((await api.get(`/api/v1/products/${keyed.body.id}`)).status, 404);
    assert.deepEqual(await products(other), [theirs]);
    const after = (await api.events()).slice(before.length);
    assert.deepEqual(
      after.map((event) => event.topic),
      ['sandbox.reset', 'internal.sandbox_service_reset'],
      'no products.deleted for a wipe',
    );
    assert.equal(after[1]!.merchant_id, api.merchantId);
    assert.deepEqual(reportOf(after[1]!), {
      id: reset.data.object.id,
      object: 'sandbox_service_reset',
      service: 'catalog',
      removed: { products: 2 },
      seeded: { products: 0 },
    });
    assert.deepEqual(
      (await other.events()).map((event) => event.topic),
      ['products.created'],
    );
    // Idempotency keys are left alone: a retry of a request answered before the reset gets that answer again.
    const retried = await api.post(
      '/api/v1/products',
      { sku: 'KEYED', title: 'Keyed', price: '5.00', currency: 'USD' },
      { headers: { 'idempotency-key': 'before-reset' } },
    );
    assert.equal(retried.text, keyed.text);
    assert.deepEqual(await products(api), []);
  });

  it('seeds three SANDBOX- products when asked, each announced by products.created, and reports both counts', async () => {
    const old = await api.create({ sku: 'SANDBOX-MUG' });
    const before = await api.events();
    const reset = sandboxReset(api.merchantId, true);

    await harness.deliver(reset);

    const seeded = await products(api);
    assert.deepEqual(seeded.map((p: { sku: string; price: string; currency: string }) => [p.sku, p.price, p.currency]).sort(), SEEDED);
    assert.ok(seeded.every((p: { id: string; status: string; version: number }) => p.id !== old.id && p.status === 'active' && p.version === 1));
    const after = (await api.events()).slice(before.length);
    assert.deepEqual(
      after.map((event) => event.topic),
      ['sandbox.reset', 'products.created', 'products.created', 'products.created', 'internal.sandbox_service_reset'],
    );
    // Created in fixture order; the list is newest first.
    assert.deepEqual(
      after.slice(1, 4).map((event) => event.data),
      [...seeded].reverse().map((object) => ({ object })),
    );
    assert.deepEqual(reportOf(after[4]!), {
      id: reset.data.object.id,
      object: 'sandbox_service_reset',
      service: 'catalog',
      removed: { products: 1 },
      seeded: { products: 3 },
    });
    // Whoever asked for the reset caused the fixtures: the audit log names them.
    assert.deepEqual(new Set(after.slice(1).map((event) => JSON.stringify(event.context))), new Set([JSON.stringify(reset.context)]));
    // The fixtures are ordinary products of the merchant.
    const changed = await api.patch(`/api/v1/products/${seeded[0].id}`, { title: 'My first change' }, { headers: { 'if-match': '"v1"' } });
    assert.equal(changed.status, 200, changed.text);
  });

  it('does nothing when the same reset is delivered again: no second wipe, no second seed', async () => {
    const reset = sandboxReset(api.merchantId, true);
    await harness.deliver(reset);
    const seeded = await products(api);
    const madeSince = await api.create({ sku: 'MADE-AFTER-RESET' });

    await harness.deliver(reset);

    assert.deepEqual(await products(api), [madeSince, ...seeded]);
    const events = await api.events();
    assert.equal(reportsIn(events).length, 1);
    assert.equal(countOf(events, 'products.created'), 4);
    const { rows } = await harness.db.query<{ consumer: string }>('SELECT consumer FROM catalog.inbox WHERE event_id = $1', [reset.id]);
    assert.deepEqual(rows, [{ consumer: 'catalog.sandbox_reset' }]);
  });

  it('applies two copies of one reset arriving at the same time exactly once', async () => {
    await api.create();
    const reset = sandboxReset(api.merchantId, true);

    await harness.deliver(reset, 2);

    assert.equal((await products(api)).length, 3);
    const events = await api.events();
    assert.equal(countOf(events, 'products.created'), 1 + 3);
    assert.deepEqual(reportsIn(events).map(reportOf), [
      { id: reset.data.object.id, object: 'sandbox_service_reset', service: 'catalog', removed: { products: 1 }, seeded: { products: 3 } },
    ]);
  });

  it('names the catalog as the actor of its events when the reset names nobody', async () => {
    await harness.deliver(sandboxReset(api.merchantId, true, null));

    const caused = (await api.events()).filter((event) => event.topic !== 'sandbox.reset');
    assert.equal(caused.length, 3 + 1);
    for (const event of caused) assert.deepEqual(event.context?.actor, { type: 'system', id: 'catalog' });
  });

  it('wipes again for a later reset, fixtures included', async () => {
    await harness.deliver(sandboxReset(api.merchantId, true));
    const later = sandboxReset(api.merchantId, false);

    await harness.deliver(later);

    assert.deepEqual(await products(api), []);
    const reports = reportsIn(await api.events());
    assert.deepEqual(
      reports.map((event) => event.data.object.removed),
      [{ products: 0 }, { products: 3 }],
    );
    assert.equal(reports[1]!.data.object.id, later.data.object.id);
  });
});

/** The embedded mode runs the same reset on PGlite. */
describe('catalog: sandbox reset on embedded PGlite', () => {
  let harness: Harness;

  before(async () => {
    harness = await startHarness({ embedded: true });
  });
  after(async () => {
    await harness?.stop();
  });
  afterEach(() => {
    assert.deepEqual(harness.events.takeProblems(), []);
  });

  it('wipes and seeds once, however often the reset is delivered', async () => {
    const api = await harness.merchant();
    const other = await harness.merchant();
    await api.create();
    const theirs = await other.create();
    const reset = sandboxReset(api.merchantId, true);

    await harness.deliver(reset);
    await harness.deliver(reset, 2);

    assert.deepEqual(
      (await products(api)).map((p: { sku: string }) => p.sku).sort(),
      SEEDED.map(([sku]) => sku),
    );
    assert.deepEqual(await products(other), [theirs]);
    const events = await api.events();
    assert.equal(countOf(events, 'products.created'), 1 + 3);
    assert.deepEqual(reportsIn(events).map(reportOf), [
      { id: reset.data.object.id, object: 'sandbox_service_reset', service: 'catalog', removed: { products: 1 }, seeded: { products: 3 } },
    ]);
  });
});
