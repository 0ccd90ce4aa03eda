import type { Bus } from './bus.js';
import type { Db, Queryable, QueryResult } from './db.js';
import { storedEvent, type MerxEvent } from './events.js';
import type { Logger } from './logger.js';
import { MemoryBus } from './memory-bus.js';
import { outboxBacklog } from './metrics.js';
import type { Migration } from './migrations.js';
import { attachTraceCarrier, currentTraceCarrier, parseTraceCarrier, serializeTraceCarrier } from './tracing.js';

export const outboxMigration: Migration = {
  id: '000_outbox',
  // The payload is kept as text, not jsonb, so the event is published byte for byte as written.
  sql: `
    CREATE TABLE {{schema}}.outbox (
      position bigserial PRIMARY KEY,
      event_id text NOT NULL UNIQUE,
      topic text NOT NULL,
      merchant_id text NOT NULL,
      payload text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    );
  `,
};

/**
 * The trace a row's events were written in (W3C fields as JSON), so the relay's publication and
 * the consumers continue the request's trace however much later they run. Null without tracing.
 */
export const outboxTraceContextMigration: Migration = {
  id: '000_outbox_trace_context',
  sql: `ALTER TABLE {{schema}}.outbox ADD COLUMN trace_context text;`,
};

export type Emit = (event: MerxEvent) => void;

/**
 * The transactional outbox: a state change and the events describing it commit in one
 * transaction, so an event is published if and only if its change happened. After commit the
 * relay is woken at once; its polling only covers crashes and other replicas' rows.
 *
 * Given the embedded bus whose queues live in this very database (`sameDatabaseBus`), the events
 * skip the outbox table: the transaction writes them straight into their queues, and they are
 * handed to consumers once it commits. A crash at any instant still loses nothing (the queue rows
 * commit with the change), and the relay's own transaction per event, two statements and a
 * commit on a single-threaded PGlite, is gone. The relay still drains rows an older version left.
 */
export class Outbox {
  private readonly listeners = new Set<() => void>();

  constructor(
    private readonly db: Db,
    readonly schema: string,
    private readonly sameDatabaseBus?: MemoryBus,
  ) {
    if (sameDatabaseBus && !sameDatabaseBus.storesIn(db))
      throw new Error('the outbox can publish straight to a bus only when its queues live in the same database');
  }

  async transaction<T>(work: (tx: Queryable, emit: Emit) => Promise<T>): Promise<T> {
    const events: MerxEvent[] = [];
    let handOver: (() => void) | undefined;
    const result = await this.db.transaction(async (tx) => {
      const value = await work(tx, (event) => events.push(event));
      handOver = await this.record(tx, events);
      return value;
    });
    // Inside a unit of work the rows are visible only once the whole unit commits.
    if (handOver) this.db.afterCommit(handOver);
    else if (events.length > 0) this.db.afterCommit(() => this.notify());
    return result;
  }

  private notify(): void {
    for (const listener of this.listeners) listener();
  }

  /** True when events skip the table (a same-database bus): the relay only drains what an older version left there. */
  get publishesDirectly(): boolean {
    return this.sameDatabaseBus !== undefined;
  }

  /** Writes `events` in `tx`; with a same-database bus, returns what hands them to consumers once `tx` has committed. */
  async record(tx: Queryable, events: MerxEvent[]): Promise<(() => void) | undefined> {
    if (events.length === 0) return undefined;
    if (this.sameDatabaseBus) return this.sameDatabaseBus.publishWithin(tx, events);
    const values: unknown[] = [];
    await tx.query(this.insertEvents(events, values), values);
    return undefined;
  }

  /**
   * For a change that is one statement (a create): a Queryable that runs that one statement and
   * records `events` in the same statement, as a data-modifying CTE. Both commit or neither,
   * without a transaction block: one round trip instead of four. The statement must end in
   * RETURNING; its rows are what the caller gets back.
   */
  withEvents(db: Queryable, events: MerxEvent[]): Queryable {
    let used = false;
    return {
      query: async <Row>(sql: string, params: unknown[] = []): Promise<QueryResult<Row>> => {
        if (used) throw new Error('outbox.withEvents runs exactly one statement');
        used = true;
        if (this.sameDatabaseBus) return this.writeWithQueuedEvents<Row>(db, sql, params, events);
        const values = [...params];
        const insert = this.insertEvents(events, values);
        const result = await db.query<Row>(`WITH written AS (${sql}), recorded AS (${insert}) SELECT * FROM written`, values);
        this.db.afterCommit(() => this.notify());
        return result;
      },
      exec: async () => {
        throw new Error('outbox.withEvents runs one parameterised statement');
      },
    };
  }

  /** withEvents on the same-database bus: the queue rows are a clause of the writer's statement, and their ids come back with its rows. */
  private async writeWithQueuedEvents<Row>(db: Queryable, sql: string, params: unknown[], events: MerxEvent[]): Promise<QueryResult<Row>> {
    const publication = this.sameDatabaseBus!.route(events);
    if (publication.stored.length === 0) {
      const result = await db.query<Row>(sql, params);
      this.db.afterCommit(publication.handOver([]));
      return result;
    }
    const values = [...params];
    const insert = publication.enqueueStatement(values);
    const result = await db.query<Row & { merx_queued_ids?: Array<number | string> }>(
      `WITH written AS (${sql}), queued AS (${insert}) SELECT written.*, ARRAY(SELECT id FROM queued ORDER BY id) AS merx_queued_ids FROM written`,
      values,
    );
    const ids = result.rows[0]?.merx_queued_ids;
    for (const row of result.rows) delete row.merx_queued_ids;
    // A statement that wrote no row still queued the events: their ids are read back.
    const queuedIds = ids ? ids.map(Number) : await publication.readIds(db);
    this.db.afterCommit(publication.handOver(queuedIds));
    return result as QueryResult<Row>;
  }

  /**
   * The insert of the rows as one SELECT over arrays: the statement's text is the same for
   * any number of events. The trace column is written only while tracing, so without it the
   * statement is the one it always was.
   */
  private insertEvents(events: MerxEvent[], values: unknown[]): string {
    const traceContext = serializeTraceCarrier(currentTraceCarrier());
    // The payloads travel as one json array whose elements PostgreSQL hands back as the exact
    // text written (the json type keeps its input): node-postgres would otherwise escape every
    // quote of every payload into a text[] literal in JavaScript, a few per cent of a producer's
    // CPU in a bulk write. WITH ORDINALITY keeps each payload with its event and the outbox order.
    values.push(
      events.map((event) => event.id),
      events.map((event) => event.topic),
      events.map((event) => event.merchant_id),
      `[${events.map((event) => JSON.stringify(event)).join(',')}]`,
    );
    const base = values.length - 4;
    if (traceContext) values.push(traceContext);
    return `INSERT INTO ${this.schema}.outbox (event_id, topic, merchant_id, payload${traceContext ? ', trace_context' : ''})
      SELECT e.event_id, e.topic, e.merchant_id, p.payload::text${traceContext ? `, $${base + 5}::text` : ''}
      FROM unnest($${base + 1}::text[], $${base + 2}::text[], $${base + 3}::text[]) WITH ORDINALITY AS e(event_id, topic, merchant_id, n)
      JOIN json_array_elements($${base + 4}::json) WITH ORDINALITY AS p(payload, n) USING (n)
      ORDER BY n`;
  }

  onCommit(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

export interface OutboxRelayOptions {
  db: Db;
  bus: Bus;
  outbox: Outbox;
  logger: Logger;
  service: string;
  batchSize?: number;
  pollIntervalMs?: number;
  /** Pause after a failed publication (broker down) before trying again. */
  retryDelayMs?: number;
}

/**
 * Moves committed outbox rows to the bus. Rows are claimed with FOR UPDATE SKIP LOCKED so relays
 * in several replicas share the work, published with confirms, and deleted only after the broker
 * has them. A crash between the two republishes a row; consumers' inboxes drop the duplicate.
 */
export class OutboxRelay {
  private running = false;
  private loop: Promise<void> | undefined;
  private wakeUp: (() => void) | undefined;
  private pendingWake = false;
  private readonly unsubscribe: () => void;

  constructor(private readonly options: OutboxRelayOptions) {
    this.unsubscribe = options.outbox.onCommit(() => this.wake());
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.unsubscribe();
    this.wake();
    await this.loop;
  }

  wake(): void {
    this.pendingWake = true;
    this.wakeUp?.();
  }

  /** Publishes one batch; returns how many rows it moved. */
  async relayBatch(): Promise<number> {
    const { db, bus, outbox } = this.options;
    const batchSize = this.options.batchSize ?? 500;
    // The embedded bus keeps its queues in this very database: the messages are written in the
    // transaction that deletes the outbox rows, so no instant exists at which a crash loses them.
    const sameDatabase = bus instanceof MemoryBus && bus.storesIn(db) ? bus : undefined;
    let deliver: (() => void) | undefined;
    const moved = await db.transaction(async (tx) => {
      // Claim and delete in one statement; if publishing fails the transaction rolls back and
      // the rows are still there for the next attempt.
      const { rows } = await tx.query<{
        position: number;
        event_id: string;
        topic: string;
        merchant_id: string;
        payload: string;
        trace_context: string | null;
      }>(
        `DELETE FROM ${outbox.schema}.outbox WHERE position IN (
           SELECT position FROM ${outbox.schema}.outbox ORDER BY position LIMIT $1 FOR UPDATE SKIP LOCKED
         ) RETURNING position, event_id, topic, merchant_id, payload, trace_context`,
        [batchSize],
      );
      outboxBacklog.set({ service: this.options.service }, rows.length);
      if (rows.length === 0) return 0;
      rows.sort((a, b) => Number(a.position) - Number(b.position));
      const events = rows.map((row) => {
        // Published byte for byte as written, and parsed only if the bus reads more than the columns say.
        const event = storedEvent(row.event_id, row.topic, row.merchant_id, row.payload);
        attachTraceCarrier(event, parseTraceCarrier(row.trace_context));
        return event;
      });
      if (sameDatabase) deliver = await sameDatabase.publishWithin(tx, events);
      else await bus.publish(events);
      return rows.length;
    });
    deliver?.();
    return moved;
  }

  private async run(): Promise<void> {
    const batchSize = this.options.batchSize ?? 500;
    while (this.running) {
      this.pendingWake = false;
      let moved = 0;
      let failed = false;
      try {
        moved = await this.relayBatch();
      } catch (error) {
        failed = true;
        this.options.logger.warn({ err: error }, 'outbox relay could not publish; will retry');
      }
      if (!this.running) break;
      // Nothing is written to the table any more: once drained, polling it would only cost a transaction a second.
      if (!failed && moved === 0 && this.options.outbox.publishesDirectly) {
        this.options.logger.debug({ service: this.options.service }, 'outbox drained; events go straight to the bus');
        break;
      }
      if (failed) await this.sleep(this.options.retryDelayMs ?? 250, false);
      else if (moved < batchSize && !this.pendingWake) await this.sleep(this.options.pollIntervalMs ?? 1_000, true);
    }
  }

  private sleep(ms: number, wakeable: boolean): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      if (wakeable) {
        this.wakeUp = () => {
          this.wakeUp = undefined;
          done();
        };
      }
    });
  }
}
