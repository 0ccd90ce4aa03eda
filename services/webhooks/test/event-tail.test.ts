import assert from 'node:assert/strict';
import { create } from '@bufbuild/protobuf';
import { timestampFromDate } from '@bufbuild/protobuf/wkt';
import { EventService, StreamEventsRequestSchema, type StreamEventsResponse } from '@merx/contracts/grpc';
import { buildEvent, createPgliteDb, grpc, grpcServiceDefinitionOf, metricsRegistry, newId, openPglite, type Db, type MerxEvent } from '@merx/kit';
import { createScratchDatabase } from '@merx/kit/testing';
import { productObject, startHarness, testSettings, type Harness } from './harness.js';
import type { EventStreamTiming } from '../src/usecases/event-stream.js';

/**
 * StreamEvents served from one tail per process (issue 29): the reads of the events table do not
 * grow with the streams open, a resumed stream misses nothing and repeats nothing while events
 * keep arriving, late events go out once, and a slow reader holds a bounded buffer and holds up
 * nobody. Real PostgreSQL (and PGlite), real gRPC clients on the service's own port.
 */

// Small pages, so catching up and the tail's reads both go through several of them.
const TIMING: EventStreamTiming = { settleMs: 1_000, pollMs: 50, pageSize: 7, scanPageSize: 50 };

/** The database the service gets, counting the statements that read the events table. */
function countingEventReads(db: Db): { db: Db; reads: () => number } {
  let reads = 0;
  const counted = Object.assign(Object.create(db) as Db, {
    query(sql: string, params?: unknown[]) {
      if (/^\s*SELECT[\s\S]*\bwebhooks\.events\b/i.test(sql)) reads += 1;
      return db.query(sql, params);
    },
  });
  return { db: counted, reads: () => reads };
}

const until = async (condition: () => boolean, what: string, timeoutMs = 20_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
};

type StreamRequest = Parameters<typeof create<typeof StreamEventsRequestSchema>>[1];

/** One StreamEvents call as a client holds it: the ids it has taken, in order. */
class OpenStream {
  readonly ids: string[] = [];
  failure: grpc.ServiceError | undefined;
  private readonly call: grpc.ClientReadableStream<StreamEventsResponse>;
  private wanted = Infinity;

  constructor(client: grpc.Client & Record<string, any>, token: string, request: StreamRequest) {
    const metadata = new grpc.Metadata();
    metadata.set('authorization', `Bearer ${token}`);
    this.call = client.StreamEvents(create(StreamEventsRequestSchema, request), metadata);
    this.call.on('data', (message: StreamEventsResponse) => {
      // A client that stops after `wanted` events resumes after the last one it took: nothing later counts.
      if (this.ids.length < this.wanted) this.ids.push(message.event!.id);
      if (this.ids.length === this.wanted) this.cancel();
    });
    this.call.on('error', (error: grpc.ServiceError) => {
      if (error.code !== grpc.status.CANCELLED) this.failure = error;
    });
  }

  /** Takes `count` events in all, then cancels. */
  stopAfter(count: number): this {
    this.wanted = count;
    return this;
  }

  async received(count: number, timeoutMs = 30_000): Promise<string[]> {
    await until(() => this.ids.length >= count || this.failure !== undefined, `${count} events on a stream (got ${this.ids.length})`, timeoutMs);
    if (this.failure) throw this.failure;
    return this.ids;
  }

  pause(): void {
    this.call.pause();
  }

  resume(): void {
    this.call.resume();
  }

  cancel(): void {
    this.call.cancel();
  }
}

function eventsClient(address: string) {
  const Client = grpc.makeGenericClientConstructor(grpcServiceDefinitionOf(EventService), EventService.typeName);
  return new Client(address, grpc.credentials.createInsecure()) as grpc.Client & Record<string, any>;
}

const productEvent = (merchantId: string, sku: string, mintedAt = Date.now(), description: string | null = null): MerxEvent => {
  const event = buildEvent('products.created', merchantId, { object: { ...productObject(sku), description } }, new Date(mintedAt));
  return { ...event, id: newId('evt', mintedAt) };
};

const letGoSoFar = async () => (await metricsRegistry.getSingleMetric('merx_event_streams_let_go_total')!.get()).values[0]?.value ?? 0;

for (const embedded of [false, true]) {
  describe(`StreamEvents from one tail per process (${embedded ? 'PGlite' : 'PostgreSQL'})`, function () {
    this.timeout(120_000);
    let harness: Harness;
    let reads: () => number;
    let client: grpc.Client & Record<string, any>;
    let closeDb: () => Promise<void>;
    const streams: OpenStream[] = [];
    const open = (token: string, request: StreamRequest = {}) => {
      const stream = new OpenStream(client, token, request);
      streams.push(stream);
      return stream;
    };

    before(async () => {
      let db: Db;
      if (embedded) {
        const pglite = await openPglite(undefined);
        db = createPgliteDb(pglite);
        closeDb = () => pglite.close();
      } else {
        const scratch = await createScratchDatabase('webhooks_tail_test');
        db = scratch.db;
        closeDb = scratch.drop;
      }
      const counting = countingEventReads(db);
      reads = counting.reads;
      harness = await startHarness({ db: counting.db, eventStreamTiming: TIMING, settings: testSettings({ eventStreamBuffer: 200 }) });
      client = eventsClient(harness.webhooks.grpc.address);
    });

    afterEach(async () => {
      for (const stream of streams.splice(0)) stream.cancel();
      await until(() => harness.webhooks.eventTail.openStreams === 0, 'every stream closed at the tail');
    });

    after(async () => {
      client?.close();
      await harness?.stop();
      await closeDb?.();
    });

    /** Event-table reads per second over `ms`. */
    const readRate = async (ms: number) => {
      const before = reads();
      await new Promise((resolve) => setTimeout(resolve, ms));
      return ((reads() - before) * 1000) / ms;
    };

    it('reads the events table as often with 1,000 streams open as with one, and not at all with none', async () => {
      const merchants = await Promise.all(Array.from({ length: 10 }, () => harness.merchant({ scope: 'webhooks:read' })));
      const tail = harness.webhooks.eventTail;
      open(merchants[0]!.token);
      await until(() => tail.openStreams === 1 && tail.following, 'the first stream at the tail');
      const oneStream = await readRate(2_000);
      for (let index = 1; index < 1_000; index++) open(merchants[index % merchants.length]!.token, { topics: index % 2 ? ['products'] : [] });
      await until(() => tail.openStreams === 1_000, '1,000 streams at the tail');
      const thousandStreams = await readRate(2_000);
      console.log(`      event-table reads/s: ${oneStream.toFixed(1)} with 1 stream, ${thousandStreams.toFixed(1)} with 1,000`);
      assert.ok(oneStream > 0, 'the tail reads while a stream is open');
      assert.ok(
        thousandStreams <= oneStream * 1.1 + 1,
        `event-table reads/s: ${oneStream.toFixed(1)} with one stream, ${thousandStreams.toFixed(1)} with 1,000 (no more than 10 % apart)`,
      );

      // Every stream is live: one event per merchant reaches each of its streams once, and no other merchant's.
      const published = merchants.map((merchant, index) => productEvent(merchant.merchantId, `ONE-${index}`));
      const readsBefore = reads();
      await harness.bus.publish(published);
      await Promise.all(streams.map((stream) => stream.received(1)));
      streams.forEach((stream, index) => assert.deepEqual(stream.ids, [published[index % merchants.length]!.id]));
      // The payloads of the ten events were read once for all 1,000 streams, not once per stream.
      assert.ok(reads() - readsBefore < 200, `${reads() - readsBefore} reads of the events table to hand ten events to 1,000 streams`);

      for (const stream of streams.splice(0)) stream.cancel();
      await until(() => tail.openStreams === 0 && !tail.following, 'the tail stopped with the last stream');
      assert.equal(await readRate(500), 0, 'no reads while no stream is open');
    });

    it('resumes by cursor, while events keep arriving, with no event missed and none twice', async () => {
      const merchant = await harness.merchant({ scope: 'webhooks:read' });
      const startTime = new Date(Date.now() - 1_000);
      const total = 120;
      const published: string[] = [];
      const publisher = (async () => {
        while (published.length < total) {
          const events = Array.from({ length: 3 }, (_, index) => productEvent(merchant.merchantId, `RES-${published.length}-${index}`));
          await harness.bus.publish(events);
          published.push(...events.map((event) => event.id));
          await new Promise((resolve) => setTimeout(resolve, 25));
        }
      })();
      const taken: string[] = [];
      let cursor: NonNullable<StreamRequest>['cursor'] = { case: 'startTime', value: timestampFromDate(startTime) };
      for (let round = 0; taken.length < total; round++) {
        assert.ok(round < 200, `still resuming after 200 streams: ${taken.length} of ${total} taken`);
        // Each stream takes a few events and goes; the next resumes after the last one it took.
        const wants = 5 + (round % 11);
        const stream = open(merchant.token, { cursor, topics: ['products.created'] }).stopAfter(wants);
        await until(() => stream.ids.length >= Math.min(wants, total - taken.length) || stream.failure !== undefined, `round ${round}`, 30_000);
        if (stream.failure) throw stream.failure;
        stream.cancel();
        taken.push(...stream.ids);
        cursor = { case: 'afterEventId', value: taken.at(-1)! };
      }
      await publisher;
      assert.equal(new Set(taken).size, taken.length, 'no event twice');
      assert.deepEqual([...taken].sort(), [...published].sort(), 'every event, across every resumed stream');
    });

    it('sends an event that arrives late once, and none from before its cursor', async () => {
      const merchant = await harness.merchant({ scope: 'webhooks:read' });
      const stream = open(merchant.token, { cursor: { case: 'startTime', value: timestampFromDate(new Date(Date.now() - 60_000)) } });
      const onTime = productEvent(merchant.merchantId, 'ON-TIME');
      await harness.bus.publish([onTime]);
      await stream.received(1);
      // Minted five seconds ago, long past the settle time: the stream has moved past its id.
      const late = productEvent(merchant.merchantId, 'LATE', Date.now() - 5_000);
      await harness.bus.publish([late]);
      await stream.received(2);
      // Minted before the stream's cursor, then one on time after it.
      const beforeCursor = productEvent(merchant.merchantId, 'BEFORE', Date.now() - 120_000);
      const marker = productEvent(merchant.merchantId, 'MARKER');
      await harness.bus.publish([beforeCursor]);
      await harness.bus.publish([marker]);
      // The marker goes out a settle time after it arrived; the event before the cursor arrived first and would have gone at once.
      await stream.received(3);
      assert.deepEqual(stream.ids, [onTime.id, late.id, marker.id]);

      // Read from the database, the same history holds the late event once and nothing from before the cursor.
      const fromHistory = open(merchant.token, { cursor: { case: 'startTime', value: timestampFromDate(new Date(Date.now() - 60_000)) } });
      assert.deepEqual(await fromHistory.received(3), [late.id, onTime.id, marker.id].sort());
    });

    it('lets a slow reader fall behind with a bounded buffer, without slowing a fast one, and then catches it up', async () => {
      const merchant = await harness.merchant({ scope: 'webhooks:read' });
      const tail = harness.webhooks.eventTail;
      const slow = open(merchant.token);
      slow.pause();
      const fast = open(merchant.token);
      await until(() => tail.openStreams === 2, 'both streams at the tail');
      const letGoBefore = await letGoSoFar();
      // Payloads of 2 KB fill the slow reader's HTTP/2 window after a few dozen events.
      const published: string[] = [];
      let mostBuffered = 0;
      const sampler = setInterval(() => (mostBuffered = Math.max(mostBuffered, tail.bufferedEvents)), 5);
      try {
        for (let batch = 0; batch < 30; batch++) {
          const events = Array.from({ length: 50 }, (_, index) => productEvent(merchant.merchantId, `SLOW-${batch}-${index}`, Date.now(), 'x'.repeat(2_048)));
          await harness.bus.publish(events);
          published.push(...events.map((event) => event.id));
        }
        await fast.received(published.length, 60_000);
        assert.ok(slow.ids.length < published.length, 'the slow reader is behind while the fast one has everything');
      } finally {
        clearInterval(sampler);
      }
      assert.ok(mostBuffered <= 2 * 200, `at most the buffer of each stream waits at the tail (saw ${mostBuffered})`);
      assert.ok((await letGoSoFar()) > letGoBefore, 'the tail let the slow reader go');
      slow.resume();
      await slow.received(published.length, 60_000);
      for (const stream of [fast, slow]) {
        assert.equal(new Set(stream.ids).size, stream.ids.length, 'no event twice');
        assert.deepEqual([...stream.ids].sort(), [...published].sort());
      }
    });
  });
}
