import assert from 'node:assert/strict';
import { AmqpBus, buildEvent, EVENTS_EXCHANGE, poisonQueueOf, Unavailable, type DeliveryInfo, type MerxEvent } from '../src/index.js';
import { AMQP_URL, deleteQueues, silentLogger, TcpProxy, uniqueName, waitFor, withAmqpChannel, withAmqpConnection } from './support.js';

const MERCHANT = 'mch_01jd3k7q8m2x4v6b9c0d1e2f3g';

describe('AmqpBus against RabbitMQ', () => {
  // Every run publishes under its own first routing-key word, so parallel runs never see each other.
  const area = uniqueName('kittest');
  const queues: string[] = [];
  let bus: AmqpBus;

  const queueName = () => {
    const queue = `${uniqueName('kit-test-')}.events`;
    queues.push(queue, poisonQueueOf(queue));
    return queue;
  };
  const event = (action: string, n = 0): MerxEvent => buildEvent(`${area}.${action}`, MERCHANT, { object: { n } });

  before(async () => {
    bus = await AmqpBus.connect({ url: AMQP_URL, service: 'kit-test', logger: silentLogger });
  });

  after(async () => {
    await bus?.close();
    if (queues.length > 0) await deleteQueues(...queues);
  });

  it('publishes with confirms and delivers to a bound durable queue', async () => {
    assert.equal(bus.kind, 'amqp');
    assert.equal(bus.isConnected(), true);
    const received: MerxEvent[] = [];
    const infos: DeliveryInfo[] = [];
    const consumer = await bus.consume({ queue: queueName(), bindings: [`${area}.created`] }, async (e, info) => {
      received.push(e);
      infos.push(info);
    });
    const created = [event('created', 1), event('created', 2)];
    await bus.publish([...created, event('deleted', 3)]);
    await waitFor(() => received.length === 2, 'two deliveries');
    assert.deepEqual(
      received.map((e) => e.id).sort(),
      created.map((e) => e.id).sort(),
    );
    assert.deepEqual(received.find((e) => e.id === created[0]!.id), created[0], 'the envelope arrives unchanged');
    assert.deepEqual(infos, [
      { redelivered: false, deliveryCount: 1 },
      { redelivered: false, deliveryCount: 1 },
    ]);
    await consumer.close();
  });

  it('shares a queue between competing consumers', async () => {
    const queue = queueName();
    const seen = { a: new Set<number>(), b: new Set<number>() };
    const a = await bus.consume({ queue, bindings: [`${area}.shared`], prefetch: 1 }, async (e) => void seen.a.add(e.data.object.n as number));
    const b = await bus.consume({ queue, bindings: [`${area}.shared`], prefetch: 1 }, async (e) => void seen.b.add(e.data.object.n as number));
    await bus.publish(Array.from({ length: 30 }, (_, n) => event('shared', n)));
    await waitFor(() => seen.a.size + seen.b.size === 30, 'thirty deliveries');
    assert.ok(seen.a.size > 0 && seen.b.size > 0, `both consumers work: ${seen.a.size}/${seen.b.size}`);
    assert.equal(new Set([...seen.a, ...seen.b]).size, 30);
    await Promise.all([a.close(), b.close()]);
  });

  it('moves a message whose handler always throws to <queue>.poison after the delivery limit', async () => {
    const queue = queueName();
    const deliveries: DeliveryInfo[] = [];
    const consumer = await bus.consume({ queue, bindings: [`${area}.doomed`], deliveryLimit: 2 }, async (_e, info) => {
      deliveries.push(info);
      throw new Error('this handler never succeeds');
    });
    const doomed = event('doomed');
    await bus.publish([doomed]);

    let poisoned: MerxEvent | undefined;
    await waitFor(
      () =>
        withAmqpChannel(async (channel) => {
          const message = await channel.get(poisonQueueOf(queue), { noAck: true });
          if (message) poisoned = JSON.parse(message.content.toString('utf8')) as MerxEvent;
          return poisoned !== undefined;
        }),
      'the message in the poison queue',
    );
    assert.deepEqual(poisoned, doomed);
    assert.deepEqual(
      deliveries.map((d) => d.deliveryCount),
      [1, 2],
      'exactly deliveryLimit attempts, as with the memory bus',
    );
    assert.equal(deliveries[0]!.redelivered, false);
    assert.ok(deliveries.slice(1).every((d) => d.redelivered));
    const remaining = await withAmqpChannel((channel) => channel.checkQueue(queue));
    assert.equal(remaining.messageCount, 0, 'the poisoned message no longer blocks the work queue');
    await consumer.close();
  });

  it('gives every transient consumer its own copy, and removes its queue on close', async () => {
    const first: string[] = [];
    const second: string[] = [];
    const one = await bus.consume({ queue: 'ignored-for-transient', bindings: [`${area}.observed`], transient: true }, async (e) => void first.push(e.id));
    const two = await bus.consume({ queue: 'ignored-for-transient', bindings: [`${area}.#`], transient: true }, async (e) => void second.push(e.id));
    const observed = [event('observed', 1), event('observed', 2), event('observed', 3)];
    await bus.publish(observed);
    await waitFor(() => first.length === 3 && second.length === 3, 'both observers to see all three');
    assert.deepEqual(first.sort(), observed.map((e) => e.id).sort());
    assert.deepEqual(second.sort(), observed.map((e) => e.id).sort());
    await Promise.all([one.close(), two.close()]);
    const exists = await withAmqpChannel(async (channel) => {
      try {
        await channel.checkQueue('ignored-for-transient');
        return true;
      } catch {
        return false;
      }
    });
    assert.equal(exists, false, 'a transient consumer never declares the named queue');
    // After close nothing is bound for this topic any more: a publication is routed to no queue.
    const unroutable = await withAmqpConnection(async (connection) => {
      const confirm = await connection.createConfirmChannel();
      let returned = false;
      confirm.on('return', () => {
        returned = true;
      });
      confirm.publish(EVENTS_EXCHANGE, `${area}.observed`, Buffer.from('{}'), { mandatory: true });
      await confirm.waitForConfirms();
      return returned;
    });
    assert.equal(unroutable, true);
  });

  it('reconnects and resumes consuming after the connection drops', async () => {
    const proxy = await TcpProxy.start();
    const flaky = await AmqpBus.connect({ url: proxy.urlFor(), service: 'kit-test', logger: silentLogger, reconnectMinMs: 10, reconnectMaxMs: 50 });
    try {
      const received: string[] = [];
      await flaky.consume({ queue: queueName(), bindings: [`${area}.resumed`] }, async (e) => void received.push(e.id));
      proxy.refusing = true;
      proxy.cut();
      await waitFor(() => !flaky.isConnected(), 'the bus to notice the drop');
      await assert.rejects(flaky.publish([event('resumed')]), Unavailable);
      proxy.refusing = false;
      await waitFor(() => flaky.isConnected(), 'the bus to reconnect');
      const after = event('resumed');
      await flaky.publish([after]);
      await waitFor(() => received.includes(after.id), 'a delivery on the re-established consumer');
    } finally {
      await flaky.close();
      await proxy.close();
    }
  });

  it('does not come back to life when closed while reconnecting', async () => {
    const proxy = await TcpProxy.start();
    const bus2 = await AmqpBus.connect({ url: proxy.urlFor(), service: 'kit-test', logger: silentLogger, reconnectMinMs: 10, reconnectMaxMs: 50 });
    try {
      proxy.stalling = true;
      proxy.cut();
      await waitFor(() => proxy.heldConnections > 0, 'a reconnection attempt');
      await bus2.close();
      const accepted = proxy.accepted;
      proxy.release();
      // The held attempt now completes its handshake; a closed bus must hang up rather than keep it.
      await waitFor(() => proxy.accepted > accepted, 'the held attempt to reach the broker');
      await waitFor(() => proxy.liveConnections === 0, 'the late connection to be closed', 5_000);
      assert.equal(bus2.isConnected(), false);
    } finally {
      await bus2.close();
      await proxy.close();
    }
  });

  it('fails fast with Unavailable once closed', async () => {
    const closing = await AmqpBus.connect({ url: AMQP_URL, service: 'kit-test', logger: silentLogger });
    await closing.close();
    assert.equal(closing.isConnected(), false);
    await assert.rejects(closing.publish([event('late')]), Unavailable);
  });
});
