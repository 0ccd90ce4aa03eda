import assert from 'node:assert/strict';
import { Webhook } from 'standardwebhooks';
import { bodyHmacIsValid, productObject, startHarness, testSettings, type Harness, type WebhooksClient } from './harness.js';
import { WebhookReceiver } from './receiver.js';

describe('webhook delivery (PostgreSQL)', function () {
  this.timeout(30_000);
  let harness: Harness;
  let receiver: WebhookReceiver;
  let api: WebhooksClient;

  before(async () => {
    harness = await startHarness();
  });
  after(async () => {
    await harness.stop();
  });
  beforeEach(async () => {
    receiver = await WebhookReceiver.start();
    api = await harness.merchant();
  });
  afterEach(async () => {
    await receiver.close();
  });

  it('delivers a subscribed event signed for any Standard Webhooks verifier, and logs the attempt', async () => {
    const subscription = await api.subscribe(receiver.url(), ['products']);
    assert.match(subscription.secret, /^whsec_[A-Za-z0-9+/]{32}$/);
    const event = await harness.publish(api.merchantId, 'products.created');
    const request = await receiver.waitFor((r) => r.headers['webhook-id'] === event.id);

    const verified = new Webhook(subscription.secret).verify(request.body, request.headers as Record<string, string>) as Record<string, unknown>;
    assert.equal(verified.id, event.id);
    assert.ok(bodyHmacIsValid(request.body, subscription.secret), 'hmac_sha256 checks out independently');
    assert.deepEqual(Object.keys(request.json), ['id', 'topic', 'merchant_id', 'created_at', 'api_version', 'data', 'hmac_sha256']);
    assert.equal(request.json.topic, 'products.created');
    assert.equal(request.json.merchant_id, api.merchantId);
    assert.equal(request.headers['content-type'], 'application/json');

    const [listed] = await api.deliveriesOf(event.id);
    const delivery = await api.deliveryWhen(listed.id, (d) => d.status === 'succeeded');
    assert.equal(delivery.subscription_id, subscription.id);
    assert.equal(delivery.attempt_count, 1);
    assert.equal(delivery.last_status_code, 200);
    assert.equal(delivery.attempts.length, 1);
    const [attempt] = delivery.attempts;
    assert.equal(attempt.status_code, 200);
    assert.equal(attempt.error, null);
    assert.equal(attempt.response_excerpt, 'ok');
    assert.ok(Number.isInteger(attempt.duration_ms) && attempt.duration_ms >= 0);
    assert.match(attempt.started_at, /Z$/);

    const stored = await api.get(`/api/v1/events/${event.id}`);
    assert.equal(stored.status, 200);
    assert.deepEqual(stored.body.data, event.data);
    assert.equal(stored.body.context, undefined, 'request context (actor, ip) stays inside Merx');
  });

  it('sends only what a subscription names: a topic, an exact event, or everything', async () => {
    const other = await WebhookReceiver.start();
    const everything = await WebhookReceiver.start();
    try {
      await api.subscribe(receiver.url(), ['orders', 'products.deleted']);
      await api.subscribe(other.url(), ['products.updated']);
      await api.subscribe(everything.url(), ['*']);
      const created = await harness.publish(api.merchantId, 'products.created');
      const deleted = await harness.publish(api.merchantId, 'products.deleted');
      await everything.waitUntil((r) => r.length >= 2);
      await receiver.waitFor((r) => r.headers['webhook-id'] === deleted.id);
      // The deliveries of an event are created in one transaction, so these counts are final.
      assert.equal((await api.deliveriesOf(created.id, 1)).length, 1);
      assert.deepEqual(
        receiver.received.map((r) => r.json.topic),
        ['products.deleted'],
      );
      assert.equal(other.received.length, 0);
    } finally {
      await other.close();
      await everything.close();
    }
  });

  it("never delivers one merchant's events to another merchant's subscription", async () => {
    const stranger = await harness.merchant();
    const theirs = await WebhookReceiver.start();
    try {
      await stranger.subscribe(theirs.url(), ['*']);
      await api.subscribe(receiver.url(), ['*']);
      const event = await harness.publish(api.merchantId, 'products.created');
      await receiver.waitFor((r) => r.headers['webhook-id'] === event.id);
      const mine = await harness.publish(stranger.merchantId, 'products.created');
      await theirs.waitFor((r) => r.headers['webhook-id'] === mine.id);
      assert.ok(theirs.received.every((r) => r.json.merchant_id === stranger.merchantId));
      assert.ok(receiver.received.every((r) => r.json.merchant_id === api.merchantId));
      assert.equal((await stranger.get(`/api/v1/events/${event.id}`)).status, 404);
    } finally {
      await theirs.close();
    }
  });

  it('retries with backoff, dead-letters after the window, alerts, switches the endpoint off, and replays', async () => {
    receiver.answerWith(() => ({ status: 500, body: 'receiver broke' }));
    const subscription = await api.subscribe(receiver.url(), ['products']);
    const event = await harness.publish(api.merchantId, 'products.created');
    const [listed] = await api.deliveriesOf(event.id);
    const dead = await api.deliveryWhen(listed.id, (d) => d.status === 'dead');
    assert.ok(dead.attempt_count >= 3, `several attempts before giving up (${dead.attempt_count})`);
    assert.equal(dead.attempts.length, dead.attempt_count);
    assert.ok(dead.attempts.every((a: any) => a.status_code === 500 && a.error === 'http' && a.response_excerpt === 'receiver broke'));
    const gaps = dead.attempts.slice(1).map((a: any, i: number) => Date.parse(a.started_at) - Date.parse(dead.attempts[i].started_at));
    assert.ok(
      gaps.every((gap: number) => gap >= 150),
      `attempts are spaced by the schedule: ${gaps}`,
    );
    const window = Date.parse(dead.attempts.at(-1).started_at) - Date.parse(dead.attempts[0].started_at);
    assert.ok(window <= 2_000 + 100, `no attempt after the window (${window} ms)`);
    assert.equal(receiver.forEvent(event.id).length, dead.attempt_count);

    const letters = await api.get('/api/v1/webhooks/dead-letters');
    assert.deepEqual(
      letters.body.data.map((l: any) => l.id),
      [dead.id],
    );
    const letter = (await api.get(`/api/v1/webhooks/dead-letters/${dead.id}`)).body;
    assert.equal(letter.last_status_code, 500);
    assert.equal(letter.payload.id, event.id);
    assert.deepEqual(letter.payload.data, event.data);

    // Failing through a whole window switches the endpoint off, with an alert for each.
    const disabled = (await api.get(`/api/v1/webhooks/subscriptions/${subscription.id}`)).body;
    assert.equal(disabled.status, 'disabled');
    assert.equal(disabled.disabled_reason, 'endpoint_failing');
    // Both alerts commit with the dead letter but reach the events list through the bus, maybe in two batches.
    const alerts = await api.listWhen('/api/v1/events?topic=system_alerts.raised', (items) => items.length >= 2);
    assert.deepEqual(alerts.map((a: any) => a.data.object.kind).sort(), ['endpoint_disabled', 'event_dead_lettered']);
    assert.equal(alerts.find((a: any) => a.data.object.kind === 'event_dead_lettered').data.object.delivery_id, dead.id);

    assert.equal((await api.post(`/api/v1/webhooks/dead-letters/${dead.id}/replay`)).status, 409, 'a disabled endpoint replays nothing');
    receiver.answerWith(() => ({ status: 204 }));
    const enabled = await api.patch(`/api/v1/webhooks/subscriptions/${subscription.id}`, { status: 'enabled' });
    assert.equal(enabled.body.disabled_reason, null);
    const replay = await api.post(`/api/v1/webhooks/dead-letters/${dead.id}/replay`);
    assert.equal(replay.status, 201);
    assert.equal(replay.headers.get('location'), `/api/v1/webhooks/deliveries/${replay.body.id}`);
    assert.equal(replay.body.replay_of, dead.id);
    const replayed = await api.deliveryWhen(replay.body.id, (d) => d.status === 'succeeded');
    assert.equal(replayed.attempts.length, 1);
    const last = receiver.forEvent(event.id).at(-1)!;
    assert.equal(last.json.id, event.id, 'the same event id and payload');
    assert.deepEqual(last.json.data, event.data);
    assert.equal((await api.get('/api/v1/webhooks/dead-letters')).body.data.length, 0);
    assert.equal((await api.get(`/api/v1/webhooks/deliveries/${dead.id}`)).body.replayed_by, replay.body.id);
    assert.equal((await api.get(`/api/v1/webhooks/dead-letters/${dead.id}`)).status, 404);
  });

  it('switches an endpoint off at once on 410 Gone', async () => {
    receiver.answerWith(() => ({ status: 410 }));
    const subscription = await api.subscribe(receiver.url(), ['products']);
    const event = await harness.publish(api.merchantId, 'products.created');
    const [listed] = await api.deliveriesOf(event.id);
    const dead = await api.deliveryWhen(listed.id, (d) => d.status === 'dead');
    assert.equal(dead.attempt_count, 1);
    const after = (await api.get(`/api/v1/webhooks/subscriptions/${subscription.id}`)).body;
    assert.deepEqual([after.status, after.disabled_reason], ['disabled', 'endpoint_gone']);
    // A disabled subscription gets nothing new.
    const later = await harness.publish(api.merchantId, 'products.created');
    await api.eventStored(later.id);
    assert.equal((await api.get('/api/v1/webhooks/deliveries?limit=100')).body.data.filter((d: any) => d.event_id === later.id).length, 0);
  });

  it('waits as long as Retry-After asks on 429, longer than the schedule would', async () => {
    receiver.answerWith((_request, index) => (index === 0 ? { status: 429, headers: { 'retry-after': '1' } } : { status: 200 }));
    await api.subscribe(receiver.url(), ['products']);
    const event = await harness.publish(api.merchantId, 'products.created');
    await receiver.waitUntil((r) => r.length >= 2);
    const [first, second] = receiver.forEvent(event.id);
    const gap = second!.receivedAt.getTime() - first!.receivedAt.getTime();
    assert.ok(gap >= 1_000, `waited ${gap} ms for Retry-After: 1 (the schedule says 200 ms)`);
  });

  it('signs with both secrets during a rotation, each verifying alone', async () => {
    const subscription = await api.subscribe(receiver.url(), ['products']);
    const rotated = await api.post(`/api/v1/webhooks/subscriptions/${subscription.id}/rotate-secret`);
    assert.equal(rotated.status, 200);
    assert.notEqual(rotated.body.secret, subscription.secret);
    assert.ok(Date.parse(rotated.body.previous_secret_expires_at) - Date.now() > 23 * 3_600_000);
    assert.equal(
      (await api.get(`/api/v1/webhooks/subscriptions/${subscription.id}`)).body.secret,
      undefined,
      'the secret is shown only on create and rotation',
    );
    const event = await harness.publish(api.merchantId, 'products.created');
    const request = await receiver.waitFor((r) => r.headers['webhook-id'] === event.id);
    assert.equal(String(request.headers['webhook-signature']).split(' ').length, 2);
    for (const secret of [rotated.body.secret, subscription.secret]) {
      assert.doesNotThrow(() => new Webhook(secret).verify(request.body, request.headers as Record<string, string>));
    }
    assert.ok(bodyHmacIsValid(request.body, rotated.body.secret), 'the body hmac uses the new secret');
  });

  it("keeps at most the cap in flight to one endpoint while other merchants' deliveries go through", async () => {
    const release: Array<() => void> = [];
    let inFlight = 0;
    let peak = 0;
    receiver.answerWith(async () => {
      inFlight += 1;
      peak = Math.max(peak, inFlight);
      await new Promise<void>((resolve) => release.push(resolve));
      inFlight -= 1;
      return { status: 200 };
    });
    await api.subscribe(receiver.url(), ['products']);
    const flood = await Promise.all(Array.from({ length: 40 }, () => harness.publish(api.merchantId, 'products.created', productObject())));
    await receiver.waitUntil((r) => r.length >= 10);

    const neighbour = await harness.merchant();
    const theirs = await WebhookReceiver.start();
    try {
      await neighbour.subscribe(theirs.url(), ['products']);
      const event = await harness.publish(neighbour.merchantId, 'products.created');
      await theirs.waitFor((r) => r.headers['webhook-id'] === event.id, 5_000);
      assert.equal(peak, 10, 'the slow endpoint never has more than 10 requests in flight');
    } finally {
      await theirs.close();
    }
    // Let the flood through, a slot at a time.
    const drained = receiver.waitUntil((r) => r.length >= flood.length, 20_000);
    const releaser = setInterval(() => release.splice(0).forEach((resolve) => resolve()), 5);
    try {
      await drained;
    } finally {
      clearInterval(releaser);
      release.splice(0).forEach((resolve) => resolve());
    }
    assert.equal(peak, 10);
    assert.equal(new Set(receiver.received.map((r) => r.headers['webhook-id'])).size, flood.length);
  });
});

describe('webhook delivery with two workers on one queue', function () {
  this.timeout(30_000);

  it('sends each delivery once though two replicas share the fan-out queue and the work queue', async () => {
    const first = await startHarness();
    const second = await startHarness({ db: first.db, bus: first.bus, settings: testSettings() });
    const receiver = await WebhookReceiver.start();
    try {
      const api = await first.merchant();
      await api.subscribe(receiver.url(), ['products']);
      const events = [];
      for (let i = 0; i < 120; i++) events.push(await first.publish(api.merchantId, 'products.created', productObject(`SKU-${i}`)));
      await receiver.waitUntil((r) => r.length >= events.length, 20_000);
      const ids = receiver.received.map((r) => r.headers['webhook-id']);
      assert.equal(new Set(ids).size, ids.length, 'no event was sent twice');
      assert.equal(ids.length, events.length);
      // Recorded once each, every claim released.
      for (;;) {
        const { rows } = await first.db.query<{ succeeded: number; claimed: number; attempts: number }>(
          `SELECT count(*) FILTER (WHERE status = 'succeeded')::int AS succeeded, (SELECT count(*)::int FROM webhooks.claims) AS claimed,
                  (SELECT count(*)::int FROM webhooks.attempts) AS attempts
           FROM webhooks.deliveries`,
        );
        if (rows[0]!.succeeded === events.length) {
          assert.deepEqual(rows[0], { succeeded: events.length, claimed: 0, attempts: events.length });
          break;
        }
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      await receiver.close();
      await second.stop();
      await first.stop();
    }
  });
});
