import type { MerchantId, Queryable } from '@merx/kit';
import type { ApiKeyRecord } from '../domain/api-key.js';
import { combinedVersion, type Merchant, type MerchantProfileChange } from '../domain/merchant.js';
import type { ApiKeyClient } from '../provider/index.js';
import { OAUTH_SCHEMA } from './migrations.js';

interface MerchantRow {
  id: string;
  name: string;
  mode: Merchant['mode'];
  plan: Merchant['plan'];
  default_currency: string;
  timezone: string;
  status: Merchant['status'];
  standing_version: number;
  standing_updated_at: Date;
  profile_version: number;
  created_at: Date;
  updated_at: Date;
}

/** The merchant's columns; `version` is left out: it is derived from the two halves' versions. */
const MERCHANT_COLUMNS =
  'id, name, mode, plan, default_currency, timezone, status, standing_version, standing_updated_at, profile_version, created_at, updated_at';

const toMerchant = (row: MerchantRow): Merchant => ({
  id: row.id,
  name: row.name,
  mode: row.mode,
  plan: row.plan,
  defaultCurrency: row.default_currency,
  timezone: row.timezone,
  status: row.status,
  version: combinedVersion(Number(row.profile_version), Number(row.standing_version)),
  standingVersion: Number(row.standing_version),
  standingUpdatedAt: row.standing_updated_at,
  profileVersion: Number(row.profile_version),
  createdAt: row.created_at,
  updatedAt: row.updated_at,
});

/** A new merchant: both halves at version 1, as the operator provisioned them. */
export async function insertMerchant(
  tx: Queryable,
  merchant: Pick<Merchant, 'id' | 'name' | 'mode' | 'plan' | 'defaultCurrency' | 'timezone' | 'status' | 'createdAt'>,
): Promise<Merchant> {
  const { rows } = await tx.query<MerchantRow>(
    `INSERT INTO ${OAUTH_SCHEMA}.merchants (id, name, mode, plan, default_currency, timezone, status, version, standing_version, standing_updated_at, profile_version, created_at, updated_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, 1, 1, $8, 1, $8, $8) RETURNING ${MERCHANT_COLUMNS}`,
    [merchant.id, merchant.name, merchant.mode, merchant.plan, merchant.defaultCurrency, merchant.timezone, merchant.status, merchant.createdAt],
  );
  return toMerchant(rows[0]!);
}

export async function findMerchant(db: Queryable, merchantId: MerchantId): Promise<Merchant | undefined> {
  const { rows } = await db.query<MerchantRow>(`SELECT ${MERCHANT_COLUMNS} FROM ${OAUTH_SCHEMA}.merchants WHERE id = $1`, [merchantId]);
  return rows[0] ? toMerchant(rows[0]) : undefined;
}

export async function insertApiKeyForMerchant(tx: Queryable, merchantId: MerchantId, key: Omit<ApiKeyRecord, 'merchantId'>): Promise<ApiKeyRecord> {
  await tx.query(
    `INSERT INTO ${OAUTH_SCHEMA}.api_keys (merchant_id, id, name, client_id, secret_hash, scopes, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    [merchantId, key.id, key.name, key.clientId, key.secretHash, key.scopes, key.createdAt],
  );
  return { ...key, merchantId };
}

/** The token endpoint's lookup: the key and its merchant's standing, in one query. */
export async function findApiKeyClientByClientId(db: Queryable, clientId: string): Promise<ApiKeyClient | undefined> {
  const { rows } = await db.query<{
    client_id: string;
    secret_hash: string;
    merchant_id: string;
    scopes: string[];
    revoked_at: Date | null;
    merchant_status: 'active' | 'suspended';
  }>(
    `SELECT k.client_id, k.secret_hash, k.merchant_id, k.scopes, k.revoked_at, m.status AS merchant_status
       FROM ${OAUTH_SCHEMA}.api_keys k JOIN ${OAUTH_SCHEMA}.merchants m ON m.id = k.merchant_id
      WHERE k.client_id = $1`,
    [clientId],
  );
  const row = rows[0];
  if (!row) return undefined;
  return {
    clientId: row.client_id,
    secretHash: row.secret_hash,
    merchantId: row.merchant_id,
    scopes: row.scopes,
    status: row.revoked_at ? 'revoked' : 'active',
    merchantStatus: row.merchant_status,
  };
}

/** Coarse on purpose (once a minute per key): last_used_at informs humans, it must not cost a write per token. */
export async function touchApiKeyLastUsed(db: Queryable, clientId: string, now: Date): Promise<void> {
  await db.query(
    `UPDATE ${OAUTH_SCHEMA}.api_keys SET last_used_at = $2 WHERE client_id = $1 AND (last_used_at IS NULL OR last_used_at < $2::timestamptz - interval '1 minute')`,
    [clientId, now],
  );
}

/** Locks the merchant row for an operator change. */
export async function findMerchantForUpdate(tx: Queryable, merchantId: MerchantId): Promise<Merchant | undefined> {
  const { rows } = await tx.query<MerchantRow>(`SELECT ${MERCHANT_COLUMNS} FROM ${OAUTH_SCHEMA}.merchants WHERE id = $1 FOR UPDATE`, [merchantId]);
  return rows[0] ? toMerchant(rows[0]) : undefined;
}

/**
 * The operator's change of the standing, which oauth alone owns: the standing's version moves on
 * by one. (`version` is kept equal to what the merchant shows, for readers of the table.)
 */
export async function updateMerchantStanding(
  tx: Queryable,
  merchantId: MerchantId,
  changes: { status?: Merchant['status']; plan?: Merchant['plan'] },
  now: Date,
): Promise<Merchant> {
  const { rows } = await tx.query<MerchantRow>(
    `UPDATE ${OAUTH_SCHEMA}.merchants
        SET status = COALESCE($2, status), plan = COALESCE($3, plan), standing_version = standing_version + 1, standing_updated_at = $4,
            version = profile_version + standing_version, updated_at = $4
      WHERE id = $1 RETURNING ${MERCHANT_COLUMNS}`,
    [merchantId, changes.status ?? null, changes.plan ?? null, now],
  );
  return toMerchant(rows[0]!);
}

export type ProfileCopyOutcome = 'replaced' | 'stale' | 'unknown_merchant';

/**
 * Replaces oauth's copy of the profile, the merchants service's, wholesale, but only with a newer
 * one: a late or repeated change never undoes a newer copy. The standing stays: it is oauth's own.
 */
export async function replaceMerchantProfileCopy(tx: Queryable, merchantId: MerchantId, change: MerchantProfileChange): Promise<ProfileCopyOutcome> {
  const { rowCount } = await tx.query(
    `UPDATE ${OAUTH_SCHEMA}.merchants
        SET name = $2, default_currency = $3, timezone = $4, profile_version = $5,
            version = $5 + standing_version - 1, updated_at = GREATEST(updated_at, $6)
      WHERE id = $1 AND profile_version < $5`,
    [merchantId, change.profile.name, change.profile.defaultCurrency, change.profile.timezone, change.version, change.updatedAt],
  );
  if ((rowCount ?? 0) > 0) return 'replaced';
  return (await findMerchant(tx, merchantId)) ? 'stale' : 'unknown_merchant';
}

/** Merchants suspended since a time: every token they held before is dead (revocation bootstrap). */
export async function listSuspensionsSince(db: Queryable, since: Date): Promise<Array<{ client_id: string; merchant_id: string; revoked_at: string }>> {
  const { rows } = await db.query<{ id: string; standing_updated_at: Date }>(
    `SELECT id, standing_updated_at FROM ${OAUTH_SCHEMA}.merchants WHERE status = 'suspended' AND standing_updated_at >= $1`,
    [since],
  );
  return rows.map((row) => ({ client_id: '*', merchant_id: row.id, revoked_at: row.standing_updated_at.toISOString() }));
}
