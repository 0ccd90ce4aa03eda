import type { MerchantId, Queryable } from '@merx/kit';
import type { ApiKeyRecord } from '../domain/api-key.js';
import { OAUTH_SCHEMA } from './migrations.js';

const TABLE = `${OAUTH_SCHEMA}.api_keys`;

interface ApiKeyRow {
  merchant_id: string;
  id: string;
  name: string;
  client_id: string;
  secret_hash: string;
  scopes: string[];
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

const toApiKey = (row: ApiKeyRow): ApiKeyRecord => ({
  id: row.id,
  merchantId: row.merchant_id,
  name: row.name,
  clientId: row.client_id,
  secretHash: row.secret_hash,
  scopes: row.scopes,
  createdAt: row.created_at,
  lastUsedAt: row.last_used_at,
  revokedAt: row.revoked_at,
});

export async function findApiKeyForMerchant(
  db: Queryable,
  merchantId: MerchantId,
  id: string,
  options: { forUpdate?: boolean } = {},
): Promise<ApiKeyRecord | undefined> {
  const { rows } = await db.query<ApiKeyRow>(`SELECT * FROM ${TABLE} WHERE merchant_id = $1 AND id = $2${options.forUpdate ? ' FOR UPDATE' : ''}`, [
    merchantId,
    id,
  ]);
  return rows[0] ? toApiKey(rows[0]) : undefined;
}

/** Newest first (ids sort by time); fetches limit + 1 to know whether more exist. */
export async function listApiKeysForMerchant(
  db: Queryable,
  merchantId: MerchantId,
  page: { limit: number; after?: string | undefined },
): Promise<ApiKeyRecord[]> {
  const params: unknown[] = [merchantId];
  let condition = 'merchant_id = $1';
  if (page.after) {
    params.push(page.after);
    condition += ` AND id < $${params.length}`;
  }
  params.push(page.limit + 1);
  const { rows } = await db.query<ApiKeyRow>(`SELECT * FROM ${TABLE} WHERE ${condition} ORDER BY id DESC LIMIT $${params.length}`, params);
  return rows.map(toApiKey);
}

export async function revokeApiKeyForMerchant(tx: Queryable, merchantId: MerchantId, id: string, now: Date): Promise<ApiKeyRecord> {
  const { rows } = await tx.query<ApiKeyRow>(`UPDATE ${TABLE} SET revoked_at = $3 WHERE merchant_id = $1 AND id = $2 RETURNING *`, [merchantId, id, now]);
  return toApiKey(rows[0]!);
}

/**
 * Every key revoked since `since`, of every merchant: what token verifiers load at start. Only
 * public client ids and times; the platform-wide read is for the internal endpoint alone.
 */
export async function listKeyRevocationsSince(db: Queryable, since: Date): Promise<Array<{ client_id: string; revoked_at: string }>> {
  const { rows } = await db.query<{ client_id: string; revoked_at: Date }>(
    `SELECT client_id, revoked_at FROM ${TABLE} WHERE revoked_at IS NOT NULL AND revoked_at >= $1 ORDER BY revoked_at`,
    [since],
  );
  return rows.map((row) => ({ client_id: row.client_id, revoked_at: row.revoked_at.toISOString() }));
}
