import type { Queryable } from '@merx/kit';
import type { Attempt, DeliveryStatus } from '../domain/delivery.js';
import { CLAIMS, markEndpointsDue, QUEUE } from './endpoints-store.js';
import { WEBHOOKS_SCHEMA } from './migrations.js';

/**
 * The delivery engine's side of the deliveries: recording attempts, and the worker heartbeats
 * that let the living take over a dead worker's claims. Claiming due work is claims-store's.
 */
const DELIVERIES = `${WEBHOOKS_SCHEMA}.deliveries`;
const ATTEMPTS = `${WEBHOOKS_SCHEMA}.attempts`;

/** What one finished attempt changes: the attempt itself and where its delivery stands afterwards. */
export interface AttemptResult extends Attempt {
  status: DeliveryStatus;
  nextAttemptAt: Date | null;
  firstAttemptAt: Date;
}

/**
 * Records a batch of finished attempts and releases their claims, in one statement whatever the
 * batch size. Only deliveries still claimed by the recording worker change: a worker presumed
 * dead whose claims were handed on (its attempt logged as `interrupted`) cannot overwrite what
 * the next worker does. Answers the ids of the deliveries it recorded. Scheduling the retries on
 * their endpoints is the caller's (`markEndpointsDue`), so it can lock every endpoint it touches
 * in one ordered step.
 */
export async function recordAttempts(tx: Queryable, workerId: string, results: AttemptResult[], now: Date): Promise<Set<string>> {
  if (results.length === 0) return new Set();
  const column = <T>(pick: (r: AttemptResult) => T) => results.map(pick);
  const { rows } = await tx.query<{ delivery_id: string }>(
    `WITH u AS MATERIALIZED (
       SELECT b.*,
              (SELECT c.ctid FROM ${CLAIMS} c
               WHERE c.merchant_id = b.merchant_id AND c.endpoint_id = b.endpoint_id AND c.delivery_id = b.id AND c.worker_id = $14) AS claim_row
       FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::timestamptz[], $6::timestamptz[], $7::int[], $8::text[],
                   $9::text[], $10::timestamptz[], $11::int[], $12::text[], $13::text[])
         AS b(merchant_id, id, status, number, next_attempt_at, first_attempt_at, status_code, error,
              endpoint_id, started_at, duration_ms, error_message, response_excerpt)
     ),
     -- Each step is driven by the rows the previous one returned, looked up by primary key: no
     -- join of one step's result with another's, whose plan would rest on guesses about sizes.
     -- Each attempt's claim, if this worker still holds it, is found by its own key (a subquery
     -- per row, which the planner cannot turn into a join) and deleted by its place in the table:
     -- a join of the batch with claims was planned, once the plan was cached for the statement,
     -- as a pass over every claim in flight for each row of the batch (claims' statistics are
     -- always stale, its rows come and go), which grows with the batch times what is in flight.
     deleted AS (
       DELETE FROM ${CLAIMS} c WHERE c.ctid = ANY (ARRAY(SELECT claim_row FROM u WHERE claim_row IS NOT NULL))
       RETURNING c.ctid AS claim_row
     ),
     -- What this transaction released (a claim found in the snapshot may have been released by
     -- another meanwhile: then the attempt is not this worker's to record).
     released AS (
       SELECT u.* FROM u WHERE u.claim_row = ANY (ARRAY(SELECT claim_row FROM deleted))
     ),
     updated AS (
       UPDATE ${DELIVERIES} d SET status = u.status, attempt_count = GREATEST(d.attempt_count, u.number), next_attempt_at = u.next_attempt_at,
         first_attempt_at = COALESCE(d.first_attempt_at, u.first_attempt_at), last_status_code = u.status_code, last_error = u.error,
         updated_at = $15, completed_at = CASE WHEN u.status IN ('succeeded', 'dead') THEN $15::timestamptz END,
         dead_at = CASE WHEN u.status = 'dead' THEN $15::timestamptz ELSE d.dead_at END
       FROM released u
       WHERE d.merchant_id = u.merchant_id AND d.id = u.id
       RETURNING u.*
     ),
     requeued AS (
       INSERT INTO ${QUEUE} (merchant_id, endpoint_id, next_attempt_at, delivery_id)
       SELECT merchant_id, endpoint_id, next_attempt_at, id FROM updated WHERE next_attempt_at IS NOT NULL
     )
     INSERT INTO ${ATTEMPTS} (merchant_id, delivery_id, number, endpoint_id, started_at, status_code, duration_ms, error, error_message, response_excerpt)
     SELECT u.merchant_id, u.id, u.number, u.endpoint_id, u.started_at, u.status_code, u.duration_ms, u.error, u.error_message, u.response_excerpt
     FROM updated u
     ON CONFLICT DO NOTHING
     RETURNING delivery_id`,
    [
      column((r) => r.merchantId),
      column((r) => r.deliveryId),
      column((r) => r.status),
      column((r) => r.number),
      column((r) => r.nextAttemptAt?.toISOString() ?? null),
      column((r) => r.firstAttemptAt.toISOString()),
      column((r) => r.statusCode),
      column((r) => r.error),
      column((r) => r.endpointId),
      column((r) => r.startedAt.toISOString()),
      column((r) => r.durationMs),
      column((r) => r.errorMessage),
      column((r) => r.responseExcerpt),
      workerId,
      now,
    ],
  );
  return new Set(rows.map((row) => row.delivery_id));
}

/**
 * Whether an endpoint has had no successful attempt since `since`: asked only when a delivery
 * dies, to tell a failing endpoint from a failing delivery. Stops at the first success found.
 */
export async function noSuccessSince(db: Queryable, merchantId: string, endpointId: string, since: Date): Promise<boolean> {
  const { rows } = await db.query<{ succeeded: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM ${ATTEMPTS} WHERE merchant_id = $1 AND endpoint_id = $2 AND started_at >= $3 AND error IS NULL) AS succeeded`,
    [merchantId, endpointId, since],
  );
  return !rows[0]!.succeeded;
}

/** Heartbeat of a live worker; a worker that stops beating loses its claims. */
export async function beatWorker(db: Queryable, workerId: string, now: Date): Promise<void> {
  await db.query(
    `INSERT INTO ${WEBHOOKS_SCHEMA}.workers (id, heartbeat_at) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at`,
    [workerId, now],
  );
}

export async function retireWorker(db: Queryable, workerId: string): Promise<void> {
  await db.query(`DELETE FROM ${WEBHOOKS_SCHEMA}.workers WHERE id = $1`, [workerId]);
}

export interface InterruptedClaim {
  merchantId: string;
  deliveryId: string;
  endpointId: string;
  topic: string;
  eventId: string;
  number: number;
  claimedAt: Date;
  firstAttemptAt: Date | null;
}

/**
 * Claims of workers that stopped beating (killed, partitioned) go back to the queue, due now.
 * The attempt they may have been making is recorded as `interrupted`: it may or may not have
 * reached the endpoint, and the retry carries the same webhook-id so the receiver can tell.
 */
export async function releaseClaimsOfDeadWorkers(tx: Queryable, staleBefore: Date, now: Date): Promise<InterruptedClaim[]> {
  await tx.query(`DELETE FROM ${WEBHOOKS_SCHEMA}.workers WHERE heartbeat_at < $1`, [staleBefore]);
  const { rows } = await tx.query<{
    merchant_id: string;
    id: string;
    endpoint_id: string;
    topic: string;
    event_id: string;
    attempt_count: number;
    claimed_at: Date;
    first_attempt_at: Date | null;
  }>(
    `WITH orphaned AS (
       SELECT merchant_id, endpoint_id, delivery_id FROM ${CLAIMS} c
       WHERE NOT EXISTS (SELECT 1 FROM ${WEBHOOKS_SCHEMA}.workers w WHERE w.id = c.worker_id)
       FOR UPDATE SKIP LOCKED
     ),
     released AS (
       DELETE FROM ${CLAIMS} c USING orphaned o
       WHERE c.merchant_id = o.merchant_id AND c.endpoint_id = o.endpoint_id AND c.delivery_id = o.delivery_id
       RETURNING c.merchant_id, c.delivery_id, c.claimed_at
     ),
     interrupted AS (
       UPDATE ${DELIVERIES} d SET attempt_count = d.attempt_count + 1,
         first_attempt_at = COALESCE(d.first_attempt_at, released.claimed_at), status = 'failing',
         last_error = 'interrupted', last_status_code = NULL, next_attempt_at = $1, updated_at = $1
       FROM released WHERE d.merchant_id = released.merchant_id AND d.id = released.delivery_id
       RETURNING d.merchant_id, d.id, d.endpoint_id, d.topic, d.event_id, d.attempt_count, released.claimed_at, d.first_attempt_at
     ),
     requeued AS (
       INSERT INTO ${QUEUE} (merchant_id, endpoint_id, next_attempt_at, delivery_id) SELECT merchant_id, endpoint_id, $1, id FROM interrupted
     )
     SELECT * FROM interrupted`,
    [now],
  );
  if (rows.length === 0) return [];
  const interrupted = rows.map((row) => ({
    merchantId: row.merchant_id,
    deliveryId: row.id,
    endpointId: row.endpoint_id,
    topic: row.topic,
    eventId: row.event_id,
    number: Number(row.attempt_count),
    claimedAt: row.claimed_at,
    firstAttemptAt: row.first_attempt_at,
  }));
  await tx.query(
    `INSERT INTO ${ATTEMPTS} (merchant_id, delivery_id, number, endpoint_id, started_at, status_code, duration_ms, error, error_message)
     SELECT m, d, n, s, st, NULL, GREATEST(0, (EXTRACT(EPOCH FROM ($6::timestamptz - st)) * 1000)::int), 'interrupted',
            'the worker making this attempt stopped before it finished (crash or restart); it may have reached the endpoint'
     FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::timestamptz[]) AS u(m, d, n, s, st)
     ON CONFLICT DO NOTHING`,
    [
      interrupted.map((i) => i.merchantId),
      interrupted.map((i) => i.deliveryId),
      interrupted.map((i) => i.number),
      interrupted.map((i) => i.endpointId),
      interrupted.map((i) => i.claimedAt.toISOString()),
      now,
    ],
  );
  await markEndpointsDue(
    tx,
    interrupted.map((i) => ({ merchantId: i.merchantId, endpointId: i.endpointId, at: now })),
  );
  return interrupted;
}
