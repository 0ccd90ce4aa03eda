import { openOptionalSecret, openSecret, type Queryable } from '@merx/kit';
import { LRUCache } from 'lru-cache';
import type { Attempt, DeliveryStatus } from '../domain/delivery.js';
import type { DeliveryFormat, EndpointKind } from '../domain/endpoint.js';
import { CLAIMS, ENDPOINTS, markEndpointsDue, QUEUE } from './endpoints-store.js';
import { WEBHOOKS_SCHEMA } from './migrations.js';

/**
 * The delivery engine's side of the deliveries: claiming due work fairly, recording attempts,
 * and the worker heartbeats that let the living take over a dead worker's claims.
 */
const DELIVERIES = `${WEBHOOKS_SCHEMA}.deliveries`;
const ATTEMPTS = `${WEBHOOKS_SCHEMA}.attempts`;

/** A claimed delivery with what sending it needs. */
export interface ClaimedDelivery {
  merchantId: string;
  id: string;
  eventId: string;
  topic: string;
  endpointKind: EndpointKind;
  endpointId: string;
  attemptCount: number;
  firstAttemptAt: Date | null;
  claimedAt: Date;
  payloadText: string;
  format: DeliveryFormat;
  url: string;
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: Date | null;
}

interface ClaimRow {
  merchant_id: string;
  id: string;
  event_id: string;
  topic: string;
  endpoint_kind: EndpointKind;
  endpoint_id: string;
  attempt_count: number;
  first_attempt_at: Date | null;
  claimed_at: Date;
  payload: string;
  format: DeliveryFormat;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
}

export interface ClaimLimits {
  /** How many deliveries this worker can take now. */
  budget: number;
  /** Attempts in flight to one endpoint at once, across all workers. */
  maxInFlightPerEndpoint: number;
  /** How many endpoints one claim looks at. */
  endpointsPerClaim?: number;
  /**
   * Per endpoint (`merchantId/endpointId`), this worker's claims whose request has already been
   * answered and whose outcome waits to be written: still claimed in the table, no longer on the
   * wire, so they do not count against the cap.
   */
  answeredAwaitingRecord?: ReadonlyMap<string, number>;
}

/** The key of an endpoint in `answeredAwaitingRecord`. */
export const endpointKey = (merchantId: string, endpointId: string) => `${merchantId}/${endpointId}`;

/**
 * Takes due deliveries for one worker, fairly. Endpoints with due work are visited round robin
 * (least recently served first), and each merchant's first endpoint comes before anyone's
 * second, so a merchant with a million deliveries or many endpoints cannot crowd out the rest.
 * The endpoints are locked (SKIP LOCKED) for the claim, so workers never take from the same one
 * at once and the in-flight cap holds across replicas. Must run in a transaction.
 */
export interface ClaimResult {
  deliveries: ClaimedDelivery[];
  /**
   * Whether claiming again at once could find more: the budget ran out, or more endpoints were
   * due than one claim looks at. Otherwise every endpoint with due work is at its cap, and the
   * next claim should wait until a request is answered.
   */
  moreMayBeDue: boolean;
}

export async function claimDueDeliveries(
  tx: Queryable,
  workerId: string,
  limits: ClaimLimits,
  now: Date,
  secrets: OpenedSecrets = new OpenedSecrets(),
): Promise<ClaimResult> {
  const endpointsPerClaim = limits.endpointsPerClaim ?? 64;
  // One statement picks the endpoints in fairness order and locks those no other worker holds.
  const { rows: locked } = await tx.query<{ merchant_id: string; id: string; turn: number; last_served_at: Date | null; in_flight: number }>(
    `WITH ranked AS (
       SELECT merchant_id, id, last_served_at,
              row_number() OVER (PARTITION BY merchant_id ORDER BY last_served_at NULLS FIRST) AS turn
       FROM ${ENDPOINTS} WHERE status = 'enabled' AND due_at <= $1
       ORDER BY turn, last_served_at NULLS FIRST LIMIT $2
     )
     SELECT s.merchant_id, s.id, ranked.turn::int AS turn, ranked.last_served_at,
            (SELECT count(*)::int FROM ${CLAIMS} c WHERE c.merchant_id = s.merchant_id AND c.endpoint_id = s.id) AS in_flight
     FROM ${ENDPOINTS} s JOIN ranked ON ranked.merchant_id = s.merchant_id AND ranked.id = s.id
     WHERE s.status = 'enabled'
     FOR UPDATE OF s SKIP LOCKED`,
    [now, endpointsPerClaim],
  );
  if (locked.length === 0) return { deliveries: [], moreMayBeDue: false };
  // Share the budget one delivery at a time across endpoints in fairness order.
  locked.sort((a, b) => a.turn - b.turn || (a.last_served_at?.getTime() ?? -Infinity) - (b.last_served_at?.getTime() ?? -Infinity));
  const onTheWire = (endpoint: (typeof locked)[number]) =>
    Number(endpoint.in_flight) - (limits.answeredAwaitingRecord?.get(endpointKey(endpoint.merchant_id, endpoint.id)) ?? 0);
  const room = locked.map((endpoint) => Math.max(0, limits.maxInFlightPerEndpoint - onTheWire(endpoint)));
  const take = locked.map(() => 0);
  let budget = limits.budget;
  for (let progressed = true; budget > 0 && progressed;) {
    progressed = false;
    for (let i = 0; i < locked.length && budget > 0; i++) {
      if (take[i]! < room[i]!) {
        take[i]! += 1;
        budget -= 1;
        progressed = true;
      }
    }
  }
  const moreMayBeDue = budget === 0 || locked.length === endpointsPerClaim;
  // Every endpoint looked at is at its cap: nothing to claim, nothing to write.
  if (take.every((count) => count === 0)) return { deliveries: [], moreMayBeDue };
  // The second statement claims, sends every endpoint looked at to the back of the round and
  // recomputes its due_at from what still waits (NULL when nothing does, which also repairs an
  // over-eager lower bound). One walk of each endpoint's queue serves both: its first take + 1
  // waiting deliveries in due order, of which the due ones among the first `take` are claimed
  // (taken off the queue, a claim row each) and the earliest of the rest is the new due_at. Each
  // step after the walk is driven by the rows the previous one returned.
  const { rows } = await tx.query<ClaimRow>(
    `WITH endpoints AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::int[]) AS e(merchant_id, endpoint_id, take)
     ),
     walk AS (
       SELECT merchant_id, endpoint_id, delivery_id, next_attempt_at,
              (row_number() OVER (PARTITION BY merchant_id, endpoint_id ORDER BY next_attempt_at) <= take AND next_attempt_at <= $5) AS picked
       FROM (
         SELECT e.merchant_id, e.endpoint_id, e.take, w.delivery_id, w.next_attempt_at
         FROM endpoints e
         CROSS JOIN LATERAL (
           SELECT q.delivery_id, q.next_attempt_at FROM ${QUEUE} q
           WHERE q.merchant_id = e.merchant_id AND q.endpoint_id = e.endpoint_id
           ORDER BY q.next_attempt_at LIMIT e.take + 1
         ) w
       ) walked
     ),
     dequeued AS (
       DELETE FROM ${QUEUE} q USING walk w
       WHERE w.picked AND q.merchant_id = w.merchant_id AND q.endpoint_id = w.endpoint_id AND q.next_attempt_at = w.next_attempt_at
         AND q.delivery_id = w.delivery_id
       RETURNING q.merchant_id, q.endpoint_id, q.delivery_id
     ),
     -- A queue row outliving its delivery (it cannot, every delete takes both) is dropped, not claimed.
     claimed AS (
       INSERT INTO ${CLAIMS} (merchant_id, endpoint_id, delivery_id, worker_id, claimed_at)
       SELECT merchant_id, endpoint_id, delivery_id, $4, $5 FROM dequeued d
       WHERE EXISTS (SELECT 1 FROM ${DELIVERIES} x WHERE x.merchant_id = d.merchant_id AND x.id = d.delivery_id)
       RETURNING merchant_id, delivery_id, claimed_at
     ),
     left_waiting AS (
       SELECT merchant_id, endpoint_id, min(next_attempt_at) AS due_at FROM walk WHERE NOT picked GROUP BY merchant_id, endpoint_id
     ),
     served AS (
       UPDATE ${ENDPOINTS} s SET last_served_at = $5, due_at = l.due_at
       FROM endpoints e LEFT JOIN left_waiting l ON l.merchant_id = e.merchant_id AND l.endpoint_id = e.endpoint_id
       WHERE s.merchant_id = e.merchant_id AND s.id = e.endpoint_id
     )
     -- LATERAL lookups by the whole primary key, so the plan never depends on how big the
     -- tables were when statistics were last taken (a plan made on empty tables joined events on
     -- merchant_id alone and filtered a merchant's whole history per delivery). A routed record's
     -- delivery carries its own payload and has no event to look up.
     SELECT d.merchant_id, d.id, d.event_id, d.topic, d.endpoint_kind, d.endpoint_id, d.attempt_count, d.first_attempt_at, c.claimed_at,
            COALESCE(d.payload, ev.payload) AS payload, s.format, s.url, s.secret, s.previous_secret, s.previous_secret_expires_at
     FROM claimed c
     CROSS JOIN LATERAL (SELECT * FROM ${DELIVERIES} x WHERE x.merchant_id = c.merchant_id AND x.id = c.delivery_id) d
     LEFT JOIN LATERAL (SELECT payload FROM ${WEBHOOKS_SCHEMA}.events e WHERE d.payload IS NULL AND e.merchant_id = d.merchant_id AND e.id = d.event_id) ev ON true
     CROSS JOIN LATERAL (SELECT format, url, secret, previous_secret, previous_secret_expires_at FROM ${ENDPOINTS} x WHERE x.merchant_id = d.merchant_id AND x.id = d.endpoint_id) s`,
    [locked.map((e) => e.merchant_id), locked.map((e) => e.id), take, workerId, now],
  );
  const deliveries = rows.map((row) => {
    const { secret, previousSecret } = secrets.of(row);
    return {
      merchantId: row.merchant_id,
      id: row.id,
      eventId: row.event_id,
      topic: row.topic,
      endpointKind: row.endpoint_kind,
      endpointId: row.endpoint_id,
      attemptCount: Number(row.attempt_count),
      firstAttemptAt: row.first_attempt_at,
      claimedAt: row.claimed_at,
      payloadText: row.payload,
      format: row.format,
      url: row.url,
      secret,
      previousSecret,
      previousSecretExpiresAt: row.previous_secret_expires_at,
    };
  });
  return { deliveries, moreMayBeDue };
}

/**
 * Endpoints' signing secrets as opened from their sealed form, kept while the sealed values stay
 * the same: a claim holds deliveries of a few endpoints, claims follow each other closely, and
 * opening (AES-GCM) for each was a visible part of a claim's cost. A rotation, an update or a
 * reseal changes the sealed value, so a secret that changed is opened again, never served stale.
 */
export class OpenedSecrets {
  private readonly opened: LRUCache<string, { sealed: string; previousSealed: string | null; secret: string; previousSecret: string | null }>;

  constructor(kept = 4_096) {
    this.opened = new LRUCache({ max: kept });
  }

  of(row: { merchant_id: string; endpoint_id: string; secret: string; previous_secret: string | null }): { secret: string; previousSecret: string | null } {
    const key = endpointKey(row.merchant_id, row.endpoint_id);
    const known = this.opened.get(key);
    if (known && known.sealed === row.secret && known.previousSealed === row.previous_secret) return known;
    const owner = { merchantId: row.merchant_id, recordId: row.endpoint_id };
    const opened = {
      sealed: row.secret,
      previousSealed: row.previous_secret,
      secret: openSecret(row.secret, owner),
      previousSecret: openOptionalSecret(row.previous_secret, owner),
    };
    this.opened.set(key, opened);
    return opened;
  }
}

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
       SELECT *, $14::text AS worker_id
       FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::timestamptz[], $6::timestamptz[], $7::int[], $8::text[],
                   $9::text[], $10::timestamptz[], $11::int[], $12::text[], $13::text[])
         AS u(merchant_id, id, status, number, next_attempt_at, first_attempt_at, status_code, error,
              endpoint_id, started_at, duration_ms, error_message, response_excerpt)
     ),
     -- Each step is driven by the rows the previous one returned, looked up by primary key: no
     -- join of one step's result with another's, whose plan would rest on guesses about sizes.
     -- The worker is matched as a column of the batch (materialized, so the planner cannot turn
     -- it back into a constant), not as a filter of its own on claims: a generic plan guessed
     -- such a filter leaves one claim, and then rescanned the whole batch for every claim.
     released AS (
       DELETE FROM ${CLAIMS} c USING u
       WHERE c.merchant_id = u.merchant_id AND c.endpoint_id = u.endpoint_id AND c.delivery_id = u.id AND c.worker_id = u.worker_id
       RETURNING u.*
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
