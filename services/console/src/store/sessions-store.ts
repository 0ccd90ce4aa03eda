import type { Queryable } from '@merx/kit';
import type { ConsoleSession, SessionTokens } from '../domain/session.js';
import type { Sealer } from '../domain/sealing.js';
import { CONSOLE_SCHEMA } from './migrations.js';

interface SessionRow {
  id_hash: string;
  merchant_id: string;
  user_id: string;
  scopes: string[];
  access_token_sealed: string;
  access_expires_at: Date;
  refresh_token_sealed: string;
  token_version: number;
  csrf_token: string;
  created_at: Date;
  last_seen_at: Date;
  expires_at: Date;
}

function toSession(row: SessionRow, sealer: Sealer): ConsoleSession | undefined {
  const accessToken = sealer.unseal(row.access_token_sealed);
  const refreshToken = sealer.unseal(row.refresh_token_sealed);
  if (accessToken === undefined || refreshToken === undefined) return undefined;
  return {
    idHash: row.id_hash,
    merchantId: row.merchant_id,
    userId: row.user_id,
    scopes: row.scopes,
    accessToken,
    accessExpiresAt: new Date(row.access_expires_at),
    refreshToken,
    tokenVersion: row.token_version,
    csrfToken: row.csrf_token,
    createdAt: new Date(row.created_at),
    lastSeenAt: new Date(row.last_seen_at),
    expiresAt: new Date(row.expires_at),
  };
}

export async function insertSession(db: Queryable, sealer: Sealer, session: Omit<ConsoleSession, 'tokenVersion'>): Promise<void> {
  await db.query(
    `INSERT INTO ${CONSOLE_SCHEMA}.sessions (id_hash, merchant_id, user_id, scopes, access_token_sealed, access_expires_at, refresh_token_sealed, csrf_token, created_at, last_seen_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
    [
      session.idHash,
      session.merchantId,
      session.userId,
      session.scopes,
      sealer.seal(session.accessToken),
      session.accessExpiresAt,
      sealer.seal(session.refreshToken),
      session.csrfToken,
      session.createdAt,
      session.lastSeenAt,
      session.expiresAt,
    ],
  );
}

export async function findSession(db: Queryable, sealer: Sealer, idHash: string): Promise<ConsoleSession | undefined> {
  const { rows } = await db.query<SessionRow>(`SELECT * FROM ${CONSOLE_SCHEMA}.sessions WHERE id_hash = $1`, [idHash]);
  return rows[0] ? toSession(rows[0], sealer) : undefined;
}

/** Writes refreshed tokens unless another request already did (its version moved on); true when written. */
export async function replaceSessionTokens(
  db: Queryable,
  sealer: Sealer,
  session: Pick<ConsoleSession, 'idHash' | 'tokenVersion'>,
  tokens: SessionTokens,
): Promise<boolean> {
  const { rowCount } = await db.query(
    `UPDATE ${CONSOLE_SCHEMA}.sessions SET access_token_sealed = $3, access_expires_at = $4, refresh_token_sealed = $5, scopes = $6, token_version = token_version + 1
      WHERE id_hash = $1 AND token_version = $2`,
    [session.idHash, session.tokenVersion, sealer.seal(tokens.accessToken), tokens.accessExpiresAt, sealer.seal(tokens.refreshToken), tokens.scopes],
  );
  return rowCount === 1;
}

export async function touchSession(db: Queryable, idHash: string, now: Date): Promise<void> {
  await db.query(`UPDATE ${CONSOLE_SCHEMA}.sessions SET last_seen_at = $2 WHERE id_hash = $1`, [idHash, now]);
}

export async function deleteSession(db: Queryable, idHash: string): Promise<void> {
  await db.query(`DELETE FROM ${CONSOLE_SCHEMA}.sessions WHERE id_hash = $1`, [idHash]);
}

/** Housekeeping: sessions past their absolute end or idle too long. */
export async function deleteExpiredSessions(db: Queryable, now: Date, idleSeconds: number): Promise<number> {
  const { rowCount } = await db.query(`DELETE FROM ${CONSOLE_SCHEMA}.sessions WHERE expires_at <= $1 OR last_seen_at <= $2`, [
    now,
    new Date(now.getTime() - idleSeconds * 1000),
  ]);
  return rowCount;
}

/** A sign-in under way: the browser holds the id (cookie), the table the state and the PKCE verifier. */
export interface PendingSignIn {
  idHash: string;
  state: string;
  codeVerifier: string;
  returnTo: string;
  createdAt: Date;
}

/** How long a browser may take on the login page. */
export const SIGN_IN_TTL_MS = 15 * 60_000;

export async function insertSignIn(db: Queryable, sealer: Sealer, signIn: PendingSignIn): Promise<void> {
  await db.query(`INSERT INTO ${CONSOLE_SCHEMA}.sign_ins (id_hash, state, code_verifier_sealed, return_to, created_at) VALUES ($1, $2, $3, $4, $5)`, [
    signIn.idHash,
    signIn.state,
    sealer.seal(signIn.codeVerifier),
    signIn.returnTo,
    signIn.createdAt,
  ]);
}

/** Takes the pending sign-in out (a code is exchanged once); undefined when unknown or too old. */
export async function takeSignIn(db: Queryable, sealer: Sealer, idHash: string, now: Date): Promise<PendingSignIn | undefined> {
  const { rows } = await db.query<{ id_hash: string; state: string; code_verifier_sealed: string; return_to: string; created_at: Date }>(
    `DELETE FROM ${CONSOLE_SCHEMA}.sign_ins WHERE id_hash = $1 RETURNING *`,
    [idHash],
  );
  const row = rows[0];
  if (!row || now.getTime() - new Date(row.created_at).getTime() > SIGN_IN_TTL_MS) return undefined;
  const codeVerifier = sealer.unseal(row.code_verifier_sealed);
  return codeVerifier === undefined
    ? undefined
    : { idHash: row.id_hash, state: row.state, codeVerifier, returnTo: row.return_to, createdAt: new Date(row.created_at) };
}

export async function deleteStaleSignIns(db: Queryable, now: Date): Promise<number> {
  const { rowCount } = await db.query(`DELETE FROM ${CONSOLE_SCHEMA}.sign_ins WHERE created_at <= $1`, [new Date(now.getTime() - SIGN_IN_TTL_MS)]);
  return rowCount;
}
