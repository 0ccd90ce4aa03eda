import assert from 'node:assert/strict';
import type { MerxEvent } from '@merx/kit';
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
  });
}
