/**
 * Sharing the delivery engine fairly (issue 29). Waiting on a receiver costs a socket, not a
 * thread, so a worker keeps thousands of requests in flight; what one merchant may hold of them is
 * capped per endpoint and per merchant, across every worker. Endpoints whose receivers time out
 * (or answer slower than MERX_WEBHOOK_SLOW_AFTER) move to the slow lane, which has caps of its own
 * (per merchant, and a share of each worker), so requests left hanging there never take what the
 * fast lane is sent with, whoever's endpoints they are.
 */

/** Whether an attempt puts its endpoint in the slow lane: it timed out, or took `slowAfterMs` or longer. */
export function isSlowAttempt(attempt: { error: string | null; durationMs: number }, slowAfterMs: number): boolean {
  return attempt.error === 'timeout' || attempt.durationMs >= slowAfterMs;
}

/** Requests in flight or room left, per lane. */
export interface PerLane {
  fast: number;
  slow: number;
}

/** An endpoint a claim may take deliveries of, in the order the claim serves them. */
export interface ClaimCandidate {
  merchantId: string;
  slow: boolean;
  /** How many more requests its own cap lets it have. */
  room: number;
}

export interface ClaimBudget {
  /** What the worker can take now. */
  total: number;
  /** Of that, what may go to slow endpoints (the worker's slow share minus what it has there). */
  slow: number;
  /** Per merchant, what its caps let it have in flight on top of what it has. */
  merchantRoom: ReadonlyMap<string, PerLane>;
}

/**
 * How many deliveries to take of each candidate: one at a time, going round the candidates in
 * order, within the endpoint's room, its merchant's room in the endpoint's lane and the worker's
 * budget, so no endpoint or merchant gets a second turn before everyone with room had a first.
 */
export function shareClaimBudget(candidates: readonly ClaimCandidate[], budget: ClaimBudget): number[] {
  const take = candidates.map(() => 0);
  const merchantRoom = new Map([...budget.merchantRoom].map(([merchantId, room]) => [merchantId, { ...room }]));
  let total = budget.total;
  let slow = budget.slow;
  for (let progressed = true; total > 0 && progressed;) {
    progressed = false;
    for (let i = 0; i < candidates.length && total > 0; i++) {
      const candidate = candidates[i]!;
      const room = merchantRoom.get(candidate.merchantId);
      const lane = candidate.slow ? 'slow' : 'fast';
      if (take[i]! >= candidate.room || !room || room[lane] <= 0 || (candidate.slow && slow <= 0)) continue;
      take[i]! += 1;
      room[lane] -= 1;
      total -= 1;
      if (candidate.slow) slow -= 1;
      progressed = true;
    }
  }
  return take;
}
