import amqp, { type Channel, type ChannelModel, type ConfirmChannel, type ConsumeMessage, type Message } from 'amqplib';
import pRetry from 'p-retry';
import { brokerNamesOf, type BrokerNames } from './broker-names.js';
import {
  decodeDelivery,
  DEFAULT_RETRY_POLICY,
  describeFailure,
  poisonQueueOf,
  retryDelayAfter,
  retryDelaysOf,
  retryQueueOf,
  type Bus,
  type Consumer,
  type ConsumerOptions,
  type EventHandler,
  type PoisonedMessage,
  type PoisonQueues,
  type RetryPolicy,
  isOutage,
  outageRetryDelay,
} from './bus.js';
import { Unavailable } from './errors.js';
import { eventJson, runInEventContext, type MerxEvent } from './events.js';
import type { Logger } from './logger.js';
import { busMessages, busPoisoned, busRetried } from './metrics.js';
import { inConsumeSpan, startPublishSpan, type PublishSpan } from './tracing.js';

/** Headers the bus sets on the copies it moves to retry and poison queues. */
const FAILURES_HEADER = 'x-merx-failures';
/** Retries caused by an outage, which do not count as failures. */
const OUTAGES_HEADER = 'x-merx-outages';
const QUEUE_HEADER = 'x-merx-queue';
const ERROR_HEADER = 'x-merx-last-error';
const POISONED_AT_HEADER = 'x-merx-poisoned-at';

interface RegisteredConsumer {
  options: ConsumerOptions;
  handler: EventHandler;
  channel?: Channel;
  closed: boolean;
}

export interface AmqpBusOptions {
  url: string;
  service: string;
  logger: Logger;
  /** Prefixes the exchange and every queue (MERX_DEPLOYMENT): deployments sharing a broker stay apart. */
  deployment: string;
  /** Backoff bounds for reconnecting after the broker or the network drops us. */
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
  /** Waits between failed deliveries and the default delivery limit (MERX_BUS_RETRY_SCHEDULE, MERX_BUS_DELIVERY_LIMIT). */
  retry?: RetryPolicy;
}

/**
 * RabbitMQ through amqplib. Publishing uses a confirm channel, so `publish` resolves only when
 * the broker has taken responsibility; consumers use quorum queues and ack only after their
 * handler (and its transaction) has finished. A failed delivery is not requeued at once (a short
 * database failover would burn every redelivery): a copy goes to the retry queue of its delay
 * (`<queue>.retry.5s`, a quorum queue whose message TTL dead-letters it back to the work queue,
 * at least once), carrying its failure count, and the original is acked once the broker has the
 * copy. After the delivery limit the copy goes to `<queue>.poison` with the last error instead.
 * The work queue's own x-delivery-limit stays as the backstop for a handler that kills its
 * process before it can fail. When the connection drops, publishing fails fast (the outbox keeps
 * the rows and retries) while the bus reconnects in the background and re-establishes every consumer.
 */
export class AmqpBus implements Bus {
  readonly kind = 'amqp' as const;
  private connection: ChannelModel | undefined;
  private publisher: ConfirmChannel | undefined;
  private readonly consumers: RegisteredConsumer[] = [];
  private closing = false;
  private reconnecting: Promise<void> | undefined;
  readonly names: BrokerNames;
  readonly poison: PoisonQueues;
  private readonly retry: RetryPolicy;

  private constructor(private readonly options: AmqpBusOptions) {
    this.names = brokerNamesOf(options.deployment);
    this.retry = options.retry ?? DEFAULT_RETRY_POLICY;
    this.poison = this.poisonQueues();
  }

  /**
   * Connects, or, when the broker is not reachable yet, returns a bus that keeps trying in the
   * background: a service may start before its broker, reporting not-ready until it connects.
   */
  static async connect(options: AmqpBusOptions): Promise<AmqpBus> {
    const bus = new AmqpBus(options);
    try {
      await bus.establish();
    } catch (error) {
      options.logger.warn({ err: error }, 'message broker unreachable at start-up; retrying in the background');
      bus.reconnectInBackground();
    }
    return bus;
  }

  isConnected(): boolean {
    return this.publisher !== undefined;
  }

  async publish(events: MerxEvent[]): Promise<void> {
    const channel = this.publisher;
    if (!channel) throw new Unavailable('The message broker is not connected.');
    const spans: PublishSpan[] = [];
    for (const event of events) {
      // The trace the event was written in continues in its message headers (tracing.ts).
      const span = startPublishSpan(event, this.options.service, 'rabbitmq');
      if (span) spans.push(span);
      // AMQP timestamps are unsigned seconds: a time before 1970 (or none) is left out rather
      // than making amqplib throw, which would wedge the outbox relay on this event for good.
      const seconds = Math.floor(Date.parse(event.created_at) / 1000);
      channel.publish(this.names.exchange, event.topic, Buffer.from(eventJson(event)), {
        persistent: true,
        messageId: event.id,
        type: event.topic,
        contentType: 'application/json',
        ...(Number.isSafeInteger(seconds) && seconds >= 0 ? { timestamp: seconds } : {}),
        appId: this.options.service,
        ...(span ? { headers: span.headers } : {}),
      });
    }
    try {
      await channel.waitForConfirms();
    } catch (error) {
      for (const span of spans) span.end(error);
      throw error;
    }
    for (const span of spans) span.end();
    for (const event of events) busMessages.inc({ service: this.options.service, direction: 'published', topic: event.topic });
  }

  async consume(options: ConsumerOptions, handler: EventHandler): Promise<Consumer> {
    const registered: RegisteredConsumer = { options, handler, closed: false };
    this.consumers.push(registered);
    if (this.connection) await this.startConsumer(this.connection, registered);
    return {
      close: async () => {
        registered.closed = true;
        this.consumers.splice(this.consumers.indexOf(registered), 1);
        await registered.channel?.close().catch(() => undefined);
      },
    };
  }

  async close(): Promise<void> {
    this.closing = true;
    await this.connection?.close().catch(() => undefined);
    this.connection = undefined;
    this.publisher = undefined;
  }

  private async establish(): Promise<void> {
    const connection = await amqp.connect(this.options.url, { clientProperties: { connection_name: `merx-${this.options.service}` } });
    connection.on('error', (error: Error) => this.options.logger.warn({ err: error }, 'broker connection error'));
    connection.on('close', () => this.onConnectionLost(connection));
    try {
      const publisher = await connection.createConfirmChannel();
      publisher.on('error', (error: Error) => this.options.logger.warn({ err: error }, 'publish channel error'));
      await publisher.assertExchange(this.names.exchange, 'topic', { durable: true });
      // close() ran while we were connecting and could not see this connection: hang up here.
      if (this.closing) {
        await connection.close().catch(() => undefined);
        return;
      }
      this.connection = connection;
      this.publisher = publisher;
      for (const consumer of this.consumers) await this.startConsumer(connection, consumer);
    } catch (error) {
      // A half-set-up connection would otherwise stay open beside the one the next attempt makes.
      if (this.connection === connection) {
        this.connection = undefined;
        this.publisher = undefined;
      }
      await connection.close().catch(() => undefined);
      throw error;
    }
    this.options.logger.info({ consumers: this.consumers.length }, 'connected to the message broker');
  }

  private onConnectionLost(connection: ChannelModel): void {
    if (this.connection !== connection) return;
    this.connection = undefined;
    this.publisher = undefined;
    if (this.closing) return;
    this.options.logger.warn('lost the broker connection; reconnecting');
    this.reconnectInBackground();
  }

  private reconnectInBackground(): void {
    this.reconnecting ??= pRetry(() => (this.closing ? Promise.resolve() : this.establish()), {
      retries: Number.POSITIVE_INFINITY,
      minTimeout: this.options.reconnectMinMs ?? 100,
      maxTimeout: this.options.reconnectMaxMs ?? 5_000,
      randomize: true,
      onFailedAttempt: ({ error, attemptNumber }) => this.options.logger.warn({ err: error, attempt: attemptNumber }, 'broker reconnect failed'),
    }).finally(() => {
      this.reconnecting = undefined;
    });
  }

  private async startConsumer(connection: ChannelModel, consumer: RegisteredConsumer): Promise<void> {
    if (consumer.closed) return;
    const { options } = consumer;
    const channel = await connection.createChannel();
    channel.on('error', (error: Error) => this.options.logger.warn({ err: error, queue: options.queue }, 'consumer channel error'));
    consumer.channel = channel;
    let queue: string;
    if (options.transient) {
      queue = (await channel.assertQueue('', { exclusive: true, autoDelete: true, durable: false })).queue;
    } else {
      queue = this.names.queue(options.queue);
      const poison = poisonQueueOf(queue);
      await channel.assertQueue(poison, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
      for (const delayMs of retryDelaysOf(this.retry)) {
        await channel.assertQueue(retryQueueOf(queue, delayMs), {
          durable: true,
          arguments: {
            'x-queue-type': 'quorum',
            'x-message-ttl': delayMs,
            'x-dead-letter-exchange': '',
            'x-dead-letter-routing-key': queue,
            // Never drop a message on its way back: at-least-once dead-lettering needs reject-publish.
            'x-dead-letter-strategy': 'at-least-once',
            'x-overflow': 'reject-publish',
          },
        });
      }
      await channel.assertQueue(queue, {
        durable: true,
        arguments: {
          'x-queue-type': 'quorum',
          'x-delivery-limit': this.deliveryLimitOf(options),
          'x-dead-letter-exchange': '',
          'x-dead-letter-routing-key': poison,
          ...(options.singleActiveConsumer ? { 'x-single-active-consumer': true } : {}),
        },
      });
    }
    for (const pattern of options.bindings) await channel.bindQueue(queue, this.names.exchange, pattern);
    await channel.prefetch(options.prefetch ?? 16);
    await channel.consume(queue, (message) => {
      if (message) void this.deliver(channel, message, consumer);
    });
    if (!options.transient) void this.drainLegacyQueue(connection, consumer);
  }

  /**
   * Before deployment prefixes, queues were named without one (`audit.events`). A deployment
   * upgraded in place may still hold events there that the old version had not consumed: once
   * the new queue is bound, unbind the old one so it stops growing, consume what it holds with
   * the same handler (the inbox drops what the new queue also delivers), and delete it when empty.
   */
  private async drainLegacyQueue(connection: ChannelModel, consumer: RegisteredConsumer): Promise<void> {
    const legacy = this.names.legacyQueue(consumer.options.queue);
    if (!legacy) return;
    try {
      // A passive declare of a missing queue closes its channel (404): probe on a throwaway one.
      const probe = await connection.createChannel();
      probe.on('error', () => undefined);
      const found = await probe.checkQueue(legacy).then(
        () => true,
        () => false,
      );
      await probe.close().catch(() => undefined);
      if (!found) return;
      const channel = await connection.createChannel();
      channel.on('error', (error: Error) => this.options.logger.warn({ err: error, queue: legacy }, 'legacy queue channel error'));
      for (const pattern of consumer.options.bindings) await channel.unbindQueue(legacy, this.names.exchange, pattern);
      this.options.logger.warn({ queue: legacy, replaced_by: this.names.queue(consumer.options.queue) }, 'draining a queue named before deployment prefixes');
      await channel.prefetch(consumer.options.prefetch ?? 16);
      let inFlight = 0;
      const { consumerTag } = await channel.consume(legacy, (message) => {
        if (!message) return;
        inFlight++;
        void this.deliver(channel, message, consumer).finally(() => inFlight--);
      });
      while (!consumer.closed && !this.closing) {
        const { messageCount } = await channel.checkQueue(legacy);
        if (messageCount === 0 && inFlight === 0) break;
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      await channel.cancel(consumerTag);
      if (!consumer.closed && !this.closing) {
        // Unbound and empty, with nothing in flight: nothing can arrive any more. (Quorum queues
        // refuse the if-empty flag, and the broker answers it by closing the whole connection.)
        await channel.deleteQueue(legacy);
        this.options.logger.info({ queue: legacy }, 'legacy queue drained and deleted');
      }
      await channel.close().catch(() => undefined);
    } catch (error) {
      // The next connection tries again; until then the old queue keeps what it has.
      this.options.logger.warn({ err: error, queue: legacy }, 'could not drain a legacy queue yet');
    }
  }

  private deliveryLimitOf(options: ConsumerOptions): number {
    return options.deliveryLimit ?? this.retry.deliveryLimit;
  }

  private async deliver(channel: Channel, message: ConsumeMessage, consumer: RegisteredConsumer): Promise<void> {
    const { options } = consumer;
    const headers = message.properties.headers ?? {};
    // Failures carried by a retried copy, plus this copy's own redeliveries (a crash, a lost channel).
    const failedBefore = Number(headers[FAILURES_HEADER] ?? 0) + Number(headers['x-delivery-count'] ?? 0);
    const topic = String(message.properties.type ?? message.fields.routingKey);
    let event: MerxEvent;
    try {
      event = decodeDelivery(message.content.toString('utf8'));
    } catch (error) {
      // Bytes that do not parse will never succeed: straight to the poison queue.
      await this.setAside(channel, message, consumer, { topic, failures: failedBefore + 1, error, hopeless: true });
      return;
    }
    try {
      const deliveryCount = failedBefore + 1;
      await inConsumeSpan(
        { id: event.id, topic: event.topic, headers },
        { service: this.options.service, queue: options.queue, system: 'rabbitmq', deliveryCount },
        () => runInEventContext(event, () => consumer.handler(event, { redelivered: message.fields.redelivered || failedBefore > 0, deliveryCount })),
      );
      busMessages.inc({ service: this.options.service, direction: 'consumed', topic: event.topic });
      this.settle(() => channel.ack(message));
    } catch (error) {
      if (options.transient) {
        this.options.logger.warn({ err: error, event_id: event.id, topic: event.topic }, 'event handler failed; requeued');
        this.settle(() => channel.nack(message, false, true));
        return;
      }
      if (isOutage(error)) {
        const outages = Number(headers[OUTAGES_HEADER] ?? 0) + 1;
        await this.setAside(channel, message, consumer, { topic: event.topic, failures: failedBefore, error, hopeless: false, eventId: event.id, outages });
        return;
      }
      await this.setAside(channel, message, consumer, { topic: event.topic, failures: failedBefore + 1, error, hopeless: false, eventId: event.id });
    }
  }

  /**
   * A failed delivery of a work queue: a copy to the retry queue of its delay, or after the last
   * allowed delivery to the poison queue, then the original is acked. Only once the broker has
   * confirmed the copy; if it cannot take it, the original is requeued instead.
   */
  private async setAside(
    channel: Channel,
    message: ConsumeMessage,
    consumer: RegisteredConsumer,
    failure: { topic: string; failures: number; error: unknown; hopeless: boolean; eventId?: string; outages?: number },
  ): Promise<void> {
    const logical = consumer.options.queue;
    const queue = this.names.queue(logical);
    const outage = failure.outages !== undefined;
    const poisoned = failure.hopeless || (!outage && failure.failures >= this.deliveryLimitOf(consumer.options));
    const delayMs = outage ? outageRetryDelay(this.retry, failure.outages!) : retryDelayAfter(this.retry, failure.failures);
    const target = poisoned ? poisonQueueOf(queue) : retryQueueOf(queue, delayMs);
    const { 'x-delivery-count': _count, 'x-death': _deaths, ...kept } = message.properties.headers ?? {};
    const reason = describeFailure(failure.error);
    const headers = {
      ...kept,
      [FAILURES_HEADER]: failure.failures,
      [OUTAGES_HEADER]: failure.outages ?? 0,
      [QUEUE_HEADER]: logical,
      [ERROR_HEADER]: reason,
      ...(poisoned ? { [POISONED_AT_HEADER]: new Date().toISOString() } : {}),
    };
    const labels = { service: this.options.service, queue: logical, topic: failure.topic };
    const context = { err: failure.error, event_id: failure.eventId, topic: failure.topic, failures: failure.failures };
    try {
      await this.sendConfirmed(target, message, headers);
    } catch (error) {
      this.options.logger.warn({ ...context, copy_error: error }, 'event handler failed and its retry could not be scheduled; requeued');
      this.settle(() => channel.nack(message, false, true));
      return;
    }
    this.settle(() => channel.ack(message));
    if (poisoned) {
      this.options.logger.error(context, 'event failed its last allowed delivery; moved to the poison queue');
      busPoisoned.inc(labels);
      busMessages.inc({ service: this.options.service, direction: 'poisoned', topic: failure.topic });
    } else {
      this.options.logger.warn(
        { ...context, retry_in_ms: delayMs, outage },
        outage ? 'event handler met an outage; retrying later, not counted as a failure' : 'event handler failed; retrying later',
      );
      busRetried.inc(labels);
    }
  }

  /** Sends a copy of `message` straight to `queue` (default exchange) and waits for the broker's confirm. */
  private sendConfirmed(
    queue: string,
    message: Message,
    headers: Record<string, unknown>,
    channel: ConfirmChannel | undefined = this.publisher,
  ): Promise<void> {
    if (!channel) return Promise.reject(new Unavailable('The message broker is not connected.'));
    const { messageId, type, contentType, timestamp, appId } = message.properties;
    return new Promise<void>((resolve, reject) => {
      channel.sendToQueue(queue, message.content, { persistent: true, messageId, type, contentType, timestamp, appId, headers }, (error: unknown) =>
        error ? reject(error instanceof Error ? error : new Error(String(error))) : resolve(),
      );
    });
  }

  /**
   * Walks a poison queue once, in order: each message is either copied back to the end of the
   * poison queue (so the walk leaves it as it was) or, when `replay` says so, to its work queue
   * with a fresh count; the original is acked only after the broker confirmed the copy. Reading
   * by requeueing instead would count against a quorum queue's delivery limit.
   */
  private async walkPoison(logical: string, replay: (event: MerxEvent | undefined) => boolean, visit: (message: PoisonedMessage) => void): Promise<number> {
    const connection = this.connection;
    if (!connection) throw new Unavailable('The message broker is not connected.');
    const queue = this.names.queue(logical);
    const poison = poisonQueueOf(queue);
    const channel = await connection.createConfirmChannel();
    channel.on('error', (error: Error) => this.options.logger.warn({ err: error, queue: poison }, 'poison queue channel error'));
    let replayed = 0;
    try {
      const { messageCount } = await channel.assertQueue(poison, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
      for (let seen = 0; seen < messageCount; seen++) {
        const message = await channel.get(poison, { noAck: false });
        if (!message) break;
        let event: MerxEvent | undefined;
        try {
          event = JSON.parse(message.content.toString('utf8')) as MerxEvent;
        } catch {
          event = undefined;
        }
        const headers = message.properties.headers ?? {};
        if (event)
          visit({
            queue: logical,
            event,
            failures: poisonedFailures(headers),
            last_error: headerText(headers[ERROR_HEADER]),
            poisoned_at: headerText(headers[POISONED_AT_HEADER]),
          });
        if (event && replay(event)) {
          await this.sendConfirmed(queue, message, {}, channel);
          replayed++;
        } else {
          const { 'x-delivery-count': _count, ...kept } = headers;
          await this.sendConfirmed(poison, message, kept, channel);
        }
        channel.ack(message);
      }
    } finally {
      await channel.close().catch(() => undefined);
    }
    return replayed;
  }

  private poisonQueues(): PoisonQueues {
    return {
      counts: async (queues) => {
        const connection = this.connection;
        if (!connection) throw new Unavailable('The message broker is not connected.');
        const counts: Record<string, number> = {};
        // A passive declare of a missing queue closes its channel: one throwaway channel per queue.
        for (const queue of queues) {
          const channel = await connection.createChannel();
          channel.on('error', () => undefined);
          counts[queue] = await channel.checkQueue(poisonQueueOf(this.names.queue(queue))).then(
            (found) => found.messageCount,
            () => 0,
          );
          await channel.close().catch(() => undefined);
        }
        return counts;
      },
      list: async (queue, limit) => {
        const messages: PoisonedMessage[] = [];
        let total = 0;
        await this.walkPoison(
          queue,
          () => false,
          (message) => {
            total++;
            if (messages.length < limit) messages.push(message);
          },
        );
        return { total, messages };
      },
      replay: (queue, eventIds) =>
        this.walkPoison(
          queue,
          (event) => !eventIds || (event !== undefined && eventIds.includes(event.id)),
          () => undefined,
        ),
      consumedQueues: () => [...new Set(this.consumers.filter((consumer) => !consumer.options.transient).map((consumer) => consumer.options.queue))],
    };
  }

  /** After a reconnect the old channel is gone; the broker redelivers whatever we could not settle. */
  private settle(action: () => void): void {
    try {
      action();
    } catch {
      /* channel closed: the message is redelivered, and the inbox drops it if it was handled */
    }
  }
}

/** Failures before a message was poisoned: our header, or the broker's count when its delivery limit set it aside. */
function poisonedFailures(headers: Record<string, unknown>): number {
  if (headers[FAILURES_HEADER] !== undefined) return Number(headers[FAILURES_HEADER]);
  const deaths = headers['x-death'] as Array<{ count?: number }> | undefined;
  return Number(headers['x-delivery-count'] ?? deaths?.[0]?.count ?? 0);
}

function headerText(value: unknown): string | null {
  if (value === undefined || value === null) return null;
  return Buffer.isBuffer(value) ? value.toString('utf8') : String(value);
}
