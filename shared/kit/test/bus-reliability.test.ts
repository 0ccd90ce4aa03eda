import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { openPgliteThread } from '../src/pglite-worker-db.js';
import {
  AmqpBus,
  brokerNamesOf,
  buildEvent,
  busPoisoned,
  createPgliteDb,
  MemoryBus,
  migrateSchema,
  openPglite,
  Outbox,
  OutboxRelay,
  outboxMigration,
  outboxTraceContextMigration,
  retryQueueOf,
  type Db,
  type DeliveryInfo,
  type MerxEvent,
  type RetryPolicy,
  Unavailable,
} from '../src/index.js';
import {
  AMQP_URL,
  connectPostgres,
  deleteDeployment,
  dropSchema,
  sharedPglite,
  silentLogger,
  testDeployment,
  uniqueName,
  waitFor,
  withAmqpChannel,
} from './support.js';

const MERCHANT = 'mch_01jd3k7q8m2x4v6b9c0d1e2f3g';

/** Waits of a few hundred ms: long enough to tell a delayed retry from an immediate one. */
const RETRY: RetryPolicy = { delaysMs: [400, 800], deliveryLimit: 3 };

async function poisonedCount(labels: { service: string; queue: string; topic: string }): Promise<number> {
  const metric = await busPoisoned.get();
  return metric.values.find((value) => Object.entries(labels).every(([key, wanted]) => (value.labels as Record<string, unknown>)[key] === wanted))?.value ?? 0;
}

describe('AmqpBus retries, poison and replay against RabbitMQ', function () {
  this.timeout(60_000);
  const area = uniqueName('kitretry');
  const deployment = testDeployment();
  const names = brokerNamesOf(deployment);
  const logicalQueues: string[] = [];
  let bus: AmqpBus;

  const queueName = () => {
    const queue = `${uniqueName('retry-')}.events`;
    logicalQueues.push(queue);
    return queue;
  };
  const event = (action: string, object: Record<string, unknown> = {}): MerxEvent => buildEvent(`${area}.${action}`, MERCHANT, { object });

  before(async () => {
    bus = await AmqpBus.connect({ url: AMQP_URL, service: 'kit-test', logger: silentLogger, deployment, retry: RETRY });
  });

  after(async () => {
    await bus?.close();
    await deleteDeployment(deployment, logicalQueues.map(names.queue), RETRY);
  });

  it('waits out each retry delay in the retry queue of that delay instead of requeueing at once', async () => {
    const queue = queueName();
    const deliveries: Array<DeliveryInfo & { at: number }> = [];
    const consumer = await bus.consume({ queue, bindings: [`${area}.flaky`] }, async (_e, info) => {
      deliveries.push({ ...info, at: performance.now() });
      if (deliveries.length < 3) throw new Error('the database is failing over');
    });
    await bus.publish([event('flaky')]);
    await waitFor(() => deliveries.length === 3, 'the third delivery');
    assert.deepEqual(
      deliveries.map(({ at: _at, ...info }) => info),
      [
        { redelivered: false, deliveryCount: 1 },
        { redelivered: true, deliveryCount: 2 },
        { redelivered: true, deliveryCount: 3 },
      ],
    );
    const waits = [deliveries[1]!.at - deliveries[0]!.at, deliveries[2]!.at - deliveries[1]!.at];
    assert.ok(waits[0]! >= 380 && waits[1]! >= 780, `retried after ${waits.map(Math.round).join(' and ')} ms`);
    await withAmqpChannel(async (channel) => {
      for (const ms of RETRY.delaysMs)
        assert.equal((await channel.checkQueue(retryQueueOf(names.queue(queue), ms))).messageCount, 0, 'the retry queues exist, empty again');
    });
    assert.deepEqual(await bus.poison.counts([queue]), { [queue]: 0 });
    await consumer.close();
  });

  it('retries through an outage without counting it toward the delivery limit, so a long one poisons nothing', async () => {
    const queue = queueName();
    const deliveries: DeliveryInfo[] = [];
    let handled = false;
    const consumer = await bus.consume({ queue, bindings: [`${area}.outage`] }, async (_e, info) => {
      deliveries.push(info);
      if (deliveries.length <= 4) throw Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01' });
      if (deliveries.length === 5) throw new Unavailable('catalog is not answering');
      handled = true;
    });
    await bus.publish([event('outage')]);
    await waitFor(() => handled, 'the delivery after the outage', 20_000);
    assert.equal(deliveries.length, 6, 'five outage retries, more than the delivery limit of 3');
    assert.ok(
      deliveries.every((info) => info.deliveryCount === 1),
      `counted as failures: ${JSON.stringify(deliveries)}`,
    );
    assert.deepEqual(await bus.poison.counts([queue]), { [queue]: 0 });
    await consumer.close();
  });

  it('poisons a message after the delivery limit with its last error, counts it, lists it unchanged, and replays it', async () => {
    const queue = queueName();
    let failing = true;
    const handled: DeliveryInfo[] = [];
    const consumer = await bus.consume({ queue, bindings: [`${area}.doomed`], deliveryLimit: 2 }, async (_e, info) => {
      if (failing) throw new Error('no such column: colour');
      handled.push(info);
    });
    const labels = { service: 'kit-test', queue, topic: `${area}.doomed` };
    const poisonedBefore = await poisonedCount(labels);
    const [first, second] = [event('doomed', { n: 1 }), event('doomed', { n: 2 })];
    await bus.publish([first!, second!]);
    await waitFor(async () => (await bus.poison.counts([queue]))[queue] === 2, 'both messages in the poison queue');
    assert.equal(await poisonedCount(labels), poisonedBefore + 2);

    const listed = await bus.poison.list(queue, 10);
    assert.equal(listed.total, 2);
    assert.deepEqual(
      listed.messages.map((m) => m.event),
      [first, second],
    );
    for (const message of listed.messages) {
      assert.equal(message.queue, queue);
      assert.equal(message.failures, 2);
      assert.equal(message.last_error, 'Error: no such column: colour');
      assert.ok(message.poisoned_at && !Number.isNaN(Date.parse(message.poisoned_at)));
    }
    const again = await bus.poison.list(queue, 1);
    assert.equal(again.total, 2, 'listing leaves every message where it was');
    assert.deepEqual(
      again.messages.map((m) => m.event.id),
      [first!.id],
      'in the same order',
    );

    failing = false;
    assert.equal(await bus.poison.replay(queue, [second!.id]), 1);
    await waitFor(() => handled.length === 1, 'the replayed message handled');
    assert.deepEqual(handled, [{ redelivered: false, deliveryCount: 1 }], 'a fresh count');
    assert.deepEqual(
      (await bus.poison.list(queue, 10)).messages.map((m) => m.event.id),
      [first!.id],
    );
    assert.equal(await bus.poison.replay(queue), 1);
    await waitFor(() => handled.length === 2, 'the rest replayed');
    assert.deepEqual(await bus.poison.counts([queue]), { [queue]: 0 });
    assert.deepEqual(
      bus.poison.consumedQueues().filter((name) => name === queue),
      [queue],
    );
    await consumer.close();
  });

  it('hands consumers strings PostgreSQL stores, so a jsonb insert of an event with a lone surrogate and NUL succeeds', async () => {
    const db = await connectPostgres({ maxConnections: 2 });
    const schema = uniqueName('kit_test_');
    try {
      await db.exec(`CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.stored (id text PRIMARY KEY, data jsonb NOT NULL, title text NOT NULL)`);
      const queue = queueName();
      const consumer = await bus.consume({ queue, bindings: [`${area}.odd`], deliveryLimit: 1 }, async (e) => {
        await db.query(`INSERT INTO ${schema}.stored (id, data, title) VALUES ($1, $2, $3)`, [e.id, JSON.stringify(e.data), e.data.object.title]);
      });
      const odd = event('odd', { title: 'x\ud800y', note: 'a\u0000b', ['key\udc00']: 'v' });
      await bus.publish([odd]);
      await waitFor(async () => (await db.query(`SELECT 1 FROM ${schema}.stored`)).rows.length === 1, 'the stored row');
      const { rows } = await db.query<{ data: { object: Record<string, string> }; title: string }>(`SELECT data, title FROM ${schema}.stored`);
      assert.deepEqual(rows[0]!.data.object, { title: 'x\ufffdy', note: 'a\ufffdb', ['key\ufffd']: 'v' });
      assert.equal(rows[0]!.title, 'x\ufffdy');
      assert.deepEqual(await bus.poison.counts([queue]), { [queue]: 0 });
      await consumer.close();
    } finally {
      await dropSchema(db, schema);
      await db.close();
    }
  });
});

interface DurableBackend {
  name: string;
  open(): Promise<{ db: Db; close(): Promise<void> }>;
}

const durableBackends: DurableBackend[] = [
  {
    name: 'PostgreSQL',
    async open() {
      const db = await connectPostgres();
      return { db, close: () => db.close() };
    },
  },
  {
    name: 'PGlite',
    async open() {
      return { db: createPgliteDb(await sharedPglite()), close: async () => undefined };
    },
  },
  {
    // The embedded mode's own: PGlite on its database thread.
    name: 'PGlite on its own thread',
    async open() {
      const thread = await openPgliteThread(undefined);
      return { db: thread.db, close: () => thread.close() };
    },
  },
];

for (const backend of durableBackends) {
  describe(`MemoryBus with durable queues on ${backend.name}`, function () {
    this.timeout(30_000);
    let db: Db;
    let close: () => Promise<void>;
    // One store per test, as one process owns the embedded database's: its own schema.
    let schema: string;
    const buses: MemoryBus[] = [];
    const open = async () => {
      const bus = await MemoryBus.durable(db, { schema, retry: { delaysMs: [30], deliveryLimit: 2 }, service: 'kit-test' });
      buses.push(bus);
      return bus;
    };
    const rows = async (table: string) => (await db.query(`SELECT * FROM ${table}`)).rows;
    /** A test's own outbox schema beside the bus's, dropped afterwards. */
    const withOutboxSchema = async (work: (outboxSchema: string) => Promise<void>) => {
      const outboxSchema = uniqueName('kit_test_');
      await migrateSchema(db, outboxSchema, [outboxMigration, outboxTraceContextMigration]);
      try {
        await work(outboxSchema);
      } finally {
        await dropSchema(db, outboxSchema);
      }
    };

    before(async () => ({ db, close } = await backend.open()));
    beforeEach(() => (schema = uniqueName('kit_test_')));
    afterEach(async () => {
      for (const bus of buses.splice(0)) await bus.close();
      await dropSchema(db, schema);
    });
    after(async () => close());

    it("stores a publication within the caller's transaction: a rollback leaves nothing, a commit delivers", async () => {
      const bus = await open();
      const received: string[] = [];
      await bus.consume({ queue: 'tx.events', bindings: ['things.*'] }, async (e) => void received.push(e.id));
      const rolledBack = buildEvent('things.created', MERCHANT, { object: { n: 1 } });
      await assert.rejects(
        db.transaction(async (tx) => {
          await bus.publishWithin(tx, [rolledBack]);
          throw new Error('the relay transaction failed');
        }),
      );
      const committed = buildEvent('things.created', MERCHANT, { object: { n: 2 } });
      let deliver: (() => void) | undefined;
      await db.transaction(async (tx) => {
        deliver = await bus.publishWithin(tx, [committed]);
        assert.equal(received.length, 0, 'nothing is delivered before the commit');
      });
      deliver!();
      await waitFor(() => received.length === 1, 'the committed delivery');
      assert.deepEqual(received, [committed.id]);
      await waitFor(async () => (await rows(`${schema}.messages`)).length === 0, 'the acked row deleted');
    });

    it('keeps unfinished and poisoned messages across a reopen, and replays poison', async () => {
      const first = await open();
      const attempts: string[] = [];
      await first.consume({ queue: 'reopen.events', bindings: ['#'] }, async (e) => {
        attempts.push(e.id);
        // The slow one never finishes in this run: as when the process dies under it.
        if (e.data.object.kind === 'slow') await new Promise(() => undefined);
        throw new Error('always fails');
      });
      const slow = buildEvent('things.created', MERCHANT, { object: { kind: 'slow' } });
      const bad = buildEvent('things.created', MERCHANT, { object: { kind: 'bad' } });
      await first.publish([slow, bad]);
      await waitFor(async () => (await first.poison.counts(['reopen.events']))['reopen.events'] === 1, 'the bad one poisoned');
      await first.close();

      const second = await open();
      const handled: Array<{ id: string; info: DeliveryInfo }> = [];
      await second.consume({ queue: 'reopen.events', bindings: ['#'] }, async (e, info) => void handled.push({ id: e.id, info }));
      await waitFor(() => handled.length === 1, 'the unfinished message delivered after the reopen');
      assert.deepEqual(handled, [{ id: slow.id, info: { redelivered: true, deliveryCount: 1 } }]);
      const poisoned = await second.poison.list('reopen.events', 10);
      assert.equal(poisoned.total, 1);
      assert.deepEqual(poisoned.messages[0]!.event, bad);
      assert.equal(poisoned.messages[0]!.failures, 2);
      assert.equal(poisoned.messages[0]!.last_error, 'Error: always fails');
      assert.equal(await second.poison.replay('reopen.events'), 1);
      await waitFor(() => handled.length === 2, 'the replayed message');
      assert.deepEqual(handled[1], { id: bad.id, info: { redelivered: true, deliveryCount: 1 } });
      assert.deepEqual(await second.poison.counts(['reopen.events']), { 'reopen.events': 0 });
    });

    it("takes events from the outbox into its queue table in the relay's own transaction", async () => {
      const bus = await open();
      await withOutboxSchema(async (outboxSchema) => {
        const outbox = new Outbox(db, outboxSchema);
        const relay = new OutboxRelay({ db, bus, outbox, logger: silentLogger, service: 'kit-test' });
        // The queue is declared (bound), its consumer gone: what the relay moves must wait in the table.
        const received: string[] = [];
        const consumer = await bus.consume({ queue: 'relay.events', bindings: ['things.*'] }, async (e) => void received.push(e.id));
        await consumer.close();
        const event = buildEvent('things.created', MERCHANT, { object: { n: 3 } });
        await outbox.transaction(async (_tx, emit) => emit(event));
        assert.equal(await relay.relayBatch(), 1);
        assert.deepEqual(await rows(`${outboxSchema}.outbox`), []);
        assert.deepEqual(
          (await rows(`${schema}.messages`)).map((row) => [row.queue, row.event_id]),
          [['relay.events', event.id]],
        );
        await bus.consume({ queue: 'relay.events', bindings: ['things.*'] }, async (e) => void received.push(e.id));
        await waitFor(() => received.length === 1, 'the relayed delivery');
        await waitFor(async () => (await rows(`${schema}.messages`)).length === 0, 'the acked row deleted');
      });
    });

    it('with the bus given to the outbox, a transaction queues its events itself: nothing in the outbox, nothing before commit, nothing on rollback', async () => {
      const bus = await open();
      await withOutboxSchema(async (outboxSchema) => {
        const outbox = new Outbox(db, outboxSchema, bus);
        const received: string[] = [];
        await bus.consume({ queue: 'direct.events', bindings: ['things.*'] }, async (e) => void received.push(e.id));
        const rolledBack = buildEvent('things.created', MERCHANT, { object: { n: 1 } });
        await assert.rejects(
          outbox.transaction(async (_tx, emit) => {
            emit(rolledBack);
            throw new Error('the change fails after emitting');
          }),
          /the change fails/,
        );
        const first = buildEvent('things.created', MERCHANT, { object: { n: 2 } });
        const second = buildEvent('things.updated', MERCHANT, { object: { n: 3 } });
        await db.unitOfWork(async () => {
          await outbox.transaction(async (_tx, emit) => {
            emit(first);
            emit(second);
          });
          // Written in the unit's transaction, and handed to no consumer until the unit commits.
          assert.equal((await db.query(`SELECT 1 FROM ${schema}.messages WHERE queue = 'direct.events'`)).rows.length, 2);
          await new Promise(setImmediate);
          assert.deepEqual(received, []);
        });
        await waitFor(() => received.length === 2, 'both events delivered after commit');
        assert.deepEqual(received, [first.id, second.id]);
        assert.deepEqual(await rows(`${outboxSchema}.outbox`), []);
        await waitFor(async () => (await rows(`${schema}.messages`)).length === 0, 'the acked rows deleted');
      });
    });

    it('with the bus given to the outbox, its relay still delivers the rows an older version left in the table', async () => {
      const bus = await open();
      await withOutboxSchema(async (outboxSchema) => {
        const leftover = buildEvent('things.created', MERCHANT, { object: { n: 7 } });
        await new Outbox(db, outboxSchema).transaction(async (_tx, emit) => emit(leftover));
        const received: string[] = [];
        await bus.consume({ queue: 'direct.events', bindings: ['things.*'] }, async (e) => void received.push(e.id));
        const outbox = new Outbox(db, outboxSchema, bus);
        const relay = new OutboxRelay({ db, bus, outbox, logger: silentLogger, service: 'kit-test' });
        relay.start();
        await waitFor(() => received.length === 1, 'the leftover row delivered');
        assert.deepEqual(received, [leftover.id]);
        assert.deepEqual(await rows(`${outboxSchema}.outbox`), []);
        await relay.stop();
      });
    });

    it('with the bus given to the outbox, a one-statement write (withEvents) queues its events in that statement and returns only its own rows', async () => {
      const bus = await open();
      await withOutboxSchema(async (outboxSchema) => {
        await db.exec(`CREATE TABLE ${outboxSchema}.things (id text PRIMARY KEY, n integer NOT NULL)`);
        const outbox = new Outbox(db, outboxSchema, bus);
        const received: string[] = [];
        const consumer = await bus.consume({ queue: 'direct.events', bindings: ['things.*'] }, async (e) => void received.push(e.id));
        await bus.consume({ queue: 'other.events', bindings: ['#'] }, async (e) => void received.push(`other:${e.id}`));
        const event = buildEvent('things.created', MERCHANT, { object: { n: 4 } });
        const { rows: written } = await outbox
          .withEvents(db, [event])
          .query(`INSERT INTO ${outboxSchema}.things (id, n) VALUES ($1, $2) RETURNING id, n`, ['thg_1', 4]);
        assert.deepEqual(written, [{ id: 'thg_1', n: 4 }]);
        await waitFor(() => received.length === 2, 'the event delivered to both bound queues');
        assert.deepEqual([...received].sort(), [event.id, `other:${event.id}`].sort());
        // A failed statement queues nothing: the duplicate key fails the whole statement.
        const duplicate = buildEvent('things.created', MERCHANT, { object: { n: 5 } });
        await assert.rejects(
          outbox.withEvents(db, [duplicate]).query(`INSERT INTO ${outboxSchema}.things (id, n) VALUES ($1, $2) RETURNING id, n`, ['thg_1', 5]),
        );
        // A statement that writes no row still queues its events, and they are handed over.
        await consumer.close();
        const unwritten = buildEvent('things.created', MERCHANT, { object: { n: 6 } });
        const { rows: none } = await outbox
          .withEvents(db, [unwritten])
          .query(`INSERT INTO ${outboxSchema}.things (id, n) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING RETURNING id, n`, ['thg_1', 6]);
        assert.deepEqual(none, []);
        await waitFor(() => received.includes(`other:${unwritten.id}`), 'the event of the statement that wrote nothing');
        assert.ok(!received.includes(duplicate.id) && !received.includes(`other:${duplicate.id}`), 'the failed statement queued nothing');
        // What waits for the closed consumer is a row, kept until a consumer takes it. Acks are
        // deleted together after a short delay (memory-bus.ts), so the first event's row goes a
        // moment after it was handled: wait for that, not for a sleep.
        const waiting = async () => (await rows(`${schema}.messages`)).filter((row) => row.queue === 'direct.events').map((row) => row.event_id);
        await waitFor(async () => !(await waiting()).includes(event.id), "the handled event's ack");
        assert.deepEqual(await waiting(), [unwritten.id]);
        assert.deepEqual(await rows(`${outboxSchema}.outbox`), []);
      });
    });
  });
}

describe('the embedded bus across a restart of its PGlite data directory', function () {
  this.timeout(60_000);
  let dir: string;
  before(async () => (dir = await mkdtemp(path.join(tmpdir(), 'merx-bus-'))));
  after(async () => rm(dir, { recursive: true, force: true }));

  it('still holds its poison list and its bindings after the process reopens the data directory', async () => {
    const dataDir = path.join(dir, 'pgdata');
    let pglite = await openPglite(dataDir);
    let bus = await MemoryBus.durable(createPgliteDb(pglite), { retry: { delaysMs: [10], deliveryLimit: 1 } });
    await bus.consume({ queue: 'audit.events', bindings: ['#'] }, async () => {
      throw new Error('invalid input syntax for type json');
    });
    const lost = buildEvent('api_keys.created', MERCHANT, { object: { name: 'x\ud800' } });
    await bus.publish([lost]);
    await waitFor(async () => (await bus.poison.counts(['audit.events']))['audit.events'] === 1, 'the poison list');
    await bus.close();
    await pglite.close();

    pglite = await openPglite(dataDir);
    bus = await MemoryBus.durable(createPgliteDb(pglite), { retry: { delaysMs: [10], deliveryLimit: 1 } });
    try {
      // Published before any consumer of this run declared the queue: the stored binding routes it.
      const early = buildEvent('products.created', MERCHANT, { object: { n: 1 } });
      await bus.publish([early]);
      const { messages } = await bus.poison.list('audit.events', 10);
      assert.deepEqual(
        messages.map((m) => m.event),
        [lost],
      );
      const received: string[] = [];
      await bus.consume({ queue: 'audit.events', bindings: ['#'] }, async (e) => void received.push(e.id));
      await waitFor(() => received.length === 1, 'the early publication');
      assert.deepEqual(received, [early.id]);
    } finally {
      await bus.close();
      await pglite.close();
    }
  });
});
