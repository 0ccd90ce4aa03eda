import type { PoisonedMessage } from './bus.js';
import type { Db, Queryable } from './db.js';
import type { MerxEvent } from './events.js';
import { migrateSchema, type Migration } from './migrations.js';

/** The embedded bus's own schema in the embedded database, beside the services' schemas. */
export const BUS_SCHEMA = 'merx_bus';

export const busMigrations: Migration[] = [
  {
    id: '001_durable_queues',
    // Payloads are text, not jsonb: a message is kept byte for byte as published (JSON escapes
    // included), whatever it contains.
    sql: `
      CREATE TABLE {{schema}}.queue_bindings (
        queue text NOT NULL,
        pattern text NOT NULL,
        PRIMARY KEY (queue, pattern)
      );
      CREATE TABLE {{schema}}.messages (
        id bigserial PRIMARY KEY,
        queue text NOT NULL,
        event_id text NOT NULL,
        topic text NOT NULL,
        payload text NOT NULL,
        failures integer NOT NULL DEFAULT 0,
        available_at timestamptz NOT NULL DEFAULT now(),
        last_error text
      );
      CREATE TABLE {{schema}}.poisoned (
        id bigserial PRIMARY KEY,
        queue text NOT NULL,
        event_id text NOT NULL,
        topic text NOT NULL,
        payload text NOT NULL,
        failures integer NOT NULL,
        last_error text,
        poisoned_at timestamptz NOT NULL DEFAULT now()
      );
      CREATE INDEX poisoned_by_queue ON {{schema}}.poisoned (queue, id);
    `,
  },
];

/** A message for one stored queue, serialised once for all the queues it goes to. */
export interface QueueMessage {
  queue: string;
  event: MerxEvent;
  body: string;
}

export interface StoredMessage {
  id: number;
  queue: string;
  eventId: string;
  topic: string;
  body: string;
  failures: number;
  /** How long until it may be delivered again (0: now). */
  waitMs: number;
}

interface MessageRow {
  id: number;
  queue: string;
  event_id: string;
  topic: string;
  payload: string;
  failures: number;
  wait_ms: number | string | null;
}

const toStored = (row: MessageRow): StoredMessage => ({
  id: Number(row.id),
  queue: row.queue,
  eventId: row.event_id,
  topic: row.topic,
  body: row.payload,
  failures: row.failures,
  waitMs: Math.max(0, Math.ceil(Number(row.wait_ms ?? 0))),
});

const MESSAGE_COLUMNS = `id, queue, event_id, topic, payload, failures, GREATEST(0, EXTRACT(EPOCH FROM available_at - now()) * 1000) AS wait_ms`;

/**
 * Durable queues as rows: one per message per bound queue, written in the transaction that
 * takes the events out of an outbox, deleted once the consumer's handler has committed. The
 * process that opened the database is its only reader (the embedded mode holds its data
 * directory exclusively), so messages are claimed in memory, not with row locks.
 */
export class DurableQueueStore {
  private constructor(
    readonly db: Db,
    private readonly schema: string,
  ) {}

  /** `schema` is the embedded mode's own unless a test needs one of its own. */
  static async open(db: Db, schema: string = BUS_SCHEMA): Promise<DurableQueueStore> {
    await migrateSchema(db, schema, busMigrations);
    return new DurableQueueStore(db, schema);
  }

  async bindings(): Promise<Map<string, string[]>> {
    const { rows } = await this.db.query<{ queue: string; pattern: string }>(
      `SELECT queue, pattern FROM ${this.schema}.queue_bindings ORDER BY queue, pattern`,
    );
    const byQueue = new Map<string, string[]>();
    for (const row of rows) byQueue.set(row.queue, [...(byQueue.get(row.queue) ?? []), row.pattern]);
    return byQueue;
  }

  /** A queue's bindings are what its consumers declare now: patterns a newer version dropped stop routing to it. */
  async bind(queue: string, patterns: string[]): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.query(`DELETE FROM ${this.schema}.queue_bindings WHERE queue = $1 AND NOT (pattern = ANY($2::text[]))`, [queue, patterns]);
      await tx.query(`INSERT INTO ${this.schema}.queue_bindings (queue, pattern) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING`, [queue, patterns]);
    });
  }

  /** Everything still queued, oldest first: what a restart must deliver. */
  async pending(): Promise<StoredMessage[]> {
    const { rows } = await this.db.query<MessageRow>(`SELECT ${MESSAGE_COLUMNS} FROM ${this.schema}.messages ORDER BY id`);
    return rows.map(toStored);
  }

  /** In the caller's transaction: one statement for every message of a publication. Ids in the order given. */
  async enqueue(tx: Queryable, messages: QueueMessage[]): Promise<number[]> {
    if (messages.length === 0) return [];
    const values: unknown[] = [];
    const { rows } = await tx.query<{ id: number }>(this.enqueueStatement(messages, values), values);
    return rows.map((row) => Number(row.id)).sort((a, b) => a - b);
  }

  /**
   * The insert of `messages` as one statement over arrays appended to `values`, returning the new
   * ids: to run alone (enqueue) or as a clause of the writer's own statement (Outbox.withEvents).
   * Rows are fed in the order given and each takes the next id, so sorted ids match the messages.
   */
  enqueueStatement(messages: QueueMessage[], values: unknown[]): string {
    values.push(
      messages.map((m) => m.queue),
      messages.map((m) => m.event.id),
      messages.map((m) => m.event.topic),
      messages.map((m) => m.body),
    );
    const [queue, eventId, topic, payload] = [values.length - 3, values.length - 2, values.length - 1, values.length];
    return `INSERT INTO ${this.schema}.messages (queue, event_id, topic, payload)
       SELECT queue, event_id, topic, payload FROM unnest($${queue}::text[], $${eventId}::text[], $${topic}::text[], $${payload}::text[]) WITH ORDINALITY AS m(queue, event_id, topic, payload, ordinal) ORDER BY ordinal
       RETURNING id`;
  }

  /**
   * In the transaction that has just written `messages`: their ids, oldest first. The newest rows
   * of their events are theirs, since this process is the database's only writer of queues.
   */
  async newestIdsOf(tx: Queryable, messages: QueueMessage[]): Promise<number[]> {
    const { rows } = await tx.query<{ id: number | string }>(
      `SELECT id FROM ${this.schema}.messages WHERE event_id = ANY($1::text[]) ORDER BY id DESC LIMIT $2`,
      [[...new Set(messages.map((m) => m.event.id))], messages.length],
    );
    return rows.map((row) => Number(row.id)).reverse();
  }

  async ack(ids: number[]): Promise<void> {
    if (ids.length > 0) await this.db.query(`DELETE FROM ${this.schema}.messages WHERE id = ANY($1::bigint[])`, [ids]);
  }

  async retryLater(id: number, failures: number, delayMs: number, error: string): Promise<void> {
    await this.db.query(
      `UPDATE ${this.schema}.messages SET failures = $2, available_at = now() + $3 * interval '1 millisecond', last_error = $4 WHERE id = $1`,
      [id, failures, delayMs, error],
    );
  }

  async poison(id: number, failures: number, error: string): Promise<void> {
    await this.db.query(
      `WITH moved AS (DELETE FROM ${this.schema}.messages WHERE id = $1 RETURNING queue, event_id, topic, payload)
       INSERT INTO ${this.schema}.poisoned (queue, event_id, topic, payload, failures, last_error) SELECT queue, event_id, topic, payload, $2, $3 FROM moved`,
      [id, failures, error],
    );
  }

  async poisonCounts(queues: string[]): Promise<Record<string, number>> {
    const { rows } = await this.db.query<{ queue: string; count: number | string }>(
      `SELECT queue, count(*) AS count FROM ${this.schema}.poisoned WHERE queue = ANY($1::text[]) GROUP BY queue`,
      [queues],
    );
    const counts = Object.fromEntries(queues.map((queue) => [queue, 0]));
    for (const row of rows) counts[row.queue] = Number(row.count);
    return counts;
  }

  async listPoison(queue: string, limit: number): Promise<{ total: number; messages: PoisonedMessage[] }> {
    const { rows } = await this.db.query<{ payload: string; failures: number; last_error: string | null; poisoned_at: Date; total: number | string }>(
      `SELECT payload, failures, last_error, poisoned_at, count(*) OVER () AS total FROM ${this.schema}.poisoned WHERE queue = $1 ORDER BY id LIMIT $2`,
      [queue, limit],
    );
    const total = rows.length > 0 ? Number(rows[0]!.total) : (await this.poisonCounts([queue]))[queue]!;
    return {
      total,
      messages: rows.map((row) => ({
        queue,
        event: JSON.parse(row.payload) as MerxEvent,
        failures: row.failures,
        last_error: row.last_error,
        poisoned_at: new Date(row.poisoned_at).toISOString(),
      })),
    };
  }

  /** Moves poisoned messages back to their work queue in one statement, with a fresh count; returns them as queued. */
  async replay(queue: string, eventIds: string[] | undefined): Promise<StoredMessage[]> {
    const { rows } = await this.db.query<MessageRow>(
      `WITH moved AS (
         DELETE FROM ${this.schema}.poisoned WHERE queue = $1 AND ($2::text[] IS NULL OR event_id = ANY($2::text[])) RETURNING id, queue, event_id, topic, payload
       ), requeued AS (
         INSERT INTO ${this.schema}.messages (queue, event_id, topic, payload) SELECT queue, event_id, topic, payload FROM moved ORDER BY id RETURNING ${MESSAGE_COLUMNS}
       )
       SELECT * FROM requeued ORDER BY id`,
      [queue, eventIds ?? null],
    );
    return rows.map(toStored);
  }
}
