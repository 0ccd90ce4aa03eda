import { createHash } from 'node:crypto';
import type { Middleware } from 'koa';
import { canonicalJson } from './canonical-json.js';
import type { Db } from './db.js';
import { IdempotencyKeyInUse, IdempotencyKeyReused, MerxError, ValidationFailed } from './errors.js';
import { statusOf, writeProblem } from './problem.js';
import type { Migration } from './migrations.js';

export const IDEMPOTENCY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** A key still "running" after this long belongs to a request that died; it may be taken over. */
const ABANDONED_AFTER_MS = 60_000;
const REPLAYED_HEADERS = ['content-type', 'etag', 'location', 'x-request-id'];

export const idempotencyMigration: Migration = {
  id: '000_idempotency_keys',
  sql: `
    CREATE TABLE {{schema}}.idempotency_keys (
      merchant_id text NOT NULL,
      key text NOT NULL,
      request_hash text NOT NULL,
      state text NOT NULL CHECK (state IN ('running', 'done')),
      response_status integer,
      response_headers jsonb,
      response_body text,
      created_at timestamptz NOT NULL DEFAULT now(),
      locked_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (merchant_id, key)
    );
    CREATE INDEX idempotency_keys_created_at ON {{schema}}.idempotency_keys (created_at);
  `,
};

interface StoredKey {
  request_hash: string;
  state: 'running' | 'done';
  response_status: number | null;
  response_headers: Record<string, string> | null;
  response_body: string | null;
  created_at: Date;
  locked_at: Date;
}

/**
 * Stripe's contract for POST: same key and same request within 24 h replays the first response
 * byte for byte; same key with another request is a 422; same key while the first is running is
 * a 409. Keys are scoped to the merchant, so two tenants can never collide. Responses of 5xx are
 * not stored: the request may be retried with the same key.
 */
export function idempotencyMiddleware(db: Db, schema: string, options: { now?: () => number } = {}): Middleware {
  const now = options.now ?? Date.now;
  const table = `${schema}.idempotency_keys`;
  return async function applyIdempotencyKey(ctx, next) {
    const key = ctx.get('idempotency-key');
    if (ctx.method !== 'POST' || !key) return next();
    if (key.length > 255) {
      throw new ValidationFailed([{ field: 'Idempotency-Key', code: 'too_long', message: 'Idempotency-Key must be at most 255 characters' }]);
    }
    const merchantId = (ctx.state.auth as { merchantId: string } | undefined)?.merchantId;
    if (!merchantId) return next();
    const requestHash = createHash('sha256').update(`${ctx.method} ${ctx.path.replace(/\/+$/, '')}\n${canonicalJson(ctx.request.body ?? null)}`).digest('hex');

    const claimed = await db.query(
      `INSERT INTO ${table} (merchant_id, key, request_hash, state, created_at, locked_at)
       VALUES ($1, $2, $3, 'running', $4, $4)
       ON CONFLICT (merchant_id, key) DO UPDATE
         SET request_hash = EXCLUDED.request_hash, state = 'running', response_status = NULL, response_headers = NULL,
             response_body = NULL, created_at = EXCLUDED.created_at, locked_at = EXCLUDED.locked_at
         WHERE ${table}.created_at < $5 OR (${table}.state = 'running' AND ${table}.locked_at < $6)
       RETURNING key`,
      [merchantId, key, requestHash, new Date(now()), new Date(now() - IDEMPOTENCY_WINDOW_MS), new Date(now() - ABANDONED_AFTER_MS)],
    );
    if (claimed.rowCount === 0) {
      const { rows } = await db.query<StoredKey>(`SELECT * FROM ${table} WHERE merchant_id = $1 AND key = $2`, [merchantId, key]);
      const stored = rows[0];
      if (!stored) throw new IdempotencyKeyInUse();
      if (stored.request_hash !== requestHash) throw new IdempotencyKeyReused();
      if (stored.state === 'running') throw new IdempotencyKeyInUse();
      ctx.status = stored.response_status ?? 200;
      // Stripe's convention: the replay keeps its own X-Request-Id and names the first request.
      for (const [name, value] of Object.entries(stored.response_headers ?? {})) {
        if (name === 'x-request-id') ctx.set('Original-Request-Id', value);
        else ctx.set(name, value);
      }
      ctx.set('Idempotent-Replayed', 'true');
      ctx.body = stored.response_body ?? '';
      return;
    }

    const release = () => db.query(`DELETE FROM ${table} WHERE merchant_id = $1 AND key = $2 AND state = 'running'`, [merchantId, key]);
    try {
      await next();
    } catch (error) {
      // A 4xx is the answer to this request and is replayed like a success; anything else frees the key.
      if (!(error instanceof MerxError) || !error.expose || statusOf(error.code) >= 500) {
        await release();
        throw error;
      }
      writeProblem(ctx, error);
    }
    // A bodiless 4xx means nothing answered (an unknown route, a router's 405): the problem
    // middleware renders it after us, and storing it would turn it into an empty 200.
    const unanswered = (ctx.body === undefined || ctx.body === null) && ctx.status >= 400;
    if (ctx.status >= 500 || unanswered) {
      await release();
      return;
    }
    const headers: Record<string, string> = {};
    for (const name of REPLAYED_HEADERS) {
      const value = ctx.response.get(name);
      if (value) headers[name] = value;
    }
    const body = ctx.body === undefined || ctx.body === null ? '' : typeof ctx.body === 'string' ? ctx.body : JSON.stringify(ctx.body);
    ctx.body = body; // what we store is exactly what we send, so a replay is byte for byte
    await db.query(`UPDATE ${table} SET state = 'done', response_status = $3, response_headers = $4, response_body = $5 WHERE merchant_id = $1 AND key = $2`, [
      merchantId,
      key,
      ctx.status,
      JSON.stringify(headers),
      body,
    ]);
  };
}

export async function purgeExpiredIdempotencyKeys(db: Db, schema: string, now: number = Date.now()): Promise<number> {
  const result = await db.query(`DELETE FROM ${schema}.idempotency_keys WHERE created_at < $1`, [new Date(now - IDEMPOTENCY_WINDOW_MS)]);
  return result.rowCount;
}
