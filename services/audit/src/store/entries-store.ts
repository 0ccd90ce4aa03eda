import type { Actor, MerchantId, Queryable } from '@merx/kit';
import { chainEntry, GENESIS_HASH, type AuditEntry, type UnchainedEntry } from '../domain/entry.js';
import { AUDIT_SCHEMA } from './migrations.js';

const ENTRIES = `${AUDIT_SCHEMA}.entries`;
const HEADS = `${AUDIT_SCHEMA}.chain_heads`;
const CHECKPOINTS = `${AUDIT_SCHEMA}.checkpoints`;

interface EntryRow {
  merchant_id: string;
  id: string;
  sequence: number | string;
  occurred_at: Date;
  actor: Actor;
  action: string;
  resource_type: string;
  resource_id: string;
  changes: AuditEntry['changes'];
  request_id: string | null;
  ip: string | null;
  event_id: string;
  prev_hash: string;
  hash: string;
  hash_version: number;
}

function toEntry(row: EntryRow): AuditEntry {
  return {
    id: row.id,
    merchantId: row.merchant_id,
    sequence: Number(row.sequence),
    occurredAt: row.occurred_at.toISOString(),
    actor: row.actor,
    action: row.action,
    resource: { type: row.resource_type, id: row.resource_id },
    changes: row.changes,
    requestId: row.request_id,
    ip: row.ip,
    eventId: row.event_id,
    hashVersion: row.hash_version,
    prevHash: row.prev_hash,
    hash: row.hash,
  };
}

/**
 * Appends one entry to the merchant's chain (see appendEntriesForMerchant).
 */
export async function appendEntryForMerchant(tx: Queryable, merchantId: MerchantId, unchained: UnchainedEntry): Promise<AuditEntry> {
  const [entry] = await appendEntriesForMerchant(tx, merchantId, [unchained]);
  return entry!;
}

/**
 * Locks the merchant's chain head for the rest of the transaction and reads it, so replicas
 * appending for the same merchant take turns and the chain never forks. One statement once the
 * head exists; a merchant's first append creates it (a concurrent creator's insert waits for
 * ours, then does nothing, and its lock then waits for our commit).
 */
async function lockChainHead(tx: Queryable, merchantId: MerchantId): Promise<{ sequence: number; hash: string }> {
  const lockAndRead = () =>
    tx.query<{ sequence: number | string; hash: string }>(`SELECT sequence, hash FROM ${HEADS} WHERE merchant_id = $1 FOR UPDATE`, [merchantId]);
  let { rows } = await lockAndRead();
  if (rows.length === 0) {
    await tx.query(`INSERT INTO ${HEADS} (merchant_id, sequence, hash) VALUES ($1, 0, $2) ON CONFLICT (merchant_id) DO NOTHING`, [merchantId, GENESIS_HASH]);
    ({ rows } = await lockAndRead());
  }
  return { sequence: Number(rows[0]!.sequence), hash: rows[0]!.hash };
}

/**
 * Appends entries of one merchant in one go: the head is locked once, the entries are chained in
 * the given order, and they and the new head are written by one statement. Two round trips per
 * batch (every statement is a round trip, and on PGlite each costs about half a millisecond of
 * CPU); group commit for a busy merchant.
 */
export async function appendEntriesForMerchant(tx: Queryable, merchantId: MerchantId, unchained: UnchainedEntry[]): Promise<AuditEntry[]> {
  if (unchained.length === 0) return [];
  let previous = await lockChainHead(tx, merchantId);
  const entries = unchained.map((entry) => {
    const chained = chainEntry(entry, previous);
    previous = { sequence: chained.sequence, hash: chained.hash };
    return chained;
  });
  // One statement text for any batch size (arrays through unnest), so it is prepared once per connection.
  // The JSON columns travel as one json array each: a jsonb[] literal would have node-postgres
  // escape every quote of every entry's changes in JavaScript. WITH ORDINALITY pairs them up again.
  const column = <T>(pick: (entry: AuditEntry) => T) => entries.map(pick);
  const jsonArray = (pick: (entry: AuditEntry) => unknown) => `[${entries.map((entry) => JSON.stringify(pick(entry))).join(',')}]`;
  await tx.query(
    `WITH appended AS (
       INSERT INTO ${ENTRIES} (merchant_id, id, sequence, occurred_at, actor, action, resource_type, resource_id, changes, request_id, ip, event_id, prev_hash, hash, hash_version)
       SELECT $1, e.id, e.sequence, e.occurred_at, a.actor::jsonb, e.action, e.resource_type, e.resource_id, c.changes::jsonb, e.request_id, e.ip, e.event_id, e.prev_hash, e.hash, e.hash_version
       FROM unnest($2::text[], $3::bigint[], $4::timestamptz[], $6::text[], $7::text[], $8::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::smallint[])
              WITH ORDINALITY AS e(id, sequence, occurred_at, action, resource_type, resource_id, request_id, ip, event_id, prev_hash, hash, hash_version, n)
       JOIN json_array_elements($5::json) WITH ORDINALITY AS a(actor, n) USING (n)
       JOIN json_array_elements($9::json) WITH ORDINALITY AS c(changes, n) USING (n)
     )
     UPDATE ${HEADS} SET sequence = $16, hash = $17 WHERE merchant_id = $1`,
    [
      merchantId,
      column((entry) => entry.id),
      column((entry) => entry.sequence),
      column((entry) => entry.occurredAt),
      jsonArray((entry) => entry.actor),
      column((entry) => entry.action),
      column((entry) => entry.resource.type),
      column((entry) => entry.resource.id),
      jsonArray((entry) => entry.changes),
      column((entry) => entry.requestId),
      column((entry) => entry.ip),
      column((entry) => entry.eventId),
      column((entry) => entry.prevHash),
      column((entry) => entry.hash),
      column((entry) => entry.hashVersion),
      previous.sequence,
      previous.hash,
    ],
  );
  return entries;
}

export async function findEntryForMerchant(db: Queryable, merchantId: MerchantId, id: string): Promise<AuditEntry | undefined> {
  const { rows } = await db.query<EntryRow>(`SELECT * FROM ${ENTRIES} WHERE merchant_id = $1 AND id = $2`, [merchantId, id]);
  return rows[0] ? toEntry(rows[0]) : undefined;
}

export interface EntryFilters {
  resourceId?: string;
  resourceType?: string;
  action?: string;
  actorId?: string;
  since?: Date;
  until?: Date;
}

/** Newest first (by position in the chain); `after` is the id of the last entry of the previous page. */
export async function listEntriesForMerchant(
  db: Queryable,
  merchantId: MerchantId,
  page: { limit: number; after?: string | undefined },
  filters: EntryFilters,
): Promise<AuditEntry[]> {
  const conditions = ['merchant_id = $1'];
  const params: unknown[] = [merchantId];
  const add = (sql: string, value: unknown) => {
    params.push(value);
    conditions.push(sql.replaceAll('?', `$${params.length}`));
  };
  if (page.after) add(`sequence < (SELECT sequence FROM ${ENTRIES} WHERE merchant_id = $1 AND id = ?)`, page.after);
  if (filters.resourceId) add('resource_id = ?', filters.resourceId);
  if (filters.resourceType) add('resource_type = ?', filters.resourceType);
  if (filters.action) add('action = ?', filters.action);
  if (filters.actorId) add(`actor->>'id' = ?`, filters.actorId);
  if (filters.since) add('occurred_at >= ?', filters.since);
  if (filters.until) add('occurred_at < ?', filters.until);
  params.push(page.limit + 1);
  const { rows } = await db.query<EntryRow>(
    `SELECT * FROM ${ENTRIES} WHERE ${conditions.join(' AND ')} ORDER BY sequence DESC LIMIT $${params.length}`,
    params,
  );
  return rows.map(toEntry);
}

/** Entries in chain order from a sequence on, a batch at a time, so verifying a long chain stays in bounded memory. */
export async function entriesInChainOrderForMerchant(db: Queryable, merchantId: MerchantId, fromSequence: number, limit: number): Promise<AuditEntry[]> {
  const { rows } = await db.query<EntryRow>(`SELECT * FROM ${ENTRIES} WHERE merchant_id = $1 AND sequence >= $2 ORDER BY sequence LIMIT $3`, [
    merchantId,
    fromSequence,
    limit,
  ]);
  return rows.map(toEntry);
}

export async function entryAtSequenceForMerchant(db: Queryable, merchantId: MerchantId, sequence: number): Promise<AuditEntry | undefined> {
  const { rows } = await db.query<EntryRow>(`SELECT * FROM ${ENTRIES} WHERE merchant_id = $1 AND sequence = $2`, [merchantId, sequence]);
  return rows[0] ? toEntry(rows[0]) : undefined;
}

export async function chainHeadForMerchant(db: Queryable, merchantId: MerchantId): Promise<{ sequence: number; hash: string }> {
  const { rows } = await db.query<{ sequence: number | string; hash: string }>(`SELECT sequence, hash FROM ${HEADS} WHERE merchant_id = $1`, [merchantId]);
  return rows[0] ? { sequence: Number(rows[0].sequence), hash: rows[0].hash } : { sequence: 0, hash: GENESIS_HASH };
}

export async function checkpointForMerchant(db: Queryable, merchantId: MerchantId): Promise<{ sequence: number; hash: string }> {
  const { rows } = await db.query<{ sequence: number | string; hash: string }>(`SELECT sequence, hash FROM ${CHECKPOINTS} WHERE merchant_id = $1`, [
    merchantId,
  ]);
  return rows[0] ? { sequence: Number(rows[0].sequence), hash: rows[0].hash } : { sequence: 0, hash: GENESIS_HASH };
}

/**
 * Retention: removes entries older than the cutoff, merchant by merchant, and moves each
 * merchant's checkpoint to the last removed entry so the remaining chain still verifies.
 */
export async function purgeEntriesOlderThan(tx: Queryable, cutoff: Date): Promise<number> {
  const { rows } = await tx.query<{ merchant_id: string; sequence: number | string; hash: string }>(
    `SELECT DISTINCT ON (merchant_id) merchant_id, sequence, hash FROM ${ENTRIES} WHERE occurred_at < $1 ORDER BY merchant_id, sequence DESC`,
    [cutoff],
  );
  let removed = 0;
  for (const row of rows) {
    // The privileged function moves the checkpoint and deletes; nothing else may delete an entry.
    const result = await tx.query<{ removed: string }>(`SELECT ${AUDIT_SCHEMA}.purge_entries_through($1, $2)::text AS removed`, [
      row.merchant_id,
      row.sequence,
    ]);
    removed += Number(result.rows[0]?.removed ?? 0);
  }
  return removed;
}
