import type { MerxEvent } from './events.js';

export const EVENTS_EXCHANGE = 'merx.events';

export interface ConsumerOptions {
  /** Durable queue name, one per consuming service (`audit.events`); replicas share it. */
  queue: string;
  /** Routing-key patterns bound to `merx.events` (`#`, `products.*`). */
  bindings: string[];
  /** How many deliveries may be in flight on this consumer at once. */
  prefetch?: number;
  /** After this many failed deliveries a message moves to `<queue>.poison` instead of blocking the queue. */
  deliveryLimit?: number;
  /**
   * A private, self-deleting queue that lives only as long as this consumer (observers, tests,
   * `merx listen`). Durable work queues never set it.
   */
  transient?: boolean;
  /**
   * Only one consumer of the queue receives messages at a time; the others take over if it goes.
   * For consumers whose effects must follow publication order (the audit chain).
   */
  singleActiveConsumer?: boolean;
}

export interface DeliveryInfo {
  redelivered: boolean;
  deliveryCount: number;
}

export type EventHandler = (event: MerxEvent, info: DeliveryInfo) => Promise<void>;

export interface Consumer {
  close(): Promise<void>;
}

/**
 * The one interface services use to publish and consume events; RabbitMQ in the distributed
 * mode, in-process in the embedded one. `publish` resolves only once the bus owns the messages
 * (publisher confirms), so the outbox may then forget them.
 */
export interface Bus {
  readonly kind: 'amqp' | 'memory';
  publish(events: MerxEvent[]): Promise<void>;
  consume(options: ConsumerOptions, handler: EventHandler): Promise<Consumer>;
  /** True while the bus can take publications; /readyz reports it. */
  isConnected(): boolean;
  close(): Promise<void>;
}

export const DEFAULT_DELIVERY_LIMIT = 10;
export const poisonQueueOf = (queue: string) => `${queue}.poison`;
