import assert from 'node:assert/strict';
import {
  buildEvent,
  createPgliteDb,
  handleEventOnce,
  inboxMigration,
  MemoryBus,
  migrateSchema,
  Outbox,
  OutboxRelay,
  outboxMigration,
  outboxTraceContextMigration,
  type Bus,
  type Db,
  type MerxEvent,
  type Queryable,
} from '../src/index.js';
import { connectPostgres, dropSchema, sharedPglite, silentLogger, uniqueName, waitFor } from './support.js';

const MERCHANT = 'mch_01jd3k7q8m2x4v6b9c0d1e2f3g';

const thingsMigration = {
  id: '001_things',
  sql: `
    CREATE TABLE {{schema}}.things (id text PRIMARY KEY, n integer NOT NULL);
    CREATE TABLE {{schema}}.handled (event_id text NOT NULL, n integer NOT NULL);
  `,
};

function thingCreated(n: number): MerxEvent {
  return buildEvent('things.created', MERCHANT, { object: { id: `thing-${n}`, n } });
}

interface Backend {
  name: string;
  open(): Promise<{ db: Db; schema: string; close(): Promise<void> }>;
}

const backends: Backend[] = [
  {
    name: 'PostgreSQL',
    async open() {
      const db = await connectPostgres();
      const schema = uniqueName('kit_test_');
      return {
        db,
        schema,
        async close() {
          await dropSchema(db, schema);
          await db.close();
        },
      };
    },
  },
  {
    name: 'PGlite',
    async open() {
      const db = createPgliteDb(await sharedPglite());
      const schema = uniqueName('kit_test_');
      return {
        db,
        schema,
        async close() {
          await dropSchema(db, schema);
        },
      };
    },
  },
];

for (const backend of backends) {
  describe(`outbox, relay and inbox on ${backend.name}`, () => {
    let db: Db;
    let schema: string;
    let close: () => Promise<void>;
    let outbox: Outbox;
    const relays: OutboxRelay[] = [];
    const buses: Bus[] = [];

    const count = async (table: string) => Number((await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.${table}`)).rows[0]!.n);
    const newRelay = (bus: Bus, options: { pollIntervalMs?: number; batchSize?: number } = {}) => {
      const relay = new OutboxRelay({ db, bus, outbox, logger: silentLogger, service: 'kit-test', retryDelayMs: 20, ...options });
      relays.push(relay);
      return relay;
    };
    const newBus = () => {
      const bus = new MemoryBus();
      buses.push(bus);
      return bus;
    };

    before(async () => {
      ({ db, schema, close } = await backend.open());
      await migrateSchema(db, schema, [outboxMigration, outboxTraceContextMigration, inboxMigration, thingsMigration]);
      outbox = new Outbox(db, schema);
    });

    afterEach(async () => {
      for (const relay of relays.splice(0)) await relay.stop();
      for (const bus of buses.splice(0)) await bus.close();
      await db.exec(`TRUNCATE ${schema}.outbox, ${schema}.inbox, ${schema}.things, ${schema}.handled`);
    });

    after(async () => {
      await close?.();
    });

    it('commits the events together with the state change', async () => {
      let wakeUps = 0;
      const unsubscribe = outbox.onCommit(() => wakeUps++);
      const events = [thingCreated(1), thingCreated(2)];
      const result = await outbox.transaction(async (tx, emit) => {
        await tx.query(`INSERT INTO ${schema}.things (id, n) VALUES ('thing-1', 1), ('thing-2', 2)`);
        for (const event of events) emit(event);
        return 'done';
      });
      unsubscribe();
      assert.equal(result, 'done');
      assert.equal(wakeUps, 1, 'the relay is woken once per committed transaction');
      assert.equal(await count('things'), 2);
      const { rows } = await db.query<{ event_id: string; topic: string; merchant_id: string; payload: string }>(
        `SELECT event_id, topic, merchant_id, payload FROM ${schema}.outbox ORDER BY position`,
      );
      assert.deepEqual(
        rows.map((row) => [row.event_id, row.topic, row.merchant_id]),
        events.map((event) => [event.id, 'things.created', MERCHANT]),
      );
      assert.equal(rows[0]!.payload, JSON.stringify(events[0]), 'the payload is the event byte for byte');
    });

    it('stores each payload byte for byte, whatever its strings hold, in emission order', async () => {
      const awkward = ['say "hi" \\ back\\slash', 'nul \u0000 and lone \ud800 surrogate', 'ü € 😀 \n\t', '{"json":"in a string"}', ''];
      const events = awkward.map((text, n) => buildEvent('things.created', MERCHANT, { object: { n, text, nested: [{ text }] } }));
      await outbox.transaction(async (_tx, emit) => {
        for (const event of events) emit(event);
      });
      const { rows } = await db.query<{ event_id: string; payload: string }>(`SELECT event_id, payload FROM ${schema}.outbox ORDER BY position`);
      assert.deepEqual(
        rows.map((row) => row.event_id),
        events.map((event) => event.id),
      );
      assert.deepEqual(
        rows.map((row) => row.payload),
        events.map((event) => JSON.stringify(event)),
      );
    });

    it('emits nothing when the transaction rolls back', async () => {
      let wakeUps = 0;
      const unsubscribe = outbox.onCommit(() => wakeUps++);
      await assert.rejects(
        outbox.transaction(async (tx, emit) => {
          await tx.query(`INSERT INTO ${schema}.things (id, n) VALUES ('thing-3', 3)`);
          emit(thingCreated(3));
          throw new Error('validation failed after the write');
        }),
        /validation failed after the write/,
      );
      // A constraint violation raised by the outbox insert itself also undoes the state change.
      const duplicate = thingCreated(4);
      await db.transaction((tx) => outbox.record(tx, [duplicate]));
      await assert.rejects(
        outbox.transaction(async (tx, emit) => {
          await tx.query(`INSERT INTO ${schema}.things (id, n) VALUES ('thing-4', 4)`);
          emit(duplicate);
        }),
      );
      unsubscribe();
      assert.equal(wakeUps, 0);
      assert.equal(await count('things'), 0);
      assert.equal(await count('outbox'), 1, 'only the row recorded directly');
    });

    it('relays committed rows to the bus in order and deletes them', async () => {
      const bus = newBus();
      const received: MerxEvent[] = [];
      await bus.consume({ queue: 'observer', bindings: ['things.*'], prefetch: 1 }, async (event) => void received.push(event));
      const events = Array.from({ length: 7 }, (_, n) => thingCreated(n));
      for (const event of events) await outbox.transaction(async (_tx, emit) => emit(event));
      const relay = newRelay(bus, { batchSize: 3 });
      assert.equal(await relay.relayBatch(), 3);
      assert.equal(await count('outbox'), 4);
      assert.equal(await relay.relayBatch(), 3);
      assert.equal(await relay.relayBatch(), 1);
      assert.equal(await relay.relayBatch(), 0);
      assert.equal(await count('outbox'), 0);
      await waitFor(() => received.length === 7, 'seven deliveries');
      assert.deepEqual(received, events);
    });

    it('keeps the rows when the bus refuses them', async () => {
      const failingBus = newBus();
      failingBus.publish = async () => {
        throw new Error('broker unreachable');
      };
      await outbox.transaction(async (_tx, emit) => emit(thingCreated(1)));
      await assert.rejects(newRelay(failingBus).relayBatch(), /broker unreachable/);
      assert.equal(await count('outbox'), 1);
    });

    it('wakes the running relay on commit instead of waiting for its poll', async () => {
      const bus = newBus();
      const received: MerxEvent[] = [];
      await bus.consume({ queue: 'observer', bindings: ['#'] }, async (event) => void received.push(event));
      newRelay(bus, { pollIntervalMs: 60_000 }).start();
      const event = thingCreated(1);
      await outbox.transaction(async (_tx, emit) => emit(event));
      await waitFor(() => received.length === 1, 'the woken relay to publish', 5_000);
      assert.equal(received[0]!.id, event.id);
      await waitFor(async () => (await count('outbox')) === 0, 'the relayed row to be deleted', 5_000);
    });

    it('handles an event once and drops the duplicate', async () => {
      const event = thingCreated(9);
      let runs = 0;
      const work = async (tx: Queryable) => {
        runs++;
        await tx.query(`INSERT INTO ${schema}.handled (event_id, n) VALUES ($1, $2)`, [event.id, 9]);
      };
      assert.equal(await handleEventOnce(db, schema, 'kit-test', event, work), 'handled');
      assert.equal(await handleEventOnce(db, schema, 'kit-test', event, work), 'duplicate');
      assert.equal(runs, 1);
      assert.equal(await count('handled'), 1);
      assert.equal(await handleEventOnce(db, schema, 'another-consumer', event, work), 'handled', 'the inbox is per consumer');
    });

    it('leaves no inbox row when the handler fails, so the redelivery is handled', async () => {
      const event = thingCreated(10);
      await assert.rejects(
        handleEventOnce(db, schema, 'kit-test', event, async (tx) => {
          await tx.query(`INSERT INTO ${schema}.handled (event_id, n) VALUES ($1, 10)`, [event.id]);
          throw new Error('handler crashed');
        }),
        /handler crashed/,
      );
      assert.equal(await count('inbox'), 0);
      assert.equal(await count('handled'), 0);
      assert.equal(await handleEventOnce(db, schema, 'kit-test', event, async () => undefined), 'handled');
    });

    it('carries events from the outbox through the bus into an inbox consumer exactly once', async () => {
      const bus = newBus();
      const outcomes: string[] = [];
      await bus.consume({ queue: 'things.events', bindings: ['things.created'], deliveryLimit: 3 }, async (event) => {
        outcomes.push(
          await handleEventOnce(db, schema, 'kit-test', event, async (tx) => {
            await tx.query(`INSERT INTO ${schema}.handled (event_id, n) VALUES ($1, $2)`, [event.id, event.data.object.n]);
          }),
        );
      });
      const relay = newRelay(bus, { pollIntervalMs: 50 });
      relay.start();
      const events = Array.from({ length: 20 }, (_, n) => thingCreated(n));
      for (const event of events) {
        await outbox.transaction(async (tx, emit) => {
          await tx.query(`INSERT INTO ${schema}.things (id, n) VALUES ($1, $2)`, [event.data.object.id, event.data.object.n]);
          emit(event);
        });
      }
      await waitFor(async () => (await count('handled')) === 20, 'twenty handled events', 10_000);
      // A relay crash after publishing but before deleting republishes; the inbox drops the copy.
      await bus.publish([events[0]!]);
      await waitFor(() => outcomes.length === 21, 'the duplicate delivery', 5_000);
      assert.deepEqual(
        outcomes.filter((o) => o === 'duplicate'),
        ['duplicate'],
      );
      assert.deepEqual(await bus.poison.counts(['things.events']), { 'things.events': 0 });
      const { rows } = await db.query<{ event_id: string }>(`SELECT event_id FROM ${schema}.handled ORDER BY n`);
      assert.deepEqual(
        rows.map((row) => row.event_id),
        events.map((event) => event.id),
      );
    });
  });
}
