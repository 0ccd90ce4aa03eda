import assert from 'node:assert/strict';
import { createServer, type Server, type Socket } from 'node:net';
import Router from '@koa/router';
import { request } from 'undici';
import { createPostgresDb, createServiceApp, freePort, isDatabaseUnavailable, listen, mountRouter, type Db, type RunningServer } from '../src/index.js';
import { silentLogger } from './support.js';

const DATABASE_URL = process.env.MERX_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/** A service whose one route runs `sql` on `db`: what any store call looks like from HTTP. */
async function serviceOver(db: Db, sql: string): Promise<RunningServer> {
  const router = new Router();
  router.get('/query', async (ctx) => {
    ctx.body = { rows: (await db.query(sql)).rows };
  });
  const app = createServiceApp({ service: 'kit-test', logger: silentLogger, routes: (koa) => mountRouter(koa, router) });
  return listen(app, 0, '127.0.0.1');
}

async function answerOf(server: RunningServer): Promise<{ status: number; retryAfter: unknown; body: Record<string, unknown>; ms: number }> {
  const started = Date.now();
  const response = await request(`${server.url}/query`);
  const body = (await response.body.json()) as Record<string, unknown>;
  return { status: response.statusCode, retryAfter: response.headers['retry-after'], body, ms: Date.now() - started };
}

describe('a database that does not answer makes a 503, never a hang or a 500', () => {
  const closing: Array<() => Promise<unknown>> = [];
  after(async () => {
    for (const close of closing.reverse()) await close();
  });

  it('cancels a statement past the statement timeout and answers 503 unavailable with Retry-After', async () => {
    const db = createPostgresDb(DATABASE_URL, { maxConnections: 1, statementTimeoutMs: 200 });
    const server = await serviceOver(db, 'SELECT pg_sleep(5)');
    closing.push(
      () => db.close(),
      () => server.close(),
    );
    const answer = await answerOf(server);
    assert.equal(answer.status, 503, JSON.stringify(answer.body));
    assert.equal(answer.body.code, 'unavailable');
    assert.equal(answer.retryAfter, '1');
    assert.ok(answer.ms < 3_000, `answered after ${answer.ms} ms`);
  });

  it('gives up on a server that accepts the connection and never speaks, after the connect timeout', async () => {
    const sockets: Socket[] = [];
    const silent: Server = createServer((socket) => sockets.push(socket));
    const port = await freePort();
    await new Promise<void>((resolve) => silent.listen(port, '127.0.0.1', resolve));
    closing.push(async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    });
    const db = createPostgresDb(`postgres://postgres@127.0.0.1:${port}/postgres`, { maxConnections: 1, connectTimeoutMs: 300 });
    const server = await serviceOver(db, 'SELECT 1');
    closing.push(
      () => db.close().catch(() => undefined),
      () => server.close(),
    );
    const answer = await answerOf(server);
    assert.equal(answer.status, 503, JSON.stringify(answer.body));
    assert.equal(answer.body.code, 'unavailable');
    assert.ok(answer.ms < 3_000, `answered after ${answer.ms} ms`);
  });

  it('answers 503 while nothing listens at the database address', async () => {
    const db = createPostgresDb(`postgres://postgres@127.0.0.1:${await freePort()}/postgres`, { maxConnections: 1 });
    const server = await serviceOver(db, 'SELECT 1');
    closing.push(
      () => db.close().catch(() => undefined),
      () => server.close(),
    );
    const answer = await answerOf(server);
    assert.equal(answer.status, 503);
    assert.equal(answer.body.code, 'unavailable');
  });

  it('survives the connection ending in the middle of a transaction: the transaction fails, the process goes on', async () => {
    const db = createPostgresDb(DATABASE_URL, { maxConnections: 1 });
    const admin = createPostgresDb(DATABASE_URL, { maxConnections: 1 });
    closing.push(
      () => db.close(),
      () => admin.close(),
    );
    const outcome = db.transaction(async (tx) => {
      const { rows } = await tx.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      await admin.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
      // The work awaits something else (the outbox relay awaits the broker) while the server drops the connection.
      await new Promise((resolve) => setTimeout(resolve, 300));
      await tx.query('SELECT 1');
    });
    await assert.rejects(outcome);
    assert.deepEqual((await db.query('SELECT 1 AS one')).rows, [{ one: 1 }], 'the pool replaced the broken client');
  });

  it('keeps a wrong statement a 500: only unavailability is a 503', async () => {
    const db = createPostgresDb(DATABASE_URL, { maxConnections: 1 });
    const server = await serviceOver(db, 'SELEC 1');
    closing.push(
      () => db.close(),
      () => server.close(),
    );
    assert.equal((await answerOf(server)).status, 500);
    assert.equal(isDatabaseUnavailable({ code: '42601', message: 'syntax error at or near "SELEC"' }), false);
    assert.equal(isDatabaseUnavailable({ code: '57P01', message: 'terminating connection due to administrator command' }), true);
    assert.equal(isDatabaseUnavailable(new Error('Connection terminated unexpectedly')), true);
  });
});
