import assert from 'node:assert/strict';
import type { MerxEvent } from '@merx/kit';
import { productObject, startHarness, type Harness, type WebhooksClient } from './harness.js';
import { WebhookReceiver } from './receiver.js';

async function waitFor(condition: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

for (const embedded of [false, true]) {
  describe(`webhooks API on ${embedded ? 'PGlite' : 'PostgreSQL'}`, function () {
    this.timeout(30_000);
    let harness: Harness;
    let api: WebhooksClient;
    let receiver: WebhookReceiver;
    const published: MerxEvent[] = [];

    before(async () => {
      harness = await startHarness({ embedded });
      await harness.bus.consume({ queue: 'test-observer', bindings: ['webhooks.*', 'system_alerts.*'] }, async (event) => {
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

    const eventsOf = (merchantId: string, topic: string) => published.filter((e) => e.merchant_id === merchantId && e.topic === topic);

    it('creates, reads, lists, updates with If-Match and deletes subscriptions, with an event for each change', async () => {
      const created = await api.post(
        '/api/v1/webhooks/subscriptions',
        { url: receiver.url(), topics: ['orders', 'products.created'], description: 'ERP' },
        { 'idempotency-key': 'sub-1' },
      );
      assert.equal(created.status, 201);
      assert.equal(created.headers.get('etag'), '"v1"');
      const id = created.body.id;
      const again = await api.post(
        '/api/v1/webhooks/subscriptions',
        { url: receiver.url(), topics: ['orders', 'products.created'], description: 'ERP' },
        { 'idempotency-key': 'sub-1' },
      );
      assert.equal(again.body.id, id, 'an idempotent retry answers the first result');
      assert.equal((await api.get('/api/v1/webhooks/subscriptions')).body.data.length, 1);

      const stale = await api.patch(`/api/v1/webhooks/subscriptions/${id}`, { description: 'x' }, { 'if-match': '"v9"' });
      assert.equal(stale.status, 412);
      const updated = await api.patch(`/api/v1/webhooks/subscriptions/${id}`, { topics: ['*'], status: 'disabled' }, { 'if-match': '"v1"' });
      assert.equal(updated.status, 200);
      assert.deepEqual([updated.body.version, updated.body.status, updated.body.disabled_reason], [2, 'disabled', 'by_merchant']);
      const unchanged = await api.patch(`/api/v1/webhooks/subscriptions/${id}`, { topics: ['*'] });
      assert.equal(unchanged.body.version, 2, 'a change that changes nothing is no change');
      assert.equal((await api.get('/api/v1/webhooks/subscriptions?status=disabled')).body.data.length, 1);
      assert.equal((await api.get('/api/v1/webhooks/subscriptions?status=enabled')).body.data.length, 0);
      assert.equal((await api.get('/api/v1/webhooks/subscriptions?status=maybe')).status, 422);

      assert.equal((await api.delete(`/api/v1/webhooks/subscriptions/${id}`)).status, 204);
      assert.equal((await api.get(`/api/v1/webhooks/subscriptions/${id}`)).status, 404);

      // Events leave through the outbox after commit: wait for the last one.
      harness.webhooks.relay.wake();
      await waitFor(() => eventsOf(api.merchantId, 'webhooks.subscription_deleted').length > 0);
      const topics = published.filter((e) => e.merchant_id === api.merchantId).map((e) => e.topic);
      assert.deepEqual(topics, ['webhooks.subscription_created', 'webhooks.subscription_updated', 'webhooks.subscription_deleted']);
      const update = eventsOf(api.merchantId, 'webhooks.subscription_updated')[0]!;
      assert.deepEqual(update.data.previous, { topics: ['orders', 'products.created'], status: 'enabled', disabled_reason: null });
      assert.ok(
        published.every((e) => !JSON.stringify(e).includes('whsec_')),
        'no event carries a secret',
      );
    });

    it('keeps tenants apart: another merchant gets 404 for every id of ours', async () => {
      const stranger = await harness.merchant();
      const subscription = await api.subscribe(receiver.url(), ['products']);
      const event = await harness.publish(api.merchantId, 'products.created');
      const [delivery] = await api.deliveriesOf(event.id);
      for (const path of [
        `/api/v1/webhooks/subscriptions/${subscription.id}`,
        `/api/v1/webhooks/subscriptions/${subscription.id}/stats`,
        `/api/v1/webhooks/deliveries/${delivery.id}`,
        `/api/v1/events/${event.id}`,
      ]) {
        assert.equal((await stranger.get(path)).status, 404, path);
      }
      assert.equal((await stranger.post(`/api/v1/webhooks/subscriptions/${subscription.id}/rotate-secret`)).status, 404);
      assert.equal((await stranger.delete(`/api/v1/webhooks/subscriptions/${subscription.id}`)).status, 404);
      assert.equal((await stranger.get('/api/v1/webhooks/deliveries')).body.data.length, 0);
    });

    it('asks for the right scope: read tokens cannot write', async () => {
      const reader = await harness.merchant({ scope: 'webhooks:read' });
      const response = await reader.post('/api/v1/webhooks/subscriptions', { url: receiver.url(), topics: ['*'] });
      assert.equal(response.status, 403);
      assert.equal((await reader.get('/api/v1/events')).status, 200);
      const productsOnly = await harness.merchant({ scope: 'products:read' });
      assert.equal((await productsOnly.get('/api/v1/events')).status, 403);
    });

    it('lists events newest first with topic and time filters and cursors', async () => {
      const first = await harness.publish(api.merchantId, 'products.created');
      const second = await harness.publish(api.merchantId, 'products.updated', productObject());
      const third = await harness.publish(api.merchantId, 'products.deleted');
      await api.eventStored(third.id);
      await api.eventStored(second.id);
      await api.eventStored(first.id);
      const page = await api.get('/api/v1/events?limit=2');
      assert.deepEqual(
        page.body.data.map((e: any) => e.id),
        [third.id, second.id],
      );
      assert.equal(page.body.has_more, true);
      const rest = await api.get(`/api/v1/events?limit=2&cursor=${page.body.next_cursor}`);
      assert.deepEqual(
        rest.body.data.map((e: any) => e.id),
        [first.id],
      );
      assert.deepEqual(
        (await api.get('/api/v1/events?topic=products.updated')).body.data.map((e: any) => e.id),
        [second.id],
      );
      assert.equal((await api.get('/api/v1/events?topic=products')).body.data.length, 3);
      assert.equal((await api.get(`/api/v1/events?until=${encodeURIComponent(first.created_at)}`)).body.data.length, 0);
      assert.equal((await api.get('/api/v1/events?topic=nonsense')).status, 422);
      assert.equal((await api.get('/api/v1/events?since=yesterday')).status, 422);
    });

    it('replays dead letters in bulk by filter, and reports per-endpoint stats', async () => {
      receiver.answerWith((request) => (request.json?.topic === 'products.deleted' ? { status: 500 } : { status: 200 }));
      const subscription = await api.subscribe(receiver.url(), ['products']);
      // The endpoint fails only deletions; other events keep succeeding meanwhile, so it is not
      // failing as a whole and stays enabled.
      const healthy = setInterval(() => void harness.publish(api.merchantId, 'products.created'), 100);
      try {
        const doomed = await Promise.all([harness.publish(api.merchantId, 'products.deleted'), harness.publish(api.merchantId, 'products.deleted')]);
        for (const event of doomed) {
          const [delivery] = await api.deliveriesOf(event.id);
          await api.deliveryWhen(delivery.id, (d) => d.status === 'dead');
        }
      } finally {
        clearInterval(healthy);
      }

      const stats = (await api.get(`/api/v1/webhooks/subscriptions/${subscription.id}/stats`)).body;
      assert.ok(stats.succeeded >= 1);
      assert.ok(stats.failed >= 6, 'three or more attempts for each of the two deletions');
      assert.equal(stats.attempts, stats.succeeded + stats.failed);
      assert.ok(stats.success_rate > 0 && stats.success_rate < 1);
      assert.equal(typeof stats.latency_ms.p99, 'number');
      assert.equal(stats.deliveries.dead, 2);

      assert.equal((await api.get(`/api/v1/webhooks/subscriptions/${subscription.id}`)).body.status, 'enabled');
      const letters = await api.get('/api/v1/webhooks/dead-letters?topic=products.deleted');
      assert.equal(letters.body.data.length, 2);
      receiver.answerWith(() => ({ status: 200 }));
      assert.equal((await api.post('/api/v1/webhooks/dead-letters/replay', { topic: 'orders' })).body.replayed, 0);
      const bulk = await api.post('/api/v1/webhooks/dead-letters/replay', { subscription_id: subscription.id, topic: 'products.deleted', limit: 1 });
      assert.equal(bulk.status, 202);
      assert.deepEqual([bulk.body.replayed, bulk.body.has_more], [1, true]);
      const rest = await api.post('/api/v1/webhooks/dead-letters/replay', {});
      assert.deepEqual([rest.body.replayed, rest.body.has_more], [1, false]);
      for (const id of [...bulk.body.delivery_ids, ...rest.body.delivery_ids]) await api.deliveryWhen(id, (d) => d.status === 'succeeded');
      assert.equal((await api.get('/api/v1/webhooks/dead-letters')).body.data.length, 0);
      assert.equal((await api.post('/api/v1/webhooks/dead-letters/replay', { topic: 'bogus', since: 'now', extra: 1 })).status, 422);
    });
  });
}
