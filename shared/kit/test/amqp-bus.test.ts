import assert from 'node:assert/strict';
import { AmqpBus, brokerNamesOf, buildEvent, poisonQueueOf, Unavailable, type DeliveryInfo, type MerxEvent } from '../src/index.js';
import {
  AMQP_URL,
  deleteDeployment,
  deleteWorkQueue,
  silentLogger,
  TcpProxy,
  testDeployment,
  uniqueName,
  waitFor,
  withAmqpChannel,
  withAmqpConnection,
} from './support.js';

const MERCHANT = 'mch_01jd3k7q8m2x4v6b9c0d1e2f3g';

describe('AmqpBus against RabbitMQ', () => {
  // Every run publishes under its own first routing-key word, so parallel runs never see each other.
  const area = uniqueName('kittest');
  const deployment = testDeployment();
  const names = brokerNamesOf(deployment);
  const queues: string[] = [];
  let bus: AmqpBus;

  /** A logical queue name; the bus adds the deployment prefix, which cleanup needs. */
  const queueName = () => {
    const queue = `${uniqueName('kit-test-')}.events`;
    queues.push(names.queue(queue));
    return queue;
  };
  const event = (action: string, n = 0): MerxEvent => buildEvent(`${area}.${action}`, MERCHANT, { object: { n } });

  before(async () => {
    bus = await AmqpBus.connect({ url: AMQP_URL, service: 'kit-test', logger: silentLogger, deployment });
  });

  after(async () => {
    await bus?.close();
    await deleteDeployment(deployment, queues);
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
    assert.deepEqual(received.map((e) => e.id).sort(), created.map((e) => e.id).sort());
    assert.deepEqual(
      received.find((e) => e.id === created[0]!.id),
      created[0],
      'the envelope arrives unchanged',
    );
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
    // One publication per event: events published together may travel in one message (amqp-batches.test.ts).
    for (let n = 0; n < 30; n++) await bus.publish([event('shared', n)]);
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
          const message = await channel.get(poisonQueueOf(names.queue(queue)), { noAck: true });
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
    const remaining = await withAmqpChannel((channel) => channel.checkQueue(names.queue(queue)));
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
      confirm.publish(names.exchange, `${area}.observed`, Buffer.from('{}'), { mandatory: true });
      await confirm.waitForConfirms();
      return returned;
    });
    assert.equal(unroutable, true);
  });

  it('reconnects and resumes consuming after the connection drops', async () => {
    const proxy = await TcpProxy.start();
    const flaky = await AmqpBus.connect({ url: proxy.urlFor(), service: 'kit-test', logger: silentLogger, deployment, reconnectMinMs: 10, reconnectMaxMs: 50 });
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
    const bus2 = await AmqpBus.connect({ url: proxy.urlFor(), service: 'kit-test', logger: silentLogger, deployment, reconnectMinMs: 10, reconnectMaxMs: 50 });
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

  it("keeps two deployments on one broker apart: neither sees the other's events, on the same queue and topic names", async () => {
    const other = testDeployment();
    const otherBus = await AmqpBus.connect({ url: AMQP_URL, service: 'kit-test', logger: silentLogger, deployment: other });
    const queue = queueName();
    const seen = { ours: [] as string[], theirs: [] as string[] };
    const ours = await bus.consume({ queue, bindings: [`${area}.apart`] }, async (e) => void seen.ours.push(e.id));
    const theirs = await otherBus.consume({ queue, bindings: [`${area}.apart`] }, async (e) => void seen.theirs.push(e.id));
    try {
      const mine = [event('apart', 1), event('apart', 2)];
      const yours = [event('apart', 3)];
      await bus.publish(mine);
      await otherBus.publish(yours);
      await waitFor(() => seen.ours.length >= 2 && seen.theirs.length >= 1, 'each deployment to receive its own events');
      // A last event through each: once it arrives, anything misrouted before it would have too.
      const lastOurs = event('apart', 4);
      const lastTheirs = event('apart', 5);
      await bus.publish([lastOurs]);
      await otherBus.publish([lastTheirs]);
      await waitFor(() => seen.ours.includes(lastOurs.id) && seen.theirs.includes(lastTheirs.id), 'the closing events');
      assert.deepEqual(seen.ours.sort(), [...mine, lastOurs].map((e) => e.id).sort());
      assert.deepEqual(seen.theirs.sort(), [...yours, lastTheirs].map((e) => e.id).sort());
      assert.notEqual(names.queue(queue), brokerNamesOf(other).queue(queue));
    } finally {
      await ours.close();
      await theirs.close();
      await otherBus.close();
      await deleteDeployment(other, [brokerNamesOf(other).queue(queue)]);
    }
  });

  it('drains a queue named before deployment prefixes into the handler, then deletes it (default deployment)', async () => {
    // The default deployment is the only one with legacy names. Queue and topic are this run's own,
    // so sharing the default exchange with a real deployment on this broker disturbs nothing.
    const legacy = `${uniqueName('kit-legacy-')}.events`;
    const defaults = brokerNamesOf();
    const topic = `${area}.legacy`;
    const held = [event('legacy', 1), event('legacy', 2), event('legacy', 3)];
    await withAmqpConnection(async (connection) => {
      // What the previous version declared and left behind, holding events it never consumed.
      const channel = await connection.createConfirmChannel();
      await channel.assertExchange(defaults.exchange, 'topic', { durable: true });
      await channel.assertQueue(legacy, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
      await channel.bindQueue(legacy, defaults.exchange, topic);
      for (const e of held) channel.publish(defaults.exchange, topic, Buffer.from(JSON.stringify(e)), { persistent: true });
      await channel.waitForConfirms();
    });
    const upgraded = await AmqpBus.connect({ url: AMQP_URL, service: 'kit-test', logger: silentLogger, deployment: defaults.deployment });
    const received: string[] = [];
    const consumer = await upgraded.consume({ queue: legacy, bindings: [topic] }, async (e) => void received.push(e.id));
    try {
      const gone = () =>
        withAmqpChannel((channel) =>
          channel.checkQueue(legacy).then(
            () => false,
            () => true,
          ),
        );
      await waitFor(async () => held.every((e) => received.includes(e.id)) && (await gone()), 'the held events handled and the old queue deleted');
      // From now on events reach the new queue alone: each arrives once.
      const fresh = [event('legacy', 4), event('legacy', 5)];
      await upgraded.publish(fresh);
      await waitFor(() => fresh.every((e) => received.includes(e.id)), 'events published after the upgrade');
      assert.deepEqual(received.filter((id) => fresh.some((e) => e.id === id)).sort(), fresh.map((e) => e.id).sort());
      assert.deepEqual([...new Set(received)].sort(), [...held, ...fresh].map((e) => e.id).sort(), 'nothing held in the old queue was lost');
    } finally {
      await consumer.close();
      await upgraded.close();
      await withAmqpChannel(async (channel) => {
        await deleteWorkQueue(channel, defaults.queue(legacy));
        await channel.deleteQueue(legacy);
      });
    }
  });

  it('fails fast with Unavailable once closed', async () => {
    const closing = await AmqpBus.connect({ url: AMQP_URL, service: 'kit-test', logger: silentLogger, deployment });
    await closing.close();
    assert.equal(closing.isConnected(), false);
    await assert.rejects(closing.publish([event('late')]), Unavailable);
  });
});
