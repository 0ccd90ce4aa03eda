import type { MerxEvent, Queryable } from '@merx/kit';
import { CATALOG_SCHEMA } from './migrations.js';

/**
 * Claims `event` for `consumer` in the caller's transaction; false when it was claimed before (a
 * redelivery). Written with the handler's changes, so they commit together or not at all. A
 * second transaction claiming the same event at the same time waits for the first on the primary
 * key and then finds it taken.
 */
export async function claimInboxEvent(tx: Queryable, consumer: string, event: Pick<MerxEvent, 'id' | 'topic'>): Promise<boolean> {
  const { rows } = await tx.query(
    `INSERT INTO ${CATALOG_SCHEMA}.inbox (consumer, event_id, topic) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING event_id`,
    [consumer, event.id, event.topic],
  );
  return rows.length === 1;
}
