import type { MerxEvent, Queryable } from '@merx/kit';
import { MERCHANTS_SCHEMA } from './migrations.js';

/**
 * Records that `consumer` has seen these events, in the caller's transaction, and answers those it
 * had not seen before: each id once, in the order given (a batch can hold a redelivery of its own
 * event). The caller acts on these only, so a redelivered event commits no second effect.
 */
export async function recordFirstSightings(tx: Queryable, consumer: string, events: MerxEvent[]): Promise<MerxEvent[]> {
  if (events.length === 0) return [];
  const { rows } = await tx.query<{ event_id: string }>(
    `INSERT INTO ${MERCHANTS_SCHEMA}.inbox (consumer, event_id, topic)
     SELECT $1, * FROM unnest($2::text[], $3::text[]) ON CONFLICT DO NOTHING RETURNING event_id`,
    [consumer, events.map((event) => event.id), events.map((event) => event.topic)],
  );
  const unseen = new Set(rows.map((row) => row.event_id));
  return events.filter((event) => unseen.delete(event.id));
}
