import assert from 'node:assert/strict';
import { buildEvent, type MerxEvent } from '@merx/kit';
import { ALL_SCOPES, databases, order, useHarness, type MerchantsClient } from './harness.js';

/** One of everything this service keeps of a merchant, records and routings included. */
async function configure(api: MerchantsClient) {
  const source = await api.source();
  const destination = await api.destination();
  const rule = await api.rule({ action: 'drop', condition: 'data.total < 1.0' });
  await api.connection({ source_id: source.id, destination_id: destination.id, rule_ids: [rule.id] });
  await api.ingest(source.id, [order('o-1'), order('o-2')]);
}

const COLLECTIONS = ['sources', 'destinations', 'rules', 'connections'] as const;

async function counts(api: MerchantsClient): Promise<Record<string, number>> {
  const entries = await Promise.all(COLLECTIONS.map(async (collection) => [collection, (await api.get(`/api/v1/${collection}`)).body.data.length] as const));
  return Object.fromEntries(entries);
}

/** The report another service sends once its part is done: in the reset's context, as they do. */
function reportOf(reset: MerxEvent, service: 'catalog' | 'webhooks', removed: Record<string, number>): MerxEvent {
  const report = buildEvent('internal.sandbox_service_reset', reset.merchant_id, {
    object: {
      id: (reset.data.object as { id: string }).id,
      object: 'sandbox_service_reset',
      service,
      removed,
      seeded: {},
      completed_at: new Date().toISOString(),
    },
  });
  return reset.context ? { ...report, context: reset.context } : report;
}

async function requestReset(api: MerchantsClient, body: unknown) {
  const response = await api.post('/api/v1/sandbox/reset', body);
  assert.equal(response.status, 202, response.text);
  const [resetEvent] = await api.events('sandbox.reset');
  return { response, resetEvent: resetEvent! };
}

for (const { name, embedded } of databases) {
  describe(`sandbox reset on ${name}`, function () {
    this.timeout(30_000);
    const harness = useHarness(embedded);

    it('refuses a live merchant (409) and a token without sandbox:reset (403), writing nothing', async () => {
      const live = await harness().merchant({ mode: 'live' });
      await live.source();
      const refused = await live.post('/api/v1/sandbox/reset', { seed: true });
      assert.equal(refused.status, 409, refused.text);
      const unscoped = await harness().merchant({ scope: ALL_SCOPES.replace('sandbox:reset', '').trim() });
      assert.equal((await unscoped.post('/api/v1/sandbox/reset', {})).status, 403);
      assert.deepEqual(await live.topics(), ['sources.created'], 'no sandbox.reset, no wipe');
      assert.equal((await counts(live)).sources, 1);
      assert.deepEqual(await unscoped.topics(), []);
    });

    it("wipes the merchant's own data and no one else's, reports for merchants, and completes once catalog and webhooks report", async () => {
      const api = await harness().merchant();
      const neighbour = await harness().merchant();
      await configure(api);
      await configure(neighbour);

      const [wiped] = (await api.get('/api/v1/destinations')).body.data;
      const { response, resetEvent } = await requestReset(api, {});
      const reset = response.body;
      // The delivery engine drops the wiped destination by its removal, whose version outranks every sync before it.
      assert.deepEqual(
        (await api.events('internal.destination_removed')).map((event) => event.data.object),
        [{ id: wiped.id, object: 'destination_endpoint', version: wiped.version + 1 }],
      );
      assert.equal((await neighbour.events('internal.destination_removed')).length, 0);
      assert.equal(response.headers.get('location'), `/api/v1/sandbox/resets/${reset.id}`);
      assert.deepEqual([reset.status, reset.seed, reset.completed_at], ['running', false, null]);
      assert.deepEqual(
        reset.services.map((s: { service: string; status: string }) => `${s.service}:${s.status}`),
        ['catalog:pending', 'merchants:pending', 'webhooks:pending'],
      );
      assert.deepEqual(resetEvent.data.object, reset);

      assert.deepEqual(await counts(api), { sources: 0, destinations: 0, rules: 0, connections: 0 });
      assert.deepEqual(await counts(neighbour), { sources: 1, destinations: 1, rules: 1, connections: 1 });
      const neighbourSource = (await neighbour.get('/api/v1/sources')).body.data[0];
      assert.equal((await neighbour.get(`/api/v1/sources/${neighbourSource.id}/records`)).body.data.length, 2);

      const [ownReport, ...moreReports] = await api.events('internal.sandbox_service_reset');
      assert.equal(moreReports.length, 0);
      const removed = { sources: 1, destinations: 1, rules: 1, connections: 1, records: 2 };
      assert.deepEqual(
        { ...ownReport!.data.object, completed_at: undefined },
        { id: reset.id, object: 'sandbox_service_reset', service: 'merchants', removed, seeded: {}, completed_at: undefined },
      );
      const midway = await api.get(`/api/v1/sandbox/resets/${reset.id}`);
      assert.equal(midway.body.status, 'running');
      assert.deepEqual(
        midway.body.services.find((s: { service: string }) => s.service === 'merchants'),
        { service: 'merchants', status: 'completed', removed, seeded: {}, completed_at: ownReport!.data.object.completed_at },
      );

      const catalogReport = reportOf(resetEvent, 'catalog', { products: 3 });
      await harness().deliver(catalogReport);
      assert.equal((await api.get(`/api/v1/sandbox/resets/${reset.id}`)).body.status, 'running');
      // The last report and a redelivered one race: the reset completes exactly once.
      await Promise.all([harness().deliver(reportOf(resetEvent, 'webhooks', { subscriptions: 1 })), harness().deliver(catalogReport, 2)]);
      const done = await api.get(`/api/v1/sandbox/resets/${reset.id}`);
      assert.equal(done.status, 200);
      assert.equal(done.body.status, 'completed');
      assert.ok(done.body.completed_at);
      assert.deepEqual(
        done.body.services.map((s: { service: string; status: string }) => `${s.service}:${s.status}`),
        ['catalog:completed', 'merchants:completed', 'webhooks:completed'],
      );
      assert.deepEqual(done.body.services[0].removed, { products: 3 });

      const completed = await api.events('sandbox.reset_completed');
      assert.equal(completed.length, 1, 'completed once, whatever repeats');
      assert.deepEqual(completed[0]!.data.object, done.body);
      assert.equal((await neighbour.get(`/api/v1/sandbox/resets/${reset.id}`)).status, 404);
      assert.equal((await neighbour.events('internal.sandbox_service_reset')).length, 0);
    });

    it('seeds a source, a paused destination, a rule and a connection when asked, each with its created event', async () => {
      const api = await harness().merchant();
      await configure(api);
      const before = (await api.events()).length;
      const { response } = await requestReset(api, { seed: true });
      assert.equal(response.body.seed, true);

      assert.deepEqual(await counts(api), { sources: 1, destinations: 1, rules: 1, connections: 1 });
      const [destination] = (await api.get('/api/v1/destinations')).body.data;
      assert.equal(destination.status, 'paused');
      const [connection] = (await api.get('/api/v1/connections')).body.data;
      const [source] = (await api.get('/api/v1/sources')).body.data;
      const [rule] = (await api.get('/api/v1/rules')).body.data;
      assert.deepEqual([connection.source_id, connection.destination_id, connection.rule_ids], [source.id, destination.id, [rule.id]]);

      const after = (await api.events()).slice(before).map((event) => event.topic);
      assert.deepEqual(
        after.filter((topic) => topic.endsWith('.created')),
        ['sources.created', 'destinations.created', 'rules.created', 'connections.created'],
      );
      assert.ok(after.includes('internal.destination_synced'), 'the delivery engine learns the seeded destination');
      const [report] = await api.events('internal.sandbox_service_reset');
      assert.deepEqual(report!.data.object.seeded, { sources: 1, destinations: 1, rules: 1, connections: 1 });
      const synced = (await api.events('internal.destination_synced')).at(-1)!;
      assert.deepEqual([synced.data.object.id, synced.data.object.status], [destination.id, 'paused']);
    });
  });
}
