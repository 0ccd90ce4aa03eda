import type { MerchantId, Queryable } from '@merx/kit';
import type { IngestedRecord, RecordRoute } from '../domain/record.js';
import { MERCHANTS_SCHEMA } from './migrations.js';

const RECORDS = `${MERCHANTS_SCHEMA}.records`;
const ROUTINGS = `${MERCHANTS_SCHEMA}.routings`;
const COLUMNS = 'merchant_id, id, source_id, type, external_id, occurred_at, data, event_id, received_at';

interface RecordRow {
  merchant_id: string;
  id: string;
  source_id: string;
  type: IngestedRecord['type'];
  external_id: string;
  occurred_at: Date;
  data: Record<string, unknown>;
  event_id: string;
  received_at: Date;
}

function toRecord(row: RecordRow): IngestedRecord {
  return {
    id: row.id,
    merchantId: row.merchant_id,
    sourceId: row.source_id,
    type: row.type,
    external_id: row.external_id,
    occurred_at: row.occurred_at.toISOString(),
    data: row.data,
    eventId: row.event_id,
    receivedAt: row.received_at,
  };
}

/**
 * Inserts a batch in one statement; a record whose (source, type, external_id) is already there,
 * or appears earlier in the same batch, is skipped by the unique constraint. Concurrent batches
 * with the same keys wait on each other's index entries, so exactly one accepts each key.
 * Answers the ids of the rows actually inserted.
 */
export async function insertRecordsOnceForMerchant(tx: Queryable, merchantId: MerchantId, records: IngestedRecord[]): Promise<Set<string>> {
  if (records.length === 0) return new Set();
  const { rows } = await tx.query<{ id: string }>(
    `INSERT INTO ${RECORDS} (${COLUMNS})
     SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::timestamptz[], $7::jsonb[], $8::text[], $9::timestamptz[])
     ON CONFLICT ON CONSTRAINT records_once DO NOTHING
     RETURNING id`,
    [
      merchantId,
      records.map((r) => r.id),
      records.map((r) => r.sourceId),
      records.map((r) => r.type),
      records.map((r) => r.external_id),
      records.map((r) => r.occurred_at),
      records.map((r) => JSON.stringify(r.data)),
      records.map((r) => r.eventId),
      records.map((r) => r.receivedAt.toISOString()),
    ],
  );
  return new Set(rows.map((row) => row.id));
}

/**
 * The records already held under these keys: what a duplicate in a batch refers to.
 *
 * One lookup by the whole unique key per key, in a LATERAL subquery the planner keeps as it is
 * (OFFSET 0). The semi-join it replaces, `(type, external_id) IN (SELECT unnest(...))`, was
 * planned as a scan of the source's every record: a hash join once the table has statistics, and
 * without them a nested loop that compared every record of the source with every key (a batch of
 * 500 resent records took about a second at 20,000 records). By key it reads 500 index entries whatever the
 * source holds. It needs statistics too: on a table never analyzed the planner cannot tell
 * `(merchant_id, source_id, id)` from the unique index and filters the first. PostgreSQL's
 * autovacuum provides them, and the embedded mode's table upkeep (kit table-upkeep.ts).
 */
export async function findRecordsByKeyForMerchant(
  db: Queryable,
  merchantId: MerchantId,
  sourceId: string,
  keys: { type: string; externalId: string }[],
): Promise<IngestedRecord[]> {
  if (keys.length === 0) return [];
  const { rows } = await db.query<RecordRow>(
    `SELECT held.* FROM unnest($3::text[], $4::text[]) AS wanted(type, external_id)
     CROSS JOIN LATERAL (
       SELECT ${COLUMNS} FROM ${RECORDS}
       WHERE merchant_id = $1 AND source_id = $2 AND type = wanted.type AND external_id = wanted.external_id OFFSET 0
     ) held`,
    [merchantId, sourceId, keys.map((k) => k.type), keys.map((k) => k.externalId)],
  );
  return rows.map(toRecord);
}

export interface RecordFilters {
  type?: string;
  externalId?: string;
  since?: Date;
  until?: Date;
}

/** Newest first by id; `limit + 1` rows tell whether another page exists. */
export async function listRecordsOfSourceForMerchant(
  db: Queryable,
  merchantId: MerchantId,
  sourceId: string,
  page: { limit: number; after?: string | undefined },
  filters: RecordFilters,
): Promise<IngestedRecord[]> {
  const params: unknown[] = [merchantId, sourceId];
  const where = ['merchant_id = $1', 'source_id = $2'];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    where.push(sql.replace('?', `$${params.length}`));
  };
  if (filters.type) add('type = ?', filters.type);
  if (filters.externalId) add('external_id = ?', filters.externalId);
  if (filters.since) add('received_at >= ?', filters.since);
  if (filters.until) add('received_at < ?', filters.until);
  if (page.after) add('id < ?', page.after);
  params.push(page.limit + 1);
  const { rows } = await db.query<RecordRow>(`SELECT ${COLUMNS} FROM ${RECORDS} WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT $${params.length}`, params);
  return rows.map(toRecord);
}

export interface StoredRouting extends RecordRoute {
  record_id: string;
  routed_id: string | null;
}

export async function insertRoutingsForMerchant(tx: Queryable, merchantId: MerchantId, routings: StoredRouting[]): Promise<void> {
  if (routings.length === 0) return;
  await tx.query(
    `INSERT INTO ${ROUTINGS} (merchant_id, record_id, connection_id, destination_id, outcome, rule_id, reason, routed_id, routed_at)
     SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::timestamptz[])
     ON CONFLICT DO NOTHING`,
    [
      merchantId,
      routings.map((r) => r.record_id),
      routings.map((r) => r.connection_id),
      routings.map((r) => r.destination_id),
      routings.map((r) => r.outcome),
      routings.map((r) => r.rule_id),
      routings.map((r) => r.reason),
      routings.map((r) => r.routed_id),
      routings.map((r) => r.routed_at),
    ],
  );
}

/** Routes of these records, by record id, in connection order. */
export async function routesOfRecordsForMerchant(db: Queryable, merchantId: MerchantId, recordIds: string[]): Promise<Map<string, RecordRoute[]>> {
  const routes = new Map<string, RecordRoute[]>(recordIds.map((id) => [id, []]));
  if (recordIds.length === 0) return routes;
  const { rows } = await db.query<{
    record_id: string;
    connection_id: string;
    destination_id: string;
    outcome: RecordRoute['outcome'];
    rule_id: string | null;
    reason: string | null;
    routed_at: Date;
  }>(
    `SELECT record_id, connection_id, destination_id, outcome, rule_id, reason, routed_at FROM ${ROUTINGS}
     WHERE merchant_id = $1 AND record_id = ANY($2::text[]) ORDER BY connection_id`,
    [merchantId, recordIds],
  );
  for (const row of rows) {
    routes.get(row.record_id)!.push({
      connection_id: row.connection_id,
      destination_id: row.destination_id,
      outcome: row.outcome,
      rule_id: row.rule_id,
      reason: row.reason,
      routed_at: row.routed_at.toISOString(),
    });
  }
  return routes;
}
