import type { Db, Queryable } from './db.js';
import type { MerxEvent } from './events.js';
import type { Migration } from './migrations.js';

export const inboxMigration: Migration = {
  id: '000_inbox',
  sql: `
    CREATE TABLE {{schema}}.inbox (
      consumer text NOT NULL,
      event_id text NOT NULL,
      topic text NOT NULL,
      received_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (consumer, event_id)
    );
  `,
};

/**
 * Records that `consumer` has seen `event`, inside the caller's transaction. False when it had
 * already: the caller then does nothing, and its transaction commits no second effect.
 */
export async function recordInInbox(tx: Queryable, schema: string, consumer: string, event: MerxEvent): Promise<boolean> {
  const inserted = await tx.query(`INSERT INTO ${schema}.inbox (consumer, event_id, topic) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING event_id`, [
    consumer,
    event.id,
    event.topic,
  ]);
  return (inserted.rowCount ?? 0) > 0;
}

/**
 * recordInInbox for a batch handled in one transaction: records them all and answers those
 * `consumer` had not seen before, each id once, in the order given (a batch can hold a
 * redelivery of its own event). The caller acts on these only.
 */
export async function recordFirstSightings(tx: Queryable, schema: string, consumer: string, events: MerxEvent[]): Promise<MerxEvent[]> {
  if (events.length === 0) return [];
  const { rows } = await tx.query<{ event_id: string }>(
    `INSERT INTO ${schema}.inbox (consumer, event_id, topic) SELECT $1, * FROM unnest($2::text[], $3::text[]) ON CONFLICT DO NOTHING RETURNING event_id`,
    [consumer, events.map((event) => event.id), events.map((event) => event.topic)],
  );
  const unseen = new Set(rows.map((row) => row.event_id));
  return events.filter((event) => unseen.delete(event.id));
}

/**
 * At-least-once delivery becomes exactly-once effect: the inbox row and the handler's writes
 * commit together, so a redelivered event finds its row and is dropped, and a crash before
 * commit leaves no row and the broker redelivers.
 */
export async function handleEventOnce(
  db: Db,
  schema: string,
  consumer: string,
  event: MerxEvent,
  work: (tx: Queryable) => Promise<void>,
): Promise<'handled' | 'duplicate'> {
  return db.transaction(async (tx) => {
    if (!(await recordInInbox(tx, schema, consumer, event))) return 'duplicate';
    await work(tx);
    return 'handled';
  });
}
