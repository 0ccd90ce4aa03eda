/**
 * When a failed delivery is tried again. The n-th failure waits the n-th step of the schedule
 * (the last step repeats), spread by ±JITTER so endpoints that failed together are not retried
 * together; a receiver's Retry-After (429/503) can only lengthen the wait. No attempt is scheduled
 * beyond the window that started with the first attempt: the delivery is dead instead.
 */
export interface RetryPolicy {
  schedule: readonly number[];
  windowMs: number;
  /** [0, 1); injectable so tests can pin the jitter. */
  random?: () => number;
}

export const JITTER = 0.1;

export interface FailedAttempt {
  /** Attempts made so far, including the one that just failed. */
  attemptCount: number;
  firstAttemptAt: Date;
  now: Date;
  retryAfterMs: number | null;
}

/** The next attempt's time, or undefined when the delivery is out of time and dead. */
export function nextAttemptAfterFailure(policy: RetryPolicy, failed: FailedAttempt): Date | undefined {
  const { schedule } = policy;
  const step = schedule[Math.min(failed.attemptCount - 1, schedule.length - 1)]!;
  const spread = 1 + (2 * (policy.random ?? Math.random)() - 1) * JITTER;
  const delay = Math.max(Math.round(step * spread), failed.retryAfterMs ?? 0);
  const next = failed.now.getTime() + delay;
  if (next > failed.firstAttemptAt.getTime() + policy.windowMs) return undefined;
  return new Date(next);
}
