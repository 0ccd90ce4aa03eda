import type { MerchantId, Queryable } from '@merx/kit';
import { ENDPOINTS, QUEUE } from './endpoints-store.js';
import { WEBHOOKS_SCHEMA } from './migrations.js';

/** What a sandbox reset took away, as `internal.sandbox_service_reset` reports it. */
export interface WebhooksDataRemoved {
  subscriptions: number;
  deliveries: number;
  events: number;
}

/**
 * Wipes one merchant's webhooks data for a sandbox reset, in one statement: its subscriptions
 * with their deliveries and attempts, and the events created before the reset (later ones, such
 * as the reset's own event and the fixtures seeded after it, stay). Destinations are not this
 * service's to wipe: the merchants service removes each one it wipes with a versioned
 * `internal.destination_removed`, which stays right whichever replica handles it and when, while
 * a wipe here could take away a destination seeded after the reset whose sync overtook it.
 * Claims in flight on the wiped deliveries find nothing to record when their attempts finish.
 * The inbox and the idempotency records are the service's own bookkeeping and stay. Tenant-scoped.
 */
export async function wipeWebhooksDataOfMerchant(tx: Queryable, merchantId: MerchantId, eventsBefore: Date): Promise<WebhooksDataRemoved> {
  const { rows } = await tx.query<WebhooksDataRemoved>(
    `WITH gone_deliveries AS (DELETE FROM ${WEBHOOKS_SCHEMA}.deliveries WHERE merchant_id = $1 AND endpoint_kind = 'subscription' RETURNING id, endpoint_id),
          gone_attempts AS (DELETE FROM ${WEBHOOKS_SCHEMA}.attempts a USING gone_deliveries d WHERE a.merchant_id = $1 AND a.delivery_id = d.id),
          gone_queue AS (DELETE FROM ${QUEUE} q USING gone_deliveries d WHERE q.merchant_id = $1 AND q.endpoint_id = d.endpoint_id AND q.delivery_id = d.id),
          gone_endpoints AS (DELETE FROM ${ENDPOINTS} WHERE merchant_id = $1 AND kind = 'subscription' RETURNING 1),
          gone_events AS (DELETE FROM ${WEBHOOKS_SCHEMA}.events WHERE merchant_id = $1 AND created_at < $2 RETURNING 1)
     SELECT (SELECT count(*) FROM gone_endpoints)::int AS subscriptions,
            (SELECT count(*) FROM gone_deliveries)::int AS deliveries,
            (SELECT count(*) FROM gone_events)::int AS events`,
    [merchantId, eventsBefore],
  );
  const counts = rows[0]!;
  return { subscriptions: Number(counts.subscriptions), deliveries: Number(counts.deliveries), events: Number(counts.events) };
}
