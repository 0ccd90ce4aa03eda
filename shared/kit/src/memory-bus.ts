import { AsyncLocalStorage } from 'node:async_hooks';
import type { Bus, Consumer, ConsumerOptions, EventHandler } from './bus.js';
import { DEFAULT_DELIVERY_LIMIT } from './bus.js';
import { runInEventContext, topicMatches, type MerxEvent } from './events.js';
import type { Logger } from './logger.js';

/**
 * Deliveries start from the empty async context captured at load, as they would behind a broker.
 * Otherwise they inherit the publisher's through setImmediate: behind the outbox relay that is the
 * relay's open PGlite transaction, and createPgliteDb refuses every handler's own transaction.
 */
const runDetached = AsyncLocalStorage.snapshot();

interface QueuedMessage {
  body: string;
  deliveryCount: number;
}

interface MemoryQueue {
  name: string;
  bindings: string[];
  messages: QueuedMessage[];
  handlers: EventHandler[];
  inFlight: number;
  prefetch: number;
  deliveryLimit: number;
  poison: string[];
}

/**
 * The embedded mode's bus: the same semantics as the RabbitMQ one (topic bindings, competing
 * consumers on a named queue, redelivery on failure, a poison list after the delivery limit),
 * without a broker. Messages are serialised on publish so no consumer can mutate another's copy.
 */
export class MemoryBus implements Bus {
  readonly kind = 'memory' as const;
  private readonly queues = new Map<string, MemoryQueue>();
  private closed = false;

  constructor(private readonly logger?: Logger) {}

  async publish(events: MerxEvent[]): Promise<void> {
    for (const event of events) {
      const body = JSON.stringify(event);
      for (const queue of this.queues.values()) {
        if (queue.bindings.some((pattern) => topicMatches(pattern, event.topic))) {
          queue.messages.push({ body, deliveryCount: 0 });
          this.drain(queue);
        }
      }
    }
  }

  async consume(options: ConsumerOptions, handler: EventHandler): Promise<Consumer> {
    let queue = this.queues.get(options.queue);
    if (!queue) {
      queue = {
        name: options.queue,
        bindings: [...options.bindings],
        messages: [],
        handlers: [],
        inFlight: 0,
        prefetch: options.prefetch ?? 16,
        deliveryLimit: options.deliveryLimit ?? DEFAULT_DELIVERY_LIMIT,
        poison: [],
      };
      this.queues.set(options.queue, queue);
    } else {
      for (const binding of options.bindings) if (!queue.bindings.includes(binding)) queue.bindings.push(binding);
    }
    queue.handlers.push(handler);
    this.drain(queue);
    const target = queue;
    return {
      close: async () => {
        target.handlers = target.handlers.filter((h) => h !== handler);
      },
    };
  }

  /** Messages that exhausted their delivery limit, for tests and operators. */
  poisoned(queueName: string): MerxEvent[] {
    return (this.queues.get(queueName)?.poison ?? []).map((body) => JSON.parse(body) as MerxEvent);
  }

  isConnected(): boolean {
    return !this.closed;
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const queue of this.queues.values()) queue.handlers = [];
  }

  private drain(queue: MemoryQueue): void {
    while (!this.closed && queue.handlers.length > 0 && queue.inFlight < queue.prefetch && queue.messages.length > 0) {
      const message = queue.messages.shift()!;
      const handler = queue.handlers[(message.deliveryCount + queue.inFlight) % queue.handlers.length]!;
      queue.inFlight++;
      message.deliveryCount++;
      runDetached(setImmediate, () => {
        const event = JSON.parse(message.body) as MerxEvent;
        runInEventContext(event, () => handler(event, { redelivered: message.deliveryCount > 1, deliveryCount: message.deliveryCount }))
          .catch((error: unknown) => {
            if (message.deliveryCount >= queue.deliveryLimit) {
              queue.poison.push(message.body);
              this.logger?.error({ err: error, queue: queue.name }, 'message exceeded its delivery limit; moved to the poison list');
            } else {
              queue.messages.push(message);
            }
          })
          .finally(() => {
            queue.inFlight--;
            this.drain(queue);
          });
      });
    }
  }
}
