import assert from 'node:assert/strict';
import { newId, type MerxEvent } from '@merx/kit';
import {
  adminReadiness,
  call,
  createMerchant,
  eventually,
  poisonedOnPurpose,
  sharedStack,
  type ApiResponse,
  type Stack,
  type TestMerchant,
} from '../src/harness/index.js';
import { auditEntriesOf } from './audit.test.js';

/** Strings PostgreSQL refuses: jsonb an unpaired surrogate, text and jsonb a NUL. */
const LONE_HIGH = '\ud800';
const LONE_LOW = '\udfff';
const NUL = '\u0000';
const REPLACEMENT = '\ufffd';

/** A copy of a real event under a new id, changed by `change`: what a publisher that skipped every check could put on the bus. */
function variantOf(event: MerxEvent, change: (object: Record<string, unknown>) => void, overrides: Partial<MerxEvent> = {}): MerxEvent {
  const copy = structuredClone(event);
  change(copy.data.object);
  return { ...copy, id: newId('evt'), created_at: new Date().toISOString(), ...overrides };
}

describe("the bus never loses an event to a consumer's storage, and sets failures aside visibly", () => {
  let stack: Stack;
  let merchant: TestMerchant;
  const operator = () => ({ token: stack.operatorToken });

  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
  });
  beforeEach(async () => {
    merchant = await createMerchant(stack);
  });

  it('stores events carrying unpaired surrogates and NUL in every consumer, and the audit chain still verifies', async function () {
    this.timeout(60_000);
    const created = await call(stack, 'POST', '/api/v1/products', {
      token: merchant.token,
      body: { sku: 'ODD-1', title: 'Plain', price: '2.00', currency: 'USD' },
    });
    assert.equal(created.status, 201, created.text);
    const real = await stack.events.waitFor((e) => e.topic === 'products.created' && e.data.object.id === created.body.id);
    const productId = newId('prod');
    const odd = variantOf(real, (object) => {
      object.id = productId;
      object.title = `Odd ${LONE_HIGH} title`;
      object.description = `nul${NUL}inside ${LONE_LOW}`;
      object.attributes = { [`colour${LONE_HIGH}`]: `red${NUL}` };
    });
    const provisioned = await stack.events.waitFor((e) => e.topic === 'merchants.created' && e.merchant_id === merchant.merchantId);
    const profile = provisioned.data.object as { name: string; version: number; profile_version: number };
    const renamed = variantOf({ ...provisioned, topic: 'merchants.updated' }, (object) => {
      object.name = `Shop ${LONE_LOW}${NUL}`;
      object.version = profile.version + 1;
      object.profile_version = profile.profile_version + 1;
    });
    renamed.data.previous = { name: profile.name };
    await stack.publish([odd, renamed]);

    // audit: the entry holds what could be stored, and the chain hashes exactly that.
    const [entry] = await auditEntriesOf(stack, merchant.token, `&resource_id=${productId}`, (found) => found.length === 1, 20_000);
    assert.equal(entry.event_id, odd.id);
    assert.equal(entry.changes.after.title, `Odd ${REPLACEMENT} title`);
    assert.equal(entry.changes.after.description, `nul${REPLACEMENT}inside ${REPLACEMENT}`);
    assert.deepEqual(entry.changes.after.attributes, { [`colour${REPLACEMENT}`]: `red${REPLACEMENT}` });
    await auditEntriesOf(
      stack,
      merchant.token,
      `&action=merchants.updated&resource_id=${merchant.merchantId}`,
      (found) => found.some((e) => e.event_id === renamed.id),
      20_000,
    );
    const verify = await call(stack, 'GET', '/api/v1/audit/verify', { token: merchant.token });
    assert.equal(verify.body.valid, true, JSON.stringify(verify.body));

    // webhooks: the event is kept for the events API and for subscribers.
    const listed: ApiResponse = await eventually(
      () => call(stack, 'GET', `/api/v1/events/${odd.id}`, { token: merchant.token }),
      (response) => response.status === 200,
      'the event in the events API',
    );
    assert.equal(listed.body.data.object.title, `Odd ${REPLACEMENT} title`);

    // oauth: its copy of the merchant's profile took the new name.
    const standing = await eventually(
      () => call(stack, 'PATCH', `/admin/v1/merchants/${merchant.merchantId}`, { ...operator(), body: { status: 'active' } }),
      (response) => response.status === 200 && response.body.name === `Shop ${REPLACEMENT}${REPLACEMENT}`,
      'oauth mirroring the profile',
    );
    assert.equal(standing.body.name, `Shop ${REPLACEMENT}${REPLACEMENT}`);

    // Nothing of it was set aside on the way.
    const poison = await call(stack, 'GET', '/admin/v1/bus/poison', operator());
    assert.equal(poison.status, 200, poison.text);
    assert.deepEqual(
      poison.body.data.filter((message: { event_id: string }) => [odd.id, renamed.id].includes(message.event_id)),
      [],
    );
  });

  it('retries a failing event alone, while the rest of its batch commits, then poisons it where operators see, count and replay it', async function () {
    this.timeout(90_000);
    // PostgreSQL has no year 0: audit and fan-out fail on this event's time every time, though it matches its schema.
    const created = await call(stack, 'POST', '/api/v1/products', {
      token: merchant.token,
      body: { sku: 'POISON-1', title: 'Plain', price: '2.00', currency: 'USD' },
    });
    const real = await stack.events.waitFor((e) => e.topic === 'products.created' && e.data.object.id === created.body.id);
    const batch = [0, 1, 2].map((n) => variantOf(real, (object) => (object.id = newId('prod')), n === 1 ? { created_at: '0000-01-01T00:00:00.000Z' } : {}));
    const [good, bad, alsoGood] = batch as [MerxEvent, MerxEvent, MerxEvent];
    poisonedOnPurpose.add(bad.id);
    await stack.publish(batch);

    for (const fine of [good, alsoGood]) {
      await auditEntriesOf(stack, merchant.token, `&resource_id=${fine.data.object.id}`, (found) => found.length === 1, 20_000);
      const listed = await eventually(
        () => call(stack, 'GET', `/api/v1/events/${fine.id}`, { token: merchant.token }),
        (response) => response.status === 200,
        'a good event of the batch',
      );
      assert.equal(listed.status, 200);
    }
    const poisonedIn = async (queue: string) => {
      const listed = await call(stack, 'GET', `/admin/v1/bus/poison?queue=${queue}`, operator());
      assert.equal(listed.status, 200, listed.text);
      return listed.body as { queues: Array<{ queue: string; count: number }>; data: Array<Record<string, any>> };
    };
    for (const queue of ['audit.events', 'webhooks.events']) {
      const listed = await eventually(
        () => poisonedIn(queue),
        (body) => body.data.some((message) => message.event_id === bad.id),
        `the bad event in ${queue}.poison`,
      );
      const message = listed.data.find((candidate) => candidate.event_id === bad.id)!;
      assert.equal(message.queue, queue);
      assert.equal(message.topic, 'products.created');
      assert.equal(message.merchant_id, merchant.merchantId);
      assert.equal(message.failures, 3, 'the delivery limit of the e2e stacks');
      assert.match(message.last_error, /out of range/);
      assert.deepEqual(message.event, bad);
      assert.ok(listed.queues[0]!.count >= 1);
    }
    const verify = await call(stack, 'GET', '/api/v1/audit/verify', { token: merchant.token });
    assert.equal(verify.body.valid, true);

    // Counted and exposed: a metric by queue and topic, and readiness that stays ready but says so.
    const metrics = await fetch(`${stack.adminUrl('audit')}/metrics`).then((response) => response.text());
    assert.match(metrics, /merx_bus_poisoned_total\{[^}]*queue="audit\.events"[^}]*topic="products\.created"[^}]*\} [1-9]/);
    const readiness = await adminReadiness(stack, 'webhooks');
    assert.equal(readiness.status, 200);
    assert.equal(readiness.body.checks['webhooks.poison'], 'degraded');
    assert.ok(readiness.body.degraded.includes('webhooks.poison'));
    assert.match(readiness.body.details['webhooks.poison']!, /webhooks\.events/);

    // Replay: back on its work queue with a fresh count; it fails again, so it comes back later.
    const before = (await poisonedIn('audit.events')).data.find((message) => message.event_id === bad.id)!;
    const replayed = await call(stack, 'POST', '/admin/v1/bus/poison/replay', { ...operator(), body: { queue: 'audit.events', event_ids: [bad.id] } });
    assert.equal(replayed.status, 200, replayed.text);
    assert.deepEqual(replayed.body, { object: 'bus_poison_replay', queue: 'audit.events', replayed: 1 });
    const again = await eventually(
      () => poisonedIn('audit.events'),
      (body) => body.data.some((message) => message.event_id === bad.id && message.poisoned_at !== before.poisoned_at),
      'the replayed event failing its deliveries again',
    );
    assert.equal(again.data.filter((message) => message.event_id === bad.id).length, 1, 'replayed, not copied');
  });

  it('refuses operator requests naming no work queue, and strangers', async () => {
    const unknown = await call(stack, 'GET', '/admin/v1/bus/poison?queue=nope', operator());
    assert.equal(unknown.status, 422, unknown.text);
    const badReplay = await call(stack, 'POST', '/admin/v1/bus/poison/replay', { ...operator(), body: { queue: 'audit.events', event_ids: [], extra: 1 } });
    assert.equal(badReplay.status, 422, badReplay.text);
    assert.deepEqual(badReplay.body.errors.map((error: { field: string }) => error.field).sort(), ['event_ids', 'extra']);
    const nothing = await call(stack, 'POST', '/admin/v1/bus/poison/replay', { ...operator(), body: { queue: 'catalog.events', event_ids: [newId('evt')] } });
    assert.deepEqual(nothing.body, { object: 'bus_poison_replay', queue: 'catalog.events', replayed: 0 });
    const all = await call(stack, 'GET', '/admin/v1/bus/poison', operator());
    assert.deepEqual(
      all.body.queues.map((queue: { queue: string }) => queue.queue),
      ['audit.events', 'catalog.events', 'merchants.events', 'oauth.merchants', 'webhooks.events', 'gateway.throttle_overrides'],
    );
    const asMerchant = await call(stack, 'GET', '/admin/v1/bus/poison', { token: merchant.token });
    assert.equal(asMerchant.status, 401);
  });
});
