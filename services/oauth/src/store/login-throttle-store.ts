import type { Queryable } from '@merx/kit';
import { afterFailure, type LoginFailures, type LoginThrottlePolicy } from '../domain/login-throttle.js';
import { OAUTH_SCHEMA } from './migrations.js';

interface Row {
  key: string;
  failures: number;
  last_failure_at: Date;
  locked_until: Date | null;
}

const recordOf = (row: Row): LoginFailures => ({ failures: row.failures, lastFailureAt: row.last_failure_at, lockedUntil: row.locked_until ?? undefined });

/**
 * Keyed by `account:<email>` or `address:<ip>`, never by merchant: a sign-in names no merchant
 * until it succeeds. Shared by every oauth replica through the database.
 */
export async function findLoginFailures(db: Queryable, keys: string[]): Promise<Map<string, LoginFailures>> {
  const { rows } = await db.query<Row>(`SELECT key, failures, last_failure_at, locked_until FROM ${OAUTH_SCHEMA}.login_failures WHERE key = ANY($1)`, [keys]);
  return new Map(rows.map((row) => [row.key, recordOf(row)]));
}

/** Call inside a transaction: the row is locked from read to write, so concurrent failures all count. */
export async function recordLoginFailure(db: Queryable, key: string, now: Date, policy: LoginThrottlePolicy): Promise<LoginFailures> {
  await db.query(`INSERT INTO ${OAUTH_SCHEMA}.login_failures (key, failures, last_failure_at) VALUES ($1, 0, $2) ON CONFLICT (key) DO NOTHING`, [key, now]);
  const { rows } = await db.query<Row>(`SELECT key, failures, last_failure_at, locked_until FROM ${OAUTH_SCHEMA}.login_failures WHERE key = $1 FOR UPDATE`, [
    key,
  ]);
  const next = afterFailure(rows[0] ? recordOf(rows[0]) : undefined, now, policy);
  await db.query(`UPDATE ${OAUTH_SCHEMA}.login_failures SET failures = $2, last_failure_at = $3, locked_until = $4 WHERE key = $1`, [
    key,
    next.failures,
    next.lastFailureAt,
    next.lockedUntil ?? null,
  ]);
  return next;
}

export async function clearLoginFailures(db: Queryable, key: string): Promise<void> {
  await db.query(`DELETE FROM ${OAUTH_SCHEMA}.login_failures WHERE key = $1`, [key]);
}

/** Keys quiet for longer than any policy remembers: house-keeping. */
export async function forgetOldLoginFailures(db: Queryable, olderThan: Date): Promise<void> {
  await db.query(`DELETE FROM ${OAUTH_SCHEMA}.login_failures WHERE last_failure_at < $1 AND (locked_until IS NULL OR locked_until < $1)`, [olderThan]);
}
