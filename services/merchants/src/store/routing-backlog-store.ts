import type { MerchantId, Queryable } from '@merx/kit';
import { MERCHANTS_SCHEMA } from './migrations.js';

const BACKLOG = `${MERCHANTS_SCHEMA}.routing_backlog`;
const RECORDS = `${MERCHANTS_SCHEMA}.records`;

/** A record event to park: its id, its record's, and its JSON without the record's data. */
export interface ParkedEvent {
  eventId: string;
  recordId: string;
  json: string;
}

/** A parked event claimed, with its record's data (null if the record is gone). */
export interface ClaimedEvent extends ParkedEvent {
  recordData: Record<string, unknown> | null;
}

/** Parks events in the order given; one parked already (a redelivery) stays where it was. */
export async function parkEventsForMerchant(tx: Queryable, merchantId: MerchantId, events: ParkedEvent[]): Promise<void> {
  if (events.length === 0) return;
  await tx.query(
    `INSERT INTO ${BACKLOG} (merchant_id, event_id, record_id, event)
     SELECT $1, parked.event_id, parked.record_id, parked.event
     FROM unnest($2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS parked(event_id, record_id, event, position)
     ORDER BY parked.position
     ON CONFLICT ON CONSTRAINT routing_backlog_once DO NOTHING`,
    [merchantId, events.map((event) => event.eventId), events.map((event) => event.recordId), events.map((event) => event.json)],
  );
}

/**
 * Claims up to `limit` of the merchant's oldest parked events that nobody holds (or whose
 * holder's lease ran out), for `claimant` until `until`, each with its record's data. Rows
 * another replica is claiming at this moment are skipped, not waited for. Answers them oldest first.
 */
export async function claimParkedEventsForMerchant(
  tx: Queryable,
  merchantId: MerchantId,
  claim: { claimant: string; limit: number; until: Date; now: Date },
): Promise<ClaimedEvent[]> {
  const { rows } = await tx.query<{ seq: string; event_id: string; record_id: string; event: string; data: Record<string, unknown> | null }>(
    `WITH claimed AS (
       UPDATE ${BACKLOG} b SET claimed_by = $2, claimed_until = $3
       FROM (
         SELECT merchant_id, seq FROM ${BACKLOG}
         WHERE merchant_id = $1 AND (claimed_until IS NULL OR claimed_until < $4)
         ORDER BY seq LIMIT $5 FOR UPDATE SKIP LOCKED
       ) free
       WHERE b.merchant_id = free.merchant_id AND b.seq = free.seq
       RETURNING b.seq, b.event_id, b.record_id, b.event
     )
     SELECT c.seq, c.event_id, c.record_id, c.event, r.data
     FROM claimed c LEFT JOIN LATERAL (SELECT data FROM ${RECORDS} r WHERE r.merchant_id = $1 AND r.id = c.record_id) r ON true
     ORDER BY c.seq`,
    [merchantId, claim.claimant, claim.until, claim.now, claim.limit],
  );
  return rows.map((row) => ({ eventId: row.event_id, recordId: row.record_id, json: row.event, recordData: row.data }));
}

/** Keeps `claimant`'s claims on these merchants' parked events until `until`: it is still routing them. */
export async function renewClaimsForMerchants(db: Queryable, merchantIds: readonly string[], claimant: string, until: Date): Promise<void> {
  if (merchantIds.length === 0) return;
  await db.query(`UPDATE ${BACKLOG} SET claimed_until = $3 WHERE merchant_id = ANY($1::text[]) AND claimed_by = $2`, [merchantIds, claimant, until]);
}

/**
 * A failed routing: the events go back, to be claimed again (by whichever replica comes first)
 * after 1 s, then 2, 4, ... at most 5 minutes, so an event that keeps failing is retried without
 * end (nothing parked is ever dropped) and never holds back the merchant's other events.
 */
export async function releaseFailedClaimsForMerchant(db: Queryable, merchantId: MerchantId, eventIds: string[], now: Date): Promise<void> {
  await db.query(
    `UPDATE ${BACKLOG} SET attempts = attempts + 1, claimed_by = NULL, claimed_until = $3::timestamptz + make_interval(secs => least(power(2, attempts), 300))
     WHERE merchant_id = $1 AND event_id = ANY($2::text[])`,
    [merchantId, eventIds, now],
  );
}

/** In the transaction that records their routings. */
export async function deleteParkedEventsForMerchant(tx: Queryable, merchantId: MerchantId, eventIds: string[]): Promise<void> {
  if (eventIds.length === 0) return;
  await tx.query(`DELETE FROM ${BACKLOG} WHERE merchant_id = $1 AND event_id = ANY($2::text[])`, [merchantId, eventIds]);
}

/**
 * Merchants with parked events nobody holds: the scheduler's view across tenants, as the webhook
 * engine's claim is (the backlog is one queue that every replica serves).
 */
export async function merchantsWithUnclaimedBacklog(db: Queryable, now: Date, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ merchant_id: string }>(
    `SELECT DISTINCT merchant_id FROM ${BACKLOG} WHERE claimed_until IS NULL OR claimed_until < $1 LIMIT $2`,
    [now, limit],
  );
  return rows.map((row) => row.merchant_id);
}
