import amqp, { type Channel, type ChannelModel, type ConfirmChannel, type ConsumeMessage, type Message } from 'amqplib';
import pRetry from 'p-retry';
import { brokerNamesOf, type BrokerNames } from './broker-names.js';
import {
  decodeDeliveries,
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
  DEFAULT_PREFETCH,
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

/**
 * The content type of a message carrying several events of one topic: a JSON array of them, in
 * publication order. One message of a hundred events costs the broker, and each consumer's
 * deliveries and acks, about what one message of one event does (see BENCHMARKS.md).
 */
export const EVENT_BATCH_CONTENT_TYPE = 'application/vnd.merx.event-batch+json';
/** How many events a batch message carries, for an operator reading a queue. */
const BATCH_SIZE_HEADER = 'x-merx-events';
/** Each event's W3C trace fields as JSON text ('' for none), in the order of the batch's events. */
const BATCH_TRACES_HEADER = 'x-merx-event-traces';
/** Events per message unless MERX_BUS_EVENTS_PER_MESSAGE says otherwise. */
export const DEFAULT_EVENTS_PER_MESSAGE = 100;
/** A batch closes early at this many bytes of JSON, so no message grows large whatever its events hold. */
const MAX_BATCH_BYTES = 256 * 1024;

interface RegisteredConsumer {
  options: ConsumerOptions;
  handler: EventHandler;
  channel?: Channel;
  closed: boolean;
  /** Handlers running now: a batch message brings many events, and `prefetch` bounds events, not messages. */
  running: number;
  waiting: Array<() => void>;
}

/** One event's handling that failed, and the message that carries it alone onwards. */
interface FailedDelivery {
  copy: Message;
  topic: string;
  failures: number;
  error: unknown;
  hopeless: boolean;
  eventId?: string;
  outages?: number;
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
  /**
   * Consecutive events of one topic published together go in one message of at most this many
   * (MERX_BUS_EVENTS_PER_MESSAGE, default 100). 1 publishes a message per event, which releases
   * before batches need while they still run beside this one during a rolling upgrade.
   */
  eventsPerMessage?: number;
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
    for (const batch of this.messagesOf(events)) {
      // The trace each event was written in continues in its message's headers (tracing.ts).
      const traces = batch.map(({ event }) => {
        const span = startPublishSpan(event, this.options.service, 'rabbitmq');
        if (span) spans.push(span);
        return span?.headers;
      });
      const first = batch[0]!.event;
      // AMQP timestamps are unsigned seconds: a time before 1970 (or none) is left out rather
      // than making amqplib throw, which would wedge the outbox relay on this event for good.
      const seconds = Math.floor(Date.parse(first.created_at) / 1000);
      const properties = {
        persistent: true,
        messageId: first.id,
        type: first.topic,
        ...(Number.isSafeInteger(seconds) && seconds >= 0 ? { timestamp: seconds } : {}),
        appId: this.options.service,
      };
      if (batch.length === 1) {
        channel.publish(this.names.exchange, first.topic, Buffer.from(batch[0]!.json), {
          ...properties,
          contentType: 'application/json',
          ...(traces[0] ? { headers: traces[0] } : {}),
        });
      } else {
        channel.publish(this.names.exchange, first.topic, Buffer.from(`[${batch.map(({ json }) => json).join(',')}]`), {
          ...properties,
          contentType: EVENT_BATCH_CONTENT_TYPE,
          headers: {
            [BATCH_SIZE_HEADER]: batch.length,
            ...(traces.some(Boolean) ? { [BATCH_TRACES_HEADER]: traces.map((trace) => (trace ? JSON.stringify(trace) : '')) } : {}),
          },
        });
      }
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

  /**
   * The messages `events` go out in: runs of consecutive events of one topic (the routing key),
   * so every queue still receives its events in publication order, at most `eventsPerMessage`
   * and about MAX_BATCH_BYTES each.
   */
  private *messagesOf(events: MerxEvent[]): Generator<Array<{ event: MerxEvent; json: string }>> {
    const limit = Math.max(1, this.options.eventsPerMessage ?? DEFAULT_EVENTS_PER_MESSAGE);
    let batch: Array<{ event: MerxEvent; json: string }> = [];
    let bytes = 0;
    for (const event of events) {
      const json = eventJson(event);
      if (batch.length > 0 && (batch.length >= limit || batch[0]!.event.topic !== event.topic || bytes + json.length > MAX_BATCH_BYTES)) {
        yield batch;
        batch = [];
        bytes = 0;
      }
      batch.push({ event, json });
      bytes += json.length + 1;
    }
    if (batch.length > 0) yield batch;
  }

  async consume(options: ConsumerOptions, handler: EventHandler): Promise<Consumer> {
    const registered: RegisteredConsumer = { options, handler, closed: false, running: 0, waiting: [] };
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
    await channel.prefetch(options.prefetch ?? DEFAULT_PREFETCH);
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
      await channel.prefetch(consumer.options.prefetch ?? DEFAULT_PREFETCH);
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
    const batch = message.properties.contentType === EVENT_BATCH_CONTENT_TYPE;
    let events: MerxEvent[];
    try {
      const body = message.content.toString('utf8');
      events = batch ? decodeDeliveries(body) : [decodeDelivery(body)];
    } catch (error) {
      // Bytes that do not parse will never succeed: straight to the poison queue.
      await this.setAside(channel, message, consumer, [{ copy: message, topic, failures: failedBefore + 1, error, hopeless: true }]);
      return;
    }
    const traces = batch ? batchTracesOf(headers, events.length) : [headers];
    const redelivered = message.fields.redelivered || failedBefore > 0;
    const outcomes = await Promise.allSettled(events.map((event, index) => this.handle(consumer, event, traces[index], failedBefore + 1, redelivered)));
    const failed = outcomes.flatMap((outcome, index) =>
      outcome.status === 'rejected' ? [{ event: events[index]!, error: outcome.reason as unknown, trace: traces[index] }] : [],
    );
    if (failed.length === 0) {
      this.settle(() => channel.ack(message));
      return;
    }
    if (options.transient) {
      for (const { event, error } of failed) this.options.logger.warn({ err: error, event_id: event.id, topic: event.topic }, 'event handler failed; requeued');
      this.settle(() => channel.nack(message, false, true));
      return;
    }
    // Each failed event goes on alone: in a batch its siblings that succeeded are done with.
    const outages = Number(headers[OUTAGES_HEADER] ?? 0) + 1;
    await this.setAside(
      channel,
      message,
      consumer,
      failed.map(({ event, error, trace }): FailedDelivery => {
        const copy = batch ? singleEventMessage(event, message, trace) : message;
        return isOutage(error)
          ? { copy, topic: event.topic, failures: failedBefore, error, hopeless: false, eventId: event.id, outages }
          : { copy, topic: event.topic, failures: failedBefore + 1, error, hopeless: false, eventId: event.id };
      }),
    );
  }

  /** One event through its consumer's handler, waiting its turn when `prefetch` events are already running. */
  private async handle(
    consumer: RegisteredConsumer,
    event: MerxEvent,
    traceHeaders: Record<string, unknown> | undefined,
    deliveryCount: number,
    redelivered: boolean,
  ) {
    const limit = consumer.options.prefetch ?? DEFAULT_PREFETCH;
    if (consumer.running >= limit) await new Promise<void>((resolve) => consumer.waiting.push(resolve));
    consumer.running++;
    try {
      await inConsumeSpan(
        { id: event.id, topic: event.topic, headers: traceHeaders },
        { service: this.options.service, queue: consumer.options.queue, system: 'rabbitmq', deliveryCount },
        () => runInEventContext(event, () => consumer.handler(event, { redelivered, deliveryCount })),
      );
      busMessages.inc({ service: this.options.service, direction: 'consumed', topic: event.topic });
    } finally {
      consumer.running--;
      consumer.waiting.shift()?.();
    }
  }

  /**
   * Failed deliveries of a work queue: for each, a copy to the retry queue of its delay, or after
   * the last allowed delivery to the poison queue; then the original is acked. Only once the
   * broker has confirmed every copy; if it cannot take one, the original is requeued instead.
   */
  private async setAside(channel: Channel, message: ConsumeMessage, consumer: RegisteredConsumer, failures: FailedDelivery[]): Promise<void> {
    const logical = consumer.options.queue;
    const queue = this.names.queue(logical);
    const planned = failures.map((failure) => {
      const outage = failure.outages !== undefined;
      const poisoned = failure.hopeless || (!outage && failure.failures >= this.deliveryLimitOf(consumer.options));
      const delayMs = outage ? outageRetryDelay(this.retry, failure.outages!) : retryDelayAfter(this.retry, failure.failures);
      const { 'x-delivery-count': _count, 'x-death': _deaths, ...kept } = failure.copy.properties.headers ?? {};
      const headers = {
        ...kept,
        [FAILURES_HEADER]: failure.failures,
        [OUTAGES_HEADER]: failure.outages ?? 0,
        [QUEUE_HEADER]: logical,
        [ERROR_HEADER]: describeFailure(failure.error),
        ...(poisoned ? { [POISONED_AT_HEADER]: new Date().toISOString() } : {}),
      };
      const target = poisoned ? poisonQueueOf(queue) : retryQueueOf(queue, delayMs);
      return { failure, outage, poisoned, delayMs, target, headers };
    });
    try {
      await Promise.all(planned.map(({ target, failure, headers }) => this.sendConfirmed(target, failure.copy, headers)));
    } catch (error) {
      for (const { failure } of planned)
        this.options.logger.warn(
          { err: failure.error, event_id: failure.eventId, topic: failure.topic, failures: failure.failures, copy_error: error },
          'event handler failed and its retry could not be scheduled; requeued',
        );
      this.settle(() => channel.nack(message, false, true));
      return;
    }
    this.settle(() => channel.ack(message));
    for (const { failure, outage, poisoned, delayMs } of planned) {
      const labels = { service: this.options.service, queue: logical, topic: failure.topic };
      const context = { err: failure.error, event_id: failure.eventId, topic: failure.topic, failures: failure.failures };
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
        const headers = message.properties.headers ?? {};
        const { 'x-delivery-count': _count, ...kept } = headers;
        const events = eventsOf(message);
        for (const event of events ?? [])
          visit({
            queue: logical,
            event,
            failures: poisonedFailures(headers),
            last_error: headerText(headers[ERROR_HEADER]),
            poisoned_at: headerText(headers[POISONED_AT_HEADER]),
          });
        const chosen = new Set((events ?? []).filter((event) => replay(event)));
        if (!events || chosen.size === 0) {
          await this.sendConfirmed(poison, message, kept, channel);
        } else if (chosen.size === events.length && message.properties.contentType !== EVENT_BATCH_CONTENT_TYPE) {
          await this.sendConfirmed(queue, message, {}, channel);
        } else {
          // A batch the broker set aside whole (its consumer kept dying) is split: the chosen
          // events go back to work one by one with a fresh count, the others stay poisoned one by one.
          const traces = batchTracesOf(headers, events.length);
          for (const [index, event] of events.entries()) {
            const copy = singleEventMessage(event, message, traces[index]);
            const { 'x-delivery-count': _copyCount, ...poisonHeaders } = copy.properties.headers ?? {};
            if (chosen.has(event)) await this.sendConfirmed(queue, copy, { ...traces[index] }, channel);
            else await this.sendConfirmed(poison, copy, poisonHeaders, channel);
          }
        }
        replayed += chosen.size;
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

/** The events a message carries (one, or a batch's), or undefined when its bytes do not parse. */
function eventsOf(message: Message): MerxEvent[] | undefined {
  try {
    const body = message.content.toString('utf8');
    return message.properties.contentType === EVENT_BATCH_CONTENT_TYPE ? decodeDeliveries(body) : [JSON.parse(body) as MerxEvent];
  } catch {
    return undefined;
  }
}

/** The trace headers of each event of a batch (empty where it had none). */
function batchTracesOf(headers: Record<string, unknown>, count: number): Array<Record<string, unknown> | undefined> {
  const traces = headers[BATCH_TRACES_HEADER];
  return Array.from({ length: count }, (_, index) => {
    const text = Array.isArray(traces) ? headerText(traces[index]) : null;
    if (!text) return undefined;
    try {
      const parsed = JSON.parse(text) as unknown;
      return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : undefined;
    } catch {
      return undefined;
    }
  });
}

/**
 * One event of a batch as the message it would have been alone: what goes to a retry or poison
 * queue when it failed and its siblings did not, so its retries, poison and replay are its own.
 */
function singleEventMessage(event: MerxEvent, batch: Message, trace: Record<string, unknown> | undefined): Message {
  const { [BATCH_SIZE_HEADER]: _size, [BATCH_TRACES_HEADER]: _traces, ...headers } = batch.properties.headers ?? {};
  return {
    content: Buffer.from(JSON.stringify(event)),
    fields: batch.fields,
    properties: { ...batch.properties, messageId: event.id, type: event.topic, contentType: 'application/json', headers: { ...headers, ...trace } },
  };
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
