import amqp, { type Channel, type ChannelModel, type ConfirmChannel, type ConsumeMessage } from 'amqplib';
import pRetry from 'p-retry';
import { DEFAULT_DELIVERY_LIMIT, EVENTS_EXCHANGE, poisonQueueOf, type Bus, type Consumer, type ConsumerOptions, type EventHandler } from './bus.js';
import { Unavailable } from './errors.js';
import { runInEventContext, type MerxEvent } from './events.js';
import type { Logger } from './logger.js';
import { busMessages } from './metrics.js';

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
  /** Backoff bounds for reconnecting after the broker or the network drops us. */
  reconnectMinMs?: number;
  reconnectMaxMs?: number;
}

/**
 * RabbitMQ through amqplib. Publishing uses a confirm channel, so `publish` resolves only when
 * the broker has taken responsibility; consumers use quorum queues with a delivery limit and a
 * poison queue, and ack only after their handler (and its transaction) has finished. When the
 * connection drops, publishing fails fast (the outbox keeps the rows and retries) while the bus
 * reconnects in the background and re-establishes every consumer.
 */
export class AmqpBus implements Bus {
  readonly kind = 'amqp' as const;
  private connection: ChannelModel | undefined;
  private publisher: ConfirmChannel | undefined;
  private readonly consumers: RegisteredConsumer[] = [];
  private closing = false;
  private reconnecting: Promise<void> | undefined;

  private constructor(private readonly options: AmqpBusOptions) {}

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
    for (const event of events) {
      channel.publish(EVENTS_EXCHANGE, event.topic, Buffer.from(JSON.stringify(event)), {
        persistent: true,
        messageId: event.id,
        type: event.topic,
        contentType: 'application/json',
        timestamp: Math.floor(Date.parse(event.created_at) / 1000),
        appId: this.options.service,
      });
    }
    await channel.waitForConfirms();
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
      await publisher.assertExchange(EVENTS_EXCHANGE, 'topic', { durable: true });
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
    const { options, handler } = consumer;
    const channel = await connection.createChannel();
    channel.on('error', (error: Error) => this.options.logger.warn({ err: error, queue: options.queue }, 'consumer channel error'));
    consumer.channel = channel;
    let queue = options.queue;
    if (options.transient) {
      queue = (await channel.assertQueue('', { exclusive: true, autoDelete: true, durable: false })).queue;
    } else {
      const poison = poisonQueueOf(options.queue);
      await channel.assertQueue(poison, { durable: true, arguments: { 'x-queue-type': 'quorum' } });
      await channel.assertQueue(options.queue, {
        durable: true,
        arguments: {
          'x-queue-type': 'quorum',
          'x-delivery-limit': options.deliveryLimit ?? DEFAULT_DELIVERY_LIMIT,
          'x-dead-letter-exchange': '',
          'x-dead-letter-routing-key': poison,
          ...(options.singleActiveConsumer ? { 'x-single-active-consumer': true } : {}),
        },
      });
    }
    for (const pattern of options.bindings) await channel.bindQueue(queue, EVENTS_EXCHANGE, pattern);
    await channel.prefetch(options.prefetch ?? 16);
    await channel.consume(queue, (message) => {
      if (message) void this.deliver(channel, message, consumer);
    });
  }

  private async deliver(channel: Channel, message: ConsumeMessage, consumer: RegisteredConsumer): Promise<void> {
    let event: MerxEvent;
    try {
      event = JSON.parse(message.content.toString('utf8')) as MerxEvent;
    } catch {
      // Unparseable bytes will never succeed: straight to the poison queue.
      this.settle(() => channel.reject(message, false));
      return;
    }
    const deliveryCount = Number(message.properties.headers?.['x-delivery-count'] ?? 0) + 1;
    try {
      await runInEventContext(event, () => consumer.handler(event, { redelivered: message.fields.redelivered, deliveryCount }));
      busMessages.inc({ service: this.options.service, direction: 'consumed', topic: event.topic });
      this.settle(() => channel.ack(message));
    } catch (error) {
      // RabbitMQ dead-letters only once the count exceeds x-delivery-limit (limit + 1 attempts);
      // rejecting the last allowed attempt ourselves makes the limit mean what it says, as in MemoryBus.
      const exhausted = !consumer.options.transient && deliveryCount >= (consumer.options.deliveryLimit ?? DEFAULT_DELIVERY_LIMIT);
      if (exhausted) {
        this.options.logger.error({ err: error, event_id: event.id, topic: event.topic, delivery_count: deliveryCount }, 'event handler failed; moved to the poison queue');
      } else {
        this.options.logger.warn({ err: error, event_id: event.id, topic: event.topic, delivery_count: deliveryCount }, 'event handler failed; requeued');
      }
      this.settle(() => channel.nack(message, false, !exhausted));
    }
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
