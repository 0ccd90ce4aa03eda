import type { MerchantId, Queryable } from '@merx/kit';
import type { Merchant, MerchantProfile, StandingField } from '../domain/merchant.js';
import { MERCHANTS_SCHEMA } from './migrations.js';

const TABLE = `${MERCHANTS_SCHEMA}.merchants`;
const COLUMNS = 'merchant_id, name, mode, plan, default_currency, timezone, status, version, created_at, updated_at';

interface MerchantRow {
  merchant_id: string;
  name: string;
  mode: 'sandbox' | 'live';
  plan: string;
  default_currency: string;
  timezone: string;
  status: string;
  version: number;
  created_at: Date;
  updated_at: Date;
}

function toMerchant(row: MerchantRow): Merchant {
  return {
    id: row.merchant_id,
    name: row.name,
    mode: row.mode,
    plan: row.plan,
    default_currency: row.default_currency,
    timezone: row.timezone,
    status: row.status,
    version: Number(row.version),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export async function findMerchant(db: Queryable, merchantId: MerchantId, options: { forUpdate?: boolean } = {}): Promise<Merchant | undefined> {
  const { rows } = await db.query<MerchantRow>(`SELECT ${COLUMNS} FROM ${TABLE} WHERE merchant_id = $1${options.forUpdate ? ' FOR UPDATE' : ''}`, [merchantId]);
  return rows[0] ? toMerchant(rows[0]) : undefined;
}

/** merchants.created: the whole merchant, once (a redelivery changes nothing). */
export async function insertMerchantFromProvisioning(tx: Queryable, merchant: Merchant): Promise<void> {
  await tx.query(
    `INSERT INTO ${TABLE} (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (merchant_id) DO NOTHING`,
    [merchant.id, merchant.name, merchant.mode, merchant.plan, merchant.default_currency, merchant.timezone, merchant.status, merchant.version, merchant.createdAt, merchant.updatedAt],
  );
}

/**
 * The operator's standing, from the oauth service's merchants.updated: only the fields it
 * changed. Versions converge by GREATEST (both services count them); a merchant this service has
 * not heard of yet is created from the event, which carries the whole merchant.
 */
export async function applyMerchantStanding(tx: Queryable, merchant: Merchant, changed: readonly StandingField[]): Promise<void> {
  const sets = changed.map((field) => `${field} = EXCLUDED.${field}`);
  await tx.query(
    `INSERT INTO ${TABLE} (${COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
     ON CONFLICT (merchant_id) DO UPDATE SET ${sets.join(', ')},
       version = GREATEST(${TABLE}.version, EXCLUDED.version), updated_at = GREATEST(${TABLE}.updated_at, EXCLUDED.updated_at)`,
    [merchant.id, merchant.name, merchant.mode, merchant.plan, merchant.default_currency, merchant.timezone, merchant.status, merchant.version, merchant.createdAt, merchant.updatedAt],
  );
}

export async function updateMerchantProfile(tx: Queryable, merchantId: MerchantId, changes: Partial<MerchantProfile>, now: Date): Promise<Merchant> {
  const params: unknown[] = [merchantId, now];
  const sets = Object.entries(changes).map(([column, value]) => {
    params.push(value);
    return `${column} = $${params.length}`;
  });
  const { rows } = await tx.query<MerchantRow>(
    `UPDATE ${TABLE} SET ${[...sets, 'version = version + 1', 'updated_at = $2'].join(', ')} WHERE merchant_id = $1 RETURNING ${COLUMNS}`,
    params,
  );
  return toMerchant(rows[0]!);
}
