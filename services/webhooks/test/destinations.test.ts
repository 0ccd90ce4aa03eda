import assert from 'node:assert/strict';
import { buildEvent, newId, type MerxEvent } from '@merx/kit';
import { Webhook } from 'standardwebhooks';
import { destinationEndpoint, orderRecord, routedRecord, sandboxReset, type DestinationEndpointMessage } from './destination-fixtures.js';
import { bodyHmacIsValid, contract, startHarness, type Harness, type WebhooksClient } from './harness.js';
import { WebhookReceiver } from './receiver.js';

/** Resolves with what `find` finds once it does (messages reach the bus and the database on their own time). */
async function until<T>(find: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = await find();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

for (const embedded of [false, true]) {
  describe(`delivery to destinations on ${embedded ? 'PGlite' : 'PostgreSQL'}`, function () {
    this.timeout(30_000);
    let harness: Harness;
    let api: WebhooksClient;
    let receiver: WebhookReceiver;
    const published: MerxEvent[] = [];

    before(async () => {
      harness = await startHarness({ embedded });
      await harness.bus.consume({ queue: 'destinations-observer', bindings: ['internal.*', 'system_alerts.*', 'webhooks.*'] }, async (event) => {
        published.push(event);
      });
    });
    after(async () => {
      await harness.stop();
    });
    beforeEach(async () => {
      api = await harness.merchant();
      receiver = await WebhookReceiver.start();
    });
    afterEach(async () => {
      await receiver.close();
    });

    /** Plays the merchants service: a destination created or changed. */
    const sync = (merchantId: string, destination: DestinationEndpointMessage) => harness.publish(merchantId, 'internal.destination_synced', destination);
    /** Plays the merchants service: a connection routed a record to a destination. */
    const route = (merchantId: string, routing: ReturnType<typeof routedRecord>) => harness.publish(merchantId, 'internal.record_routed', routing);
    const destinationDeliveries = (client: WebhooksClient, destinationId: string, count = 1) =>
      client.listWhen(`/api/v1/webhooks/deliveries?destination_id=${destinationId}&limit=100`, (items) => items.length >= count);
    const publishedOf = (merchantId: string, topic: string) => published.filter((e) => e.merchant_id === merchantId && e.topic === topic);
    /** Syncs are applied from the bus: wait until the engine holds the destination as active. */
    const activeSoon = (merchantId: string, destinationId: string) =>
      until(async () => {
        const { rows } = await harness.db.query<{ status: string }>(`SELECT status FROM webhooks.endpoints WHERE merchant_id = $1 AND id = $2`, [
          merchantId,
          destinationId,
        ]);
        return rows[0]?.status === 'enabled' || undefined;
      }, `${destinationId} active`);

    it('delivers a routed record to a webhook destination exactly as a subscriber gets a webhook', async () => {
      const destination = destinationEndpoint(receiver.url());
      await sync(api.merchantId, destination);
      const routing = routedRecord(api.merchantId, destination.id);
      await route(api.merchantId, routing);
      const request = await receiver.waitFor((r) => r.headers['webhook-id'] === routing.payload.id);

      const verified = new Webhook(destination.secret).verify(request.body, request.headers as Record<string, string>) as Record<string, unknown>;
      assert.equal(verified.id, routing.payload.id);
      assert.ok(bodyHmacIsValid(request.body, destination.secret), 'hmac_sha256 checks out independently');
      assert.deepEqual(Object.keys(request.json), ['id', 'topic', 'merchant_id', 'created_at', 'api_version', 'data', 'hmac_sha256']);
      const { hmac_sha256: _hmac, ...envelope } = request.json;
      assert.deepEqual(envelope, routing.payload);

      const [listed] = await destinationDeliveries(api, destination.id);
      const delivery = await api.deliveryWhen(listed.id, (d) => d.status === 'succeeded');
      assert.deepEqual(
        [delivery.destination_id, delivery.subscription_id, delivery.event_id, delivery.topic],
        [destination.id, null, routing.payload.id, 'orders.created'],
      );
      assert.equal(delivery.attempts.length, 1);
      assert.equal((await api.get(`/api/v1/events/${routing.payload.id}`)).status, 404, 'a routed record is not an event of the events API');
    });

    it('sends an http destination the record alone, signed over that body', async () => {
      const destination = destinationEndpoint(receiver.url('/erp/import'), { kind: 'http' });
      await sync(api.merchantId, destination);
      const record = orderRecord({ total: '42.00', currency: 'EUR', lines: [{ sku: 'A', quantity: 2 }] });
      const routing = routedRecord(api.merchantId, destination.id, record);
      await route(api.merchantId, routing);
      const request = await receiver.waitFor((r) => r.headers['webhook-id'] === routing.payload.id);
      assert.equal(request.path, '/erp/import');
      assert.equal(request.json.hmac_sha256, undefined);
      assert.deepEqual(request.json, record);
      assert.equal(request.headers['content-type'], 'application/json');
      assert.doesNotThrow(() => new Webhook(destination.secret).verify(request.body, request.headers as Record<string, string>));
    });

    it('makes one delivery per routing, however often its message arrives', async () => {
      const destination = destinationEndpoint(receiver.url());
      await sync(api.merchantId, destination);
      const routing = routedRecord(api.merchantId, destination.id);
      const message = await route(api.merchantId, routing);
      // The broker redelivering the same message, and the same routing under a new envelope
      // (a publisher that sent it twice).
      await harness.bus.publish([message]);
      await harness.bus.publish([buildEvent('internal.record_routed', api.merchantId, { object: routing })]);
      // Messages are taken in order: once a later routing is delivered, the copies were handled.
      const later = routedRecord(api.merchantId, destination.id);
      await route(api.merchantId, later);
      await receiver.waitFor((r) => r.headers['webhook-id'] === later.payload.id);
      const deliveries = await destinationDeliveries(api, destination.id, 2);
      assert.deepEqual(deliveries.map((d) => d.event_id).sort(), [routing.payload.id, later.payload.id].sort());
      await api.deliveryWhen(deliveries.find((d) => d.event_id === routing.payload.id).id, (d) => d.status === 'succeeded');
      assert.equal(receiver.forEvent(routing.payload.id).length, 1);
    });

    it('delivers a record routed before its destination arrives, as soon as it does', async () => {
      const destination = destinationEndpoint(receiver.url());
      const routing = routedRecord(api.merchantId, destination.id);
      await route(api.merchantId, routing);
      const [waiting] = await destinationDeliveries(api, destination.id);
      assert.deepEqual([waiting.status, waiting.attempt_count], ['pending', 0]);
      await sync(api.merchantId, destination);
      const request = await receiver.waitFor((r) => r.headers['webhook-id'] === routing.payload.id);
      assert.doesNotThrow(() => new Webhook(destination.secret).verify(request.body, request.headers as Record<string, string>));
      await api.deliveryWhen(waiting.id, (d) => d.status === 'succeeded');
    });

    it('holds deliveries while a destination is paused and sends them once it is active again', async () => {
      const paused = destinationEndpoint(receiver.url(), { status: 'paused' });
      await sync(api.merchantId, paused);
      const held = routedRecord(api.merchantId, paused.id);
      await route(api.merchantId, held);
      const [waiting] = await destinationDeliveries(api, paused.id);
      // A delivery routed later to an active destination goes out: the worker has looked since.
      const control = await WebhookReceiver.start();
      try {
        const active = destinationEndpoint(control.url());
        await sync(api.merchantId, active);
        const passing = routedRecord(api.merchantId, active.id);
        await route(api.merchantId, passing);
        await control.waitFor((r) => r.headers['webhook-id'] === passing.payload.id);
      } finally {
        await control.close();
      }
      assert.equal(receiver.received.length, 0, 'nothing is sent to a paused destination');
      assert.deepEqual([(await api.get(`/api/v1/webhooks/deliveries/${waiting.id}`)).body.status, receiver.received.length], ['pending', 0]);

      await sync(api.merchantId, { ...paused, status: 'active', version: 2 });
      await receiver.waitFor((r) => r.headers['webhook-id'] === held.payload.id);
      await api.deliveryWhen(waiting.id, (d) => d.status === 'succeeded' && d.attempt_count === 1);
    });

    it('ignores syncs older than the one applied, and signs with both secrets after a secret change', async () => {
      const elsewhere = await WebhookReceiver.start();
      try {
        const first = destinationEndpoint(receiver.url());
        const second = { ...first, secret: destinationEndpoint(receiver.url()).secret, version: 2 };
        await sync(api.merchantId, first);
        await sync(api.merchantId, second);
        // Out of order: version 1 again, somewhere else. Ignored.
        await sync(api.merchantId, { ...first, url: elsewhere.url(), status: 'paused' });
        const routing = routedRecord(api.merchantId, first.id);
        await route(api.merchantId, routing);
        const request = await receiver.waitFor((r) => r.headers['webhook-id'] === routing.payload.id);
        assert.equal(elsewhere.received.length, 0);
        assert.equal(String(request.headers['webhook-signature']).split(' ').length, 2, 'the old secret keeps signing for the overlap');
        for (const secret of [second.secret, first.secret]) {
          assert.doesNotThrow(() => new Webhook(secret).verify(request.body, request.headers as Record<string, string>));
        }
        assert.ok(bodyHmacIsValid(request.body, second.secret), 'the body hmac uses the new secret');
      } finally {
        await elsewhere.close();
      }
    });

    it('on 410 Gone disables the destination, tells the merchants service, alerts, and replays once it is active again', async () => {
      receiver.answerWith(() => ({ status: 410 }));
      const destination = destinationEndpoint(receiver.url());
      await sync(api.merchantId, destination);
      const routing = routedRecord(api.merchantId, destination.id);
      await route(api.merchantId, routing);
      const [listed] = await destinationDeliveries(api, destination.id);
      const dead = await api.deliveryWhen(listed.id, (d) => d.status === 'dead');
      assert.equal(dead.attempt_count, 1);

      harness.webhooks.relay.wake();
      const disabled = await until(() => publishedOf(api.merchantId, 'internal.destination_disabled')[0], 'internal.destination_disabled');
      assert.deepEqual(contract.validateEvent(disabled), []);
      assert.deepEqual([disabled.data.object.id, disabled.data.object.reason], [destination.id, 'endpoint_gone']);
      assert.equal(disabled.data.object.version, destination.version, 'the disable names the version the engine held');
      const alerts = await until(() => {
        const raised = publishedOf(api.merchantId, 'system_alerts.raised');
        return raised.length >= 2 ? raised.map((e) => e.data.object as Record<string, unknown>) : undefined;
      }, 'both alerts');
      const byKind = Object.fromEntries(alerts.map((alert) => [alert.kind, alert]));
      assert.deepEqual([byKind.endpoint_disabled!.destination_id, byKind.endpoint_disabled!.subscription_id], [destination.id, null]);
      assert.deepEqual(
        [byKind.event_dead_lettered!.destination_id, byKind.event_dead_lettered!.subscription_id, byKind.event_dead_lettered!.delivery_id],
        [destination.id, null, dead.id],
      );
      assert.equal(publishedOf(api.merchantId, 'webhooks.subscription_updated').length, 0, 'a destination is not a subscription');

      const letters = await api.get(`/api/v1/webhooks/dead-letters?destination_id=${destination.id}`);
      assert.deepEqual(
        letters.body.data.map((l: any) => l.id),
        [dead.id],
      );
      const letter = letters.body.data[0];
      assert.deepEqual([letter.destination_id, letter.subscription_id], [destination.id, null]);
      assert.deepEqual(letter.payload, routing.payload);
      assert.equal((await api.post(`/api/v1/webhooks/dead-letters/${dead.id}/replay`)).status, 409, 'a disabled destination replays nothing');

      // The merchants service records the change, the merchant fixes the endpoint and reactivates it.
      receiver.answerWith(() => ({ status: 200 }));
      await sync(api.merchantId, { ...destination, status: 'disabled', version: 2 });
      await sync(api.merchantId, { ...destination, status: 'active', version: 3 });
      await activeSoon(api.merchantId, destination.id);
      const replayed = (await api.post(`/api/v1/webhooks/dead-letters/${dead.id}/replay`)).body;
      assert.deepEqual([replayed.destination_id, replayed.subscription_id, replayed.replay_of], [destination.id, null, dead.id]);
      await api.deliveryWhen(replayed.id, (d) => d.status === 'succeeded');
      const last = receiver.forEvent(routing.payload.id).at(-1)!;
      assert.equal(last.json.id, routing.payload.id, 'the same webhook-id and payload');
      assert.deepEqual(last.json.data, routing.payload.data);
    });

    it('switches a destination failing through its window off, and bulk-replays its dead letters by destination', async () => {
      receiver.answerWith(() => ({ status: 500 }));
      const destination = destinationEndpoint(receiver.url());
      await sync(api.merchantId, destination);
      await route(api.merchantId, routedRecord(api.merchantId, destination.id));
      const [listed] = await destinationDeliveries(api, destination.id);
      const dead = await api.deliveryWhen(listed.id, (d) => d.status === 'dead');
      assert.ok(dead.attempt_count >= 3, `retried through the window (${dead.attempt_count} attempts)`);

      harness.webhooks.relay.wake();
      const disabled = await until(() => publishedOf(api.merchantId, 'internal.destination_disabled')[0], 'internal.destination_disabled');
      assert.equal(disabled.data.object.reason, 'endpoint_failing');
      const alert = await until(() => publishedOf(api.merchantId, 'system_alerts.raised').find((e) => e.data.object.kind === 'endpoint_disabled'), 'the alert');
      assert.equal(alert.data.object.destination_id, destination.id);
      assert.deepEqual(
        (await api.get(`/api/v1/webhooks/dead-letters?destination_id=${destination.id}`)).body.data.map((l: any) => l.id),
        [dead.id],
      );

      receiver.answerWith(() => ({ status: 200 }));
      await sync(api.merchantId, { ...destination, status: 'active', version: 2 });
      await activeSoon(api.merchantId, destination.id);
      assert.equal((await api.post('/api/v1/webhooks/dead-letters/replay', { subscription_id: 'wh_00000000000000000000000000' })).body.replayed, 0);
      const replay = (await api.post('/api/v1/webhooks/dead-letters/replay', { destination_id: destination.id })).body;
      assert.deepEqual([replay.replayed, replay.has_more], [1, false]);
      for (const id of replay.delivery_ids) await api.deliveryWhen(id, (d) => d.status === 'succeeded' && d.destination_id === destination.id);
      assert.equal((await api.get(`/api/v1/webhooks/dead-letters?destination_id=${destination.id}`)).body.data.length, 0);
    });

    it('keeps destinations out of the subscriptions API and lists their deliveries apart', async () => {
      const forSubscription = await WebhookReceiver.start();
      try {
        const subscription = await api.subscribe(forSubscription.url(), ['products']);
        const destination = destinationEndpoint(receiver.url());
        await sync(api.merchantId, destination);
        const routing = routedRecord(api.merchantId, destination.id);
        await route(api.merchantId, routing);
        const event = await harness.publish(api.merchantId, 'products.created');
        await receiver.waitFor((r) => r.headers['webhook-id'] === routing.payload.id);
        await forSubscription.waitFor((r) => r.headers['webhook-id'] === event.id);

        assert.deepEqual(
          (await api.get('/api/v1/webhooks/subscriptions')).body.data.map((s: any) => s.id),
          [subscription.id],
        );
        assert.equal((await api.get(`/api/v1/webhooks/subscriptions/${destination.id}`)).status, 404);
        assert.equal((await api.patch(`/api/v1/webhooks/subscriptions/${destination.id}`, { status: 'disabled' })).status, 404);
        const [toDestination] = await destinationDeliveries(api, destination.id);
        await api.deliveryWhen(toDestination.id, (d) => d.status === 'succeeded');
        const [toSubscription] = await api.deliveriesOf(event.id);
        await api.deliveryWhen(toSubscription.id, (d) => d.status === 'succeeded');
        const stats = (await api.get(`/api/v1/webhooks/subscriptions/${subscription.id}/stats`)).body;
        assert.deepEqual([stats.attempts, stats.deliveries.pending], [1, 0], "only the subscription's own attempt counts");

        const ofSubscription = (await api.get(`/api/v1/webhooks/deliveries?subscription_id=${subscription.id}`)).body.data;
        assert.deepEqual(
          ofSubscription.map((d: any) => d.event_id),
          [event.id],
        );
        const ofDestination = (await api.get(`/api/v1/webhooks/deliveries?destination_id=${destination.id}`)).body.data;
        assert.deepEqual(
          ofDestination.map((d: any) => [d.event_id, d.subscription_id]),
          [[routing.payload.id, null]],
        );
        assert.equal((await api.get('/api/v1/webhooks/deliveries?destination_id=wh_nope')).status, 422);
        assert.ok(
          receiver.received.every((r) => r.headers['webhook-id'] === routing.payload.id),
          'public events never reach a destination',
        );
        assert.ok(
          forSubscription.received.every((r) => r.headers['webhook-id'] !== routing.payload.id),
          'routed records never reach a subscription',
        );
      } finally {
        await forSubscription.close();
      }
    });

    it('forgets a removed destination with its deliveries', async () => {
      const destination = destinationEndpoint(receiver.url(), { status: 'paused' });
      await sync(api.merchantId, destination);
      await route(api.merchantId, routedRecord(api.merchantId, destination.id));
      await destinationDeliveries(api, destination.id);
      await harness.publish(api.merchantId, 'internal.destination_removed', { id: destination.id, object: 'destination_endpoint', version: 2 });
      await api.listWhen(`/api/v1/webhooks/deliveries?destination_id=${destination.id}`, (items) => items.length === 0);
      const { rows } = await harness.db.query(`SELECT 1 FROM webhooks.endpoints WHERE merchant_id = $1 AND id = $2`, [api.merchantId, destination.id]);
      assert.equal(rows.length, 0);
    });

    it("wipes one merchant's webhooks data on sandbox.reset, reports it, and leaves other merchants alone", async () => {
      const neighbour = await harness.merchant();
      const release: Array<() => void> = [];
      receiver.answerWith((request) =>
        request.json?.data?.object?.data?.hold ? new Promise((resolve) => release.push(() => resolve({ status: 200 }))) : { status: 200 },
      );
      /** A subscription, a destination, an event and a routed record, each delivered. */
      async function populate(client: WebhooksClient) {
        const subscription = await client.subscribe(receiver.url(), ['products']);
        const destination = destinationEndpoint(receiver.url());
        await sync(client.merchantId, destination);
        const routing = routedRecord(client.merchantId, destination.id);
        await route(client.merchantId, routing);
        const event = await harness.publish(client.merchantId, 'products.created');
        await receiver.waitFor((r) => r.headers['webhook-id'] === event.id);
        await receiver.waitFor((r) => r.headers['webhook-id'] === routing.payload.id);
        // webhooks.subscription_created and products.created
        await client.listWhen('/api/v1/events', (items) => items.length === 2);
        return { subscription, destination };
      }
      const ours = await populate(api);
      const theirs = await populate(neighbour);
      // A delivery in flight when the reset comes: its worker finds nothing to record afterwards.
      const held = routedRecord(api.merchantId, ours.destination.id, orderRecord({ hold: true }));
      await route(api.merchantId, held);
      await receiver.waitFor((r) => r.headers['webhook-id'] === held.payload.id);

      // As the merchants service publishes it: on behalf of the API key that asked.
      const reset = sandboxReset();
      const resetEvent = {
        ...buildEvent('sandbox.reset', api.merchantId, { object: reset }),
        context: { request_id: newId('req'), actor: { type: 'api_key' as const, id: newId('key') } },
      };
      await harness.bus.publish([resetEvent]);
      harness.webhooks.relay.wake();
      const report = await until(() => publishedOf(api.merchantId, 'internal.sandbox_service_reset')[0], 'internal.sandbox_service_reset');
      assert.deepEqual(contract.validateEvent(report), []);
      assert.deepEqual(report.context, resetEvent.context, "the report answers the reset's request");
      assert.deepEqual(
        { id: report.data.object.id, service: report.data.object.service, removed: report.data.object.removed, seeded: report.data.object.seeded },
        { id: reset.id, service: 'webhooks', removed: { subscriptions: 1, deliveries: 1, events: 2 }, seeded: {} },
      );
      // Destinations are the merchants service's: it removes each one it wipes, with its version.
      assert.equal(
        (await api.get(`/api/v1/webhooks/deliveries?destination_id=${ours.destination.id}`)).body.data.length,
        2,
        'the reset itself leaves destinations to their removal',
      );
      await harness.publish(api.merchantId, 'internal.destination_removed', { id: ours.destination.id, object: 'destination_endpoint', version: 2 });
      await api.listWhen('/api/v1/webhooks/deliveries', (items) => items.length === 0);
      release.forEach((resolve) => resolve());
      await until(() => harness.webhooks.worker.deliveriesInFlight === 0 || undefined, 'the held attempt to finish');

      assert.deepEqual((await api.get('/api/v1/webhooks/subscriptions')).body.data, []);
      assert.deepEqual((await api.get('/api/v1/webhooks/deliveries')).body.data, []);
      assert.deepEqual(
        (await api.get('/api/v1/events')).body.data.map((e: any) => e.id),
        [resetEvent.id],
        'only the reset itself is left',
      );
      assert.equal(publishedOf(neighbour.merchantId, 'internal.sandbox_service_reset').length, 0);
      assert.equal((await neighbour.get('/api/v1/webhooks/subscriptions')).body.data.length, 1);
      assert.equal((await neighbour.get(`/api/v1/webhooks/deliveries?destination_id=${theirs.destination.id}`)).body.data.length, 1);
      assert.equal((await neighbour.get('/api/v1/webhooks/deliveries')).body.data.length, 2);
      assert.equal((await neighbour.get('/api/v1/events')).body.data.length, 2);

      // The engine carries on for everyone: the neighbour's destination still gets its records,
      // and the reset merchant starts afresh.
      const after = routedRecord(neighbour.merchantId, theirs.destination.id);
      await route(neighbour.merchantId, after);
      await receiver.waitFor((r) => r.headers['webhook-id'] === after.payload.id);
      const { rows } = await harness.db.query(`SELECT count(*)::int AS n FROM webhooks.deliveries WHERE merchant_id = $1`, [api.merchantId]);
      assert.deepEqual(rows, [{ n: 0 }], 'the attempt that finished after the reset left nothing behind');
    });
  });
}
