import assert from 'node:assert/strict';
import { AsyncLocalStorage } from 'node:async_hooks';
import { currentContext, runWithContext } from './context.js';
import { buildEvent, type MerxEvent } from './events.js';
import type { DeliveryInfo } from './bus.js';
import { MemoryBus } from './memory-bus.js';

const merchantId = 'mch_01jd3k7q8m2x4v6b9c0d1e2f3g';
const event = (topic: string, n = 0): MerxEvent => buildEvent(topic, merchantId, { object: { n } });

async function waitFor(condition: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

describe('MemoryBus', () => {
  let bus: MemoryBus;
  beforeEach(() => {
    // Short waits keep the retry tests quick; one test below checks a longer wait is kept.
    bus = new MemoryBus({ retry: { delaysMs: [20, 40], deliveryLimit: 10 } });
  });
  afterEach(async () => {
    await bus.close();
  });

  it('delivers to every queue whose bindings match the topic', async () => {
    const received: Record<string, string[]> = { all: [], products: [], created: [], orders: [] };
    const record = (queue: string) => async (e: MerxEvent) => void received[queue]!.push(e.topic);
    await bus.consume({ queue: 'all', bindings: ['#'] }, record('all'));
    await bus.consume({ queue: 'products', bindings: ['products.*'] }, record('products'));
    await bus.consume({ queue: 'created', bindings: ['*.created'] }, record('created'));
    await bus.consume({ queue: 'orders', bindings: ['orders.created'] }, record('orders'));
    await bus.publish([event('products.created'), event('products.updated'), event('config.updated')]);
    await waitFor(() => received.all!.length === 3, 'three deliveries on the catch-all queue');
    await waitFor(() => received.products!.length === 2 && received.created!.length === 1, 'the filtered queues');
    assert.deepEqual(received.all!.sort(), ['config.updated', 'products.created', 'products.updated']);
    assert.deepEqual(received.products!.sort(), ['products.created', 'products.updated']);
    assert.deepEqual(received.created, ['products.created']);
    assert.deepEqual(received.orders, []);
  });

  it('shares one queue among competing consumers, each message once', async () => {
    const seen = { a: [] as number[], b: [] as number[] };
    await bus.consume({ queue: 'work', bindings: ['jobs.*'] }, async (e) => void seen.a.push(e.data.object.n as number));
    await bus.consume({ queue: 'work', bindings: ['jobs.*'] }, async (e) => void seen.b.push(e.data.object.n as number));
    await bus.publish(Array.from({ length: 40 }, (_, n) => event('jobs.run', n)));
    await waitFor(() => seen.a.length + seen.b.length === 40, 'forty deliveries');
    assert.ok(seen.a.length > 0 && seen.b.length > 0, `both consumers work: ${seen.a.length}/${seen.b.length}`);
    assert.deepEqual(
      [...seen.a, ...seen.b].sort((x, y) => x - y),
      Array.from({ length: 40 }, (_, n) => n),
    );
  });

  it('redelivers a failed message after its delay and moves it to the poison queue after the delivery limit', async () => {
    const attempts: Array<DeliveryInfo & { at: number }> = [];
    await bus.consume({ queue: 'fragile', bindings: ['#'], deliveryLimit: 3 }, async (_e, info) => {
      attempts.push({ ...info, at: performance.now() });
      throw new Error('handler always fails');
    });
    const doomed = event('products.created');
    await bus.publish([doomed]);
    await waitFor(() => attempts.length === 3, 'three deliveries');
    const poisoned = await bus.poison.list('fragile', 10);
    assert.equal(poisoned.total, 1);
    assert.deepEqual(
      attempts.map(({ at: _at, ...info }) => info),
      [
        { redelivered: false, deliveryCount: 1 },
        { redelivered: true, deliveryCount: 2 },
        { redelivered: true, deliveryCount: 3 },
      ],
    );
    // The first failure waits the first step (20 ms), the second the second (40 ms): never at once.
    assert.ok(attempts[1]!.at - attempts[0]!.at >= 19, `first retry after ${attempts[1]!.at - attempts[0]!.at} ms`);
    assert.ok(attempts[2]!.at - attempts[1]!.at >= 39, `second retry after ${attempts[2]!.at - attempts[1]!.at} ms`);
    assert.deepEqual(poisoned.messages[0]!.event, doomed);
    assert.equal(poisoned.messages[0]!.failures, 3);
    assert.equal(poisoned.messages[0]!.last_error, 'Error: handler always fails');
    assert.deepEqual(await bus.poison.counts(['fragile', 'unknown-queue']), { fragile: 1, 'unknown-queue': 0 });
  });

  it('retries through an outage (database down, a 503) without counting it toward the delivery limit', async () => {
    const attempts: DeliveryInfo[] = [];
    let handled = false;
    await bus.consume({ queue: 'outage', bindings: ['#'], deliveryLimit: 3 }, async (_e, info) => {
      attempts.push(info);
      if (attempts.length <= 6) throw Object.assign(new Error('the database system is starting up'), { code: '57P03' });
      handled = true;
    });
    await bus.publish([event('products.created')]);
    await waitFor(() => handled, 'the delivery after the outage');
    assert.equal(attempts.length, 7, 'six outage retries, twice the delivery limit, then success');
    assert.ok(
      attempts.every((info) => info.deliveryCount === 1),
      'an outage is not a failure of the message',
    );
    assert.deepEqual(await bus.poison.counts(['outage']), { outage: 0 });
  });

  it('replays a poisoned message onto its work queue with a fresh count', async () => {
    let failing = true;
    const handled: DeliveryInfo[] = [];
    await bus.consume({ queue: 'mended', bindings: ['#'], deliveryLimit: 1 }, async (_e, info) => {
      if (failing) throw new Error('not yet');
      handled.push(info);
    });
    const [kept, replayed] = [event('products.created', 1), event('products.created', 2)];
    await bus.publish([kept, replayed]);
    await waitFor(() => handled.length === 0 && bus.poison.consumedQueues().includes('mended'), 'the consumer');
    const listed = async () => (await bus.poison.list('mended', 10)).messages.map((m) => m.event.id);
    const deadline = Date.now() + 5_000;
    while ((await listed()).length < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 2));
    assert.deepEqual(await listed(), [kept.id, replayed.id]);
    failing = false;
    assert.equal(await bus.poison.replay('mended', [replayed.id]), 1);
    await waitFor(() => handled.length === 1, 'the replayed delivery');
    assert.deepEqual(handled, [{ redelivered: true, deliveryCount: 1 }]);
    assert.deepEqual(await listed(), [kept.id]);
    assert.equal(await bus.poison.replay('mended'), 1);
    await waitFor(() => handled.length === 2, 'the rest replayed');
  });

  it('isolates one failing message: the others of the queue are handled meanwhile', async () => {
    const handled: number[] = [];
    await bus.consume({ queue: 'mixed', bindings: ['#'], deliveryLimit: 2 }, async (e) => {
      if (e.data.object.n === 2) throw new Error('this one is bad');
      handled.push(e.data.object.n as number);
    });
    await bus.publish([1, 2, 3].map((n) => event('products.created', n)));
    await waitFor(() => handled.length === 2, 'the good ones');
    assert.deepEqual(handled.sort(), [1, 3]);
    const deadline = Date.now() + 5_000;
    while ((await bus.poison.counts(['mixed'])).mixed === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 2));
    assert.deepEqual(
      (await bus.poison.list('mixed', 10)).messages.map((m) => m.event.data.object.n),
      [2],
    );
  });

  it('hands consumers strings PostgreSQL can store: unpaired surrogates and NUL become U+FFFD', async () => {
    const received: MerxEvent[] = [];
    await bus.consume({ queue: 'strings', bindings: ['#'] }, async (e) => void received.push(e));
    const odd = buildEvent('products.created', merchantId, { object: { title: 'x\ud800', note: 'a\u0000b', ['k\udc00']: ['\ud83d\ude00', '\ude00\ud83d'] } });
    await bus.publish([odd]);
    await waitFor(() => received.length === 1, 'the delivery');
    assert.deepEqual(received[0]!.data.object, { title: 'x\ufffd', note: 'a\ufffdb', ['k\ufffd']: ['\ud83d\ude00', '\ufffd\ufffd'] });
    assert.equal(received[0]!.id, odd.id);
  });

  it('delivers again after a transient failure without poisoning', async () => {
    let calls = 0;
    const done: MerxEvent[] = [];
    await bus.consume({ queue: 'flaky', bindings: ['#'], deliveryLimit: 3 }, async (e) => {
      calls++;
      if (calls === 1) throw new Error('first attempt fails');
      done.push(e);
    });
    await bus.publish([event('products.created')]);
    await waitFor(() => done.length === 1, 'the second delivery');
    assert.equal(calls, 2);
    assert.deepEqual(await bus.poison.list('flaky', 10), { total: 0, messages: [] });
  });

  it('hands each consumer its own copy of what was published', async () => {
    const copies: MerxEvent[] = [];
    const handler = async (e: MerxEvent) => {
      copies.push(e);
      (e.data.object as Record<string, unknown>).tampered = true;
    };
    await bus.consume({ queue: 'one', bindings: ['#'] }, handler);
    await bus.consume({ queue: 'two', bindings: ['#'] }, handler);
    const original = event('products.created', 7);
    await bus.publish([original]);
    (original.data.object as Record<string, unknown>).n = 999;
    await waitFor(() => copies.length === 2, 'both queues');
    for (const copy of copies) {
      assert.notEqual(copy, original);
      assert.equal(copy.data.object.n, 7);
    }
    assert.notEqual(copies[0], copies[1]);
    assert.equal(copies.filter((c) => c.data.object.tampered === true).length, 2, 'each handler mutated only its own copy');
    assert.equal('tampered' in original.data.object, false);
  });

  it("runs handlers outside the publisher's async context, in the event's request context", async () => {
    const publisherStore = new AsyncLocalStorage<string>();
    const seen: Array<{ store: string | undefined; requestId: string | undefined }> = [];
    await bus.consume({ queue: 'ctx', bindings: ['#'] }, async () => {
      await new Promise((resolve) => setImmediate(resolve));
      seen.push({ store: publisherStore.getStore(), requestId: currentContext()?.requestId });
    });
    const published = runWithContext({ requestId: 'req_01jd3k7q8m2x4v6b9c0d1e2f3g' }, () => event('products.created'));
    await runWithContext({ requestId: 'req_01jd3k7q8m2x4v6b9c0d1e2f3h' }, () =>
      publisherStore.run('inside the relay transaction', () => bus.publish([published])),
    );
    await waitFor(() => seen.length === 1, 'the delivery');
    assert.deepEqual(seen, [{ store: undefined, requestId: 'req_01jd3k7q8m2x4v6b9c0d1e2f3g' }]);
  });

  it('stops delivering to a closed consumer and after close', async () => {
    const received: string[] = [];
    const consumer = await bus.consume({ queue: 'q', bindings: ['#'] }, async (e) => void received.push(e.id));
    const first = event('a.b');
    await bus.publish([first]);
    await waitFor(() => received.length === 1, 'the first delivery');
    await consumer.close();
    await bus.publish([event('a.b')]);
    const late: string[] = [];
    await bus.consume({ queue: 'q', bindings: ['#'] }, async (e) => void late.push(e.id));
    await waitFor(() => late.length === 1, 'the queued message reaching the new consumer');
    assert.deepEqual(received, [first.id]);
    assert.equal(bus.isConnected(), true);
    await bus.close();
    assert.equal(bus.isConnected(), false);
  });
});
