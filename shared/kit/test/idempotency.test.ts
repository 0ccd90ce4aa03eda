import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import Router, { type RouterContext } from '@koa/router';
import { request } from 'undici';
import {
  createServiceApp,
  IDEMPOTENCY_WINDOW_MS,
  idempotencyMiddleware,
  idempotencyByCredentialMigration,
  idempotencyMigration,
  listen,
  migrateSchema,
  mountRouter,
  newId,
  purgeExpiredIdempotencyKeys,
  requestBody,
  ValidationFailed,
  type Db,
  type RunningServer,
} from '../src/index.js';
import { connectPostgres, dropSchema, silentLogger, uniqueName, within } from './support.js';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: Record<string, unknown>;
}

interface Deferred {
  promise: Promise<void>;
  resolve(): void;
}

function deferred(): Deferred {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('idempotencyMiddleware with PostgreSQL over HTTP', () => {
  const merchantA = 'mch_01jd3k7q8m2x4v6b9c0d1e2f3a';
  const merchantB = 'mch_01jd3k7q8m2x4v6b9c0d1e2f3b';
  let db: Db;
  let schema: string;
  let server: RunningServer;
  let clockOffsetMs = 0;
  let runs = 0;
  let gate: Deferred | undefined;
  let entered: Deferred | undefined;
  const failuresLeft = new Map<string, number>();

  async function post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    const response = await request(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-test-merchant': merchantA, ...headers },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.body.text();
    return { status: response.statusCode, headers: response.headers, text, json: JSON.parse(text || '{}') as Record<string, unknown> };
  }

  before(async () => {
    db = await connectPostgres();
    schema = uniqueName('kit_test_');
    await migrateSchema(db, schema, [idempotencyMigration, idempotencyByCredentialMigration]);

    const router = new Router();
    const createThing = async (ctx: RouterContext) => {
      runs++;
      const body = requestBody(ctx) as { title?: string; mode?: string };
      if (body.mode === 'block') {
        entered?.resolve();
        await gate?.promise;
      }
      if (body.mode === 'invalid') throw new ValidationFailed([{ field: 'title', code: 'required', message: 'title is required' }]);
      if (body.mode === 'flaky') {
        const left = failuresLeft.get(body.title ?? '') ?? 0;
        if (left > 0) {
          failuresLeft.set(body.title ?? '', left - 1);
          throw new Error('database went away');
        }
      }
      const id = newId('prod');
      ctx.status = 201;
      ctx.set('Location', `/things/${id}`);
      ctx.set('X-Not-Replayed', 'only-on-the-first-answer');
      ctx.body = { id, title: body.title ?? null, created_at: new Date().toISOString(), run: runs };
    };
    router.post('/things', createThing);
    router.post('/other-things', createThing);

    const app = createServiceApp({
      service: 'kit-test',
      logger: silentLogger,
      routes(routesApp) {
        routesApp.use(async (ctx, next) => {
          const merchantId = ctx.get('x-test-merchant');
          if (merchantId) ctx.state.auth = { merchantId, clientId: ctx.get('x-test-client') || 'mx_test_client' };
          return next();
        });
        routesApp.use(idempotencyMiddleware(db, schema, { now: () => Date.now() + clockOffsetMs }));
        mountRouter(routesApp, router);
      },
    });
    server = await listen(app, 0);
  });

  beforeEach(() => {
    runs = 0;
    clockOffsetMs = 0;
  });

  after(async () => {
    await server?.close();
    if (db) {
      await dropSchema(db, schema);
      await db.close();
    }
  });

  it('replays the first answer byte for byte for the same key and body, running the handler once', async () => {
    const key = uniqueName('key-');
    const first = await post('/things', { title: 'Shirt', tags: { a: 1, b: 2 } }, { 'idempotency-key': key });
    assert.equal(first.status, 201);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    // The same JSON with its keys in another order is the same request.
    const second = await post('/things', '{"tags":{"b":2,"a":1},"title":"Shirt"}', { 'idempotency-key': key });
    assert.equal(second.status, 201);
    assert.equal(second.headers['idempotent-replayed'], 'true');
    assert.equal(second.text, first.text);
    assert.equal(second.headers.location, first.headers.location);
    assert.equal(second.headers['content-type'], first.headers['content-type']);
    assert.equal(second.headers['x-not-replayed'], undefined);
    assert.notEqual(second.headers['x-request-id'], first.headers['x-request-id']);
    assert.equal(second.headers['original-request-id'], first.headers['x-request-id']);
    assert.equal(runs, 1);
  });

  it('refuses the same key with another body or path with 422 idempotency_key_reused', async () => {
    const key = uniqueName('key-');
    assert.equal((await post('/things', { title: 'Shirt' }, { 'idempotency-key': key })).status, 201);
    const otherBody = await post('/things', { title: 'Hat' }, { 'idempotency-key': key });
    assert.equal(otherBody.status, 422);
    assert.equal(otherBody.json.code, 'idempotency_key_reused');
    const otherPath = await post('/other-things', { title: 'Shirt' }, { 'idempotency-key': key });
    assert.equal(otherPath.status, 422);
    assert.equal(otherPath.json.code, 'idempotency_key_reused');
    assert.equal(runs, 1);
  });

  it('answers 409 idempotency_key_in_use while the first request is still running', async () => {
    const key = uniqueName('key-');
    gate = deferred();
    entered = deferred();
    try {
      const first = post('/things', { title: 'Slow', mode: 'block' }, { 'idempotency-key': key });
      await within(entered.promise, 5_000, 'the first request to reach its handler');
      const concurrent = await post('/things', { title: 'Slow', mode: 'block' }, { 'idempotency-key': key });
      assert.equal(concurrent.status, 409);
      assert.equal(concurrent.json.code, 'idempotency_key_in_use');
      assert.equal(concurrent.json.status, 409);
      gate.resolve();
      const finished = await within(first, 5_000, 'the first request');
      assert.equal(finished.status, 201);
      const after = await post('/things', { title: 'Slow', mode: 'block' }, { 'idempotency-key': key });
      assert.equal(after.headers['idempotent-replayed'], 'true');
      assert.equal(after.text, finished.text);
      assert.equal(runs, 1);
    } finally {
      gate.resolve();
      gate = undefined;
      entered = undefined;
    }
  });

  it('replays a 4xx the handler threw', async () => {
    const key = uniqueName('key-');
    const first = await post('/things', { mode: 'invalid' }, { 'idempotency-key': key });
    assert.equal(first.status, 422);
    assert.equal(first.json.code, 'validation_failed');
    const second = await post('/things', { mode: 'invalid' }, { 'idempotency-key': key });
    assert.equal(second.status, 422);
    assert.equal(second.headers['idempotent-replayed'], 'true');
    assert.match(String(second.headers['content-type']), /^application\/problem\+json/);
    assert.equal(second.text, first.text);
    assert.equal(runs, 1);
  });

  it('frees the key after a 5xx so the retry runs', async () => {
    const key = uniqueName('key-');
    failuresLeft.set(key, 1);
    const first = await post('/things', { title: key, mode: 'flaky' }, { 'idempotency-key': key });
    assert.equal(first.status, 500);
    assert.equal(first.json.code, 'internal');
    const retry = await post('/things', { title: key, mode: 'flaky' }, { 'idempotency-key': key });
    assert.equal(retry.status, 201);
    assert.equal(retry.headers['idempotent-replayed'], undefined);
    const replay = await post('/things', { title: key, mode: 'flaky' }, { 'idempotency-key': key });
    assert.equal(replay.text, retry.text);
    assert.equal(runs, 2);
  });

  it('scopes keys to the merchant', async () => {
    const key = uniqueName('key-');
    const a = await post('/things', { title: 'A' }, { 'idempotency-key': key, 'x-test-merchant': merchantA });
    const b = await post('/things', { title: 'B' }, { 'idempotency-key': key, 'x-test-merchant': merchantB });
    assert.equal(a.status, 201);
    assert.equal(b.status, 201, b.text);
    assert.notEqual(a.json.id, b.json.id);
    const replayA = await post('/things', { title: 'A' }, { 'idempotency-key': key, 'x-test-merchant': merchantA });
    assert.equal(replayA.text, a.text);
    assert.equal(runs, 2);
  });

  it('scopes keys to the credential: the same key and body from another client id is a fresh request, never a replay', async () => {
    const key = uniqueName('key-');
    const first = await post('/things', { title: 'A' }, { 'idempotency-key': key, 'x-test-client': 'mx_test_full' });
    const other = await post('/things', { title: 'A' }, { 'idempotency-key': key, 'x-test-client': 'mx_test_narrow' });
    assert.equal(other.status, 201, other.text);
    assert.equal(other.headers['idempotent-replayed'], undefined);
    assert.notEqual(other.json.id, first.json.id);
    const replay = await post('/things', { title: 'A' }, { 'idempotency-key': key, 'x-test-client': 'mx_test_full' });
    assert.equal(replay.text, first.text);
    assert.equal(runs, 2);
  });

  it('honours a key stored before keys were per credential, for any credential of its merchant', async () => {
    const key = uniqueName('key-');
    const first = await post('/things', { title: 'Legacy' }, { 'idempotency-key': key, 'x-test-client': 'mx_test_before' });
    // As the row looked when the migration gave it the client id ''.
    await db.query(`UPDATE ${schema}.idempotency_keys SET client_id = '' WHERE key = $1`, [key]);
    const replay = await post('/things', { title: 'Legacy' }, { 'idempotency-key': key, 'x-test-client': 'mx_test_after' });
    assert.equal(replay.text, first.text);
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    assert.equal(runs, 1);
  });

  it('runs every request without a key, and refuses an overlong key', async () => {
    await post('/things', { title: 'A' });
    await post('/things', { title: 'A' });
    assert.equal(runs, 2);
    const long = await post('/things', { title: 'A' }, { 'idempotency-key': 'k'.repeat(256) });
    assert.equal(long.status, 422);
    assert.equal(long.json.code, 'validation_failed');
    assert.deepEqual(
      (long.json.errors as Array<{ field: string }>).map((e) => e.field),
      ['Idempotency-Key'],
    );
  });

  it('leaves unknown routes and wrong methods to the problem middleware', async () => {
    const key = uniqueName('key-');
    for (let attempt = 0; attempt < 2; attempt++) {
      const unknown = await post('/nowhere', { title: 'A' }, { 'idempotency-key': key });
      assert.equal(unknown.status, 404, unknown.text);
      assert.equal(unknown.json.code, 'not_found');
      assert.equal(unknown.headers['idempotent-replayed'], undefined);
    }
    const stored = await db.query(`SELECT 1 FROM ${schema}.idempotency_keys WHERE key = $1`, [key]);
    assert.equal(stored.rowCount, 0, 'an unanswered request does not burn the key');
    assert.equal(runs, 0);
  });

  it('forgets a key after 24 hours, and takes over a key abandoned while running', async () => {
    const key = uniqueName('key-');
    const first = await post('/things', { title: 'Old' }, { 'idempotency-key': key });
    clockOffsetMs = IDEMPOTENCY_WINDOW_MS + 60_000;
    const later = await post('/things', { title: 'Old' }, { 'idempotency-key': key });
    assert.equal(later.headers['idempotent-replayed'], undefined);
    assert.notEqual(later.text, first.text);
    assert.equal(runs, 2);

    // A claim written by an earlier version (committed apart from its work) by a replica that died mid-request.
    const abandoned = uniqueName('key-');
    const requestHash = createHash('sha256').update('POST /things\n{"title":"Crash"}').digest('hex');
    await db.query(
      `INSERT INTO ${schema}.idempotency_keys (merchant_id, key, request_hash, state, created_at, locked_at) VALUES ($1, $2, $3, 'running', now(), now())`,
      [merchantA, abandoned, requestHash],
    );
    clockOffsetMs = 0;
    assert.equal((await post('/things', { title: 'Crash' }, { 'idempotency-key': abandoned })).status, 409);
    clockOffsetMs = 2 * 60_000;
    assert.equal((await post('/things', { title: 'Crash' }, { 'idempotency-key': abandoned })).status, 201);

    const purged = await purgeExpiredIdempotencyKeys(db, schema, Date.now() + IDEMPOTENCY_WINDOW_MS + 24 * 60 * 60_000);
    assert.ok(purged >= 3, `purged ${purged}`);
  });
});
