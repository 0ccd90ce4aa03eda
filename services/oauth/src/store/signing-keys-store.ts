import type { Db, Queryable } from '@merx/kit';
import type { JWK } from 'oidc-provider';
import { OAUTH_SCHEMA } from './migrations.js';

/**
 * The keys every oauth replica signs and publishes with, kept in the database so all replicas
 * agree. `current` signs; `next` is published ahead of its turn so verifiers have cached it
 * when it starts signing; `retired` keys stay published until the last token they signed expired.
 */
export interface SigningKeyRing {
  current: JWK;
  next: JWK;
  retired: JWK[];
}

interface KeyRow {
  kid: string;
  private_jwk: JWK | string;
  state: 'current' | 'next' | 'retired';
}

const LOCK = 'merx-oauth-signing-keys';
const parse = (row: KeyRow): JWK => (typeof row.private_jwk === 'string' ? (JSON.parse(row.private_jwk) as JWK) : row.private_jwk);

async function insertKey(tx: Queryable, jwk: JWK, state: 'current' | 'next'): Promise<JWK> {
  await tx.query(`INSERT INTO ${OAUTH_SCHEMA}.signing_keys (kid, private_jwk, state) VALUES ($1, $2, $3)`, [jwk.kid, JSON.stringify(jwk), state]);
  return jwk;
}

async function readRing(tx: Queryable): Promise<{ current: JWK[]; next: JWK[]; retired: JWK[] }> {
  const { rows } = await tx.query<KeyRow>(
    `SELECT kid, private_jwk, state FROM ${OAUTH_SCHEMA}.signing_keys
      WHERE state IN ('current', 'next') OR (state = 'retired' AND published_until > now())
      ORDER BY created_at DESC, kid`,
  );
  return {
    current: rows.filter((row) => row.state === 'current').map(parse),
    next: rows.filter((row) => row.state === 'next').map(parse),
    retired: rows.filter((row) => row.state === 'retired').map(parse),
  };
}

/**
 * The first replica to start creates the keys under an advisory lock; the others find them.
 * Repairs a ring left with no next key (a database from before key states existed).
 */
export async function loadOrCreateSigningKeyRing(db: Db, generate: () => Promise<JWK>): Promise<SigningKeyRing> {
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [LOCK]);
    const ring = await readRing(tx);
    const current = ring.current[0] ?? (await insertKey(tx, await generate(), 'current'));
    const next = ring.next[0] ?? (await insertKey(tx, await generate(), 'next'));
    // Older extra current keys (from before states) keep verifying but no longer sign.
    return { current, next, retired: [...ring.current.slice(1), ...ring.retired] };
  });
}

/** Read-only: what replicas poll to notice another replica's rotation. */
export async function readSigningKeyRing(db: Queryable): Promise<SigningKeyRing | undefined> {
  const ring = await readRing(db);
  if (!ring.current[0] || !ring.next[0]) return undefined;
  return { current: ring.current[0], next: ring.next[0], retired: [...ring.current.slice(1), ...ring.retired] };
}

/**
 * next → current, a fresh next, and the old current retired but published for
 * `publishRetiredForSeconds` (the longest token lifetime plus clock skew), so no valid token
 * loses its key.
 */
export async function rotateSigningKeys(db: Db, generate: () => Promise<JWK>, publishRetiredForSeconds: number): Promise<SigningKeyRing> {
  const fresh = await generate();
  await db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [LOCK]);
    await tx.query(
      `UPDATE ${OAUTH_SCHEMA}.signing_keys SET state = 'retired', retired_at = now(), published_until = now() + ($1::double precision * interval '1 second') WHERE state = 'current'`,
      [publishRetiredForSeconds],
    );
    await tx.query(`UPDATE ${OAUTH_SCHEMA}.signing_keys SET state = 'current' WHERE state = 'next'`);
    await insertKey(tx, fresh, 'next');
  });
  return (await readSigningKeyRing(db))!;
}

/** Identifies a ring's composition; replicas rebuild their provider when it changes. */
export const ringFingerprint = (ring: SigningKeyRing) => [ring.current.kid, ring.next.kid, ...ring.retired.map((key) => key.kid).sort()].join(',');
