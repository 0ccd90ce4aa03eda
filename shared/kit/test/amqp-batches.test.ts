import assert from 'node:assert/strict';
import {
  AmqpBus,
  brokerNamesOf,
  buildEvent,
  EVENT_BATCH_CONTENT_TYPE,
  poisonQueueOf,
  type DeliveryInfo,
  type MerxEvent,
  type RetryPolicy,
} from '../src/index.js';
import { AMQP_URL, deleteDeployment, silentLogger, testDeployment, uniqueName, waitFor, withAmqpChannel, withAmqpConnection } from './support.js';

const MERCHANT = 'mch_01jd3k7q8m2x4v6b9c0d1e2f3g';
const RETRY: RetryPolicy = { delaysMs: [100, 200], deliveryLimit: 3 };

describe('AmqpBus: several events in one message', function () {
  this.timeout(60_000);
  const area = uniqueName('kitbatch');
  const deployment = testDeployment();
  const names = brokerNamesOf(deployment);
  const logicalQueues: string[] = [];
  let bus: AmqpBus;
  let unbatched: AmqpBus;

  const queueName = () => {
    const queue = `${uniqueName('batch-')}.events`;
    logicalQueues.push(queue);
    return queue;
  };
  const event = (action: string, n: number): MerxEvent => buildEvent(`${area}.${action}`, MERCHANT, { object: { n } });
  const messagesIn = (queue: string) => withAmqpChannel(async (channel) => (await channel.checkQueue(queue)).messageCount);

  before(async () => {
    bus = await AmqpBus.connect({ url: AMQP_URL, service: 'kit-test', logger: silentLogger, deployment, retry: RETRY, eventsPerMessage: 100 });
    unbatched = await AmqpBus.connect({ url: AMQP_URL, service: 'kit-test', logger: silentLogger, deployment, retry: RETRY, eventsPerMessage: 1 });
  });

  after(async () => {
    await bus?.close();
    await unbatched?.close();
    await deleteDeployment(deployment, logicalQueues.map(names.queue), RETRY);
  });

  it('packs runs of one topic into messages of at most eventsPerMessage, and consumers get every event once, in publication order', async () => {
    const queue = queueName();
    const received: MerxEvent[] = [];
    const infos: DeliveryInfo[] = [];
    const handler = async (received_: MerxEvent, info: DeliveryInfo) => {
      received.push(received_);
      infos.push(info);
    };
    // The queue and its bindings exist once a consumer declared them; closing it leaves the queue to fill.
    await (await bus.consume({ queue, bindings: [`${area}.created`, `${area}.deleted`], prefetch: 1 }, handler)).close();
    const published = [...Array.from({ length: 250 }, (_, n) => event('created', n)), event('deleted', 250), event('created', 251), event('created', 252)];
    await bus.publish(published);
    // 100 + 100 + 50 created, the deleted alone, then the last two created together.
    await waitFor(async () => (await messagesIn(names.queue(queue))) === 5, 'five messages in the queue');

    const consumer = await bus.consume({ queue, bindings: [`${area}.created`, `${area}.deleted`], prefetch: 1 }, handler);
    await waitFor(() => received.length === published.length, 'every event');
    assert.deepEqual(received, published, 'each event as published, in publication order');
    assert.ok(infos.every((info) => info.deliveryCount === 1 && !info.redelivered));
    await waitFor(async () => (await messagesIn(names.queue(queue))) === 0, 'every message acked');
    await consumer.close();
  });

  it('publishes a message per event with eventsPerMessage 1, as releases before batches expect', async () => {
    const queue = queueName();
    await (await bus.consume({ queue, bindings: [`${area}.single`] }, async () => undefined)).close();
    const published = Array.from({ length: 5 }, (_, n) => event('single', n));
    await unbatched.publish(published);
    await waitFor(async () => (await messagesIn(names.queue(queue))) === 5, 'five messages');
    const first = await withAmqpChannel((channel) => channel.get(names.queue(queue), { noAck: true }));
    assert.ok(first);
    assert.equal(first.properties.contentType, 'application/json');
    assert.deepEqual(JSON.parse(first.content.toString('utf8')), published[0]);
  });

  it('retries and poisons a failing event of a batch alone, while its siblings are handled once', async () => {
    const queue = queueName();
    let failing = true;
    const attempts = new Map<number, DeliveryInfo[]>();
    const consumer = await bus.consume({ queue, bindings: [`${area}.mixed`] }, async (received, info) => {
      const n = received.data.object.n as number;
      attempts.set(n, [...(attempts.get(n) ?? []), info]);
      if (n === 3 && failing) throw new Error('no such column: colour');
    });
    const published = Array.from({ length: 6 }, (_, n) => event('mixed', n));
    await bus.publish(published);
    await waitFor(async () => (await bus.poison.counts([queue]))[queue] === 1, 'the failing event in the poison queue');

    assert.deepEqual(
      [...attempts.entries()].filter(([n]) => n !== 3).map(([n, infos]) => [n, infos.length]),
      [0, 1, 2, 4, 5].map((n) => [n, 1]),
      'the siblings ran once each',
    );
    assert.deepEqual(
      attempts.get(3),
      [
        { redelivered: false, deliveryCount: 1 },
        { redelivered: true, deliveryCount: 2 },
        { redelivered: true, deliveryCount: 3 },
      ],
      'the failing event had its own retries, up to the delivery limit',
    );
    const listed = await bus.poison.list(queue, 10);
    assert.equal(listed.total, 1);
    assert.deepEqual(listed.messages[0]!.event, published[3]);
    assert.equal(listed.messages[0]!.failures, 3);
    assert.equal(listed.messages[0]!.last_error, 'Error: no such column: colour');

    failing = false;
    assert.equal(await bus.poison.replay(queue), 1);
    await waitFor(() => attempts.get(3)!.length === 4, 'the replayed event handled');
    assert.deepEqual(attempts.get(3)!.at(-1), { redelivered: false, deliveryCount: 1 });
    assert.deepEqual(await bus.poison.counts([queue]), { [queue]: 0 });
    await consumer.close();
  });

  it('lists each event of a batch the broker set aside whole, and replays only the chosen ones', async () => {
    const queue = queueName();
    const handled: MerxEvent[] = [];
    const consumer = await bus.consume({ queue, bindings: [`${area}.crashing`] }, async (received) => void handled.push(received));
    const batch = [event('crashing', 0), event('crashing', 1), event('crashing', 2)];
    // What the work queue's x-delivery-limit does to a message whose consumer keeps dying: the
    // broker dead-letters it, as it is, to the poison queue.
    await withAmqpConnection(async (connection) => {
      const channel = await connection.createConfirmChannel();
      channel.sendToQueue(poisonQueueOf(names.queue(queue)), Buffer.from(JSON.stringify(batch)), {
        persistent: true,
        contentType: EVENT_BATCH_CONTENT_TYPE,
        type: `${area}.crashing`,
        messageId: batch[0]!.id,
        headers: { 'x-merx-events': 3, 'x-death': [{ count: 10, reason: 'delivery_limit', queue: names.queue(queue) }] },
      });
      await channel.waitForConfirms();
    });
    await waitFor(async () => (await bus.poison.counts([queue]))[queue] === 1, 'the batch in the poison queue');

    const listed = await bus.poison.list(queue, 10);
    assert.equal(listed.total, 3, 'one entry per event');
    assert.deepEqual(
      listed.messages.map((message) => message.event),
      batch,
    );
    const failures = listed.messages.map((message) => message.failures);

    assert.equal(await bus.poison.replay(queue, [batch[1]!.id]), 1);
    await waitFor(() => handled.length === 1, 'the chosen event handled');
    assert.deepEqual(handled, [batch[1]]);
    const left = await bus.poison.list(queue, 10);
    assert.deepEqual(
      left.messages.map((message) => message.event),
      [batch[0], batch[2]],
      'the others stay poisoned, in order',
    );
    assert.deepEqual(
      left.messages.map((message) => message.failures),
      [failures[0], failures[2]],
      'with the count they had',
    );
    assert.equal(await bus.poison.replay(queue), 2);
    await waitFor(() => handled.length === 3, 'the rest handled');
    await consumer.close();
  });

  it('sends a batch whose body is not an array of events to the poison queue whole', async () => {
    const queue = queueName();
    const handled: MerxEvent[] = [];
    const consumer = await bus.consume({ queue, bindings: [`${area}.garbled`] }, async (received) => void handled.push(received));
    await withAmqpConnection(async (connection) => {
      const channel = await connection.createConfirmChannel();
      channel.publish(names.exchange, `${area}.garbled`, Buffer.from('{"not":"an array"}'), { persistent: true, contentType: EVENT_BATCH_CONTENT_TYPE });
      await channel.waitForConfirms();
    });
    await waitFor(async () => (await bus.poison.counts([queue]))[queue] === 1, 'the garbled batch in the poison queue');
    assert.deepEqual(handled, []);
    await consumer.close();
  });
});
