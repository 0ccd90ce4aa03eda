import type { MerchantId, Queryable } from '@merx/kit';
import type { SandboxReset, ServiceReport } from '../domain/sandbox-reset.js';
import { MERCHANTS_SCHEMA } from './migrations.js';

const TABLE = `${MERCHANTS_SCHEMA}.sandbox_resets`;

interface ResetRow {
  merchant_id: string;
  id: string;
  seed: boolean;
  status: SandboxReset['status'];
  services: ServiceReport[];
  requested_at: Date;
  completed_at: Date | null;
}

const toReset = (row: ResetRow): SandboxReset => ({
  id: row.id,
  merchantId: row.merchant_id,
  seed: row.seed,
  status: row.status,
  services: row.services,
  requestedAt: row.requested_at,
  completedAt: row.completed_at,
});

export async function insertResetForMerchant(tx: Queryable, merchantId: MerchantId, reset: SandboxReset): Promise<void> {
  await tx.query(`INSERT INTO ${TABLE} (merchant_id, id, seed, status, services, requested_at, completed_at) VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7)`, [
    merchantId,
    reset.id,
    reset.seed,
    reset.status,
    JSON.stringify(reset.services),
    reset.requestedAt,
    reset.completedAt,
  ]);
}

export async function findResetForMerchant(
  db: Queryable,
  merchantId: MerchantId,
  id: string,
  options: { forUpdate?: boolean } = {},
): Promise<SandboxReset | undefined> {
  const { rows } = await db.query<ResetRow>(
    `SELECT merchant_id, id, seed, status, services, requested_at, completed_at FROM ${TABLE} WHERE merchant_id = $1 AND id = $2${options.forUpdate ? ' FOR UPDATE' : ''}`,
    [merchantId, id],
  );
  return rows[0] ? toReset(rows[0]) : undefined;
}

export async function saveResetProgressForMerchant(tx: Queryable, merchantId: MerchantId, reset: SandboxReset): Promise<void> {
  await tx.query(`UPDATE ${TABLE} SET status = $3, services = $4::jsonb, completed_at = $5 WHERE merchant_id = $1 AND id = $2`, [
    merchantId,
    reset.id,
    reset.status,
    JSON.stringify(reset.services),
    reset.completedAt,
  ]);
}

/** A destination a reset wiped, at the version its removal carries to the delivery engine. */
export interface WipedDestination {
  id: string;
  version: number;
}

/**
 * Everything this service holds of a merchant's configuration and data, children first (the
 * connections' foreign keys). Answers how many of each went, and which destinations (their
 * endpoints in the delivery engine go by one removal each). The merchant row and the resets
 * themselves stay: a reset wipes data, not the account or the record of the reset.
 */
export async function wipeMerchantData(tx: Queryable, merchantId: MerchantId): Promise<{ removed: Record<string, number>; destinations: WipedDestination[] }> {
  const removed: Record<string, number> = {};
  let destinations: WipedDestination[] = [];
  // Record events still waiting to be routed go with the records: routing them after the reset
  // would give routes to records that no longer exist.
  for (const table of ['routing_backlog', 'routings', 'records', 'connections', 'rules', 'destinations', 'sources']) {
    const result = await tx.query<WipedDestination>(
      `DELETE FROM ${MERCHANTS_SCHEMA}.${table} WHERE merchant_id = $1${table === 'destinations' ? ' RETURNING id, version' : ''}`,
      [merchantId],
    );
    if (table === 'destinations') destinations = result.rows.map((row) => ({ id: row.id, version: Number(row.version) }));
    if (table !== 'routings' && table !== 'routing_backlog') removed[table] = result.rowCount ?? 0;
  }
  return { removed, destinations };
}
