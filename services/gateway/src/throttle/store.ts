import type { Decision } from './algorithms.js';
import type { ClassSpec, ConcurrencyClass, OverrideFields } from './policy.js';

export interface ConsumeRequest {
  /** Whose budget: `m:<merchant id>` or `c:<client id>`; nothing else shares it. */
  subject: string;
  /** Merchant whose operator override applies, if any. */
  merchantId?: string;
  /** The plan's numbers, in checking order. */
  specs: ClassSpec[];
}

/** One slot of a concurrency cap (an open StreamEvents call), held under a lease that expires unless renewed. */
export interface SlotRequest {
  merchantId: string;
  name: ConcurrencyClass;
  /** The plan's cap; the merchant's operator override replaces it. */
  cap: number;
  /** Unique to the slot: what a renewal and the release name. */
  slot: string;
  /** How long the slot counts without a renewal: a replica that dies leaks it no longer. */
  ttlMs: number;
}

export interface SlotDecision {
  allowed: boolean;
  /** The cap that applied (the override's when there is one). */
  cap: number;
  /** Slots of the merchant open now, this one included when it was granted. */
  open: number;
}

/** The limiter state; Redis in the distributed mode, memory in the embedded one, the same semantics. */
export interface LimiterStore {
  /** Takes one unit from every class, or from none when any class is empty (the first empty one is named). */
  consume(request: ConsumeRequest): Promise<Decision>;
  /** An operator override; an older version than the stored one is ignored (events may arrive out of order). */
  setOverride(merchantId: string, fields: OverrideFields, version: number): Promise<void>;
  /** Takes a slot when fewer than the cap are open (slots whose lease ran out no longer count). */
  acquireSlot(request: SlotRequest): Promise<SlotDecision>;
  /**
   * Extends the leases of slots still held. A slot the store no longer has (Redis flushed, or
   * granted by the local fallback while Redis was away) is counted again.
   */
  renewSlots(merchantId: string, name: ConcurrencyClass, slots: string[], ttlMs: number): Promise<void>;
  releaseSlot(merchantId: string, name: ConcurrencyClass, slot: string): Promise<void>;
  /** Undefined when healthy; otherwise words for /readyz (the limiter still serves). */
  degradation(): string | undefined;
  close(): Promise<void>;
}

/** A store that lives elsewhere (Redis) and can be away: the failover store waits for it and probes it. */
export interface RemoteLimiterStore extends LimiterStore {
  ready(timeoutMs: number): Promise<void>;
  ping(): Promise<void>;
}
