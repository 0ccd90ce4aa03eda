import { sealOptionalSecret, sealSecret, type MerchantId, type Queryable } from '@merx/kit';
import type { DestinationEndpoint } from '../domain/destination.js';
import type { DeliveryFormat, DisabledReason } from '../domain/endpoint.js';
import { WEBHOOKS_SCHEMA } from './migrations.js';
import { COMMON_ENDPOINT_COLUMNS, commonEndpointFields, ENDPOINTS, type CommonEndpointRow } from './endpoints-store.js';

/** Destinations are the endpoints of kind `destination`, kept as the merchants service syncs them. */
const DESTINATION = `kind = 'destination'`;
const DESTINATION_COLUMNS = `${COMMON_ENDPOINT_COLUMNS}, format`;

interface DestinationRow extends CommonEndpointRow {
  format: DeliveryFormat;
}

function toDestination(row: DestinationRow): DestinationEndpoint {
  return { ...commonEndpointFields(row), format: row.format };
}

export async function findDestinationForMerchant(db: Queryable, merchantId: MerchantId, id: string): Promise<DestinationEndpoint | undefined> {
  const { rows } = await db.query<DestinationRow>(`SELECT ${DESTINATION_COLUMNS} FROM ${ENDPOINTS} WHERE merchant_id = $1 AND id = $2 AND ${DESTINATION}`, [
    merchantId,
    id,
  ]);
  return rows[0] ? toDestination(rows[0]) : undefined;
}

/** Writes the destination as the domain decided it (`destinationAfterSync`), creating it if new. Tenant-scoped. */
export async function saveDestinationForMerchant(tx: Queryable, merchantId: MerchantId, destination: DestinationEndpoint): Promise<void> {
  const owner = { merchantId, recordId: destination.id };
  await tx.query(
    `INSERT INTO ${ENDPOINTS} (merchant_id, id, kind, format, url, status, disabled_reason, secret, previous_secret, previous_secret_expires_at,
                               secret_rotated_at, enabled_at, version, created_at, updated_at)
     VALUES ($1, $2, 'destination', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
     ON CONFLICT (merchant_id, id) DO UPDATE SET format = EXCLUDED.format, url = EXCLUDED.url, status = EXCLUDED.status,
       disabled_reason = EXCLUDED.disabled_reason, secret = EXCLUDED.secret, previous_secret = EXCLUDED.previous_secret,
       previous_secret_expires_at = EXCLUDED.previous_secret_expires_at, secret_rotated_at = EXCLUDED.secret_rotated_at,
       enabled_at = EXCLUDED.enabled_at, version = EXCLUDED.version, updated_at = EXCLUDED.updated_at
     WHERE ${ENDPOINTS}.${DESTINATION}`,
    [
      merchantId,
      destination.id,
      destination.format,
      destination.url,
      destination.status,
      destination.disabledReason,
      sealSecret(destination.secret, owner),
      sealOptionalSecret(destination.previousSecret, owner),
      destination.previousSecretExpiresAt,
      destination.secretRotatedAt,
      destination.enabledAt,
      destination.version,
      destination.createdAt,
      destination.updatedAt,
    ],
  );
}

/**
 * The engine switching a destination off (410 Gone, failing through a window). Its version stays
 * the merchants service's: that service records the change and syncs it back with a new one.
 */
export async function disableDestinationForMerchant(tx: Queryable, merchantId: MerchantId, id: string, reason: DisabledReason, now: Date): Promise<void> {
  await tx.query(`UPDATE ${ENDPOINTS} SET status = 'disabled', disabled_reason = $3, updated_at = $4 WHERE merchant_id = $1 AND id = $2 AND ${DESTINATION}`, [
    merchantId,
    id,
    reason,
    now,
  ]);
}

export async function deleteDestinationForMerchant(tx: Queryable, merchantId: MerchantId, id: string): Promise<void> {
  await tx.query(`DELETE FROM ${ENDPOINTS} WHERE merchant_id = $1 AND id = $2 AND ${DESTINATION}`, [merchantId, id]);
}

const TOMBSTONES = `${WEBHOOKS_SCHEMA}.destination_tombstones`;

/** The version a removed destination was removed at, if it was (and the tombstone is not purged yet). */
export async function findTombstoneVersionForMerchant(db: Queryable, merchantId: MerchantId, id: string): Promise<number | undefined> {
  const { rows } = await db.query<{ version: number }>(`SELECT version FROM ${TOMBSTONES} WHERE merchant_id = $1 AND id = $2`, [merchantId, id]);
  return rows[0]?.version;
}

/** Records a removal; a second removal keeps the newer version. */
export async function saveTombstoneForMerchant(tx: Queryable, merchantId: MerchantId, id: string, version: number, now: Date): Promise<void> {
  await tx.query(
    `INSERT INTO ${TOMBSTONES} (merchant_id, id, version, removed_at) VALUES ($1, $2, $3, $4)
     ON CONFLICT (merchant_id, id) DO UPDATE SET version = GREATEST(${TOMBSTONES}.version, EXCLUDED.version), removed_at = EXCLUDED.removed_at`,
    [merchantId, id, version, now],
  );
}

/** Tombstones older than the inbox's memory: a message that old would be taken as new anyway. */
export async function purgeTombstones(tx: Queryable, before: Date): Promise<void> {
  await tx.query(`DELETE FROM ${TOMBSTONES} WHERE removed_at < $1`, [before]);
}
