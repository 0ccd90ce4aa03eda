import type { MerchantId, Queryable } from '@merx/kit';
import { combinedVersion, type Merchant, type MerchantProfile, type MerchantStanding } from '../domain/merchant.js';
import { MERCHANTS_SCHEMA } from './migrations.js';

const TABLE = `${MERCHANTS_SCHEMA}.merchants`;
/** `version` is left out: it is derived from the two halves' versions. */
const COLUMNS = 'merchant_id, name, mode, plan, default_currency, timezone, status, profile_version, standing_version, created_at, updated_at';

interface MerchantRow {
  merchant_id: string;
  name: string;
  mode: 'sandbox' | 'live';
  plan: string;
  default_currency: string;
  timezone: string;
  status: string;
  profile_version: number;
  standing_version: number;
  created_at: Date;
  updated_at: Date;
}

function toMerchant(row: MerchantRow): Merchant {
  const profileVersion = Number(row.profile_version);
  const standingVersion = Number(row.standing_version);
  return {
    id: row.merchant_id,
    name: row.name,
    mode: row.mode,
    plan: row.plan,
    default_currency: row.default_currency,
    timezone: row.timezone,
    status: row.status,
    version: combinedVersion(profileVersion, standingVersion),
    profileVersion,
    standingVersion,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/**
 * The merchant, once this service knows its profile: a row that holds only a standing (it came
 * before merchants.created) is no merchant to show yet.
 */
export async function findMerchant(db: Queryable, merchantId: MerchantId, options: { forUpdate?: boolean } = {}): Promise<Merchant | undefined> {
  const { rows } = await db.query<MerchantRow>(
    `SELECT ${COLUMNS} FROM ${TABLE} WHERE merchant_id = $1 AND profile_version > 0${options.forUpdate ? ' FOR UPDATE' : ''}`,
    [merchantId],
  );
  return rows[0] ? toMerchant(rows[0]) : undefined;
}

/**
 * The whole merchant as the oauth service provisioned it (merchants.created) or answers for it
 * (the lookup). Each half is taken whole, and only where it is newer than what is held: a
 * redelivery changes nothing, and a merchants.created late behind a standing change (or behind
 * the merchant's own renaming) undoes neither.
 */
export async function applyProvisionedMerchant(tx: Queryable, merchant: Merchant): Promise<void> {
  const newerProfile = `${TABLE}.profile_version < EXCLUDED.profile_version`;
  const newerStanding = `${TABLE}.standing_version < EXCLUDED.standing_version`;
  const take = (column: string, newer: string) => `${column} = CASE WHEN ${newer} THEN EXCLUDED.${column} ELSE ${TABLE}.${column} END`;
  await tx.query(
    `INSERT INTO ${TABLE} (${COLUMNS}, version) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $8::integer + $9::integer - 1)
     ON CONFLICT (merchant_id) DO UPDATE SET
       ${['name', 'default_currency', 'timezone', 'profile_version'].map((column) => take(column, newerProfile)).join(', ')},
       ${['mode', 'plan', 'status', 'standing_version'].map((column) => take(column, newerStanding)).join(', ')},
       version = GREATEST(${TABLE}.profile_version, EXCLUDED.profile_version) + GREATEST(${TABLE}.standing_version, EXCLUDED.standing_version) - 1,
       created_at = LEAST(${TABLE}.created_at, EXCLUDED.created_at),
       updated_at = GREATEST(${TABLE}.updated_at, EXCLUDED.updated_at)
     WHERE ${newerProfile} OR ${newerStanding}`,
    [
      merchant.id,
      merchant.name,
      merchant.mode,
      merchant.plan,
      merchant.default_currency,
      merchant.timezone,
      merchant.status,
      merchant.profileVersion,
      merchant.standingVersion,
      merchant.createdAt,
      merchant.updatedAt,
    ],
  );
}

/**
 * The operator's standing, from merchants.standing_changed: replaced whole, and only by a newer
 * version, so a late or repeated event never undoes a newer one; the profile is never touched. A
 * merchant this service has not heard of yet gets a row holding the standing alone (profile
 * version 0) for merchants.created to complete.
 */
export async function applyMerchantStanding(tx: Queryable, merchantId: MerchantId, standing: MerchantStanding): Promise<void> {
  await tx.query(
    `INSERT INTO ${TABLE} (${COLUMNS}, version) VALUES ($1, NULL, $2, $3, NULL, NULL, $4, 0, $5, $6, $6, $5::integer - 1)
     ON CONFLICT (merchant_id) DO UPDATE SET mode = EXCLUDED.mode, plan = EXCLUDED.plan, status = EXCLUDED.status, standing_version = EXCLUDED.standing_version,
       version = ${TABLE}.profile_version + EXCLUDED.standing_version - 1, updated_at = GREATEST(${TABLE}.updated_at, EXCLUDED.updated_at)
     WHERE ${TABLE}.standing_version < EXCLUDED.standing_version`,
    [merchantId, standing.mode, standing.plan, standing.status, standing.version, standing.updatedAt],
  );
}

/** The merchant's own change of its profile, which this service alone owns: the profile's version moves on by one. */
export async function updateMerchantProfile(tx: Queryable, merchantId: MerchantId, changes: Partial<MerchantProfile>, now: Date): Promise<Merchant> {
  const params: unknown[] = [merchantId, now];
  const sets = Object.entries(changes).map(([column, value]) => {
    params.push(value);
    return `${column} = $${params.length}`;
  });
  // In SET, the right-hand sides read the row as it was: the new version is (p + 1) + s - 1.
  const { rows } = await tx.query<MerchantRow>(
    `UPDATE ${TABLE} SET ${[...sets, 'profile_version = profile_version + 1', 'version = profile_version + standing_version', 'updated_at = $2'].join(', ')} WHERE merchant_id = $1 RETURNING ${COLUMNS}`,
    params,
  );
  return toMerchant(rows[0]!);
}
