import { sealSecret, type MerchantId, type Queryable } from '@merx/kit';
import type { DisabledReason, Subscription, SubscriptionChanges, SubscriptionInput, SubscriptionStatus } from '../domain/subscription.js';
import { COMMON_ENDPOINT_COLUMNS, commonEndpointFields, ENDPOINTS, type CommonEndpointRow } from './endpoints-store.js';

/**
 * Subscriptions are the endpoints of kind `subscription`; every query here says so, because the
 * same table holds the merchant's destinations, which the subscriptions API never shows.
 */
const SUBSCRIPTION = `kind = 'subscription'`;
export const SUBSCRIPTION_COLUMNS = `${COMMON_ENDPOINT_COLUMNS}, topics, description`;

export interface SubscriptionRow extends CommonEndpointRow {
  topics: string[];
  description: string | null;
  status: SubscriptionStatus;
}

export function toSubscription(row: SubscriptionRow): Subscription {
  return { ...commonEndpointFields(row), status: row.status, topics: row.topics, description: row.description };
}

export async function insertSubscriptionForMerchant(
  db: Queryable,
  merchantId: MerchantId,
  id: string,
  input: SubscriptionInput,
  secret: string,
  now: Date,
): Promise<Subscription> {
  const { rows } = await db.query<SubscriptionRow>(
    `INSERT INTO ${ENDPOINTS} (merchant_id, id, kind, url, topics, description, status, disabled_reason, secret, enabled_at, version, created_at, updated_at)
     VALUES ($1, $2, 'subscription', $3, $4, $5, $6, $7, $8, $9, 1, $9, $9)
     RETURNING ${SUBSCRIPTION_COLUMNS}`,
    [
      merchantId,
      id,
      input.url,
      input.topics,
      input.description,
      input.status,
      input.status === 'disabled' ? 'by_merchant' : null,
      sealSecret(secret, { merchantId, recordId: id }),
      now,
    ],
  );
  return toSubscription(rows[0]!);
}

export async function findSubscriptionForMerchant(
  db: Queryable,
  merchantId: MerchantId,
  id: string,
  options: { forUpdate?: boolean } = {},
): Promise<Subscription | undefined> {
  const { rows } = await db.query<SubscriptionRow>(
    `SELECT ${SUBSCRIPTION_COLUMNS} FROM ${ENDPOINTS} WHERE merchant_id = $1 AND id = $2 AND ${SUBSCRIPTION}${options.forUpdate ? ' FOR UPDATE' : ''}`,
    [merchantId, id],
  );
  return rows[0] ? toSubscription(rows[0]) : undefined;
}

/**
 * Fan-out's first step in one round trip: records a batch's messages in `schema`'s inbox for
 * `consumer` and reads the enabled subscriptions of `merchantIds` (as enabledSubscriptionsOfMerchants).
 * Answers the ids recorded for the first time, which are the messages to act on, each once.
 */
export async function recordInInboxAndReadSubscriptions(
  tx: Queryable,
  schema: string,
  consumer: string,
  messages: Array<{ id: string; topic: string }>,
  merchantIds: string[],
): Promise<{ firstSeen: Set<string>; subscriptions: Subscription[] }> {
  // One row at least (the first sightings), joined to each subscription, if any.
  const { rows } = await tx.query<{ merx_first_seen: string[] | null } & (SubscriptionRow | { [column in keyof SubscriptionRow]: null })>(
    `WITH fresh AS (
       INSERT INTO ${schema}.inbox (consumer, event_id, topic) SELECT $1, * FROM unnest($2::text[], $3::text[])
       ON CONFLICT DO NOTHING RETURNING event_id
     )
     SELECT f.merx_first_seen, s.* FROM (SELECT array_agg(event_id) AS merx_first_seen FROM fresh) f
     LEFT JOIN LATERAL (
       SELECT ${SUBSCRIPTION_COLUMNS} FROM ${ENDPOINTS} WHERE merchant_id = ANY($4::text[]) AND status = 'enabled' AND ${SUBSCRIPTION}
     ) s ON true`,
    [consumer, messages.map((message) => message.id), messages.map((message) => message.topic), merchantIds],
  );
  const subscriptions: Subscription[] = [];
  for (const row of rows) if (row.id !== null) subscriptions.push(toSubscription(row as SubscriptionRow));
  return { firstSeen: new Set(rows[0]?.merx_first_seen ?? []), subscriptions };
}

/** The enabled subscriptions of these merchants: what fan-out matches events against. */
export async function enabledSubscriptionsOfMerchants(db: Queryable, merchantIds: string[]): Promise<Subscription[]> {
  const { rows } = await db.query<SubscriptionRow>(
    `SELECT ${SUBSCRIPTION_COLUMNS} FROM ${ENDPOINTS} WHERE merchant_id = ANY($1) AND status = 'enabled' AND ${SUBSCRIPTION}`,
    [merchantIds],
  );
  return rows.map(toSubscription);
}

export async function listSubscriptionsForMerchant(
  db: Queryable,
  merchantId: MerchantId,
  page: { limit: number; after?: string | undefined },
  filters: { status?: SubscriptionStatus },
): Promise<Subscription[]> {
  const params: unknown[] = [merchantId];
  const conditions = ['merchant_id = $1', SUBSCRIPTION];
  if (page.after) {
    params.push(page.after);
    conditions.push(`id < $${params.length}`);
  }
  if (filters.status) {
    params.push(filters.status);
    conditions.push(`status = $${params.length}`);
  }
  params.push(page.limit + 1);
  const { rows } = await db.query<SubscriptionRow>(
    `SELECT ${SUBSCRIPTION_COLUMNS} FROM ${ENDPOINTS} WHERE ${conditions.join(' AND ')} ORDER BY id DESC LIMIT $${params.length}`,
    params,
  );
  return rows.map(toSubscription);
}

export async function updateSubscriptionForMerchant(
  tx: Queryable,
  merchantId: MerchantId,
  id: string,
  changes: SubscriptionChanges & { disabledReason?: DisabledReason | null },
  now: Date,
): Promise<Subscription> {
  const columns: Record<string, string> = { url: 'url', topics: 'topics', description: 'description', status: 'status', disabledReason: 'disabled_reason' };
  const params: unknown[] = [merchantId, id, now];
  const sets = Object.entries(changes).map(([key, value]) => {
    params.push(value);
    return `${columns[key]} = $${params.length}`;
  });
  // A merchant re-enabling an endpoint starts it afresh: the reason goes and the failure clock restarts.
  if (changes.status === 'enabled') sets.push('disabled_reason = NULL', `enabled_at = CASE WHEN status = 'disabled' THEN $3 ELSE enabled_at END`);
  const { rows } = await tx.query<SubscriptionRow>(
    `UPDATE ${ENDPOINTS} SET ${[...sets, 'version = version + 1', 'updated_at = $3'].join(', ')}
     WHERE merchant_id = $1 AND id = $2 AND ${SUBSCRIPTION} RETURNING ${SUBSCRIPTION_COLUMNS}`,
    params,
  );
  return toSubscription(rows[0]!);
}

/** The previous secret moves over still sealed: the same row, so it opens as before. */
export async function rotateSubscriptionSecret(
  tx: Queryable,
  merchantId: MerchantId,
  id: string,
  secret: string,
  previousExpiresAt: Date,
  now: Date,
): Promise<Subscription> {
  const { rows } = await tx.query<SubscriptionRow>(
    `UPDATE ${ENDPOINTS} SET previous_secret = secret, secret = $3, previous_secret_expires_at = $4, secret_rotated_at = $5,
       version = version + 1, updated_at = $5
     WHERE merchant_id = $1 AND id = $2 AND ${SUBSCRIPTION} RETURNING ${SUBSCRIPTION_COLUMNS}`,
    [merchantId, id, sealSecret(secret, { merchantId, recordId: id }), previousExpiresAt, now],
  );
  return toSubscription(rows[0]!);
}

export async function deleteSubscriptionForMerchant(tx: Queryable, merchantId: MerchantId, id: string): Promise<void> {
  await tx.query(`DELETE FROM ${ENDPOINTS} WHERE merchant_id = $1 AND id = $2 AND ${SUBSCRIPTION}`, [merchantId, id]);
}
