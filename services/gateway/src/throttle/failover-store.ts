import type { Logger } from '@merx/kit';
import type { Decision } from './algorithms.js';
import { MemoryLimiterStore } from './memory-store.js';
import type { ConcurrencyClass, OverrideFields } from './policy.js';
import type { ConsumeRequest, LimiterStore, RemoteLimiterStore, SlotDecision, SlotRequest } from './store.js';

export interface FailoverOptions {
  logger: Logger;
  /** Replicas expected to share the budget; each grants 1/replicas of it while Redis is away. */
  expectedReplicas: number;
  probeIntervalMs?: number;
}

/**
 * Redis while it answers; a per-replica memory limiter while it does not. The API fails open in
 * a bounded way (at most `expectedReplicas` × the budget in total), never closed, and goes back
 * to Redis as soon as a background probe gets an answer.
 */
export class FailoverLimiterStore implements LimiterStore {
  private readonly local: MemoryLimiterStore;
  private degradedSince: Date | undefined;
  private probe: NodeJS.Timeout | undefined;
  private readonly probeIntervalMs: number;

  constructor(
    private readonly primary: RemoteLimiterStore,
    private readonly options: FailoverOptions,
  ) {
    this.local = new MemoryLimiterStore({ share: 1 / Math.max(1, options.expectedReplicas) });
    this.probeIntervalMs = options.probeIntervalMs ?? 500;
  }

  /** Waits (bounded) for the first connection, so a fresh replica does not start on its fallback. */
  async start(timeoutMs = 3_000): Promise<void> {
    try {
      await this.primary.ready(timeoutMs);
    } catch (error) {
      this.degrade(error);
    }
  }

  async consume(request: ConsumeRequest): Promise<Decision> {
    if (this.degradedSince) return this.local.consumeNow(request);
    try {
      return await this.primary.consume(request);
    } catch (error) {
      this.degrade(error);
      return this.local.consumeNow(request);
    }
  }

  /** While Redis is away each replica grants its share of the cap, as of every budget. */
  async acquireSlot(request: SlotRequest): Promise<SlotDecision> {
    if (this.degradedSince) return this.local.acquireSlotNow(request);
    try {
      return await this.primary.acquireSlot(request);
    } catch (error) {
      this.degrade(error);
      return this.local.acquireSlotNow(request);
    }
  }

  /**
   * Renewals go where slots are counted now, and add back what that store lacks: slots taken in
   * Redis count locally while it is away, and those granted locally count in Redis once it is back.
   */
  async renewSlots(merchantId: string, name: ConcurrencyClass, slots: string[], ttlMs: number): Promise<void> {
    if (!this.degradedSince) {
      try {
        return await this.primary.renewSlots(merchantId, name, slots, ttlMs);
      } catch (error) {
        this.degrade(error);
      }
    }
    await this.local.renewSlots(merchantId, name, slots, ttlMs);
  }

  /** From both: a slot may have been counted in either. A release Redis missed ends with the slot's lease. */
  async releaseSlot(merchantId: string, name: ConcurrencyClass, slot: string): Promise<void> {
    await this.local.releaseSlot(merchantId, name, slot);
    if (this.degradedSince) return;
    try {
      await this.primary.releaseSlot(merchantId, name, slot);
    } catch (error) {
      this.degrade(error);
    }
  }

  private degrade(error: unknown): void {
    if (this.degradedSince) return;
    this.degradedSince = new Date();
    this.options.logger.warn(
      { err: error, expected_replicas: this.options.expectedReplicas },
      'redis unreachable: throttling with a local per-replica limiter',
    );
    this.probe = setInterval(() => {
      this.primary.ping().then(
        () => this.recover(),
        () => undefined,
      );
    }, this.probeIntervalMs);
    this.probe.unref();
  }

  private recover(): void {
    if (!this.degradedSince) return;
    this.options.logger.info({ degraded_for_ms: Date.now() - this.degradedSince.getTime() }, 'redis reachable again: throttling with the shared limiter');
    this.degradedSince = undefined;
    clearInterval(this.probe);
    this.probe = undefined;
  }

  async setOverride(merchantId: string, fields: OverrideFields, version: number): Promise<void> {
    await this.local.setOverride(merchantId, fields, version);
    await this.primary.setOverride(merchantId, fields, version);
  }

  degradation(): string | undefined {
    if (!this.degradedSince) return undefined;
    return `degraded: redis unreachable since ${this.degradedSince.toISOString()}; throttling locally with 1/${this.options.expectedReplicas} of each budget per replica`;
  }

  async close(): Promise<void> {
    clearInterval(this.probe);
    await this.primary.close();
    await this.local.close();
  }
}
