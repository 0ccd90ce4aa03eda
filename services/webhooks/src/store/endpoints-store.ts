import { openOptionalSecret, openSecret, type MerchantId, type Queryable, type SealedColumns } from '@merx/kit';
import type { DisabledReason, EndpointKey, EndpointKind, EndpointState, EndpointStatus } from '../domain/endpoint.js';
import { WEBHOOKS_SCHEMA } from './migrations.js';

/** Subscriptions and destinations alike: what the engine schedules, claims and switches off. */
export const ENDPOINTS = `${WEBHOOKS_SCHEMA}.endpoints`;
/** The deliveries a worker is sending: one row per claim (`work-queue-store`). */
export const CLAIMS = `${WEBHOOKS_SCHEMA}.claims`;
/** The deliveries waiting for their next attempt, per endpoint in due order (`work-queue-store`). */
export const QUEUE = `${WEBHOOKS_SCHEMA}.queue`;

/** Columns both kinds of endpoint are read with: where to send, its state, its secrets, its version. */
export const COMMON_ENDPOINT_COLUMNS =
  'merchant_id, id, url, status, disabled_reason, secret, previous_secret, previous_secret_expires_at, secret_rotated_at, enabled_at, version, created_at, updated_at';

export interface CommonEndpointRow {
  merchant_id: string;
  id: string;
  url: string;
  status: EndpointStatus;
  disabled_reason: DisabledReason | null;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
  secret_rotated_at: Date | null;
  enabled_at: Date;
  version: number;
  created_at: Date;
  updated_at: Date;
}

/** The columns holding signing secrets, sealed at rest (`npm run secrets:reseal` walks them). */
export const SEALED_ENDPOINT_SECRETS: SealedColumns = { table: ENDPOINTS, columns: ['secret', 'previous_secret'] };

/** The fields a subscription and a destination share, from their row; the secrets opened. */
export function commonEndpointFields(row: CommonEndpointRow) {
  const owner = { merchantId: row.merchant_id, recordId: row.id };
  return {
    id: row.id,
    merchantId: row.merchant_id,
    url: row.url,
    status: row.status,
    disabledReason: row.disabled_reason,
    secret: openSecret(row.secret, owner),
    previousSecret: openOptionalSecret(row.previous_secret, owner),
    previousSecretExpiresAt: row.previous_secret_expires_at,
    secretRotatedAt: row.secret_rotated_at,
    enabledAt: row.enabled_at,
    version: Number(row.version),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

interface EndpointStateRow {
  merchant_id: string;
  id: string;
  kind: EndpointKind;
  url: string;
  status: EndpointStatus;
  disabled_reason: DisabledReason | null;
  enabled_at: Date;
  version: number | string;
}

/** Any endpoint of the merchant, of either kind, as the engine sees it. Tenant-scoped. */
export async function findEndpointForMerchant(db: Queryable, merchantId: MerchantId, id: string): Promise<EndpointState | undefined> {
  const { rows } = await db.query<EndpointStateRow>(
    `SELECT merchant_id, id, kind, url, status, disabled_reason, enabled_at, version FROM ${ENDPOINTS} WHERE merchant_id = $1 AND id = $2`,
    [merchantId, id],
  );
  return rows[0] && endpointStateOf(rows[0]);
}

function endpointStateOf(row: EndpointStateRow): EndpointState {
  return {
    merchantId: row.merchant_id,
    id: row.id,
    kind: row.kind,
    url: row.url,
    status: row.status,
    disabledReason: row.disabled_reason,
    enabledAt: row.enabled_at,
    version: Number(row.version),
  };
}

/**
 * Locks these endpoints' rows in primary-key order. Every transaction that updates several
 * endpoints (fan-out, recording attempts, releasing dead workers' claims) takes its locks
 * through here first, so two of them never wait on each other in opposite orders (a deadlock).
 */
export async function lockEndpointsInKeyOrder(tx: Queryable, keys: EndpointKey[]): Promise<void> {
  if (keys.length === 0) return;
  await tx.query(
    `SELECT 1 FROM ${ENDPOINTS} WHERE (merchant_id, id) IN (SELECT * FROM unnest($1::text[], $2::text[]))
     ORDER BY merchant_id, id FOR NO KEY UPDATE`,
    [keys.map((k) => k.merchantId), keys.map((k) => k.endpointId)],
  );
}

const byKey = (a: EndpointKey, b: EndpointKey) =>
  a.merchantId < b.merchantId ? -1 : a.merchantId > b.merchantId ? 1 : a.endpointId < b.endpointId ? -1 : a.endpointId > b.endpointId ? 1 : 0;

/**
 * The locks of a fan-out batch that changes destinations or resets merchants, taken in one step
 * before any write, in key order like every other transaction's:
 * - a transaction-scoped advisory lock per destination it touches, whether or not its row exists
 *   yet. A routed record may arrive before its destination: the batch creating the endpoint and
 *   a concurrent one adding a delivery for it must not miss each other's rows, and a row that
 *   does not exist cannot be locked;
 * - the rows of those destinations, of the endpoints its events are fanned out to, and every
 *   endpoint of the merchants it resets.
 * Only fan-out takes these advisory locks, always before its row locks, so they add no cycle.
 */
export async function lockEndpointsOfBatch(
  tx: Queryable,
  batch: { destinations: EndpointKey[]; endpoints: EndpointKey[]; wholeMerchants: string[] },
): Promise<void> {
  const destinations = uniqueKeys(batch.destinations);
  if (destinations.length > 0) {
    // unnest hands the keys over in array order, which is key order.
    await tx.query(`SELECT pg_advisory_xact_lock(hashtextextended(m || '/' || e, 0)) FROM unnest($1::text[], $2::text[]) AS k(m, e)`, [
      destinations.map((k) => k.merchantId),
      destinations.map((k) => k.endpointId),
    ]);
  }
  const keys = uniqueKeys([...destinations, ...batch.endpoints]);
  if (batch.wholeMerchants.length === 0) return lockEndpointsInKeyOrder(tx, keys);
  // Resets are rare: one statement over both sets keeps the whole batch in one key order.
  await tx.query(
    `SELECT 1 FROM ${ENDPOINTS}
     WHERE (merchant_id, id) IN (SELECT * FROM unnest($1::text[], $2::text[])) OR merchant_id = ANY($3::text[])
     ORDER BY merchant_id, id FOR NO KEY UPDATE`,
    [keys.map((k) => k.merchantId), keys.map((k) => k.endpointId), batch.wholeMerchants],
  );
}

function uniqueKeys(keys: EndpointKey[]): EndpointKey[] {
  const seen = new Map(keys.map((key) => [`${key.merchantId}/${key.endpointId}`, key]));
  return [...seen.values()].sort(byKey);
}

/**
 * `due_at` is a lower bound of the earliest waiting delivery: only ever pulled forward here. The
 * rows are locked in key order first (fan-out and attempt recording both come here with many
 * endpoints at once). The update is unconditional on purpose: a claim recomputing `due_at` at the
 * same moment cannot see this transaction's deliveries, so this one must wait for its lock and
 * apply after it, never skip a row whose `due_at` merely looks early enough. A delivery for a
 * destination not synced yet finds no row here; the sync schedules it (`scheduleWaitingDeliveries`).
 */
export async function markEndpointsDue(tx: Queryable, due: (EndpointKey & { at: Date })[]): Promise<void> {
  if (due.length === 0) return;
  await lockEndpointsInKeyOrder(tx, due);
  await tx.query(
    `UPDATE ${ENDPOINTS} s SET due_at = LEAST(s.due_at, d.at)
     FROM (SELECT m, e, min(at) AS at FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS u(m, e, at) GROUP BY m, e) d
     WHERE s.merchant_id = d.m AND s.id = d.e`,
    [due.map((d) => d.merchantId), due.map((d) => d.endpointId), due.map((d) => d.at.toISOString())],
  );
}

/**
 * Sets an endpoint's `due_at` to its earliest waiting delivery, exactly: for an endpoint that
 * has just appeared (its deliveries may have been waiting for it) or become sendable again.
 * The caller holds the endpoint's lock, so no claim recomputes it meanwhile. Tenant-scoped.
 */
export async function scheduleWaitingDeliveries(tx: Queryable, merchantId: MerchantId, endpointId: string): Promise<boolean> {
  const { rows } = await tx.query<{ due_at: Date | null }>(
    `UPDATE ${ENDPOINTS} s SET due_at = (SELECT min(q.next_attempt_at) FROM ${QUEUE} q WHERE q.merchant_id = s.merchant_id AND q.endpoint_id = s.id)
     WHERE s.merchant_id = $1 AND s.id = $2 RETURNING s.due_at`,
    [merchantId, endpointId],
  );
  return rows[0]?.due_at != null;
}

/**
 * Moves endpoints between the lanes: into the slow one (keeping since when it is slow) or back to
 * the fast one. The caller holds the rows' locks, taken in key order with the batch's others.
 */
export async function moveEndpointsToLanes(tx: Queryable, moves: (EndpointKey & { slow: boolean })[], now: Date): Promise<void> {
  if (moves.length === 0) return;
  await tx.query(
    `UPDATE ${ENDPOINTS} s SET slow_since = CASE WHEN u.slow THEN COALESCE(s.slow_since, $4) END
     FROM unnest($1::text[], $2::text[], $3::boolean[]) AS u(m, e, slow)
     WHERE s.merchant_id = u.m AND s.id = u.e`,
    [moves.map((m) => m.merchantId), moves.map((m) => m.endpointId), moves.map((m) => m.slow), now],
  );
}

/** The engine's view of several endpoints at once, by key (each row found by its own merchant and id). */
export async function findEndpointsByKey(db: Queryable, keys: EndpointKey[]): Promise<Map<string, EndpointState>> {
  if (keys.length === 0) return new Map();
  const { rows } = await db.query<EndpointStateRow>(
    `SELECT s.merchant_id, s.id, s.kind, s.url, s.status, s.disabled_reason, s.enabled_at, s.version
     FROM ${ENDPOINTS} s JOIN unnest($1::text[], $2::text[]) AS k(m, e) ON s.merchant_id = k.m AND s.id = k.e`,
    [keys.map((k) => k.merchantId), keys.map((k) => k.endpointId)],
  );
  return new Map(rows.map((row) => [`${row.merchant_id}/${row.id}`, endpointStateOf(row)]));
}
