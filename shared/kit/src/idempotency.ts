import { createHash } from 'node:crypto';
import type { Middleware } from 'koa';
import { canonicalJson } from './canonical-json.js';
import type { Db } from './db.js';
import { IdempotencyKeyInUse, IdempotencyKeyReused, MerxError, ValidationFailed } from './errors.js';
import { failpoint } from './failpoints.js';
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

/**
 * Keys belong to the credential that sent them (the token's client id), not only to the merchant:
 * otherwise a key with fewer scopes could replay another credential's request and read its
 * answer (a full-scope API key's secret). A replay by another credential is a fresh request.
 * Rows written before this migration keep client_id '' and are honoured for their 24 hours.
 */
export const idempotencyByCredentialMigration: Migration = {
  id: '000_idempotency_keys_by_credential',
  sql: `
    ALTER TABLE {{schema}}.idempotency_keys ADD COLUMN client_id text NOT NULL DEFAULT '';
    ALTER TABLE {{schema}}.idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
    ALTER TABLE {{schema}}.idempotency_keys ADD PRIMARY KEY (merchant_id, client_id, key);
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
 * a 409. Keys are scoped to the merchant and the credential (client id) that sent them, so two
 * tenants, or two keys of one tenant, never share one. Responses of 5xx are not stored: the
 * request may be retried with the same key.
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
    const auth = ctx.state.auth as { merchantId: string; clientId: string } | undefined;
    if (!auth?.merchantId) return next();
    const { merchantId } = auth;
    // A row from before keys were per credential still answers for its 24 hours; new rows name the client.
    const legacy = await db.query(`SELECT 1 FROM ${table} WHERE merchant_id = $1 AND client_id = '' AND key = $2 AND created_at >= $3`, [
      merchantId,
      key,
      new Date(now() - IDEMPOTENCY_WINDOW_MS),
    ]);
    const clientId = legacy.rowCount > 0 ? '' : auth.clientId;
    const requestHash = createHash('sha256')
      .update(`${ctx.method} ${ctx.path.replace(/\/+$/, '')}\n${canonicalJson(ctx.request.body ?? null)}`)
      .digest('hex');

    const abandonedBefore = new Date(now() - ABANDONED_AFTER_MS);

    // One transaction holds the claim, the work and the answer: a crash before its commit leaves
    // no trace (the retry runs the work), a crash after it leaves the answer (the retry replays
    // it). The advisory lock makes a concurrent request with the same key a 409 instead of a wait.
    type Outcome = { replay?: StoredKey; stored: boolean };
    const outcome: Outcome = await db
      .unitOfWork(async (): Promise<Outcome> => {
        const { rows: lock } = await db.query<{ locked: boolean }>('SELECT pg_try_advisory_xact_lock(hashtext($1), hashtext($2)) AS locked', [
          `${table}:${merchantId}`,
          `${clientId}:${key}`,
        ]);
        if (!lock[0]?.locked) throw new IdempotencyKeyInUse();
        const { rows } = await db.query<StoredKey>(`SELECT * FROM ${table} WHERE merchant_id = $1 AND client_id = $2 AND key = $3 AND created_at >= $4`, [
          merchantId,
          clientId,
          key,
          new Date(now() - IDEMPOTENCY_WINDOW_MS),
        ]);
        const stored = rows[0];
        if (stored) {
          if (stored.request_hash !== requestHash) throw new IdempotencyKeyReused();
          if (stored.state === 'done') return { replay: stored, stored: false };
          // 'running' rows are an earlier version's claims, committed apart from their work.
          if (stored.locked_at >= abandonedBefore) throw new IdempotencyKeyInUse();
        }

        // The work in a savepoint: a 4xx it answers leaves nothing of it behind, only the answer.
        await db.query('SAVEPOINT merx_idempotent_work');
        try {
          await next();
          await db.query('RELEASE SAVEPOINT merx_idempotent_work');
        } catch (error) {
          await db.query('ROLLBACK TO SAVEPOINT merx_idempotent_work');
          // A 4xx is the answer to this request and is replayed like a success; anything else undoes it all.
          if (!(error instanceof MerxError) || !error.expose || statusOf(error.code) >= 500) throw error;
          writeProblem(ctx, error);
        }
        if (ctx.status >= 500) throw new DiscardedWork();
        // A bodiless 4xx means nothing answered (an unknown route, a router's 405): the problem
        // middleware renders it after us, and storing it would turn it into an empty 200.
        if ((ctx.body === undefined || ctx.body === null) && ctx.status >= 400) return { stored: false };
        const headers: Record<string, string> = {};
        for (const name of REPLAYED_HEADERS) {
          const value = ctx.response.get(name);
          if (value) headers[name] = value;
        }
        const body = ctx.body === undefined || ctx.body === null ? '' : typeof ctx.body === 'string' ? ctx.body : JSON.stringify(ctx.body);
        ctx.body = body; // what we store is exactly what we send, so a replay is byte for byte
        await db.query(
          `INSERT INTO ${table} (merchant_id, client_id, key, request_hash, state, response_status, response_headers, response_body, created_at, locked_at)
         VALUES ($1, $2, $3, $4, 'done', $5, $6, $7, $8, $8)
         ON CONFLICT (merchant_id, client_id, key) DO UPDATE
           SET request_hash = EXCLUDED.request_hash, state = 'done', response_status = EXCLUDED.response_status, response_headers = EXCLUDED.response_headers,
               response_body = EXCLUDED.response_body, created_at = EXCLUDED.created_at, locked_at = EXCLUDED.locked_at`,
          [merchantId, clientId, key, requestHash, ctx.status, JSON.stringify(headers), body, new Date(now())],
        );
        return { stored: true };
      })
      .catch((error: unknown): Outcome => {
        // A 5xx answer was set without a throw: its work was rolled back, the answer stands and is not kept.
        if (error instanceof DiscardedWork) return { stored: false };
        throw error;
      });
    if (outcome.stored) failpoint('idempotency.answer_committed');
    if (outcome.replay) {
      const stored = outcome.replay;
      ctx.status = stored.response_status ?? 200;
      // Stripe's convention: the replay keeps its own X-Request-Id and names the first request.
      for (const [name, value] of Object.entries(stored.response_headers ?? {})) {
        if (name === 'x-request-id') ctx.set('Original-Request-Id', value);
        else ctx.set(name, value);
      }
      ctx.set('Idempotent-Replayed', 'true');
      ctx.body = stored.response_body ?? '';
    }
  };
}

/** Thrown inside the unit of work to roll it back when the answer is a 5xx that was not thrown. */
class DiscardedWork extends Error {}

export async function purgeExpiredIdempotencyKeys(db: Db, schema: string, now: number = Date.now()): Promise<number> {
  const result = await db.query(`DELETE FROM ${schema}.idempotency_keys WHERE created_at < $1`, [new Date(now - IDEMPOTENCY_WINDOW_MS)]);
  return result.rowCount;
}
