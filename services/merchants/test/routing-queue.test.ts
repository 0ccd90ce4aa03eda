import assert from 'node:assert/strict';
import { buildEvent, createLogger, createPgliteDb, migrateSchema, newId, openPglite, trustedMerchantId, type Db, type MerxEvent } from '@merx/kit';
import { createScratchDatabase } from '@merx/kit/testing';
import { recordEvent, recordEventWithoutData, type IngestedRecord } from '../src/domain/record.js';
import { MERCHANTS_SCHEMA, merchantsMigrations } from '../src/store/migrations.js';
import { insertRecordsOnceForMerchant } from '../src/store/records-store.js';
import { deleteParkedEventsForMerchant, parkEventsForMerchant } from '../src/store/routing-backlog-store.js';
import { RoutingQueue, type RouteRecordEvents } from '../src/usecases/routing-queue.js';
import { databases } from './harness.js';

const silent = createLogger('merchants', process.env.LOG_LEVEL ?? 'silent');

/** An orders.created as ingestion emits it, with its record in the records table (parked events read their data from there). */
async function orderEvent(db: Db, merchantId: string, data: Record<string, unknown> = { total: 1, items: [1, 2, 3] }): Promise<MerxEvent> {
  const record: IngestedRecord = {
    id: newId('rec'),
    merchantId,
    sourceId: newId('src'),
    type: 'order',
    external_id: newId('ext'),
    occurred_at: new Date().toISOString(),
    data,
    eventId: newId('evt'),
    receivedAt: new Date(),
  };
  await db.transaction((tx) => insertRecordsOnceForMerchant(tx, trustedMerchantId(merchantId), [record]));
  const { topic, object } = recordEvent(record);
  return { ...buildEvent(topic, merchantId, { object }, record.receivedAt), id: record.eventId };
}

const orderEvents = (db: Db, merchantId: string, count: number) => Promise.all(Array.from({ length: count }, () => orderEvent(db, merchantId)));

/** What parking stores of an event. */
function parked(event: MerxEvent) {
  const thin = recordEventWithoutData(event)!;
  return { eventId: event.id, recordId: thin.recordId, json: JSON.stringify(thin.event) };
}

/** A promise the test resolves when it chooses. */
function gate(): { opened: Promise<void>; open(): void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

async function until(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function backlogOf(db: Db, merchantId: string): Promise<Array<{ event_id: string; attempts: number; claimed_until: Date | null }>> {
  const { rows } = await db.query<{ event_id: string; attempts: number; claimed_until: Date | null }>(
    `SELECT event_id, attempts, claimed_until FROM ${MERCHANTS_SCHEMA}.routing_backlog WHERE merchant_id = $1 ORDER BY seq`,
    [merchantId],
  );
  return rows;
}

/**
 * A stand-in for recordRouting that keeps its contract (parked rows go in the routing's
 * transaction) and writes down what it routed, per merchant, in order. `hold` keeps a
 * merchant's routings from finishing until its gate opens.
 */
function recordingRoute(db: Db, hold: Map<string, Promise<void>> = new Map()) {
  const routed = new Map<string, MerxEvent[]>();
  const route: RouteRecordEvents = async (merchantId, events, parked) => {
    await hold.get(merchantId);
    await db.transaction((tx) => deleteParkedEventsForMerchant(tx, trustedMerchantId(merchantId), parked));
    routed.set(merchantId, [...(routed.get(merchantId) ?? []), ...events]);
  };
  const eventsOf = (merchantId: string) => routed.get(merchantId) ?? [];
  return { route, eventsOf, of: (merchantId: string) => eventsOf(merchantId).map((event) => event.id) };
}

for (const { name, embedded } of databases) {
  describe(`routing queue on ${name}`, function () {
    this.timeout(60_000);
    // The service's schema and nothing else: a running merchants service would route the parked
    // events too, as the other replica it is.
    let database: { db: Db; drop(): Promise<void> } | undefined;
    before(async () => {
      if (embedded) {
        const pglite = await openPglite(undefined);
        database = { db: createPgliteDb(pglite), drop: () => pglite.close() };
      } else database = await createScratchDatabase('merchants_routing_queue');
      await migrateSchema(database.db, MERCHANTS_SCHEMA, merchantsMigrations);
    });
    after(async () => {
      await database?.drop();
    });
    const harness = () => database!;
    const queues: RoutingQueue[] = [];
    afterEach(async () => {
      await Promise.all(queues.splice(0).map((queue) => queue.stop()));
    });
    const started = (queue: RoutingQueue) => {
      queues.push(queue);
      queue.start();
      return queue;
    };

    it("parks what a merchant sends beyond its bound, and routes it in order in its turn, while another merchant's events go straight through", async () => {
      const db = harness().db;
      const [a, b] = [newId('mch'), newId('mch')];
      const bHeld = gate();
      const routing = recordingRoute(db, new Map([[b, bHeld.opened]]));
      const queue = started(new RoutingQueue({ db, logger: silent, route: routing.route, maxPendingPerMerchant: 4, pollMs: 100 }));

      const bEvents = await orderEvents(db, b, 10);
      const submitted = bEvents.map((event) => queue.submit(event));
      // The six beyond B's bound are parked (acked) while its first four wait for their routing.
      await Promise.all(submitted.slice(4));
      assert.equal(queue.pendingOf(b), 4);
      assert.deepEqual(
        (await backlogOf(db, b)).map((row) => row.event_id),
        bEvents.slice(4).map((event) => event.id),
      );

      const aEvent = await orderEvent(db, a);
      await queue.submit(aEvent);
      assert.deepEqual(routing.of(a), [aEvent.id], "A's event is routed while B's wait");
      assert.deepEqual(routing.of(b), []);

      bHeld.open();
      await Promise.all(submitted.slice(0, 4));
      await until(async () => routing.of(b).length === 10 && (await backlogOf(db, b)).length === 0, "the routing of B's parked events");
      assert.deepEqual(
        routing.of(b),
        bEvents.map((event) => event.id),
        "B's events are routed once each, in the order they came",
      );
      assert.deepEqual(routing.eventsOf(b), bEvents, 'a parked event is routed as it came off the bus, its data read back from its record');
    });

    it('parks the next events of a merchant that has parked ones, so they keep their order', async () => {
      const db = harness().db;
      const b = newId('mch');
      const held = gate();
      const routing = recordingRoute(db, new Map([[b, held.opened]]));
      const queue = started(new RoutingQueue({ db, logger: silent, route: routing.route, maxPendingPerMerchant: 2, pollMs: 100 }));
      const first = await orderEvents(db, b, 3);
      const routed = first.map((event) => queue.submit(event));
      await routed[2];
      held.open();
      await Promise.all(routed);
      // Its bound has room again, but the third is still parked (or being drained): the next one goes behind it.
      const later = await orderEvent(db, b);
      await queue.submit(later);
      await until(() => routing.of(b).length === 4, 'every event of B routed');
      assert.deepEqual(
        routing.of(b),
        [...first, later].map((event) => event.id),
      );
    });

    it("routes parked events whose holder's claim ran out, as when the replica that claimed them died", async () => {
      const db = harness().db;
      const merchantId = newId('mch');
      const orphans = await orderEvents(db, merchantId, 3);
      await db.transaction((tx) => parkEventsForMerchant(tx, trustedMerchantId(merchantId), orphans.map(parked)));
      await db.query(
        `UPDATE ${MERCHANTS_SCHEMA}.routing_backlog SET claimed_by = 'routing-gone', claimed_until = now() - interval '1 second' WHERE merchant_id = $1`,
        [merchantId],
      );
      const routing = recordingRoute(db);
      started(new RoutingQueue({ db, logger: silent, route: routing.route, maxPendingPerMerchant: 8, pollMs: 50 }));
      await until(async () => (await backlogOf(db, merchantId)).length === 0, 'the orphaned events routed');
      assert.deepEqual(
        routing.of(merchantId),
        orphans.map((event) => event.id),
      );
    });

    it('puts a parked event whose routing failed back with a delay, and routes it on a later try', async () => {
      const db = harness().db;
      const merchantId = newId('mch');
      const event = await orderEvent(db, merchantId);
      await db.transaction((tx) => parkEventsForMerchant(tx, trustedMerchantId(merchantId), [parked(event)]));
      const routing = recordingRoute(db);
      let failures = 0;
      const failingOnce: RouteRecordEvents = async (id, events, parked) => {
        if (failures++ === 0) throw new Error('the database went away for a moment');
        await routing.route(id, events, parked);
      };
      started(new RoutingQueue({ db, logger: silent, route: failingOnce, maxPendingPerMerchant: 8, pollMs: 50 }));
      await until(async () => (await backlogOf(db, merchantId))[0]?.attempts === 1, 'the failed attempt recorded');
      const [row] = await backlogOf(db, merchantId);
      assert.ok(row!.claimed_until!.getTime() > Date.now() - 1_000, 'it waits before the next try');
      await until(async () => (await backlogOf(db, merchantId)).length === 0, 'the retried routing', 30_000);
      assert.deepEqual(routing.of(merchantId), [event.id]);
    });

    it('drops the parked event of a record that is gone, with nothing routed', async () => {
      const db = harness().db;
      const merchantId = newId('mch');
      const [kept, gone] = await orderEvents(db, merchantId, 2);
      await db.transaction((tx) => parkEventsForMerchant(tx, trustedMerchantId(merchantId), [parked(kept!), parked(gone!)]));
      await db.query(`DELETE FROM ${MERCHANTS_SCHEMA}.records WHERE merchant_id = $1 AND event_id = $2`, [merchantId, gone!.id]);
      const routing = recordingRoute(db);
      started(new RoutingQueue({ db, logger: silent, route: routing.route, maxPendingPerMerchant: 8, pollMs: 50 }));
      await until(async () => (await backlogOf(db, merchantId)).length === 0, 'the backlog emptied');
      assert.deepEqual(routing.of(merchantId), [kept!.id]);
    });
  });
}
