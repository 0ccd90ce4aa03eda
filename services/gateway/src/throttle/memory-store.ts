import { evaluateBucket, evaluateWindow, retryAfterSecondsOf, type BucketState, type ClassState, type Decision, type WindowState } from './algorithms.js';
import { applyOverride, concurrencyField, type ClassSpec, type ConcurrencyClass, type OverrideFields } from './policy.js';
import type { ConsumeRequest, LimiterStore, SlotDecision, SlotRequest } from './store.js';

export interface MemoryStoreOptions {
  now?: () => number;
  /** Fraction of every budget this store grants: 1 alone, 1/replicas as a per-replica fallback. */
  share?: number;
  /** Entries kept before expired ones are swept. */
  sweepAbove?: number;
}

interface Entry {
  state: BucketState | WindowState;
  expiresAt: number;
}

function scaled(spec: ClassSpec, share: number): ClassSpec {
  if (share === 1) return spec;
  // Capacities shrink, windows and refill periods stay: each replica grants its share at the same pace.
  return spec.kind === 'bucket'
    ? { ...spec, a: Math.max(1, Math.floor(spec.a * share)), b: spec.b * share }
    : { ...spec, a: Math.max(1, Math.floor(spec.a * share)) };
}

export class MemoryLimiterStore implements LimiterStore {
  private readonly entries = new Map<string, Entry>();
  private readonly overrides = new Map<string, { fields: OverrideFields; version: number }>();
  /** Open slots by `<merchant>|<cap name>`: when each one's lease runs out. */
  private readonly slots = new Map<string, Map<string, number>>();
  private readonly now: () => number;
  private readonly share: number;
  private readonly sweepAbove: number;

  constructor(options: MemoryStoreOptions = {}) {
    this.now = options.now ?? Date.now;
    this.share = options.share ?? 1;
    this.sweepAbove = options.sweepAbove ?? 100_000;
  }

  async consume(request: ConsumeRequest): Promise<Decision> {
    return this.consumeNow(request);
  }

  consumeNow(request: ConsumeRequest): Decision {
    const now = this.now();
    const fields = request.merchantId ? this.overrides.get(request.merchantId)?.fields : undefined;
    const evaluations = request.specs.map((base) => {
      const spec = scaled(applyOverride(base, fields), this.share);
      const key = `${request.subject}|${spec.name}`;
      const stored = this.entries.get(key);
      const live = stored && stored.expiresAt > now ? stored.state : undefined;
      const evaluation =
        spec.kind === 'bucket' ? evaluateBucket(spec, live as BucketState | undefined, now) : evaluateWindow(spec, live as WindowState | undefined, now);
      return { key, evaluation };
    });
    const refused = evaluations.find(({ evaluation }) => !evaluation.allowed);
    // A refused request takes nothing, so classes that would have given report their untouched remainder.
    const classes: ClassState[] = evaluations.map(({ evaluation }) =>
      refused && evaluation.allowed ? { ...evaluation.state, remaining: evaluation.state.remaining + 1 } : evaluation.state,
    );
    if (refused) {
      return { allowed: false, refusedBy: refused.evaluation.state.name, retryAfterSeconds: retryAfterSecondsOf(refused.evaluation.retryAfterMs), classes };
    }
    for (const { key, evaluation } of evaluations) this.entries.set(key, { state: evaluation.next, expiresAt: now + evaluation.ttlMs });
    if (this.entries.size > this.sweepAbove) this.sweep(now);
    return { allowed: true, retryAfterSeconds: 0, classes };
  }

  private sweep(now: number): void {
    for (const [key, entry] of this.entries) if (entry.expiresAt <= now) this.entries.delete(key);
  }

  async setOverride(merchantId: string, fields: OverrideFields, version: number): Promise<void> {
    const existing = this.overrides.get(merchantId);
    if (existing && existing.version >= version) return;
    this.overrides.set(merchantId, { fields, version });
  }

  async acquireSlot(request: SlotRequest): Promise<SlotDecision> {
    return this.acquireSlotNow(request);
  }

  acquireSlotNow(request: SlotRequest): SlotDecision {
    const now = this.now();
    const fromOverride = this.overrides.get(request.merchantId)?.fields[concurrencyField(request.name)];
    // As a bucket's capacity: each replica of a degraded deployment grants its share, at least one.
    const cap = this.share === 1 ? (fromOverride ?? request.cap) : Math.max(1, Math.floor((fromOverride ?? request.cap) * this.share));
    const key = `${request.merchantId}|${request.name}`;
    let open = this.slots.get(key);
    if (!open) this.slots.set(key, (open = new Map()));
    for (const [slot, expiresAt] of open) if (expiresAt <= now) open.delete(slot);
    if (open.size >= cap) return { allowed: false, cap, open: open.size };
    open.set(request.slot, now + request.ttlMs);
    return { allowed: true, cap, open: open.size };
  }

  async renewSlots(merchantId: string, name: ConcurrencyClass, slots: string[], ttlMs: number): Promise<void> {
    const key = `${merchantId}|${name}`;
    let open = this.slots.get(key);
    if (!open) this.slots.set(key, (open = new Map()));
    const expiresAt = this.now() + ttlMs;
    for (const slot of slots) open.set(slot, expiresAt);
  }

  async releaseSlot(merchantId: string, name: ConcurrencyClass, slot: string): Promise<void> {
    const key = `${merchantId}|${name}`;
    const open = this.slots.get(key);
    open?.delete(slot);
    if (open?.size === 0) this.slots.delete(key);
  }

  degradation(): string | undefined {
    return undefined;
  }

  async close(): Promise<void> {
    this.entries.clear();
    this.slots.clear();
  }
}
