import type { MerchantId, Queryable } from '@merx/kit';
import type { Attempt, AttemptError, Delivery, DeliveryStatus } from '../domain/delivery.js';
import type { EndpointKind } from '../domain/endpoint.js';
import { ENDPOINTS, markEndpointsDue, QUEUE } from './endpoints-store.js';
import { WEBHOOKS_SCHEMA } from './migrations.js';

const DELIVERIES = `${WEBHOOKS_SCHEMA}.deliveries`;
const ATTEMPTS = `${WEBHOOKS_SCHEMA}.attempts`;
const DELIVERY_COLUMNS =
  'merchant_id, id, event_id, topic, endpoint_kind, endpoint_id, payload, status, attempt_count, next_attempt_at, first_attempt_at, last_status_code, last_error, replay_of, replayed_by, created_at, updated_at, completed_at';

interface DeliveryRow {
  merchant_id: string;
  id: string;
  event_id: string;
  topic: string;
  endpoint_kind: EndpointKind;
  endpoint_id: string;
  payload: string | null;
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
    endpointKind: row.endpoint_kind,
    endpointId: row.endpoint_id,
    payloadText: row.payload,
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
  endpointKind: EndpointKind;
  endpointId: string;
  /** A routed record's payload; null when the payload is the stored event's. */
  payloadText: string | null;
  /** The routing (rtd_) a destination delivery comes from: at most one delivery each. */
  routedId: string | null;
  /** A dead-on-arrival delivery (a payload that fails its schema) is recorded as dead, never sent. */
  status: 'pending' | 'dead';
  lastError: AttemptError | null;
  replayOf: string | null;
}

/**
 * New deliveries are due at once: they join their endpoint's queue, and the endpoint's `due_at`
 * is pulled forward so the next claim finds them without scanning the queues. A routing already
 * delivered (the same internal.record_routed again, under any envelope) adds nothing. Answers how
 * many deliveries were added that are due.
 */
export async function insertDeliveries(tx: Queryable, deliveries: NewDelivery[], now: Date): Promise<number> {
  if (deliveries.length === 0) return 0;
  const column = <T>(pick: (d: NewDelivery) => T) => deliveries.map(pick);
  const { rows: inserted } = await tx.query<{ merchant_id: string; endpoint_id: string; status: string }>(
    `WITH inserted AS (
       INSERT INTO ${DELIVERIES} (merchant_id, id, event_id, topic, endpoint_kind, endpoint_id, payload, routed_id, status, last_error, replay_of,
                                  next_attempt_at, completed_at, dead_at, created_at, updated_at)
       SELECT m, i, e, t, k, ep, p, rt, st, le, r, CASE WHEN st = 'pending' THEN $12::timestamptz END,
              CASE WHEN st = 'dead' THEN $12::timestamptz END, CASE WHEN st = 'dead' THEN $12::timestamptz END, $12, $12
       FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[])
         AS n(m, i, e, t, k, ep, p, rt, st, le, r)
       ON CONFLICT (merchant_id, routed_id) WHERE routed_id IS NOT NULL DO NOTHING
       RETURNING merchant_id, id, endpoint_id, status, next_attempt_at
     ),
     queued AS (
       INSERT INTO ${QUEUE} (merchant_id, endpoint_id, next_attempt_at, delivery_id)
       SELECT merchant_id, endpoint_id, next_attempt_at, id FROM inserted WHERE status = 'pending'
     )
     SELECT merchant_id, endpoint_id, status FROM inserted`,
    [
      column((d) => d.merchantId),
      column((d) => d.id),
      column((d) => d.eventId),
      column((d) => d.topic),
      column((d) => d.endpointKind),
      column((d) => d.endpointId),
      column((d) => d.payloadText),
      column((d) => d.routedId),
      column((d) => d.status),
      column((d) => d.lastError),
      column((d) => d.replayOf),
      now,
    ],
  );
  const due = inserted.filter((d) => d.status === 'pending');
  await markEndpointsDue(
    tx,
    due.map((d) => ({ merchantId: d.merchant_id, endpointId: d.endpoint_id, at: now })),
  );
  return due.length;
}

export async function findDeliveryForMerchant(
  db: Queryable,
  merchantId: MerchantId,
  id: string,
  options: { forUpdate?: boolean } = {},
): Promise<Delivery | undefined> {
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
    endpoint_id: string;
    number: number;
    started_at: Date;
    status_code: number | null;
    duration_ms: number;
    error: AttemptError | null;
    error_message: string | null;
    response_excerpt: string | null;
  }>(
    `SELECT merchant_id, delivery_id, endpoint_id, number, started_at, status_code, duration_ms, error, error_message, response_excerpt
     FROM ${ATTEMPTS} WHERE merchant_id = $1 AND delivery_id = $2 ORDER BY number`,
    [merchantId, deliveryId],
  );
  return rows.map((row) => ({
    merchantId: row.merchant_id,
    deliveryId: row.delivery_id,
    endpointId: row.endpoint_id,
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
  destinationId?: string;
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
  // A dead letter's time is when it died (its completed_at); dead_at is that time, kept apart so
  // the index finding dead letters names no column an attempt changes.
  const timeColumn = filters.deadLetters ? 'dead_at' : 'created_at';
  if (filters.deadLetters) conditions.push(`dead_at IS NOT NULL AND replayed_by IS NULL`);
  if (filters.subscriptionId) add(`endpoint_kind = 'subscription' AND endpoint_id = ?`, filters.subscriptionId);
  if (filters.destinationId) add(`endpoint_kind = 'destination' AND endpoint_id = ?`, filters.destinationId);
  if (filters.eventId) add('event_id = ?', filters.eventId);
  if (filters.topic) add(filters.topic.includes('.') ? 'topic = ?' : `topic LIKE ? || '.%'`, filters.topic);
  if (filters.status) add('status = ?', filters.status);
  if (filters.since) add(`${timeColumn} >= ?`, filters.since);
  if (filters.until) add(`${timeColumn} < ?`, filters.until);
  return conditions;
}

/** Newest first, by id (ids sort by creation). */
export async function listDeliveriesForMerchant(
  db: Queryable,
  merchantId: MerchantId,
  page: { limit: number; after?: string | undefined },
  filters: DeliveryFilters,
): Promise<Delivery[]> {
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
  conditions.push(`endpoint_id IN (SELECT id FROM ${ENDPOINTS} WHERE merchant_id = $1 AND status = 'enabled')`);
  params.push(limit + 1);
  const { rows } = await tx.query<DeliveryRow>(
    `SELECT ${DELIVERY_COLUMNS} FROM ${DELIVERIES} WHERE ${conditions.join(' AND ')} ORDER BY dead_at, id LIMIT $${params.length} FOR UPDATE`,
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

/** An endpoint's whole log: its deliveries (dead letters too) and their attempts. Tenant-scoped. */
export async function deleteDeliveriesOfEndpoint(tx: Queryable, merchantId: MerchantId, endpointId: string): Promise<void> {
  await tx.query(`DELETE FROM ${ATTEMPTS} WHERE merchant_id = $1 AND endpoint_id = $2`, [merchantId, endpointId]);
  await tx.query(`DELETE FROM ${QUEUE} WHERE merchant_id = $1 AND endpoint_id = $2`, [merchantId, endpointId]);
  await tx.query(`DELETE FROM ${DELIVERIES} WHERE merchant_id = $1 AND endpoint_id = $2`, [merchantId, endpointId]);
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
     FROM ${ATTEMPTS} WHERE merchant_id = $1 AND endpoint_id = $2 AND started_at >= $3`,
    [merchantId, subscriptionId, since],
  );
  const { rows: counts } = await db.query<{ pending: number; failing: number; dead: number }>(
    `SELECT count(*) FILTER (WHERE status = 'pending')::int AS pending, count(*) FILTER (WHERE status = 'failing')::int AS failing,
            count(*) FILTER (WHERE status = 'dead' AND replayed_by IS NULL)::int AS dead
     FROM ${DELIVERIES} WHERE merchant_id = $1 AND endpoint_kind = 'subscription' AND endpoint_id = $2`,
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
