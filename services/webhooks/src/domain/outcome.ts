import type { AttemptError, DeliveryStatus } from './delivery.js';
import { nextAttemptAfterFailure, type RetryPolicy } from './retry.js';

/** What the sender reports about one attempt. */
export interface SendResult {
  ok: boolean;
  statusCode: number | null;
  durationMs: number;
  error: AttemptError | null;
  errorMessage: string | null;
  responseExcerpt: string | null;
  retryAfterMs: number | null;
}

export interface AttemptDecision {
  number: number;
  status: DeliveryStatus;
  nextAttemptAt: Date | null;
  firstAttemptAt: Date;
  /** 410 Gone: the receiver says the endpoint no longer exists; the subscription is switched off at once. */
  endpointGone: boolean;
}

/**
 * Where a delivery stands after an attempt: succeeded on 2xx, dead on 410 or when no further
 * attempt fits the retry window, otherwise failing with the next attempt scheduled.
 */
export function decideAfterAttempt(
  delivery: { attemptCount: number; firstAttemptAt: Date | null },
  result: SendResult,
  startedAt: Date,
  finishedAt: Date,
  policy: RetryPolicy,
): AttemptDecision {
  const number = delivery.attemptCount + 1;
  const firstAttemptAt = delivery.firstAttemptAt ?? startedAt;
  if (result.ok) return { number, status: 'succeeded', nextAttemptAt: null, firstAttemptAt, endpointGone: false };
  if (result.statusCode === 410) return { number, status: 'dead', nextAttemptAt: null, firstAttemptAt, endpointGone: true };
  const next = nextAttemptAfterFailure(policy, { attemptCount: number, firstAttemptAt, now: finishedAt, retryAfterMs: result.retryAfterMs });
  return { number, status: next ? 'failing' : 'dead', nextAttemptAt: next ?? null, firstAttemptAt, endpointGone: false };
}
