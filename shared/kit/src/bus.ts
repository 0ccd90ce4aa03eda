import { isDatabaseUnavailable } from './db.js';
import { Unavailable } from './errors.js';
import type { MerxEvent } from './events.js';

/** Deliveries in flight per consumer when its options name no `prefetch`: enough to batch writes, few enough to share work between replicas. */
export const DEFAULT_PREFETCH = 16;

export interface ConsumerOptions {
  /**
   * Logical durable queue name, one per consuming service (`audit.events`); replicas share it.
   * The bus prefixes it with the deployment (`merx.audit.events`, see broker-names.ts).
   */
  queue: string;
  /** Routing-key patterns bound to the deployment's events exchange (`#`, `products.*`). */
  bindings: string[];
  /** How many deliveries may be in flight on this consumer at once (DEFAULT_PREFETCH when absent). */
  prefetch?: number;
  /**
   * After this many failed deliveries a message moves to `<queue>.poison` instead of blocking the
   * queue; the bus's retry policy when absent.
   */
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
  /** 1 on the first delivery; counts every delivery of the message so far, retries included. */
  deliveryCount: number;
}

export type EventHandler = (event: MerxEvent, info: DeliveryInfo) => Promise<void>;

export interface Consumer {
  close(): Promise<void>;
}

/**
 * The one interface services use to publish and consume events; RabbitMQ in the distributed
 * mode, in-process (durable queues in the database) in the embedded one. `publish` resolves only
 * once the bus owns the messages (publisher confirms), so the outbox may then forget them.
 */
export interface Bus {
  readonly kind: 'amqp' | 'memory';
  publish(events: MerxEvent[]): Promise<void>;
  consume(options: ConsumerOptions, handler: EventHandler): Promise<Consumer>;
  /** True while the bus can take publications; /readyz reports it. */
  isConnected(): boolean;
  /** The messages that exhausted their deliveries, for operators: count, list, replay. */
  readonly poison: PoisonQueues;
  close(): Promise<void>;
}

/** A message that failed every delivery it was allowed, kept with why. */
export interface PoisonedMessage {
  /** The logical work queue it failed on (`audit.events`). */
  queue: string;
  event: MerxEvent;
  /** Failed deliveries before it was set aside. */
  failures: number;
  /** The last handler error's message; null when the broker set it aside (delivery limit of a crashing consumer). */
  last_error: string | null;
  poisoned_at: string | null;
}

/**
 * Poison queues of durable work queues (logical names). Listing never loses or reorders what
 * matters: every message listed is still there afterwards. Replay puts messages back on their
 * work queue with a fresh delivery count; consumers' inboxes make a replay of a message that did
 * succeed after all harmless.
 */
export interface PoisonQueues {
  /** How many messages wait in the poison queue of each given queue (those with none included). */
  counts(queues: string[]): Promise<Record<string, number>>;
  list(queue: string, limit: number): Promise<{ total: number; messages: PoisonedMessage[] }>;
  /** Replays the messages of these event ids, or all of them; returns how many went back. */
  replay(queue: string, eventIds?: string[]): Promise<number>;
  /** The durable queues this process consumes (their poison is what its readiness reports). */
  consumedQueues(): string[];
}

/** When a failed delivery is tried again, and when a message is given up on. */
export interface RetryPolicy {
  /** Waits before redelivering: the n-th failure waits the n-th step, the last step repeats. */
  delaysMs: number[];
  /** Deliveries per message before it moves to the poison queue, unless a consumer sets its own. */
  deliveryLimit: number;
}

export const DEFAULT_DELIVERY_LIMIT = 10;
/** With the limit of 10: 1 s, 5 s, 30 s, 2 min, then every 10 min, about 53 minutes in all before poison. */
export const DEFAULT_BUS_RETRY_SCHEDULE = '1s,5s,30s,2m,10m';
export const DEFAULT_RETRY_POLICY: RetryPolicy = { delaysMs: [1_000, 5_000, 30_000, 120_000, 600_000], deliveryLimit: DEFAULT_DELIVERY_LIMIT };

/** The wait after the `failures`-th failed delivery (1-based). */
/**
 * A handler failure caused by an outage (the database down or too slow, an upstream answering
 * 503) says nothing about the message: it is retried without counting toward the delivery limit,
 * so an outage of any length delays work and never poisons it.
 */
export function isOutage(error: unknown): boolean {
  return error instanceof Unavailable || isDatabaseUnavailable(error);
}

/** Retries through an outage wait the schedule's first steps, at most this many of them. */
export const OUTAGE_RETRY_STEPS = 3;

export function outageRetryDelay(policy: RetryPolicy, outages: number): number {
  return retryDelayAfter(policy, Math.min(outages, OUTAGE_RETRY_STEPS));
}

export function retryDelayAfter(policy: RetryPolicy, failures: number): number {
  const steps = policy.delaysMs;
  return steps[Math.min(Math.max(failures, 1), steps.length) - 1] ?? 0;
}

export const poisonQueueOf = (queue: string) => `${queue}.poison`;

/** `1000` → `1s`, `120000` → `2m`: how a delay reads in a queue name. */
export function delayLabel(ms: number): string {
  for (const [unit, size] of [
    ['h', 3_600_000],
    ['m', 60_000],
    ['s', 1_000],
  ] as const) {
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}

/** The queue a failed message waits in for `delayMs` before it is dead-lettered back to `queue`. */
export const retryQueueOf = (queue: string, delayMs: number) => `${queue}.retry.${delayLabel(delayMs)}`;

/** The distinct waits of a policy, each of which has its own retry queue on a broker. */
export const retryDelaysOf = (policy: RetryPolicy) => [...new Set(policy.delaysMs)];

/**
 * JSON escapes that decode to what PostgreSQL cannot store: `\u0000` (refused by text and jsonb)
 * and UTF-16 surrogates (refused by jsonb when unpaired). Only a message containing one is walked.
 */
const UNSTORABLE_ESCAPE = /\\u(?:0000|[dD][89a-fA-F])/;
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g;

/**
 * A string every store accepts: each unpaired surrogate and each NUL becomes U+FFFD, the
 * replacement character (what `String.prototype.toWellFormed` and every UTF-8 decoder do with
 * an unpaired surrogate). Deterministic, so redeliveries store the same thing.
 */
export function storableText(text: string): string {
  return text.replace(LONE_SURROGATE, '\ufffd').replaceAll('\u0000', '\ufffd');
}

function storableValue(value: unknown): unknown {
  if (typeof value === 'string') return storableText(value);
  if (Array.isArray(value)) return value.map(storableValue);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, inner]) => [storableText(key), storableValue(inner)]));
  }
  return value;
}

/**
 * Decodes a message body into the event consumers are handed: every string in it (keys too)
 * storable in PostgreSQL text and jsonb. A publisher that let a lone surrogate or a NUL through
 * must not make a consumer fail on its own storage format, again on every redelivery, and lose
 * the event to the poison queue; the audit entry then hashes exactly what it stores.
 */
export function decodeDelivery(body: string): MerxEvent {
  const event = JSON.parse(body) as MerxEvent;
  return UNSTORABLE_ESCAPE.test(body) ? (storableValue(event) as MerxEvent) : event;
}

/**
 * Decodes the body of a message carrying several events (a JSON array of them, see amqp-bus.ts)
 * the same way as one event's. Anything but an array of objects is refused: such bytes will
 * never succeed, and go to the poison queue whole.
 */
export function decodeDeliveries(body: string): MerxEvent[] {
  const parsed = JSON.parse(body) as unknown;
  if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every((item) => item !== null && typeof item === 'object' && !Array.isArray(item)))
    throw new Error('an event batch must be a non-empty JSON array of events');
  return (UNSTORABLE_ESCAPE.test(body) ? storableValue(parsed) : parsed) as MerxEvent[];
}

/** A handler error as an operator reads it: its message, bounded and storable. */
export function describeFailure(error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  return storableText(text.slice(0, 2_000));
}
