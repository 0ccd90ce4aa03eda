import { randomUUID } from 'node:crypto';
import { RateLimited, type Logger } from '@merx/kit';
import type { ConcurrencyClass } from './policy.js';
import type { LimiterStore, SlotDecision } from './store.js';

/** A slot this replica holds; releasing it twice releases it once. */
export interface HeldSlot {
  release(): void;
}

export interface ConcurrencySlotsOptions {
  logger: Logger;
  /** How long a slot counts without a renewal: what a replica that dies leaks, at most. */
  ttlMs?: number;
  /** How often every held slot is renewed; a third of the lease by default, so one missed renewal costs nothing. */
  renewEveryMs?: number;
}

/** RESOURCE_EXHAUSTED over gRPC (429 over REST), naming the cap and how many are open. */
export class ConcurrencyCapReached extends RateLimited {
  constructor(name: ConcurrencyClass, what: string, decision: SlotDecision) {
    super(name, 5);
    this.message =
      `This merchant already has ${decision.open} ${what} open, its cap of ${decision.cap} (${name}.concurrent); ` +
      `end one before opening another, or ask the operator for a higher cap.`;
  }
}

/**
 * The slots of concurrency caps (open StreamEvents calls) held by this replica, in the shared
 * throttle store. Each slot is a lease the store forgets after `ttlMs` unless renewed, and this
 * replica renews all of its slots every `renewEveryMs`: a replica that crashes or loses its
 * network leaks its slots for one lease at most, never for good.
 */
export class ConcurrencySlots {
  private readonly held = new Map<string, { merchantId: string; name: ConcurrencyClass; slots: Set<string> }>();
  private readonly releasing = new Set<Promise<void>>();
  private readonly renewer: NodeJS.Timeout;
  private renewing: Promise<void> | undefined;
  private closed = false;
  readonly ttlMs: number;

  constructor(
    private readonly store: LimiterStore,
    private readonly options: ConcurrencySlotsOptions,
  ) {
    this.ttlMs = options.ttlMs ?? 30_000;
    this.renewer = setInterval(() => void this.renewAll(), options.renewEveryMs ?? Math.floor(this.ttlMs / 3));
    this.renewer.unref();
  }

  /** One slot of the merchant's cap (`cap` is the plan's; an override replaces it in the store), or the refusal. */
  async acquire(merchantId: string, name: ConcurrencyClass, cap: number): Promise<{ decision: SlotDecision; slot?: HeldSlot }> {
    const slot = randomUUID();
    const decision = await this.store.acquireSlot({ merchantId, name, cap, slot, ttlMs: this.ttlMs });
    if (!decision.allowed) return { decision };
    const key = `${merchantId}|${name}`;
    let group = this.held.get(key);
    if (!group) this.held.set(key, (group = { merchantId, name, slots: new Set() }));
    group.slots.add(slot);
    let released = false;
    return {
      decision,
      slot: {
        release: () => {
          // After close every slot has been released already, and the store may be closed too.
          if (released || this.closed) return;
          released = true;
          group.slots.delete(slot);
          if (group.slots.size === 0 && this.held.get(key) === group) this.held.delete(key);
          this.track(this.store.releaseSlot(merchantId, name, slot));
        },
      },
    };
  }

  /** Slots held now, for a merchant or in all. */
  heldCount(merchantId?: string): number {
    let count = 0;
    for (const group of this.held.values()) if (merchantId === undefined || group.merchantId === merchantId) count += group.slots.size;
    return count;
  }

  private track(release: Promise<void>): void {
    const settled = release
      .catch((error: unknown) => {
        // Not lost for good: the store forgets the slot when its lease runs out.
        this.options.logger.warn({ err: error }, 'a concurrency slot was not released; it ends with its lease');
      })
      .finally(() => this.releasing.delete(settled));
    this.releasing.add(settled);
  }

  /** One renewal at a time: a store slower than the interval is not asked twice over. */
  renewAll(): Promise<void> {
    this.renewing ??= (async () => {
      try {
        for (const group of [...this.held.values()]) {
          if (group.slots.size === 0) continue;
          await this.store.renewSlots(group.merchantId, group.name, [...group.slots], this.ttlMs).catch((error: unknown) => {
            this.options.logger.warn({ err: error, merchant_id: group.merchantId }, 'concurrency slots not renewed; retrying at the next renewal');
          });
        }
      } finally {
        this.renewing = undefined;
      }
    })();
    return this.renewing;
  }

  /** Releases every slot still held (the gateway is stopping, so are its streams). */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.renewer);
    await this.renewing;
    for (const group of [...this.held.values()]) for (const slot of group.slots) this.track(this.store.releaseSlot(group.merchantId, group.name, slot));
    this.held.clear();
    await Promise.all([...this.releasing]);
  }
}
