import type { MerchantId, Queryable } from '@merx/kit';
import type { StoredEvent, WebhookPayload } from '../domain/delivery.js';
import { WEBHOOKS_SCHEMA } from './migrations.js';

const TABLE = `${WEBHOOKS_SCHEMA}.events`;

interface EventRow {
  merchant_id: string;
  id: string;
  topic: string;
  created_at: Date;
  payload: string;
}

/** A stored event and when it reached this store: what StreamEvents tells late events by. */
export interface ArrivedEvent extends StoredEvent {
  receivedAt: Date;
}

interface ArrivedEventRow extends EventRow {
  received_at: Date;
}

function toArrivedEvent(row: ArrivedEventRow): ArrivedEvent {
  return { ...toStoredEvent(row), receivedAt: row.received_at };
}

function toStoredEvent(row: EventRow): StoredEvent {
  return {
    id: row.id,
    merchantId: row.merchant_id,
    topic: row.topic,
    createdAt: row.created_at,
    payload: JSON.parse(row.payload) as WebhookPayload,
    payloadText: row.payload,
  };
}

/**
 * The payloads travel as one json array whose elements PostgreSQL hands back as the exact text
 * written (the json type keeps its input), so each is stored byte for byte: as a text[] literal,
 * node-postgres would escape every quote of every payload in JavaScript (3 % of this service's
 * CPU in a bulk upsert). WITH ORDINALITY keeps each payload with its event.
 */
export async function insertEvents(tx: Queryable, events: StoredEvent[]): Promise<void> {
  if (events.length === 0) return;
  await tx.query(
    `INSERT INTO ${TABLE} (merchant_id, id, topic, created_at, payload)
     SELECT e.merchant_id, e.id, e.topic, e.created_at, p.payload::text
     FROM unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[]) WITH ORDINALITY AS e(merchant_id, id, topic, created_at, n)
     JOIN json_array_elements($5::json) WITH ORDINALITY AS p(payload, n) USING (n)
     ON CONFLICT DO NOTHING`,
    [
      events.map((e) => e.merchantId),
      events.map((e) => e.id),
      events.map((e) => e.topic),
      events.map((e) => e.createdAt.toISOString()),
      `[${events.map((e) => e.payloadText).join(',')}]`,
    ],
  );
}

export async function findEventForMerchant(db: Queryable, merchantId: MerchantId, id: string): Promise<StoredEvent | undefined> {
  const { rows } = await db.query<EventRow>(`SELECT merchant_id, id, topic, created_at, payload FROM ${TABLE} WHERE merchant_id = $1 AND id = $2`, [
    merchantId,
    id,
  ]);
  return rows[0] ? toStoredEvent(rows[0]) : undefined;
}

export interface EventFilters {
  /** An exact event name or a whole topic. */
  topic?: string;
  since?: Date;
  until?: Date;
}

/** Newest first; only what is younger than the retention, even before the purge has run. */
export async function listEventsForMerchant(
  db: Queryable,
  merchantId: MerchantId,
  page: { limit: number; after?: string | undefined },
  filters: EventFilters,
  notBefore: Date,
): Promise<StoredEvent[]> {
  const params: unknown[] = [merchantId, notBefore];
  const conditions = ['merchant_id = $1', 'created_at >= $2'];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    conditions.push(sql.replaceAll('?', `$${params.length}`));
  };
  if (page.after) add('id < ?', page.after);
  if (filters.topic) add(filters.topic.includes('.') ? 'topic = ?' : `topic LIKE ? || '.%'`, filters.topic);
  if (filters.since) add('created_at >= ?', filters.since);
  if (filters.until) add('created_at < ?', filters.until);
  params.push(page.limit + 1);
  const { rows } = await db.query<EventRow>(
    `SELECT merchant_id, id, topic, created_at, payload FROM ${TABLE} WHERE ${conditions.join(' AND ')} ORDER BY id DESC LIMIT $${params.length}`,
    params,
  );
  return rows.map(toStoredEvent);
}

/**
 * Events past retention go, unless a delivery still needs their payload (one waiting, or a dead
 * letter not yet replayed); finished deliveries of that age go first, with their attempts.
 */
export async function purgeExpiredEvents(tx: Queryable, before: Date): Promise<void> {
  await tx.query(
    `WITH gone AS (
       DELETE FROM ${WEBHOOKS_SCHEMA}.deliveries
       WHERE created_at < $1 AND (status = 'succeeded' OR (status = 'dead' AND replayed_by IS NOT NULL))
       RETURNING merchant_id, id
     )
     DELETE FROM ${WEBHOOKS_SCHEMA}.attempts a USING gone WHERE a.merchant_id = gone.merchant_id AND a.delivery_id = gone.id`,
    [before],
  );
  await tx.query(
    `DELETE FROM ${TABLE} e WHERE e.created_at < $1
       AND NOT EXISTS (SELECT 1 FROM ${WEBHOOKS_SCHEMA}.deliveries d WHERE d.merchant_id = e.merchant_id AND d.event_id = e.id)`,
    [before],
  );
  await tx.query(`DELETE FROM ${WEBHOOKS_SCHEMA}.inbox WHERE received_at < $1`, [before]);
}

export interface EventStreamQuery {
  /** Only events with an id above this one. */
  afterId: string;
  /** Only events with an id below this one (not yet settled ones wait). */
  beforeId?: string;
  /** Only events stored at or after this time (late arrivals). */
  receivedSince?: Date;
  /** Event names or whole topics; empty is every event. */
  topics: string[];
  notBefore: Date;
  limit: number;
}

/** Oldest first by id: what a merchant's event stream sends next. */
export async function streamEventsForMerchant(db: Queryable, merchantId: MerchantId, query: EventStreamQuery): Promise<ArrivedEvent[]> {
  const params: unknown[] = [merchantId, query.notBefore, query.afterId];
  const conditions = ['merchant_id = $1', 'created_at >= $2', 'id > $3'];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    conditions.push(sql.replaceAll('?', `$${params.length}`));
  };
  if (query.beforeId) add('id < ?', query.beforeId);
  if (query.receivedSince) add('received_at >= ?', query.receivedSince);
  if (query.topics.length > 0) {
    const names = query.topics.filter((topic) => topic.includes('.'));
    const wholeTopics = query.topics.filter((topic) => !topic.includes('.'));
    params.push(names, wholeTopics);
    conditions.push(`(topic = ANY($${params.length - 1}::text[]) OR split_part(topic, '.', 1) = ANY($${params.length}::text[]))`);
  }
  params.push(query.limit);
  const { rows } = await db.query<ArrivedEventRow>(
    `SELECT merchant_id, id, topic, created_at, received_at, payload FROM ${TABLE} WHERE ${conditions.join(' AND ')} ORDER BY id ASC LIMIT $${params.length}`,
    params,
  );
  return rows.map(toArrivedEvent);
}

/** What the event tail learns of an arrival; the payload is read only when a stream wants the event. */
export interface EventArrival {
  merchantId: string;
  id: string;
  topic: string;
  createdAt: Date;
  /** received_at in microseconds since the epoch: the exact position, for the next page. */
  receivedAtMicros: number;
}

/** A place in the arrival order: received_at (microseconds since the epoch), then id. */
export interface ArrivalPosition {
  receivedAtMicros: number;
  id: string;
}

/**
 * Every merchant's events after a position in arrival order, without payloads: the one read per
 * tick of the process's event tail, which serves the streams of every merchant together (no
 * merchant filter by design; usecases/event-tail.ts hands each event only to its merchant's
 * streams). received_at travels in microseconds: a millisecond Date would put a page's next
 * position before the rows of its own transaction, which share one received_at.
 */
export async function eventArrivalsOfEveryMerchant(db: Queryable, after: ArrivalPosition, limit: number): Promise<EventArrival[]> {
  const { rows } = await db.query<{ merchant_id: string; id: string; topic: string; created_at: Date; received_at_micros: number | string }>(
    `SELECT merchant_id, id, topic, created_at, (extract(epoch FROM received_at) * 1000000)::bigint AS received_at_micros
     FROM ${TABLE}
     WHERE (received_at, id) > (timestamptz 'epoch' + $1::bigint * interval '1 microsecond', $2)
     ORDER BY received_at, id
     LIMIT $3`,
    [after.receivedAtMicros, after.id, limit],
  );
  return rows.map((row) => ({
    merchantId: row.merchant_id,
    id: row.id,
    topic: row.topic,
    createdAt: row.created_at,
    receivedAtMicros: Number(row.received_at_micros),
  }));
}

/** The events named, each by its merchant and id (what the tail hands to streams, with payloads). */
export async function eventsByMerchantAndId(db: Queryable, keys: Array<{ merchantId: string; id: string }>): Promise<ArrivedEvent[]> {
  if (keys.length === 0) return [];
  const { rows } = await db.query<ArrivedEventRow>(
    `SELECT e.merchant_id, e.id, e.topic, e.created_at, e.received_at, e.payload
     FROM unnest($1::text[], $2::text[]) AS k(merchant_id, id)
     JOIN ${TABLE} e ON e.merchant_id = k.merchant_id AND e.id = k.id`,
    [keys.map((key) => key.merchantId), keys.map((key) => key.id)],
  );
  return rows.map(toArrivedEvent);
}
