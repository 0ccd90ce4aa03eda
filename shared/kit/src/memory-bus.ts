import { AsyncLocalStorage } from 'node:async_hooks';
import {
  decodeDelivery,
  DEFAULT_RETRY_POLICY,
  describeFailure,
  retryDelayAfter,
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
import type { Db, Queryable } from './db.js';
import { DurableQueueStore, type QueueMessage, type StoredMessage } from './durable-queues.js';
import { eventJson, runInEventContext, topicMatches, type MerxEvent } from './events.js';
import type { Logger } from './logger.js';
import { busMessages, busPoisoned, busRetried } from './metrics.js';
import { inConsumeSpan, startPublishSpan, type TraceCarrier } from './tracing.js';

/**
 * Deliveries start from the empty async context captured at load, as they would behind a broker.
 * Otherwise they inherit the publisher's through setImmediate: behind the outbox relay that is the
 * relay's open PGlite transaction, and createPgliteDb refuses every handler's own transaction.
 */
const runDetached = AsyncLocalStorage.snapshot();

/** How long acks gather before they are deleted together. */
const ACK_DELAY_MS = 5;

interface QueuedMessage {
  body: string;
  topic: string;
  /** Failed deliveries so far. */
  failures: number;
  redelivered: boolean;
  /** Retries caused by an outage (not counted in `failures`); in memory only. */
  outages?: number;
  /** Its row in the durable store; absent for transient queues and on a bus without a store. */
  rowId?: number;
  /** The publish span's W3C fields, as a broker message's headers carry them; in memory only. */
  trace?: TraceCarrier;
}

interface LocalQueue {
  name: string;
  /** Kept in the durable store (a work queue on a bus with one), or memory only. */
  stored: boolean;
  transient: boolean;
  bindings: string[];
  ready: QueuedMessage[];
  /** Failed messages waiting out their retry delay. */
  waiting: Set<NodeJS.Timeout>;
  handlers: EventHandler[];
  turn: number;
  inFlight: number;
  prefetch: number;
  deliveryLimit: number;
  /** Poisoned messages of a queue that is not stored; stored ones are in the store. */
  poison: PoisonedMessage[];
}

/** A publication routed but not yet written (MemoryBus.route). */
export interface RoutedPublication {
  /** The rows of the stored queues, in the order their ids must come back. */
  stored: QueueMessage[];
  /** The insert of `stored` as one statement returning their ids; parameters appended to `values`. */
  enqueueStatement(values: unknown[]): string;
  /** The ids of `stored` read back in the writing transaction, for a statement whose own rows could not carry them. */
  readIds(tx: Queryable): Promise<number[]>;
  /** Given the ids the insert returned (sorted), what hands every message to its consumers after commit. */
  handOver(ids: number[]): () => void;
}

export interface MemoryBusOptions {
  logger?: Logger;
  /** The `service` label of this bus's metrics. */
  service?: string;
  retry?: RetryPolicy;
  /** Where a durable bus keeps its queues; the embedded mode's `merx_bus` schema unless given. */
  schema?: string;
}

/**
 * The embedded mode's bus: the same semantics as the RabbitMQ one (topic bindings, competing
 * consumers on a named queue, redelivery after a delay on failure, a poison queue after the
 * delivery limit), without a broker. Messages are serialised on publish so no consumer can
 * mutate another's copy.
 *
 * Opened with `MemoryBus.durable(db)`, work queues are rows in the database (durable-queues.ts):
 * the outbox relay writes them in the transaction that deletes its outbox rows, and a row goes
 * only once its consumer's handler has committed, so a crash at any instant loses nothing and
 * poisoned messages survive restarts. Transient queues stay in memory either way.
 */
export class MemoryBus implements Bus {
  readonly kind = 'memory' as const;
  private readonly queues = new Map<string, LocalQueue>();
  private closed = false;
  private readonly logger: Logger | undefined;
  private readonly service: string;
  private readonly retry: RetryPolicy;
  private pendingAcks: number[] = [];
  private ackFlush: Promise<void> | undefined;
  private readonly storeWrites = new Set<Promise<unknown>>();
  readonly poison: PoisonQueues;

  constructor(
    options: MemoryBusOptions = {},
    private readonly store?: DurableQueueStore,
  ) {
    this.logger = options.logger;
    this.service = options.service ?? 'embedded';
    this.retry = options.retry ?? DEFAULT_RETRY_POLICY;
    this.poison = this.poisonQueues();
  }

  /** A bus whose work queues live in `db`, with what a previous run left queued or poisoned. */
  static async durable(db: Db, options: MemoryBusOptions = {}): Promise<MemoryBus> {
    const store = await DurableQueueStore.open(db, options.schema);
    const bus = new MemoryBus(options, store);
    for (const [queue, bindings] of await store.bindings()) bus.declare({ queue, bindings });
    for (const message of await store.pending()) {
      const queue = bus.queues.get(message.queue);
      // Redelivered: the last run may have handed it to a consumer whose commit it never acked.
      if (queue) bus.enqueueLater(queue, fromStore(message, true), message.waitMs);
    }
    return bus;
  }

  /** True when publications may join a transaction of `db` (see publishWithin). */
  storesIn(db: Db): boolean {
    return this.store?.db === db;
  }

  async publish(events: MerxEvent[]): Promise<void> {
    const deliver = this.store ? await this.store.db.transaction((tx) => this.publishWithin(tx, events)) : await this.publishWithin(undefined, events);
    deliver();
  }

  /**
   * Writes the messages of `events` to their stored queues inside the caller's transaction and
   * returns what hands them to consumers, to be called once that transaction has committed.
   */
  async publishWithin(tx: Queryable | undefined, events: MerxEvent[]): Promise<() => void> {
    const publication = this.route(events);
    if (publication.stored.length === 0) return publication.handOver([]);
    if (!tx || !this.store) throw new Error('a stored queue needs the publishing transaction');
    return publication.handOver(await this.store.enqueue(tx, publication.stored));
  }

  /**
   * Routes `events` to the queues bound to them: the rows the stored queues need (for the
   * publisher to write in its own transaction, alone or inside its own statement) and what hands
   * every message to its consumers once those rows have committed, given their ids in order.
   */
  route(events: MerxEvent[]): RoutedPublication {
    const routed: Array<{ queue: LocalQueue; message: QueuedMessage; event: MerxEvent }> = [];
    for (const event of events) {
      const body = eventJson(event);
      const span = startPublishSpan(event, this.service, 'merx-embedded');
      span?.end();
      for (const queue of this.queues.values()) {
        if (queue.bindings.some((pattern) => topicMatches(pattern, event.topic))) {
          routed.push({ queue, message: { body, topic: event.topic, failures: 0, redelivered: false, ...(span ? { trace: span.headers } : {}) }, event });
        }
      }
    }
    const stored = routed.filter((entry) => entry.queue.stored);
    if (stored.length > 0 && !this.store) throw new Error('a stored queue needs the durable store');
    const rows = stored.map(({ queue, message, event }) => ({ queue: queue.name, event, body: message.body }));
    return {
      stored: rows,
      enqueueStatement: (values) => this.store!.enqueueStatement(rows, values),
      readIds: (tx) => this.store!.newestIdsOf(tx, rows),
      handOver: (ids) => {
        if (ids.length !== stored.length) throw new Error(`${stored.length} stored messages were written, ${ids.length} ids came back`);
        stored.forEach((entry, index) => (entry.message.rowId = ids[index]!));
        return () => {
          for (const { queue, message } of routed) {
            if (this.queues.get(queue.name) !== queue) continue; // a transient queue closed meanwhile
            queue.ready.push(message);
            this.drain(queue);
          }
          for (const event of events) busMessages.inc({ service: this.service, direction: 'published', topic: event.topic });
        };
      },
    };
  }

  async consume(options: ConsumerOptions, handler: EventHandler): Promise<Consumer> {
    const queue = this.declare(options);
    if (queue.stored) await this.store!.bind(queue.name, queue.bindings);
    queue.handlers.push(handler);
    this.drain(queue);
    return {
      close: async () => {
        queue.handlers = queue.handlers.filter((h) => h !== handler);
        // Like an exclusive, self-deleting queue on a broker: gone with its last consumer.
        if (queue.transient && queue.handlers.length === 0) this.remove(queue);
      },
    };
  }

  isConnected(): boolean {
    return !this.closed;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const queue of this.queues.values()) {
      queue.handlers = [];
      for (const timer of queue.waiting) clearTimeout(timer);
    }
    await this.flushAcks();
    await Promise.allSettled([...this.storeWrites]);
  }

  private declare(options: ConsumerOptions): LocalQueue {
    let queue = this.queues.get(options.queue);
    if (!queue) {
      queue = {
        name: options.queue,
        stored: this.store !== undefined && !options.transient,
        transient: options.transient === true,
        bindings: [...options.bindings],
        ready: [],
        waiting: new Set(),
        handlers: [],
        turn: 0,
        inFlight: 0,
        prefetch: options.prefetch ?? DEFAULT_PREFETCH,
        deliveryLimit: options.deliveryLimit ?? this.retry.deliveryLimit,
        poison: [],
      };
      this.queues.set(options.queue, queue);
    } else if (queue.handlers.length === 0) {
      // The first consumer of this run declares what the queue is now (a restart loads the last run's).
      queue.bindings = [...options.bindings];
      queue.prefetch = options.prefetch ?? DEFAULT_PREFETCH;
      queue.deliveryLimit = options.deliveryLimit ?? this.retry.deliveryLimit;
    } else {
      for (const binding of options.bindings) if (!queue.bindings.includes(binding)) queue.bindings.push(binding);
    }
    return queue;
  }

  private remove(queue: LocalQueue): void {
    for (const timer of queue.waiting) clearTimeout(timer);
    this.queues.delete(queue.name);
  }

  private drain(queue: LocalQueue): void {
    while (!this.closed && queue.handlers.length > 0 && queue.inFlight < queue.prefetch && queue.ready.length > 0) {
      const message = queue.ready.shift()!;
      const handler = queue.handlers[queue.turn++ % queue.handlers.length]!;
      queue.inFlight++;
      runDetached(setImmediate, () => {
        void this.deliver(queue, message, handler).finally(() => {
          queue.inFlight--;
          this.drain(queue);
        });
      });
    }
  }

  private async deliver(queue: LocalQueue, message: QueuedMessage, handler: EventHandler): Promise<void> {
    let event: MerxEvent | undefined;
    try {
      event = decodeDelivery(message.body);
      const decoded = event;
      const deliveryCount = message.failures + 1;
      // Queues are named after their consuming service (`audit.events`): spans say whose work it is.
      const consumer = { service: queue.name.split('.')[0]!, queue: queue.name, system: 'merx-embedded' as const, deliveryCount };
      await inConsumeSpan({ id: decoded.id, topic: decoded.topic, headers: message.trace }, consumer, () =>
        runInEventContext(decoded, () => handler(decoded, { redelivered: message.redelivered, deliveryCount })),
      );
      busMessages.inc({ service: this.service, direction: 'consumed', topic: message.topic });
      if (message.rowId !== undefined) this.ack(message.rowId);
    } catch (error) {
      if (this.closed) return; // stopping: the stored message is delivered again on the next start
      // A body that does not parse can never succeed: it goes straight to the poison queue.
      await this.failed(queue, message, event ? error : new Error(`unparseable message: ${describeFailure(error)}`), event === undefined);
    }
  }

  private async failed(queue: LocalQueue, message: QueuedMessage, error: unknown, hopeless: boolean): Promise<void> {
    const reason = describeFailure(error);
    const labels = { service: this.service, queue: queue.name, topic: message.topic };
    if (!hopeless && isOutage(error)) {
      const outages = (message.outages ?? 0) + 1;
      const delayMs = outageRetryDelay(this.retry, outages);
      this.logger?.warn(
        { err: error, queue: queue.name, topic: message.topic, retry_in_ms: delayMs },
        'event handler met an outage; retrying later, not counted as a failure',
      );
      if (message.rowId !== undefined) await this.storeWrite(this.store!.retryLater(message.rowId, message.failures, delayMs, reason));
      busRetried.inc(labels);
      this.enqueueLater(queue, { ...message, outages, redelivered: true }, delayMs);
      return;
    }
    const failures = message.failures + 1;
    if (hopeless || failures >= queue.deliveryLimit) {
      this.logger?.error(
        { err: error, queue: queue.name, topic: message.topic, failures },
        'message failed its last allowed delivery; moved to the poison queue',
      );
      if (message.rowId !== undefined) await this.storeWrite(this.store!.poison(message.rowId, failures, reason));
      else queue.poison.push({ queue: queue.name, event: safeParse(message.body), failures, last_error: reason, poisoned_at: new Date().toISOString() });
      busPoisoned.inc(labels);
      busMessages.inc({ service: this.service, direction: 'poisoned', topic: message.topic });
      return;
    }
    const delayMs = retryDelayAfter(this.retry, failures);
    this.logger?.warn({ err: error, queue: queue.name, topic: message.topic, failures, retry_in_ms: delayMs }, 'event handler failed; retrying later');
    if (message.rowId !== undefined) await this.storeWrite(this.store!.retryLater(message.rowId, failures, delayMs, reason));
    busRetried.inc(labels);
    this.enqueueLater(queue, { ...message, failures, redelivered: true }, delayMs);
  }

  private enqueueLater(queue: LocalQueue, message: QueuedMessage, delayMs: number): void {
    if (delayMs <= 0) {
      queue.ready.push(message);
      this.drain(queue);
      return;
    }
    const timer = setTimeout(() => {
      queue.waiting.delete(timer);
      queue.ready.push(message);
      this.drain(queue);
    }, delayMs);
    timer.unref();
    queue.waiting.add(timer);
  }

  /**
   * Acks of many deliveries leave the store in one statement, a few milliseconds after the first:
   * PGlite runs one statement at a time, and a late ack only means a redelivery after a crash,
   * which the consumer's inbox drops.
   */
  private ack(rowId: number): void {
    this.pendingAcks.push(rowId);
    this.ackFlush ??= new Promise<void>((resolve) => runDetached(setTimeout, resolve, ACK_DELAY_MS)).then(() => this.flushAcks());
  }

  private async flushAcks(): Promise<void> {
    this.ackFlush = undefined;
    const ids = this.pendingAcks;
    this.pendingAcks = [];
    // A failed delete only means a redelivery after the next start, which the inbox drops.
    if (ids.length > 0) await this.storeWrite(this.store!.ack(ids));
  }

  private async storeWrite(write: Promise<unknown>): Promise<void> {
    this.storeWrites.add(write);
    try {
      await write;
    } catch (error) {
      this.logger?.error({ err: error }, 'durable queue store write failed');
    } finally {
      this.storeWrites.delete(write);
    }
  }

  private poisonQueues(): PoisonQueues {
    const local = (name: string) => this.queues.get(name)?.poison ?? [];
    return {
      counts: async (queues) => (this.store ? this.store.poisonCounts(queues) : Object.fromEntries(queues.map((queue) => [queue, local(queue).length]))),
      list: async (queue, limit) => (this.store ? this.store.listPoison(queue, limit) : { total: local(queue).length, messages: local(queue).slice(0, limit) }),
      replay: async (name, eventIds) => {
        const queue = this.queues.get(name);
        if (this.store) {
          const replayed = await runDetached(() => this.store!.replay(name, eventIds));
          if (queue) for (const message of replayed) this.enqueueLater(queue, fromStore(message, true), 0);
          return replayed.length;
        }
        if (!queue) return 0;
        const chosen = queue.poison.filter((message) => !eventIds || eventIds.includes(message.event.id));
        queue.poison = queue.poison.filter((message) => !chosen.includes(message));
        for (const message of chosen)
          this.enqueueLater(queue, { body: JSON.stringify(message.event), topic: message.event.topic, failures: 0, redelivered: true }, 0);
        return chosen.length;
      },
      consumedQueues: () => [...this.queues.values()].filter((queue) => !queue.transient && queue.handlers.length > 0).map((queue) => queue.name),
    };
  }
}

function fromStore(message: StoredMessage, redelivered: boolean): QueuedMessage {
  return { body: message.body, topic: message.topic, failures: message.failures, redelivered, rowId: message.id };
}

function safeParse(body: string): MerxEvent {
  try {
    return JSON.parse(body) as MerxEvent;
  } catch {
    return { id: 'unparseable', topic: 'unparseable', merchant_id: '', created_at: new Date(0).toISOString(), api_version: 'v1', data: { object: { body } } };
  }
}
