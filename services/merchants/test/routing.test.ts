import assert from 'node:assert/strict';
import { buildEvent, createLogger, MemoryBus, newId, runWithContext, type MerxEvent } from '@merx/kit';
import { HandledDeliveries } from '@merx/kit/testing';
import { RuleRunner } from '../src/domain/rules/index.js';
import { consumeMerchantsEvents, MERCHANTS_QUEUE } from '../src/events/consumer.js';
import { RoutingQueue } from '../src/usecases/routing-queue.js';
import { recordRouting } from '../src/usecases/routing.js';
import { MERCHANTS_SCHEMA } from '../src/store/migrations.js';
import { databases, order, useHarness, type MerchantsClient } from './harness.js';

/**
 * A source wired to an ERP through [drop test orders, transform, forward large orders], and to an
 * archive through a connection without rules (which routes everything not dropped).
 */
async function wiredSource(api: MerchantsClient) {
  const source = await api.source();
  const erp = await api.destination({ name: 'ERP', url: 'https://erp.example.com/orders' });
  const archive = await api.destination({ name: 'Archive', kind: 'http', url: 'https://archive.example.com/in' });
  const dropTests = await api.rule({ action: 'drop', condition: 'has(data.test) && data.test == true', event_types: ['orders.created'] });
  const transform = await api.rule({
    action: 'transform',
    event_types: ['orders.created'],
    transform: { remove: ['customer.email'], rename: { total: 'amount' }, set: { channel: 'web' } },
  });
  const forwardLarge = await api.rule({ action: 'forward', condition: 'data.amount >= 100.0', event_types: ['orders.created'] });
  const toErp = await api.connection({ source_id: source.id, destination_id: erp.id, rule_ids: [dropTests.id, transform.id, forwardLarge.id] });
  const toArchive = await api.connection({ source_id: source.id, destination_id: archive.id, event_types: ['orders.created'] });
  return { source, erp, archive, rules: { dropTests, transform, forwardLarge }, toErp, toArchive };
}

/** An orders.created as ingestion emits it, for a record that `id` names (null: one no routing can store). */
function orderEvent(merchantId: string, sourceId: string, id: string | null): MerxEvent {
  const at = new Date().toISOString();
  const record = { id, object: 'record', type: 'order', source_id: sourceId, external_id: newId('ext'), occurred_at: at, data: { total: 1 }, received_at: at };
  return buildEvent('orders.created', merchantId, { object: record });
}

const notInThisTest = async () => {
  throw new Error('not part of this test');
};

const routedOf = (events: MerxEvent[]) => events.filter((event) => event.topic === 'internal.record_routed').map((event) => event.data.object as any);

for (const { name, embedded } of databases) {
  describe(`record routing on ${name}`, function () {
    this.timeout(30_000);
    const harness = useHarness(embedded);

    it('routes matching records to the destination with the transformed object, and shows routed, filtered and dropped', async () => {
      const api = await harness().merchant();
      const { source, erp, archive, rules, toErp, toArchive } = await wiredSource(api);
      const customer = { name: 'Ada', email: 'ada@example.com' };
      const batch = await api.ingest(source.id, [
        order('large', { total: 150, customer }),
        order('small', { total: 5, customer }),
        order('test', { total: 500, test: true }),
      ]);
      const [large, small, test] = batch.results;
      const events = await api.events();

      const routed = routedOf(events);
      const toErpRouted = routed.filter((r) => r.destination_id === erp.id);
      assert.equal(toErpRouted.length, 1, 'only the large order reaches the ERP');
      const [message] = toErpRouted;
      const orderEvent = events.find((event) => event.id === large.event_id)!;
      assert.match(message.id, /^rtd_/);
      assert.deepEqual(
        [message.object, message.connection_id, message.record_id, message.event_id],
        ['routed_record', toErp.id, large.record_id, large.event_id],
      );
      assert.deepEqual(
        { ...message.payload, data: undefined },
        { id: large.event_id, topic: 'orders.created', merchant_id: api.merchantId, created_at: orderEvent.created_at, api_version: 'v1', data: undefined },
      );
      assert.deepEqual(message.payload.data.object, {
        ...(orderEvent.data.object as object),
        data: { amount: 150, currency: 'EUR', customer: { name: 'Ada' }, channel: 'web' },
      });

      const toArchiveRouted = routed.filter((r) => r.destination_id === archive.id);
      assert.deepEqual(toArchiveRouted.map((r) => r.record_id).sort(), [large.record_id, small.record_id, test.record_id].sort(), 'no rules: everything');
      assert.ok(toArchiveRouted.every((r) => r.connection_id === toArchive.id));
      assert.deepEqual(
        toArchiveRouted.find((r) => r.record_id === small.record_id).payload.data.object,
        events.find((e) => e.id === small.event_id)!.data.object,
      );
      assert.equal(routed.length, 4);

      const listed = await api.get(`/api/v1/sources/${source.id}/records`);
      const routesOf = (id: string) =>
        Object.fromEntries(
          listed.body.data
            .find((record: { id: string }) => record.id === id)
            .routes.map((route: any) => [route.connection_id, [route.outcome, route.rule_id, route.destination_id]]),
        );
      assert.deepEqual(routesOf(large.record_id), { [toErp.id]: ['routed', rules.forwardLarge.id, erp.id], [toArchive.id]: ['routed', null, archive.id] });
      assert.deepEqual(routesOf(small.record_id), { [toErp.id]: ['filtered', null, erp.id], [toArchive.id]: ['routed', null, archive.id] });
      assert.equal(routesOf(test.record_id)[toErp.id][0], 'dropped');
      assert.equal(routesOf(test.record_id)[toArchive.id][0], 'routed', 'the archive has no drop rule');
    });

    it('routes nothing twice when a record event is delivered again, even concurrently', async () => {
      const api = await harness().merchant();
      const { source } = await wiredSource(api);
      const batch = await api.ingest(source.id, [order('big', { total: 1000 })]);
      const before = routedOf(await api.events());
      assert.equal(before.length, 2, 'the ERP and the archive');
      const routes = (await api.get(`/api/v1/sources/${source.id}/records`)).body.data[0].routes;

      const recordEvent = harness().events.events.find((event) => event.id === batch.results[0].event_id)!;
      await harness().deliver(recordEvent, 2);
      await harness().deliver(recordEvent);
      assert.deepEqual(routedOf(await api.events()), before);
      assert.deepEqual((await api.get(`/api/v1/sources/${source.id}/records`)).body.data[0].routes, routes);
    });

    it('routes nothing through a paused connection, and records of other event types only where the connection takes them', async () => {
      const api = await harness().merchant();
      const { source, toErp, toArchive } = await wiredSource(api);
      assert.equal((await api.patch(`/api/v1/connections/${toErp.id}`, { status: 'paused' })).status, 200);
      const review = { type: 'review', external_id: 'rev-1', occurred_at: '2026-11-22T10:00:00Z', data: { rating: 5 } };
      const batch = await api.ingest(source.id, [order('big', { total: 1000 }), review]);

      const routed = routedOf(await api.events());
      assert.deepEqual(
        routed.map((r) => [r.connection_id, r.record_id]),
        [[toArchive.id, batch.results[0].record_id]],
      );
      const listed = (await api.get(`/api/v1/sources/${source.id}/records?type=review`)).body.data;
      assert.deepEqual(listed[0].routes, [], 'no connection takes reviews');
    });

    it('routes the rest of a batch when one of its events fails, and that event alone is retried and poisoned', async () => {
      const api = await harness().merchant();
      const { source, toErp, toArchive } = await wiredSource(api);
      // A consumer of its own, on a bus that poisons at the first failure, over the service's database and outbox.
      const bus = new MemoryBus({ retry: { delaysMs: [10], deliveryLimit: 1 } });
      const handled = new HandledDeliveries();
      const runner = new RuleRunner({ timeoutMs: 5000 });
      const route = recordRouting({ db: harness().db, outbox: harness().service.outbox, runner, logger: createLogger('merchants', 'silent') });
      const batches: string[][] = [];
      const queue = new RoutingQueue({
        db: harness().db,
        logger: createLogger('merchants', 'silent'),
        maxPendingPerMerchant: 128,
        async route(merchantId, events, parked) {
          batches.push(events.map((event) => event.id));
          await route(merchantId, events, parked);
        },
      });
      const consumer = await consumeMerchantsEvents(handled.watch(bus), harness().db, {
        routeRecordEvent: (event) => queue.submit(event),
        resetMerchantData: notInThisTest,
        recordServiceReport: notInThisTest,
        applyEngineDisable: notInThisTest,
      });
      try {
        // Each from a request of its own: what it routes must carry that request, not its batch's first.
        const good = Array.from({ length: 6 }, () =>
          runWithContext({ requestId: newId('req'), actor: { type: 'api_key', id: newId('key') } }, () => orderEvent(api.merchantId, source.id, newId('rec'))),
        );
        const bad = orderEvent(api.merchantId, source.id, null);
        await bus.publish([good[0]!, good[1]!, bad, ...good.slice(2)]);
        await Promise.all(good.map((event) => handled.until(event.id)));
        const { messages } = await bus.poison.list(MERCHANTS_QUEUE, 10);
        assert.deepEqual(
          messages.map((message) => message.event.id),
          [bad.id],
          'only the bad event is poisoned',
        );
        assert.ok(
          batches.some((batch) => batch.length > 1 && batch.includes(bad.id)),
          `the bad event shared a batch with others: ${JSON.stringify(batches)}`,
        );

        const { rows } = await harness().db.query<{ record_id: string; connection_id: string; outcome: string }>(
          `SELECT record_id, connection_id, outcome FROM ${MERCHANTS_SCHEMA}.routings WHERE merchant_id = $1 ORDER BY record_id, connection_id`,
          [api.merchantId],
        );
        const goodIds = good.map((event) => (event.data.object as { id: string }).id).sort();
        const expected = goodIds.flatMap((id) =>
          [
            { record_id: id, connection_id: toErp.id, outcome: 'filtered' },
            { record_id: id, connection_id: toArchive.id, outcome: 'routed' },
          ].sort((a, b) => a.connection_id.localeCompare(b.connection_id)),
        );
        assert.deepEqual(rows, expected, 'each good record routed once through each connection, the bad one not at all');
        const routedEvents = (await api.events('internal.record_routed')).filter((event) => event.data.object.connection_id === toArchive.id);
        const causeOf = new Map(good.map((event) => [event.id, event]));
        assert.deepEqual(routedEvents.map((event) => event.data.object.event_id as string).sort(), [...causeOf.keys()].sort());
        for (const routed of routedEvents)
          assert.deepEqual(routed.context, causeOf.get(routed.data.object.event_id as string)!.context, "the cause's request and actor");
      } finally {
        await consumer.close();
        await bus.close();
        await runner.close();
      }
    });
  });
}
