import type { Decision } from './algorithms.js';
import type { ClassSpec, OverrideFields } from './policy.js';

export interface ConsumeRequest {
  /** Whose budget: `m:<merchant id>` or `c:<client id>`; nothing else shares it. */
  subject: string;
  /** Merchant whose operator override applies, if any. */
  merchantId?: string;
  /** The plan's numbers, in checking order. */
  specs: ClassSpec[];
}

/** The limiter state; Redis in the distributed mode, memory in the embedded one, the same semantics. */
export interface LimiterStore {
  /** Takes one unit from every class, or from none when any class is empty (the first empty one is named). */
  consume(request: ConsumeRequest): Promise<Decision>;
  /** An operator override; an older version than the stored one is ignored (events may arrive out of order). */
  setOverride(merchantId: string, fields: OverrideFields, version: number): Promise<void>;
  /** Undefined when healthy; otherwise words for /readyz (the limiter still serves). */
  degradation(): string | undefined;
  close(): Promise<void>;
}

/** A store that lives elsewhere (Redis) and can be away: the failover store waits for it and probes it. */
export interface RemoteLimiterStore extends LimiterStore {
  ready(timeoutMs: number): Promise<void>;
  ping(): Promise<void>;
}
