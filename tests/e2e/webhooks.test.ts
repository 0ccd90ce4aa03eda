import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createContractValidator } from '@merx/contracts';
import { canonicalJson } from '@merx/kit';
import { WebhookReceiver, type ReceivedWebhook } from '@merx/webhooks/testing';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import {
  adminReadiness,
  call,
  createMerchant,
  eventually,
  E2E_WEBHOOK_ENV,
  freePort,
  repoRoot,
  sharedStack,
  stackMode,
  type ApiResponse,
  type Stack,
  type TestMerchant,
} from '../src/harness/index.js';

const SUBSCRIPTIONS = '/api/v1/webhooks/subscriptions';
const newProduct = (sku: string) => ({ sku, title: `Product ${sku}`, price: '10.00', currency: 'EUR' });
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** What a receiver checks without any Merx code: the hex HMAC-SHA256, keyed by the secret's bytes, of the other six fields' RFC 8785 form. */
function bodyHmacOf(canonical: string, secret: string): string {
  return createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64'))
    .update(canonical)
    .digest('hex');
}

const contract = createContractValidator();

/** Verifies a request as a subscriber would: Standard Webhooks headers, then the body's own HMAC; and holds it to the document's webhooks section. Answers the payload. */
function verifiedPayload(request: ReceivedWebhook, secret: string): any {
  assert.deepEqual(
    contract.validateWebhook({ body: request.body, headers: request.headers as Record<string, string> }),
    [],
    `webhook ${request.headers['webhook-id']} matches its webhooks entry`,
  );
  const verified = new Webhook(secret).verify(request.body, request.headers as Record<string, string>) as Record<string, unknown>;
  const { hmac_sha256: claimed, ...fields } = JSON.parse(request.body) as Record<string, unknown>;
  assert.equal(bodyHmacOf(canonicalJson(fields), secret), claimed, `hmac_sha256 of ${request.headers['webhook-id']}`);
  assert.equal(verified.id, request.headers['webhook-id'], 'webhook-id is the event id');
  return verified;
}

describe('webhooks end to end, through the gateway', () => {
  let stack: Stack;
  let merchant: TestMerchant;
  const receivers: WebhookReceiver[] = [];

  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
  });
  beforeEach(async () => {
    merchant = await createMerchant(stack);
  });
  afterEach(async () => {
    await Promise.all(receivers.splice(0).map((receiver) => receiver.close()));
  });

  async function receiver(): Promise<WebhookReceiver> {
    const started = await WebhookReceiver.start();
    receivers.push(started);
    return started;
  }

  const api = (method: string, path: string, options: { body?: unknown; headers?: Record<string, string> } = {}): Promise<ApiResponse> =>
    call(stack, method, path, { token: merchant.token, ...options });

  async function subscribe(url: string, topics: string[], extra: Record<string, unknown> = {}): Promise<any> {
    const created = await api('POST', SUBSCRIPTIONS, { body: { url, topics, ...extra } });
    assert.equal(created.status, 201, created.text);
    assert.match(created.body.secret, /^whsec_/);
    return created.body;
  }

  /** Makes a product through the catalogue API and answers it with the id of the event that announced it. */
  async function createProduct(sku: string): Promise<{ product: any; eventId: string }> {
    const created = await api('POST', '/api/v1/products', { body: newProduct(sku) });
    assert.equal(created.status, 201, created.text);
    const event = await stack.events.waitFor(
      (e) => e.topic === 'products.created' && e.data.object.id === created.body.id,
      10_000,
      `products.created of ${sku}`,
    );
    return { product: created.body, eventId: event.id };
  }

  async function deliveryOf(eventId: string, subscriptionId: string): Promise<any> {
    const page = await eventually(
      () => api('GET', `/api/v1/webhooks/deliveries?event_id=${eventId}&subscription_id=${subscriptionId}`),
      (response) => response.body.data.length > 0,
      `fan-out of ${eventId} to ${subscriptionId}`,
    );
    assert.equal(page.body.data.length, 1, 'one delivery per event and subscription');
    return page.body.data[0];
  }

  async function deliveryWhen(id: string, condition: (delivery: any) => boolean, what: string, timeoutMs?: number): Promise<any> {
    return (
      await eventually(
        () => api('GET', `/api/v1/webhooks/deliveries/${id}`),
        (response) => response.status === 200 && condition(response.body),
        what,
        timeoutMs,
      )
    ).body;
  }

  async function subscriptionNow(id: string): Promise<any> {
    const response = await api('GET', `${SUBSCRIPTIONS}/${id}`);
    assert.equal(response.status, 200, response.text);
    return response.body;
  }

  it('delivers every subscribed event of real API actions, signed and logged, by topic, by exact name and for everything', async function () {
    this.timeout(60_000);
    const [byTopic, byName, everything] = [await receiver(), await receiver(), await receiver()];
    const all = await subscribe(everything.url(), ['*']);
    const products = await subscribe(byTopic.url(), ['products']);
    const updates = await subscribe(byName.url(), ['products.updated']);

    const { product, eventId: createdId } = await createProduct('WH-1');
    const updated = await api('PATCH', `/api/v1/products/${product.id}`, { body: { title: 'Renamed' }, headers: { 'if-match': '"v1"' } });
    assert.equal(updated.status, 200, updated.text);
    assert.equal((await api('DELETE', `/api/v1/products/${product.id}`)).status, 204);
    const updatedEvent = await stack.events.waitFor((e) => e.topic === 'products.updated' && e.data.object.id === product.id);
    const deletedEvent = await stack.events.waitFor((e) => e.topic === 'products.deleted' && e.data.object.id === product.id);
    const productEvents = [createdId, updatedEvent.id, deletedEvent.id];
    // The test's event log hears the bus asynchronously: wait for each, never read it as it stands.
    const subscriptionEvents: string[] = [];
    for (const subscription of [all, products, updates]) {
      const created = await stack.events.waitFor(
        (e) => e.topic === 'webhooks.subscription_created' && e.data.object.id === subscription.id,
        10_000,
        `subscription_created of ${subscription.id}`,
      );
      subscriptionEvents.push(created.id);
    }

    // `*` gets everything of the merchant from its own creation on, the topic subscriber every product event.
    const wantedByAll = [...subscriptionEvents, ...productEvents];
    await everything.waitUntil(
      (received) => wantedByAll.every((id) => received.some((r) => r.headers['webhook-id'] === id)),
      20_000,
      'every event at the * endpoint',
    );
    await byTopic.waitUntil((received) => productEvents.every((id) => received.some((r) => r.headers['webhook-id'] === id)), 20_000, 'every products event');
    await byName.waitFor((r) => r.headers['webhook-id'] === updatedEvent.id);

    // Fan-out stores an event before it delivers it, so the events API knows everything the receivers got.
    const merchantEvents = new Set((await api('GET', '/api/v1/events?limit=100')).body.data.map((e: any) => e.id));
    for (const [endpoint, subscription] of [
      [everything, all],
      [byTopic, products],
      [byName, updates],
    ] as const) {
      const ids = endpoint.received.map((r) => r.headers['webhook-id'] as string);
      assert.equal(new Set(ids).size, ids.length, `no event twice at ${subscription.topics}`);
      for (const request of endpoint.received) {
        const payload = verifiedPayload(request, subscription.secret);
        assert.ok(merchantEvents.has(payload.id), `${payload.topic} ${payload.id} is an event of this merchant`);
        assert.equal(payload.merchant_id, merchant.merchantId);
        assert.deepEqual(Object.keys(JSON.parse(request.body)), ['id', 'topic', 'merchant_id', 'created_at', 'api_version', 'data', 'hmac_sha256']);
        assert.equal(request.headers['content-type'], 'application/json');
        assert.equal(request.headers['user-agent'], 'Merx-Webhooks/1');
      }
    }
    assert.deepEqual(byTopic.received.map((r) => r.json.topic).sort(), ['products.created', 'products.deleted', 'products.updated']);
    // Fan-out writes all deliveries of an event in one transaction, and every event has been fanned out by now.
    const toUpdates = await api('GET', `/api/v1/webhooks/deliveries?subscription_id=${updates.id}`);
    assert.deepEqual(
      toUpdates.body.data.map((d: any) => d.event_id),
      [updatedEvent.id],
      'the exact-name subscription gets that event only',
    );
    assert.deepEqual(
      byName.received.map((r) => r.json.topic),
      ['products.updated'],
    );

    // The payload is the event: the product as the API answered it, `previous` on the update.
    const created = byTopic.forEvent(createdId)[0]!.json;
    assert.deepEqual(created.data, { object: product });
    assert.deepEqual(byTopic.forEvent(updatedEvent.id)[0]!.json.data, { object: updated.body, previous: { title: 'Product WH-1' } });
    assert.equal(created.topic, 'products.created');
    assert.equal(created.api_version, 'v1');

    // The body HMAC by hand for one small payload: the canonical form written out, keys sorted at every level.
    const q = JSON.stringify;
    const p = product;
    const handBuilt =
      `{"api_version":"v1","created_at":${q(created.created_at)},"data":{"object":{"attributes":{},"created_at":${q(p.created_at)},"currency":"EUR",` +
      `"description":null,"id":${q(p.id)},"inventory_quantity":null,"object":"product","price":"10.00","sku":"WH-1","status":"active",` +
      `"title":"Product WH-1","updated_at":${q(p.updated_at)},"version":1}},"id":${q(createdId)},"merchant_id":${q(merchant.merchantId)},"topic":"products.created"}`;
    assert.equal(bodyHmacOf(handBuilt, products.secret), created.hmac_sha256);

    // The delivery log shows each attempt.
    for (const eventId of productEvents) {
      const listed = await deliveryOf(eventId, products.id);
      const delivery = await deliveryWhen(listed.id, (d) => d.status === 'succeeded', `delivery of ${eventId} recorded`);
      assert.deepEqual([delivery.attempt_count, delivery.last_status_code, delivery.last_error, delivery.replay_of], [1, 200, null, null]);
      assert.match(delivery.completed_at, ISO_UTC);
      assert.equal(delivery.attempts.length, 1);
      const [attempt] = delivery.attempts;
      assert.deepEqual([attempt.number, attempt.status_code, attempt.error, attempt.response_excerpt], [1, 200, null, 'ok']);
      assert.ok(Number.isInteger(attempt.duration_ms) && attempt.duration_ms >= 0, `duration_ms ${attempt.duration_ms}`);
      assert.match(attempt.started_at, ISO_UTC);
      assert.equal(new Date(attempt.started_at).toISOString(), attempt.started_at);
      const request = byTopic.forEvent(eventId)[0]!;
      assert.ok(Math.abs(Date.parse(attempt.started_at) - request.receivedAt.getTime()) < 5_000, 'started_at is when the request went out');
    }
    const stored = await api('GET', `/api/v1/events/${createdId}`);
    assert.equal(stored.status, 200);
    assert.deepEqual(stored.body.data, created.data);
  });

  it('retries on 500, dead-letters after the window with alerts, switches endpoints off, and replays one or by filter', async function () {
    this.timeout(90_000);
    const [first, second] = [await receiver(), await receiver()];
    first.answerWith(() => ({ status: 500, body: 'receiver broke' }));
    second.answerWith(() => ({ status: 500 }));
    const a = await subscribe(first.url(), ['products']);
    const b = await subscribe(second.url(), ['products.created']);
    const before = new Date().toISOString();
    const { product, eventId } = await createProduct('DEAD-1');

    const deadA = await deliveryWhen((await deliveryOf(eventId, a.id)).id, (d) => d.status === 'dead', 'the delivery to A dying', 30_000);
    const deadB = await deliveryWhen((await deliveryOf(eventId, b.id)).id, (d) => d.status === 'dead', 'the delivery to B dying', 30_000);
    // Schedule 500ms, 500ms, 1s (±10 %) within a 3 s window: three attempts at least, none after the window.
    assert.ok(deadA.attempt_count >= 3, `several attempts before giving up (${deadA.attempt_count})`);
    assert.equal(deadA.attempts.length, deadA.attempt_count);
    assert.deepEqual(
      deadA.attempts.map((x: any) => x.number),
      deadA.attempts.map((_: any, i: number) => i + 1),
    );
    assert.ok(deadA.attempts.every((x: any) => x.status_code === 500 && x.error === 'http' && x.response_excerpt === 'receiver broke'));
    const starts = deadA.attempts.map((x: any) => Date.parse(x.started_at));
    const gaps = starts.slice(1).map((start: number, i: number) => start - starts[i]);
    assert.ok(
      gaps.every((gap: number) => gap >= 440),
      `attempts are spaced by the schedule: ${gaps}`,
    );
    // None scheduled after the 3 s window; a due retry may wait for the worker's next look (every 250 ms).
    assert.ok(starts.at(-1) - starts[0] <= 3_000 + 600, `no attempt after the 3 s window (${starts.at(-1) - starts[0]} ms)`);
    assert.equal(first.forEvent(eventId).length, deadA.attempt_count, 'every attempt reached the receiver');
    assert.equal(new Set(first.forEvent(eventId).map((r) => r.json.id)).size, 1, 'the same event id on every retry');
    assert.deepEqual([deadA.last_status_code, deadA.last_error], [500, 'http']);

    // The dead letters carry the payload as sent and the last answer.
    const letters = await api('GET', `/api/v1/webhooks/dead-letters?subscription_id=${a.id}`);
    assert.deepEqual(
      letters.body.data.map((l: any) => l.id),
      [deadA.id],
    );
    const letter = (await api('GET', `/api/v1/webhooks/dead-letters/${deadA.id}`)).body;
    const sent = first.forEvent(eventId)[0]!.json;
    const { hmac_sha256: _hmac, ...payload } = sent;
    assert.deepEqual(letter.payload, payload);
    assert.deepEqual(letter.payload.data, { object: product });
    assert.deepEqual(
      [letter.event_id, letter.topic, letter.subscription_id, letter.last_status_code, letter.attempt_count],
      [eventId, 'products.created', a.id, 500, deadA.attempt_count],
    );
    assert.match(letter.dead_at, ISO_UTC);

    // Each endpoint failed through a whole window: switched off, with an alert for the dead letter and one for the endpoint.
    for (const subscription of [a, b]) {
      const now = await eventually(
        () => subscriptionNow(subscription.id),
        (s) => s.status === 'disabled',
        `${subscription.id} switched off`,
      );
      assert.equal(now.disabled_reason, 'endpoint_failing');
    }
    const alerts = await eventually(
      () => api('GET', '/api/v1/events?topic=system_alerts.raised&limit=100'),
      (response) => response.body.data.length >= 4,
      'four alerts stored as events',
    );
    assert.equal(alerts.body.data.length, 4);
    const alertOf = (kind: string, subscriptionId: string) =>
      alerts.body.data.find((e: any) => e.data.object.kind === kind && e.data.object.subscription_id === subscriptionId);
    for (const [subscription, dead] of [
      [a, deadA],
      [b, deadB],
    ]) {
      const lettered = alertOf('event_dead_lettered', subscription.id);
      assert.ok(lettered, `event_dead_lettered for ${subscription.id}`);
      assert.deepEqual(
        [lettered.topic, lettered.data.object.delivery_id, lettered.data.object.event_id, lettered.data.object.severity],
        ['system_alerts.raised', dead.id, eventId, 'warning'],
      );
      const disabled = alertOf('endpoint_disabled', subscription.id);
      assert.ok(disabled, `endpoint_disabled for ${subscription.id}`);
      assert.equal(disabled.data.object.severity, 'critical');
      // Alerts travel on the bus like any event.
      await stack.events.waitFor((e) => e.id === disabled.id, 10_000, 'the alert on the bus');
    }
    assert.ok((await api('GET', '/api/v1/events?topic=system_alerts&limit=100')).body.data.length === 4, 'the topic filter finds them too');

    // A switched-off endpoint replays nothing; switched on, a replay sends the same event again.
    const refused = await api('POST', `/api/v1/webhooks/dead-letters/${deadA.id}/replay`);
    assert.equal(refused.status, 409);
    first.answerWith(() => ({ status: 200 }));
    const current = await subscriptionNow(a.id);
    const enabled = await api('PATCH', `${SUBSCRIPTIONS}/${a.id}`, { body: { status: 'enabled' }, headers: { 'if-match': `"v${current.version}"` } });
    assert.equal(enabled.status, 200, enabled.text);
    assert.deepEqual([enabled.body.status, enabled.body.disabled_reason], ['enabled', null]);
    const replay = await api('POST', `/api/v1/webhooks/dead-letters/${deadA.id}/replay`);
    assert.equal(replay.status, 201, replay.text);
    assert.equal(replay.headers.get('location'), `/api/v1/webhooks/deliveries/${replay.body.id}`);
    assert.deepEqual([replay.body.replay_of, replay.body.event_id, replay.body.subscription_id], [deadA.id, eventId, a.id]);
    const replayed = await deliveryWhen(replay.body.id, (d) => d.status === 'succeeded', 'the replay delivered');
    assert.deepEqual(
      replayed.attempts.map((x: any) => x.status_code),
      [200],
    );
    const again = first.forEvent(eventId).at(-1)!;
    assert.equal(first.forEvent(eventId).length, deadA.attempt_count + 1);
    assert.deepEqual(verifiedPayload(again, a.secret), verifiedPayload(first.forEvent(eventId)[0]!, a.secret), 'the same event id and payload');
    assert.equal((await api('GET', `/api/v1/webhooks/deliveries/${deadA.id}`)).body.replayed_by, replay.body.id);
    assert.equal((await api('GET', `/api/v1/webhooks/dead-letters/${deadA.id}`)).status, 404, 'a replayed dead letter is off the list');
    const chain = await api('GET', `/api/v1/webhooks/deliveries?event_id=${eventId}&subscription_id=${a.id}`);
    assert.deepEqual(chain.body.data.map((d: any) => d.id).sort(), [deadA.id, replay.body.id].sort());

    // Bulk replay: a disabled endpoint's letters are skipped, a filter that matches nothing replays nothing.
    const skipped = await api('POST', '/api/v1/webhooks/dead-letters/replay', { body: { subscription_id: b.id } });
    assert.equal(skipped.status, 202, skipped.text);
    assert.deepEqual([skipped.body.replayed, skipped.body.has_more], [0, false]);
    second.answerWith(() => ({ status: 200 }));
    assert.equal((await api('PATCH', `${SUBSCRIPTIONS}/${b.id}`, { body: { status: 'enabled' } })).status, 200);
    const none = await api('POST', '/api/v1/webhooks/dead-letters/replay', { body: { topic: 'orders' } });
    assert.deepEqual([none.status, none.body.replayed], [202, 0]);
    const bulk = await api('POST', '/api/v1/webhooks/dead-letters/replay', {
      body: { subscription_id: b.id, topic: 'products.created', since: before, limit: 10 },
    });
    assert.equal(bulk.status, 202, bulk.text);
    assert.deepEqual([bulk.body.object, bulk.body.replayed, bulk.body.has_more], ['dead_letter_replay', 1, false]);
    const [bulkId] = bulk.body.delivery_ids;
    const bulkReplayed = await deliveryWhen(bulkId, (d) => d.status === 'succeeded', 'the bulk replay delivered');
    assert.deepEqual([bulkReplayed.replay_of, bulkReplayed.event_id], [deadB.id, eventId]);
    verifiedPayload(second.forEvent(eventId).at(-1)!, b.secret);
    assert.equal((await api('GET', '/api/v1/webhooks/dead-letters')).body.data.length, 0);
  });

  it('signs with both secrets after a rotation, each verifying alone', async () => {
    const endpoint = await receiver();
    const subscription = await subscribe(endpoint.url(), ['products.created']);
    const rotated = await api('POST', `${SUBSCRIPTIONS}/${subscription.id}/rotate-secret`);
    assert.equal(rotated.status, 200, rotated.text);
    assert.match(rotated.body.secret, /^whsec_/);
    assert.notEqual(rotated.body.secret, subscription.secret);
    assert.ok(Date.parse(rotated.body.previous_secret_expires_at) - Date.now() > 23 * 3_600_000, 'the old secret keeps signing for 24 h');
    assert.equal((await subscriptionNow(subscription.id)).secret, undefined, 'the secret is shown on create and rotation only');

    const { eventId } = await createProduct('ROT-1');
    const request = await endpoint.waitFor((r) => r.headers['webhook-id'] === eventId);
    const signatures = String(request.headers['webhook-signature']).split(' ');
    assert.equal(signatures.length, 2);
    assert.ok(signatures.every((signature) => signature.startsWith('v1,')));
    // Any Standard Webhooks verifier accepts the request with either secret (the body HMAC has the new one only).
    for (const secret of [rotated.body.secret, subscription.secret]) {
      assert.equal((new Webhook(secret).verify(request.body, request.headers as Record<string, string>) as { id: string }).id, eventId);
    }
    // Each signature alone is verified by exactly one of the two secrets.
    for (const signature of signatures) {
      const alone = { ...(request.headers as Record<string, string>), 'webhook-signature': signature };
      const verifying = [rotated.body.secret, subscription.secret].filter((secret) => {
        try {
          new Webhook(secret).verify(request.body, alone);
          return true;
        } catch {
          return false;
        }
      });
      assert.equal(verifying.length, 1, `one secret made ${signature}`);
    }
    // The body HMAC uses the current secret.
    const { hmac_sha256: claimed, ...fields } = request.json;
    assert.equal(bodyHmacOf(canonicalJson(fields), rotated.body.secret), claimed);
  });

  it('switches an endpoint off at once on 410 Gone', async () => {
    const endpoint = await receiver();
    endpoint.answerWith(() => ({ status: 410 }));
    const subscription = await subscribe(endpoint.url(), ['products.created']);
    const { eventId } = await createProduct('GONE-1');
    const dead = await deliveryWhen((await deliveryOf(eventId, subscription.id)).id, (d) => d.status === 'dead', 'dead on 410');
    assert.deepEqual([dead.attempt_count, dead.last_status_code], [1, 410]);
    const now = await eventually(
      () => subscriptionNow(subscription.id),
      (s) => s.status === 'disabled',
      'switched off',
    );
    assert.equal(now.disabled_reason, 'endpoint_gone');
    await stack.events.waitFor(
      (e) => e.topic === 'system_alerts.raised' && e.data.object.kind === 'endpoint_disabled' && e.data.object.subscription_id === subscription.id,
    );
    assert.equal(endpoint.received.length, 1);
  });

  it('waits as long as Retry-After asks on 429', async () => {
    const endpoint = await receiver();
    endpoint.answerWith((_request, index) => (index === 0 ? { status: 429, headers: { 'retry-after': '2' } } : { status: 200 }));
    const subscription = await subscribe(endpoint.url(), ['products.created']);
    const { eventId } = await createProduct('SLOW-1');
    const delivery = await deliveryWhen((await deliveryOf(eventId, subscription.id)).id, (d) => d.status === 'succeeded', 'delivered after the wait');
    assert.deepEqual(
      delivery.attempts.map((x: any) => x.status_code),
      [429, 200],
    );
    const [first, second] = endpoint.forEvent(eventId);
    const gap = second!.receivedAt.getTime() - first!.receivedAt.getTime();
    assert.ok(gap >= 2_000, `waited ${gap} ms for Retry-After: 2 (the schedule says 500 ms)`);
    const recordedGap = Date.parse(delivery.attempts[1].started_at) - Date.parse(delivery.attempts[0].started_at);
    assert.ok(recordedGap >= 2_000, `the log agrees: ${recordedGap} ms`);
  });

  it('refuses private, loopback, link-local and CGNAT endpoints, and plain http for live merchants, writing nothing', async () => {
    const refused = [
      'http://localhost:8080/hooks',
      'http://10.0.0.1/',
      'http://169.254.169.254/',
      'http://100.64.0.1/',
      'http://192.168.1.10/hooks',
      'http://[::1]:9000/hooks',
    ];
    for (const url of refused) {
      const response = await api('POST', SUBSCRIPTIONS, { body: { url, topics: ['*'] } });
      assert.equal(response.status, 422, `${url}: ${response.text}`);
      assert.match(response.headers.get('content-type') ?? '', /^application\/problem\+json/);
      assert.deepEqual(
        response.body.errors.map((e: any) => [e.field, e.code]),
        [['url', 'private_address']],
        url,
      );
    }
    // `localhost` is refused for what it resolves to, not for its name.
    const byName = await api('POST', SUBSCRIPTIONS, { body: { url: 'http://localhost:8080/hooks', topics: ['*'] } });
    assert.match(byName.body.errors[0].message, /127\.0\.0\.1|::1/);
    const live = await createMerchant(stack, { mode: 'live' });
    const plain = await call(stack, 'POST', SUBSCRIPTIONS, { token: live.token, body: { url: 'http://hooks.example.com/merx', topics: ['*'] } });
    assert.equal(plain.status, 422);
    assert.deepEqual(
      plain.body.errors.map((e: any) => [e.field, e.code]),
      [['url', 'https_required']],
    );

    for (const who of [merchant, live]) {
      assert.deepEqual((await call(stack, 'GET', SUBSCRIPTIONS, { token: who.token })).body.data, [], 'nothing half-written');
      assert.deepEqual(
        stack.events.forMerchant(who.merchantId).filter((e) => e.topic.startsWith('webhooks.')),
        [],
        'no event for a refused subscription',
      );
    }
  });

  it('audits every change of a subscription with the request that made it', async () => {
    const endpoint = await receiver();
    const created = await api('POST', SUBSCRIPTIONS, {
      body: { url: endpoint.url(), topics: ['products'], description: 'ERP' },
      headers: { 'idempotency-key': `sub-${Date.now()}` },
    });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.headers.get('etag'), '"v1"');
    const id = created.body.id;
    const stale = await api('PATCH', `${SUBSCRIPTIONS}/${id}`, { body: { description: 'lost update' }, headers: { 'if-match': '"v9"' } });
    assert.equal(stale.status, 412);
    const updated = await api('PATCH', `${SUBSCRIPTIONS}/${id}`, {
      body: { description: 'ERP, orders too', topics: ['products', 'orders'] },
      headers: { 'if-match': '"v1"' },
    });
    assert.equal(updated.status, 200, updated.text);
    assert.equal(updated.body.version, 2);
    const disabled = await api('PATCH', `${SUBSCRIPTIONS}/${id}`, { body: { status: 'disabled' } });
    assert.deepEqual([disabled.body.status, disabled.body.disabled_reason], ['disabled', 'by_merchant']);
    const rotated = await api('POST', `${SUBSCRIPTIONS}/${id}/rotate-secret`);
    assert.equal(rotated.status, 200);
    const deleted = await api('DELETE', `${SUBSCRIPTIONS}/${id}`);
    assert.equal(deleted.status, 204);
    assert.equal((await api('GET', `${SUBSCRIPTIONS}/${id}`)).status, 404);

    const expected = [
      ['webhooks.subscription_deleted', deleted],
      ['webhooks.secret_rotated', rotated],
      ['webhooks.subscription_updated', disabled],
      ['webhooks.subscription_updated', updated],
      ['webhooks.subscription_created', created],
    ] as const;
    const audit = await eventually(
      () => api('GET', `/api/v1/audit?limit=100&resource_id=${id}`),
      (response) => response.status === 200 && response.body.data.length >= expected.length,
      'the audit entries of the subscription',
    );
    const entries = audit.body.data;
    assert.deepEqual(
      entries.map((e: any) => [e.action, e.request_id]),
      expected.map(([action, response]) => [action, response.headers.get('x-request-id')]),
    );
    for (const entry of entries) {
      assert.deepEqual(entry.actor, { type: 'api_key', id: merchant.clientId });
      assert.deepEqual(entry.resource, { type: 'webhook_subscription', id });
    }
    assert.deepEqual(entries[3].changes, {
      before: { description: 'ERP', topics: ['products'] },
      after: { description: 'ERP, orders too', topics: ['products', 'orders'] },
    });
    assert.ok(!JSON.stringify(entries).includes('whsec_'), 'no secret in the audit log');
    assert.equal((await api('GET', '/api/v1/audit/verify')).body.valid, true);
  });

  // Crashes, replicas and broker outages need the services in their own processes.
  if (stackMode() === 'distributed') {
    describe('the webhooks service crashing, scaled out and cut off from the broker (distributed)', () => {
      it('completes a delivery whose worker was killed mid-request: attempts [interrupted, 200]', async function () {
        this.timeout(90_000);
        const endpoint = await receiver();
        endpoint.answerWith((_request, index) => (index === 0 ? { hang: true } : { status: 200 }));
        const subscription = await subscribe(endpoint.url(), ['products.created']);
        const { eventId } = await createProduct('CRASH-1');
        const { id } = await deliveryOf(eventId, subscription.id);
        await endpoint.waitFor((r) => r.headers['webhook-id'] === eventId);
        await stack.kill('webhooks'); // SIGKILL while the request is open: nothing is recorded
        await stack.start('webhooks');
        const delivery = await deliveryWhen(id, (d) => d.status === 'succeeded', 'the delivery completed after the crash', 30_000);
        assert.deepEqual(
          delivery.attempts.map((x: any) => [x.number, x.error ?? x.status_code]),
          [
            [1, 'interrupted'],
            [2, 200],
          ],
        );
        assert.equal(delivery.attempts[0].status_code, null);
        assert.equal(endpoint.forEvent(eventId).length, 2, 'sent again with the same webhook-id');
        verifiedPayload(endpoint.forEvent(eventId)[1]!, subscription.secret);
      });

      it('sends every event exactly once while two webhooks processes share the queue', async function () {
        this.timeout(120_000);
        const extra = await stack.startExtra('webhooks');
        try {
          const endpoint = await receiver();
          const subscription = await subscribe(endpoint.url(), ['products.created']);
          const eventIds = new Set<string>();
          for (let i = 0; i < 100; i++) eventIds.add((await createProduct(`PAIR-${i}`)).eventId);
          await eventually(
            () => api('GET', `/api/v1/webhooks/deliveries?subscription_id=${subscription.id}&status=succeeded&limit=100`),
            (response) => response.body.data.length === 100,
            'all 100 deliveries succeeded',
            60_000,
          );
          // Every delivery is finished, so nothing more will be sent: what the receiver has is final.
          const ids = endpoint.received.map((r) => r.headers['webhook-id'] as string);
          assert.equal(ids.length, 100, 'no event sent twice');
          assert.deepEqual(new Set(ids), eventIds);
          const all = await api('GET', `/api/v1/webhooks/deliveries?subscription_id=${subscription.id}&limit=100`);
          assert.equal(all.body.has_more, false);
          assert.ok(all.body.data.every((d: any) => d.attempt_count === 1));
        } finally {
          await extra.stop();
        }
      });

      it('ends a seeded sandbox reset with the seeded destination and without the wiped one while two webhooks processes share the queue', async function () {
        this.timeout(120_000);
        const extra = await stack.startExtra('webhooks');
        const db = new pg.Client({ connectionString: stack.databaseUrl });
        await db.connect();
        try {
          const endpoints = async () =>
            (
              await db.query<{ id: string; version: number }>(
                `SELECT id, version FROM webhooks.endpoints WHERE merchant_id = $1 AND kind = 'destination' ORDER BY id`,
                [merchant.merchantId],
              )
            ).rows;
          for (let round = 0; round < 3; round++) {
            // A destination changed a few times just before the reset: its syncs and its removal race on two replicas.
            const wiped = await api('POST', '/api/v1/destinations', { body: { name: 'Old ERP', url: 'http://127.0.0.1:9/old', status: 'paused' } });
            assert.equal(wiped.status, 201, wiped.text);
            for (let change = 0; change < 3; change++) await api('PATCH', `/api/v1/destinations/${wiped.body.id}`, { body: { name: `Old ERP ${change}` } });
            const reset = await api('POST', '/api/v1/sandbox/reset', { body: { seed: true } });
            assert.equal(reset.status, 202, reset.text);
            await eventually(
              () => api('GET', `/api/v1/sandbox/resets/${reset.body.id}`),
              (r) => r.body.status === 'completed',
              'the seeded reset',
              60_000,
            );
            const seeded = (await api('GET', '/api/v1/destinations')).body.data;
            assert.equal(seeded.length, 1);
            // The end state, with no later change to bring anything back: the seeded endpoint alone (each
            // round also checks that no destination wiped in an earlier round came back since).
            await eventually(
              endpoints,
              (rows) => rows.length === 1 && rows[0]!.id === seeded[0].id && Number(rows[0]!.version) === 1,
              'the engine to hold the seeded destination alone',
              30_000,
            );
            const tombstone = await db.query(`SELECT version FROM webhooks.destination_tombstones WHERE merchant_id = $1 AND id = $2`, [
              merchant.merchantId,
              wiped.body.id,
            ]);
            assert.deepEqual(tombstone.rows, [{ version: 5 }], 'created, changed three times, removed by the reset');
          }
        } finally {
          await db.end();
          await extra.stop();
        }
      });

      it('delivers every event of changes made while its broker link was cut', async function () {
        this.timeout(90_000);
        const endpoint = await receiver();
        const subscription = await subscribe(endpoint.url(), ['*']);
        await endpoint.waitFor((r) => r.json?.topic === 'webhooks.subscription_created');
        const link = stack.brokerLinks.webhooks!;
        link.cut();
        const productEvents: string[] = [];
        try {
          await eventually(
            () => adminReadiness(stack, 'webhooks'),
            (ready) => ready.body.checks['webhooks.bus'] === 'degraded',
            'the webhooks service noticing the broker is gone',
          );
          for (let i = 0; i < 10; i++) productEvents.push((await createProduct(`CUT-${i}`)).eventId);
          // The service's own writes go to its outbox meanwhile.
          const patched = await api('PATCH', `${SUBSCRIPTIONS}/${subscription.id}`, { body: { description: 'changed while cut off' } });
          assert.equal(patched.status, 200, patched.text);
          assert.equal(
            endpoint.received.filter((r) => productEvents.includes(r.headers['webhook-id'] as string)).length,
            0,
            'nothing reached fan-out while cut off',
          );
        } finally {
          link.restore();
        }
        const updatedEvent = await stack.events.waitFor(
          (e) => e.topic === 'webhooks.subscription_updated' && e.data.object.id === subscription.id,
          30_000,
          'the outboxed update',
        );
        const wanted = [...productEvents, updatedEvent.id];
        await endpoint.waitUntil(
          (received) => wanted.every((id) => received.some((r) => r.headers['webhook-id'] === id)),
          30_000,
          'every event after the outage',
        );
        const ids = endpoint.received.map((r) => r.headers['webhook-id']);
        assert.equal(new Set(ids).size, ids.length, 'nothing twice');
        for (const request of endpoint.received) verifiedPayload(request, subscription.secret);
      });
    });
  }
});

// The embedded process is the whole platform; killing it is a crash of everything at once.
if (stackMode() === 'embedded') {
  describe('the embedded process killed mid-delivery', () => {
    interface Embedded {
      child: ChildProcess;
      output: string;
      exited: Promise<void>;
    }

    /** Starts `node services/embedded/dist/src/main.js` as a developer would; resolves when it says it is running. */
    async function startEmbeddedProcess(env: Record<string, string>): Promise<Embedded> {
      const child = spawn(process.execPath, [path.join(repoRoot, 'services/embedded/dist/src/main.js')], {
        cwd: repoRoot,
        env: { PATH: process.env.PATH ?? '', GRPC_PORT: '0', ADMIN_PORT: '0', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const embedded: Embedded = { child, output: '', exited: new Promise((resolve) => child.once('exit', () => resolve())) };
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the embedded process did not start within 60 s:\n${embedded.output}`)), 60_000);
        const onOutput = (chunk: Buffer) => {
          embedded.output += chunk.toString('utf8');
          if (embedded.output.includes('Merx is running')) {
            clearTimeout(timer);
            resolve();
          }
        };
        child.stdout!.on('data', onOutput);
        child.stderr!.on('data', onOutput);
        child.once('exit', (code, signal) => {
          clearTimeout(timer);
          reject(new Error(`the embedded process exited (${code ?? signal}) during start-up:\n${embedded.output}`));
        });
      });
      return embedded;
    }

    async function tokenFor(baseUrl: string, apiKey: string): Promise<string> {
      const clientId = apiKey.split('_').slice(0, 3).join('_');
      const response = await fetch(`${baseUrl}/oauth/token`, {
        method: 'POST',
        headers: { authorization: `Basic ${Buffer.from(`${clientId}:${apiKey}`).toString('base64')}`, 'content-type': 'application/x-www-form-urlencoded' },
        body: 'grant_type=client_credentials',
      });
      assert.equal(response.status, 200, await response.clone().text());
      return ((await response.json()) as { access_token: string }).access_token;
    }

    async function request(baseUrl: string, token: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
      const response = await fetch(`${baseUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const text = await response.text();
      return { status: response.status, body: text ? JSON.parse(text) : undefined };
    }

    it('recovers its data after SIGKILL and completes the delivery: attempts [interrupted, 200]', async function () {
      this.timeout(180_000);
      const dataDir = await mkdtemp(path.join(tmpdir(), 'merx-embedded-crash-'));
      const env = { ...E2E_WEBHOOK_ENV, MERX_WEBHOOK_ALLOW_PRIVATE: 'true', PORT: String(await freePort()), MERX_DATA_DIR: dataDir, LOG_LEVEL: 'silent' };
      const endpoint = await WebhookReceiver.start();
      endpoint.answerWith((_request, index) => (index === 0 ? { hang: true } : { status: 200 }));
      let running: Embedded | undefined;
      try {
        running = await startEmbeddedProcess(env);
        const dev = JSON.parse(await readFile(path.join(dataDir, 'dev.json'), 'utf8')) as { base_url: string; api_key: string };
        let token = await tokenFor(dev.base_url, dev.api_key);
        const subscription = await request(dev.base_url, token, 'POST', SUBSCRIPTIONS, { url: endpoint.url(), topics: ['products.created'] });
        assert.equal(subscription.status, 201, JSON.stringify(subscription.body));
        const product = await request(dev.base_url, token, 'POST', '/api/v1/products', newProduct('EMB-CRASH-1'));
        assert.equal(product.status, 201);
        const first = await endpoint.waitFor((r) => r.json?.data?.object?.id === product.body.id, 20_000);
        const eventId = first.headers['webhook-id'] as string;

        running.child.kill('SIGKILL'); // while the request is open: no shutdown, nothing recorded
        await running.exited;
        running = await startEmbeddedProcess(env);
        token = await tokenFor(dev.base_url, dev.api_key);
        const delivery = await eventually(
          async () => {
            const listed = await request(dev.base_url, token, 'GET', `/api/v1/webhooks/deliveries?event_id=${eventId}`);
            const id = listed.body?.data?.[0]?.id;
            return id ? (await request(dev.base_url, token, 'GET', `/api/v1/webhooks/deliveries/${id}`)).body : undefined;
          },
          (found) => found?.status === 'succeeded',
          'the delivery completed after the restart',
          60_000,
        );
        assert.deepEqual(
          delivery.attempts.map((x: any) => [x.number, x.error ?? x.status_code]),
          [
            [1, 'interrupted'],
            [2, 200],
          ],
        );
        assert.equal(endpoint.forEvent(eventId).length, 2);
        const stored = await request(dev.base_url, token, 'GET', `/api/v1/products/${product.body.id}`);
        assert.equal(stored.status, 200, 'the product survived the crash');
        assert.equal((await request(dev.base_url, token, 'GET', `${SUBSCRIPTIONS}/${subscription.body.id}`)).body.status, 'enabled');
        verifiedPayload(endpoint.forEvent(eventId)[1]!, subscription.body.secret);
      } finally {
        if (running && running.child.exitCode === null && running.child.signalCode === null) {
          running.child.kill('SIGTERM');
          const child = running.child;
          const stubborn = setTimeout(() => child.kill('SIGKILL'), 10_000);
          await running.exited;
          clearTimeout(stubborn);
        }
        await endpoint.close();
        await rm(dataDir, { recursive: true, force: true });
      }
    });
  });
}
