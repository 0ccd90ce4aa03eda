import type { ClassSpec, ThrottleClass } from './policy.js';

/**
 * The two algorithms, on plain state, for the memory store. redis-store.ts runs the same
 * arithmetic in Lua; the component tests hold both stores to the same behaviour.
 */
export interface ClassState {
  name: ThrottleClass | 'bulk';
  /** Policy quota and window (seconds) for RateLimit-Policy. */
  quota: number;
  window: number;
  remaining: number;
  /** Seconds until the quota is whole again. */
  reset: number;
}

export interface Decision {
  allowed: boolean;
  refusedBy?: ThrottleClass | 'bulk';
  retryAfterSeconds: number;
  classes: ClassState[];
}

export interface BucketState {
  tokens: number;
  at: number;
}

export interface WindowState {
  index: number;
  current: number;
  previous: number;
}

export interface Evaluation<State> {
  allowed: boolean;
  next: State;
  state: ClassState;
  retryAfterMs: number;
  ttlMs: number;
}

export function bucketWindowSeconds(spec: ClassSpec): number {
  return Math.max(1, Math.ceil(spec.a / spec.b));
}

export function evaluateBucket(spec: ClassSpec, stored: BucketState | undefined, now: number): Evaluation<BucketState> {
  const capacity = spec.a;
  const perMs = spec.b / 1000;
  const before = stored ? Math.min(capacity, stored.tokens + Math.max(0, now - stored.at) * perMs) : capacity;
  const allowed = before >= 1;
  const after = allowed ? before - 1 : before;
  return {
    allowed,
    next: { tokens: after, at: now },
    state: { name: spec.name, quota: capacity, window: bucketWindowSeconds(spec), remaining: Math.floor(after), reset: Math.ceil((capacity - after) / spec.b) },
    retryAfterMs: allowed ? 0 : (1 - before) / perMs,
    ttlMs: Math.ceil((capacity / spec.b) * 1000) + 1000,
  };
}

/**
 * When a sliding window's quota is whole again: requests of the current fixed window weigh on
 * the estimate until the end of the next one; with none, the previous window's weigh until
 * the current one ends. (Not the time to the next window boundary: at that boundary the
 * current count only becomes the weighted previous one.)
 */
export function windowWholeAfterMs(index: number, windowMs: number, current: number, previous: number, now: number): number {
  if (current > 0) return (index + 2) * windowMs - now;
  if (previous > 0) return (index + 1) * windowMs - now;
  return 0;
}

/** Sliding window counter: the previous fixed window's count, weighted by how much of it still overlaps. */
export function evaluateWindow(spec: ClassSpec, stored: WindowState | undefined, now: number): Evaluation<WindowState> {
  const limit = spec.a;
  const windowMs = spec.b * 1000;
  const index = Math.floor(now / windowMs);
  let current = 0;
  let previous = 0;
  if (stored?.index === index) ({ current, previous } = stored);
  else if (stored?.index === index - 1) previous = stored.current;
  const elapsed = (now - index * windowMs) / windowMs;
  const estimate = previous * (1 - elapsed) + current;
  const allowed = estimate + 1 <= limit;
  let retryAfterMs = 0;
  if (!allowed) {
    if (current + 1 <= limit) retryAfterMs = (1 - (limit - 1 - current) / previous - elapsed) * windowMs;
    else retryAfterMs = (1 - elapsed) * windowMs + (1 - (limit - 1) / current) * windowMs;
  }
  const used = allowed ? current + 1 : current;
  return {
    allowed,
    next: { index, current: used, previous },
    state: {
      name: spec.name,
      quota: limit,
      window: spec.b,
      remaining: Math.max(0, Math.floor(limit - estimate - (allowed ? 1 : 0))),
      reset: Math.ceil(windowWholeAfterMs(index, windowMs, used, previous, now) / 1000),
    },
    retryAfterMs,
    ttlMs: 2 * windowMs + 1000,
  };
}

export const retryAfterSecondsOf = (ms: number) => Math.max(1, Math.ceil(ms / 1000));
