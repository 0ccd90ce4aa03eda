import type { Db } from '@merx/kit';
import type { JWK } from 'oidc-provider';
import { OAUTH_SCHEMA } from './migrations.js';

/**
 * Every oauth replica must sign with the same keys, so they live in the database. The first
 * replica to start creates one under an advisory lock; the others find it.
 */
export async function loadOrCreateSigningKeys(db: Db, generate: () => Promise<JWK>): Promise<JWK[]> {
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', ['merx-oauth-signing-keys']);
    const { rows } = await tx.query<{ private_jwk: JWK | string }>(
      `SELECT private_jwk FROM ${OAUTH_SCHEMA}.signing_keys WHERE retired_at IS NULL ORDER BY created_at DESC`,
    );
    if (rows.length > 0) return rows.map((row) => (typeof row.private_jwk === 'string' ? (JSON.parse(row.private_jwk) as JWK) : row.private_jwk));
    const jwk = await generate();
    await tx.query(`INSERT INTO ${OAUTH_SCHEMA}.signing_keys (kid, private_jwk) VALUES ($1, $2)`, [jwk.kid, JSON.stringify(jwk)]);
    return [jwk];
  });
}
