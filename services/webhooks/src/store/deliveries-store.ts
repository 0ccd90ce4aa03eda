import type { MerchantId, Queryable } from '@merx/kit';
import type { Attempt, AttemptError, Delivery, DeliveryStatus } from '../domain/delivery.js';
import { WEBHOOKS_SCHEMA } from './migrations.js';
import { lockSubscriptionsInKeyOrder } from './subscriptions-store.js';

const DELIVERIES = `${WEBHOOKS_SCHEMA}.deliveries`;
const ATTEMPTS = `${WEBHOOKS_SCHEMA}.attempts`;
const SUBSCRIPTIONS = `${WEBHOOKS_SCHEMA}.subscriptions`;
const DELIVERY_COLUMNS =
  'merchant_id, id, event_id, topic, subscription_id, status, attempt_count, next_attempt_at, first_attempt_at, last_status_code, last_error, replay_of, replayed_by, created_at, updated_at, completed_at';
/** The rows of the work queue: not finished and not claimed by a worker. */
const waiting = (alias: string) => `${alias}.status IN ('pending', 'failing') AND ${alias}.claimed_by IS NULL`;

interface DeliveryRow {
  merchant_id: string;
  id: string;
  event_id: string;
  topic: string;
  subscription_id: string;
  status: DeliveryStatus;
  attempt_count: number;
  next_attempt_at: Date | null;
  first_attempt_at: Date | null;
  last_status_code: number | null;
  last_error: AttemptError | null;
  replay_of: string | null;
  replayed_by: string | null;
  created_at: Date;
  updated_at: Date;
  completed_at: Date | null;
}

function toDelivery(row: DeliveryRow): Delivery {
  return {
    id: row.id,
    merchantId: row.merchant_id,
    eventId: row.event_id,
    topic: row.topic,
    subscriptionId: row.subscription_id,
    status: row.status,
    attemptCount: Number(row.attempt_count),
    nextAttemptAt: row.next_attempt_at,
    firstAttemptAt: row.first_attempt_at,
    lastStatusCode: row.last_status_code,
    lastError: row.last_error,
    replayOf: row.replay_of,
    replayedBy: row.replayed_by,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    completedAt: row.completed_at,
  };
}

export interface NewDelivery {
  merchantId: string;
  id: string;
  eventId: string;
  topic: string;
  subscriptionId: string;
  /** A dead-on-arrival delivery (a payload that fails its schema) is recorded as dead, never sent. */
  status: 'pending' | 'dead';
  lastError: AttemptError | null;
  replayOf: string | null;
}

/**
 * New deliveries are due at once; their endpoints' `due_at` is pulled forward so the next claim
 * finds them without scanning the deliveries.
 */
export async function insertDeliveries(tx: Queryable, deliveries: NewDelivery[], now: Date): Promise<void> {
  if (deliveries.length === 0) return;
  await tx.query(
    `INSERT INTO ${DELIVERIES} (merchant_id, id, event_id, topic, subscription_id, status, last_error, replay_of, next_attempt_at, completed_at, created_at, updated_at)
     SELECT m, i, e, t, s, st, le, r, CASE WHEN st = 'pending' THEN $9::timestamptz END, CASE WHEN st = 'dead' THEN $9::timestamptz END, $9, $9
     FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[]) AS n(m, i, e, t, s, st, le, r)`,
    [
      deliveries.map((d) => d.merchantId),
      deliveries.map((d) => d.id),
      deliveries.map((d) => d.eventId),
      deliveries.map((d) => d.topic),
      deliveries.map((d) => d.subscriptionId),
      deliveries.map((d) => d.status),
      deliveries.map((d) => d.lastError),
      deliveries.map((d) => d.replayOf),
      now,
    ],
  );
  const due = deliveries.filter((d) => d.status === 'pending');
  await markEndpointsDue(tx, due.map((d) => ({ merchantId: d.merchantId, subscriptionId: d.subscriptionId, at: now })));
}

/**
 * `due_at` is a lower bound of the earliest waiting delivery: only ever pulled forward here. The
 * rows are locked in key order first (fan-out and attempt recording both come here with many
 * endpoints at once). The update is unconditional on purpose: a claim recomputing `due_at` at the
 * same moment cannot see this transaction's deliveries, so this one must wait for its lock and
 * apply after it, never skip a row whose `due_at` merely looks early enough.
 */
export async function markEndpointsDue(tx: Queryable, due: { merchantId: string; subscriptionId: string; at: Date }[]): Promise<void> {
  if (due.length === 0) return;
  await lockSubscriptionsInKeyOrder(tx, due);
  await tx.query(
    `UPDATE ${SUBSCRIPTIONS} s SET due_at = LEAST(s.due_at, d.at)
     FROM (SELECT m, sub, min(at) AS at FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS u(m, sub, at) GROUP BY m, sub) d
     WHERE s.merchant_id = d.m AND s.id = d.sub`,
    [due.map((d) => d.merchantId), due.map((d) => d.subscriptionId), due.map((d) => d.at.toISOString())],
  );
}

/** A claimed delivery with what sending it needs. */
export interface ClaimedDelivery {
  merchantId: string;
  id: string;
  eventId: string;
  topic: string;
  subscriptionId: string;
  attemptCount: number;
  firstAttemptAt: Date | null;
  claimedAt: Date;
  payloadText: string;
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
  subscription_id: string;
  attempt_count: number;
  first_attempt_at: Date | null;
  claimed_at: Date;
  payload: string;
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
}

/**
 * Takes due deliveries for one worker, fairly. Endpoints with due work are visited round robin
 * (least recently served first), and each merchant's first endpoint comes before anyone's
 * second, so a merchant with a million deliveries or many endpoints cannot crowd out the rest.
 * The endpoints are locked (SKIP LOCKED) for the claim, so workers never take from the same one
 * at once and the in-flight cap holds across replicas. Must run in a transaction.
 */
export async function claimDueDeliveries(tx: Queryable, workerId: string, limits: ClaimLimits, now: Date): Promise<ClaimedDelivery[]> {
  const endpointsPerClaim = limits.endpointsPerClaim ?? 64;
  // One statement picks the endpoints in fairness order and locks those no other worker holds.
  const { rows: locked } = await tx.query<{ merchant_id: string; id: string; turn: number; last_served_at: Date | null; in_flight: number }>(
    `WITH ranked AS (
       SELECT merchant_id, id, last_served_at,
              row_number() OVER (PARTITION BY merchant_id ORDER BY last_served_at NULLS FIRST) AS turn
       FROM ${SUBSCRIPTIONS} WHERE status = 'enabled' AND due_at <= $1
       ORDER BY turn, last_served_at NULLS FIRST LIMIT $2
     )
     SELECT s.merchant_id, s.id, ranked.turn::int AS turn, ranked.last_served_at,
            (SELECT count(*)::int FROM ${DELIVERIES} d WHERE d.merchant_id = s.merchant_id AND d.subscription_id = s.id AND d.claimed_by IS NOT NULL) AS in_flight
     FROM ${SUBSCRIPTIONS} s JOIN ranked ON ranked.merchant_id = s.merchant_id AND ranked.id = s.id
     WHERE s.status = 'enabled'
     FOR UPDATE OF s SKIP LOCKED`,
    [now, endpointsPerClaim],
  );
  if (locked.length === 0) return [];
  // Share the budget one delivery at a time across endpoints in fairness order.
  locked.sort((a, b) => a.turn - b.turn || (a.last_served_at?.getTime() ?? -Infinity) - (b.last_served_at?.getTime() ?? -Infinity));
  const room = locked.map((endpoint) => Math.max(0, limits.maxInFlightPerEndpoint - Number(endpoint.in_flight)));
  const take = locked.map(() => 0);
  let budget = limits.budget;
  for (let progressed = true; budget > 0 && progressed; ) {
    progressed = false;
    for (let i = 0; i < locked.length && budget > 0; i++) {
      if (take[i]! < room[i]!) {
        take[i]! += 1;
        budget -= 1;
        progressed = true;
      }
    }
  }
  // The second statement claims, sends every endpoint looked at to the back of the round and
  // recomputes its due_at from what still waits (NULL when nothing does, which also repairs an
  // over-eager lower bound). All parts see the same snapshot, so the rows being claimed are
  // left out of that minimum by name.
  const { rows } = await tx.query<ClaimRow>(
    `WITH endpoints AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::int[]) AS e(merchant_id, subscription_id, take)
     ),
     picked AS (
       SELECT w.merchant_id, w.id FROM endpoints e
       CROSS JOIN LATERAL (
         SELECT d.merchant_id, d.id FROM ${DELIVERIES} d
         WHERE d.merchant_id = e.merchant_id AND d.subscription_id = e.subscription_id AND ${waiting('d')} AND d.next_attempt_at <= $5
         ORDER BY d.next_attempt_at LIMIT e.take
       ) w
       WHERE e.take > 0
     ),
     claimed AS (
       UPDATE ${DELIVERIES} d SET claimed_by = $4, claimed_at = $5
       FROM picked WHERE d.merchant_id = picked.merchant_id AND d.id = picked.id
       RETURNING d.merchant_id, d.id, d.event_id, d.topic, d.subscription_id, d.attempt_count, d.first_attempt_at, d.claimed_at
     ),
     served AS (
       UPDATE ${SUBSCRIPTIONS} s SET last_served_at = $5,
         due_at = (SELECT d.next_attempt_at FROM ${DELIVERIES} d
                   WHERE d.merchant_id = s.merchant_id AND d.subscription_id = s.id AND ${waiting('d')}
                     AND NOT EXISTS (SELECT 1 FROM picked p WHERE p.merchant_id = d.merchant_id AND p.id = d.id)
                   ORDER BY d.next_attempt_at LIMIT 1)
       FROM endpoints e WHERE s.merchant_id = e.merchant_id AND s.id = e.subscription_id
     )
     -- LATERAL lookups by the whole primary key, so the plan never depends on how big the
     -- tables were when statistics were last taken (a plan made on empty tables joined events on
     -- merchant_id alone and filtered a merchant's whole history per delivery).
     SELECT c.*, ev.payload, s.url, s.secret, s.previous_secret, s.previous_secret_expires_at
     FROM claimed c
     CROSS JOIN LATERAL (SELECT payload FROM ${WEBHOOKS_SCHEMA}.events e WHERE e.merchant_id = c.merchant_id AND e.id = c.event_id) ev
     CROSS JOIN LATERAL (SELECT url, secret, previous_secret, previous_secret_expires_at FROM ${SUBSCRIPTIONS} x WHERE x.merchant_id = c.merchant_id AND x.id = c.subscription_id) s`,
    [locked.map((e) => e.merchant_id), locked.map((e) => e.id), take, workerId, now],
  );
  return rows.map((row) => ({
    merchantId: row.merchant_id,
    id: row.id,
    eventId: row.event_id,
    topic: row.topic,
    subscriptionId: row.subscription_id,
    attemptCount: Number(row.attempt_count),
    firstAttemptAt: row.first_attempt_at,
    claimedAt: row.claimed_at,
    payloadText: row.payload,
    url: row.url,
    secret: row.secret,
    previousSecret: row.previous_secret,
    previousSecretExpiresAt: row.previous_secret_expires_at,
  }));
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
    `WITH u AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::int[], $5::timestamptz[], $6::timestamptz[], $7::int[], $8::text[],
                            $9::text[], $10::timestamptz[], $11::int[], $12::text[], $13::text[])
         AS u(merchant_id, id, status, number, next_attempt_at, first_attempt_at, status_code, error,
              subscription_id, started_at, duration_ms, error_message, response_excerpt)
     ),
     updated AS (
       UPDATE ${DELIVERIES} d SET status = u.status, attempt_count = GREATEST(d.attempt_count, u.number), next_attempt_at = u.next_attempt_at,
         first_attempt_at = COALESCE(d.first_attempt_at, u.first_attempt_at), last_status_code = u.status_code, last_error = u.error,
         claimed_by = NULL, claimed_at = NULL, updated_at = $15,
         completed_at = CASE WHEN u.status IN ('succeeded', 'dead') THEN $15::timestamptz END
       FROM u WHERE d.merchant_id = u.merchant_id AND d.id = u.id AND d.claimed_by = $14
       RETURNING d.merchant_id, d.id
     )
     INSERT INTO ${ATTEMPTS} (merchant_id, delivery_id, number, subscription_id, started_at, status_code, duration_ms, error, error_message, response_excerpt)
     SELECT u.merchant_id, u.id, u.number, u.subscription_id, u.started_at, u.status_code, u.duration_ms, u.error, u.error_message, u.response_excerpt
     FROM u JOIN updated ON updated.merchant_id = u.merchant_id AND updated.id = u.id
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
      column((r) => r.subscriptionId),
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
export async function noSuccessSince(db: Queryable, merchantId: string, subscriptionId: string, since: Date): Promise<boolean> {
  const { rows } = await db.query<{ succeeded: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM ${ATTEMPTS} WHERE merchant_id = $1 AND subscription_id = $2 AND started_at >= $3 AND error IS NULL) AS succeeded`,
    [merchantId, subscriptionId, since],
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
  subscriptionId: string;
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
  const { rows } = await tx.query<{ merchant_id: string; id: string; subscription_id: string; topic: string; event_id: string; attempt_count: number; claimed_at: Date; first_attempt_at: Date | null }>(
    `WITH orphaned AS (
       SELECT merchant_id, id FROM ${DELIVERIES}
       WHERE claimed_by IS NOT NULL AND claimed_by NOT IN (SELECT id FROM ${WEBHOOKS_SCHEMA}.workers)
       FOR UPDATE SKIP LOCKED
     ),
     previous AS (
       SELECT d.merchant_id, d.id, d.claimed_at FROM ${DELIVERIES} d JOIN orphaned o USING (merchant_id, id)
     )
     UPDATE ${DELIVERIES} d SET claimed_by = NULL, claimed_at = NULL, attempt_count = d.attempt_count + 1,
       first_attempt_at = COALESCE(d.first_attempt_at, previous.claimed_at), status = 'failing',
       last_error = 'interrupted', last_status_code = NULL, next_attempt_at = $1, updated_at = $1
     FROM previous WHERE d.merchant_id = previous.merchant_id AND d.id = previous.id
     RETURNING d.merchant_id, d.id, d.subscription_id, d.topic, d.event_id, d.attempt_count, previous.claimed_at, d.first_attempt_at`,
    [now],
  );
  if (rows.length === 0) return [];
  const interrupted = rows.map((row) => ({
    merchantId: row.merchant_id,
    deliveryId: row.id,
    subscriptionId: row.subscription_id,
    topic: row.topic,
    eventId: row.event_id,
    number: Number(row.attempt_count),
    claimedAt: row.claimed_at,
    firstAttemptAt: row.first_attempt_at,
  }));
  await tx.query(
    `INSERT INTO ${ATTEMPTS} (merchant_id, delivery_id, number, subscription_id, started_at, status_code, duration_ms, error, error_message)
     SELECT m, d, n, s, st, NULL, GREATEST(0, (EXTRACT(EPOCH FROM ($6::timestamptz - st)) * 1000)::int), 'interrupted',
            'the worker making this attempt stopped before it finished (crash or restart); it may have reached the endpoint'
     FROM unnest($1::text[], $2::text[], $3::int[], $4::text[], $5::timestamptz[]) AS u(m, d, n, s, st)
     ON CONFLICT DO NOTHING`,
    [
      interrupted.map((i) => i.merchantId),
      interrupted.map((i) => i.deliveryId),
      interrupted.map((i) => i.number),
      interrupted.map((i) => i.subscriptionId),
      interrupted.map((i) => i.claimedAt.toISOString()),
      now,
    ],
  );
  await markEndpointsDue(tx, interrupted.map((i) => ({ merchantId: i.merchantId, subscriptionId: i.subscriptionId, at: now })));
  return interrupted;
}

export async function findDeliveryForMerchant(db: Queryable, merchantId: MerchantId, id: string, options: { forUpdate?: boolean } = {}): Promise<Delivery | undefined> {
  const { rows } = await db.query<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM ${DELIVERIES} WHERE merchant_id = $1 AND id = $2${options.forUpdate ? ' FOR UPDATE' : ''}`,
    [merchantId, id],
  );
  return rows[0] ? toDelivery(rows[0]) : undefined;
}

export async function attemptsOfDelivery(db: Queryable, merchantId: MerchantId, deliveryId: string): Promise<Attempt[]> {
  const { rows } = await db.query<{
    merchant_id: string;
    delivery_id: string;
    subscription_id: string;
    number: number;
    started_at: Date;
    status_code: number | null;
    duration_ms: number;
    error: AttemptError | null;
    error_message: string | null;
    response_excerpt: string | null;
  }>(
    `SELECT merchant_id, delivery_id, subscription_id, number, started_at, status_code, duration_ms, error, error_message, response_excerpt
     FROM ${ATTEMPTS} WHERE merchant_id = $1 AND delivery_id = $2 ORDER BY number`,
    [merchantId, deliveryId],
  );
  return rows.map((row) => ({
    merchantId: row.merchant_id,
    deliveryId: row.delivery_id,
    subscriptionId: row.subscription_id,
    number: Number(row.number),
    startedAt: row.started_at,
    statusCode: row.status_code,
    durationMs: Number(row.duration_ms),
    error: row.error,
    errorMessage: row.error_message,
    responseExcerpt: row.response_excerpt,
  }));
}

export interface DeliveryFilters {
  subscriptionId?: string;
  eventId?: string;
  /** An exact event name or a whole topic. */
  topic?: string;
  status?: DeliveryStatus;
  since?: Date;
  until?: Date;
  /** Only dead deliveries not yet replayed, filtered on when they died. */
  deadLetters?: boolean;
}

function deliveryConditions(merchantId: MerchantId, filters: DeliveryFilters, params: unknown[]): string[] {
  params.push(merchantId);
  const conditions = ['merchant_id = $1'];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    conditions.push(sql.replaceAll('?', `$${params.length}`));
  };
  const timeColumn = filters.deadLetters ? 'completed_at' : 'created_at';
  if (filters.deadLetters) conditions.push(`status = 'dead' AND replayed_by IS NULL`);
  if (filters.subscriptionId) add('subscription_id = ?', filters.subscriptionId);
  if (filters.eventId) add('event_id = ?', filters.eventId);
  if (filters.topic) add(filters.topic.includes('.') ? 'topic = ?' : `topic LIKE ? || '.%'`, filters.topic);
  if (filters.status) add('status = ?', filters.status);
  if (filters.since) add(`${timeColumn} >= ?`, filters.since);
  if (filters.until) add(`${timeColumn} < ?`, filters.until);
  return conditions;
}

/** Newest first, by id (ids sort by creation). */
export async function listDeliveriesForMerchant(db: Queryable, merchantId: MerchantId, page: { limit: number; after?: string | undefined }, filters: DeliveryFilters): Promise<Delivery[]> {
  const params: unknown[] = [];
  const conditions = deliveryConditions(merchantId, filters, params);
  if (page.after) {
    params.push(page.after);
    conditions.push(`id < $${params.length}`);
  }
  params.push(page.limit + 1);
  const { rows } = await db.query<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM ${DELIVERIES} WHERE ${conditions.join(' AND ')} ORDER BY id DESC LIMIT $${params.length}`,
    params,
  );
  return rows.map(toDelivery);
}

/** Dead letters matching a filter, oldest death first, locked for a replay; `limit + 1` tells if more match. */
export async function lockDeadLettersForReplay(tx: Queryable, merchantId: MerchantId, filters: DeliveryFilters, limit: number): Promise<Delivery[]> {
  const params: unknown[] = [];
  const conditions = deliveryConditions(merchantId, { ...filters, deadLetters: true }, params);
  // Endpoints that are switched off are left out: their replays would only wait.
  conditions.push(`subscription_id IN (SELECT id FROM ${SUBSCRIPTIONS} WHERE merchant_id = $1 AND status = 'enabled')`);
  params.push(limit + 1);
  const { rows } = await tx.query<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM ${DELIVERIES} WHERE ${conditions.join(' AND ')} ORDER BY completed_at, id LIMIT $${params.length} FOR UPDATE`,
    params,
  );
  return rows.map(toDelivery);
}

export async function markReplayed(tx: Queryable, merchantId: MerchantId, pairs: { deadId: string; replayId: string }[], now: Date): Promise<void> {
  if (pairs.length === 0) return;
  await tx.query(
    `UPDATE ${DELIVERIES} d SET replayed_by = u.replay, updated_at = $4
     FROM unnest($2::text[], $3::text[]) AS u(dead, replay)
     WHERE d.merchant_id = $1 AND d.id = u.dead`,
    [merchantId, pairs.map((p) => p.deadId), pairs.map((p) => p.replayId), now],
  );
}

export async function deleteDeliveriesOfSubscription(tx: Queryable, merchantId: MerchantId, subscriptionId: string): Promise<void> {
  await tx.query(`DELETE FROM ${ATTEMPTS} WHERE merchant_id = $1 AND subscription_id = $2`, [merchantId, subscriptionId]);
  await tx.query(`DELETE FROM ${DELIVERIES} WHERE merchant_id = $1 AND subscription_id = $2`, [merchantId, subscriptionId]);
}

export interface SubscriptionStatsRow {
  attempts: number;
  succeeded: number;
  p50: number | null;
  p99: number | null;
  pending: number;
  failing: number;
  dead: number;
}

export async function subscriptionStats(db: Queryable, merchantId: MerchantId, subscriptionId: string, since: Date): Promise<SubscriptionStatsRow> {
  const { rows } = await db.query<{ attempts: number; succeeded: number; p50: number | null; p99: number | null }>(
    `SELECT count(*)::int AS attempts, count(*) FILTER (WHERE error IS NULL)::int AS succeeded,
            percentile_cont(0.5) WITHIN GROUP (ORDER BY duration_ms) AS p50,
            percentile_cont(0.99) WITHIN GROUP (ORDER BY duration_ms) AS p99
     FROM ${ATTEMPTS} WHERE merchant_id = $1 AND subscription_id = $2 AND started_at >= $3`,
    [merchantId, subscriptionId, since],
  );
  const { rows: counts } = await db.query<{ pending: number; failing: number; dead: number }>(
    `SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending, count(*) FILTER (WHERE status = 'failing')::int AS failing,
            count(*) FILTER (WHERE status = 'dead' AND replayed_by IS NULL)::int AS dead
     FROM ${DELIVERIES} WHERE merchant_id = $1 AND subscription_id = $2`,
    [merchantId, subscriptionId],
  );
  const latency = rows[0]!;
  return {
    attempts: Number(latency.attempts),
    succeeded: Number(latency.succeeded),
    p50: latency.p50 === null ? null : Number(latency.p50),
    p99: latency.p99 === null ? null : Number(latency.p99),
    pending: Number(counts[0]!.pending),
    failing: Number(counts[0]!.failing),
    dead: Number(counts[0]!.dead),
  };
}
