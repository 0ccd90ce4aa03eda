import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { AsyncLocalStorage } from 'node:async_hooks';
import path from 'node:path';
import { createPgliteDb, type Db } from '../src/db.js';
import { openPgliteThread, type PgliteThread } from '../src/pglite-worker-db.js';
import { openPglite } from '../src/runtime.js';

/**
 * The embedded mode's database thread must be indistinguishable from PGlite on the main thread:
 * the same values, the same errors, the same transaction semantics. Each case runs on both, and
 * the thread's answers must equal the main thread's.
 */
/** Another request's statement, sent from outside the transaction's async context. */
const runDetached = AsyncLocalStorage.snapshot();

describe('PGlite on its own thread', function () {
  this.timeout(60_000);
  let thread: PgliteThread;
  let main: Db;
  let closeMain: () => Promise<void>;

  before(async () => {
    thread = await openPgliteThread(undefined);
    const pglite = await openPglite(undefined);
    main = createPgliteDb(pglite);
    closeMain = () => pglite.close();
    for (const db of [thread.db, main]) {
      await db.exec(
        `CREATE TABLE things (id text PRIMARY KEY, n bigint NOT NULL, at timestamptz NOT NULL, doc jsonb, raw bytea, tags text[], price numeric(12, 2))`,
      );
    }
  });
  after(async () => {
    await thread.close();
    await closeMain();
  });

  const both = async <T>(work: (db: Db) => Promise<T>): Promise<[T, T]> => [await work(thread.db), await work(main)];

  it('returns the same values as the main thread: int8 as number, timestamps as Date, jsonb, bytea, arrays, numeric', async () => {
    const at = new Date('2026-11-26T12:34:56.789Z');
    const [onThread, onMain] = await both(async (db) => {
      await db.query(`INSERT INTO things (id, n, at, doc, raw, tags, price) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [
        'thg_values',
        42,
        at,
        JSON.stringify({ a: [1, 'two', null], ü: true }),
        new Uint8Array([0, 1, 254, 255]),
        ['x', 'y'],
        '19.99',
      ]);
      return db.query('SELECT * FROM things WHERE id = $1', ['thg_values']);
    });
    assert.deepEqual(onThread, onMain);
    const row = onThread.rows[0]!;
    assert.equal(row.n, 42);
    assert.ok(row.at instanceof Date && row.at.getTime() === at.getTime());
    assert.deepEqual(row.doc, { a: [1, 'two', null], ü: true });
    assert.deepEqual([...(row.raw as Uint8Array)], [0, 1, 254, 255]);
    assert.deepEqual(row.tags, ['x', 'y']);
    assert.equal(row.price, '19.99');
  });

  it("keeps PostgreSQL's error fields: a unique violation is 23505 with its constraint, a syntax error 42601", async () => {
    const unique = await both(async (db) => {
      await db.query(`INSERT INTO things (id, n, at) VALUES ('thg_unique', 1, now())`);
      return db.query(`INSERT INTO things (id, n, at) VALUES ('thg_unique', 2, now())`).then(
        () => assert.fail('the duplicate was accepted'),
        (error: { code?: string; constraint?: string; message: string }) => ({ code: error.code, constraint: error.constraint, message: error.message }),
      );
    });
    assert.deepEqual(unique[0], unique[1]);
    assert.equal(unique[0].code, '23505');
    assert.equal(unique[0].constraint, 'things_pkey');
    await assert.rejects(thread.db.query('SELEC nothing'), (error: { code?: string }) => error.code === '42601');
  });

  it('commits a transaction whole, and rolls it back whole when the work throws, rethrowing its error', async () => {
    await thread.db.transaction(async (tx) => {
      await tx.query(`INSERT INTO things (id, n, at) VALUES ('thg_tx_1', 1, now())`);
      await tx.query(`INSERT INTO things (id, n, at) VALUES ('thg_tx_2', 2, now())`);
    });
    const failure = new Error('the work fails after writing');
    await assert.rejects(
      thread.db.transaction(async (tx) => {
        await tx.query(`INSERT INTO things (id, n, at) VALUES ('thg_tx_3', 3, now())`);
        throw failure;
      }),
      (error) => error === failure,
    );
    // A statement that failed inside leaves the transaction aborted; the rollback still happens.
    await assert.rejects(
      thread.db.transaction(async (tx) => {
        await tx.query(`INSERT INTO things (id, n, at) VALUES ('thg_tx_4', 4, now())`);
        await tx.query(`INSERT INTO things (id, n, at) VALUES ('thg_tx_1', 1, now())`);
      }),
      (error: { code?: string }) => error.code === '23505',
    );
    const { rows } = await thread.db.query<{ id: string }>(`SELECT id FROM things WHERE id LIKE 'thg_tx_%' ORDER BY id`);
    assert.deepEqual(
      rows.map((row) => row.id),
      ['thg_tx_1', 'thg_tx_2'],
    );
  });

  it('answers statements sent in the same turn each with its own result or error, in the order sent', async () => {
    // Sent together they cross to the thread as one message and come back as one.
    const [onThread, onMain] = await both(async (db) => {
      const sent = Array.from({ length: 40 }, (_, i) =>
        i === 17
          ? db.query('SELECT nope FROM things').then(
              () => 'no error',
              (error: { code?: string }) => `error ${error.code}`,
            )
          : db.query<{ n: number }>('SELECT $1::int8 + 1 AS n', [i]).then(({ rows }) => rows[0]!.n),
      );
      return Promise.all(sent);
    });
    assert.deepEqual(onThread, onMain);
    assert.equal(onThread[17], 'error 42703');
    assert.deepEqual(
      onThread.filter((_, i) => i !== 17),
      Array.from({ length: 40 }, (_, i) => i + 1).filter((_, i) => i !== 17),
    );
  });

  it('makes a statement outside a transaction wait until the transaction ends, and see its commit', async () => {
    let outside: Promise<number> | undefined;
    let outsideDone = false;
    await thread.db.transaction(async (tx) => {
      await tx.query(`INSERT INTO things (id, n, at) VALUES ('thg_wait', 1, now())`);
      outside = runDetached(() => thread.db.query<{ count: number }>(`SELECT count(*)::int AS count FROM things WHERE id = 'thg_wait'`)).then((result) => {
        outsideDone = true;
        return result.rows[0]!.count;
      });
      // Sent after the outside statement: had that one not been held back, its answer would be here first.
      await tx.query('SELECT 1');
      await tx.query('SELECT 1');
      assert.equal(outsideDone, false, 'the statement outside ran while the transaction was open');
    });
    assert.equal(await outside, 1);
  });

  it('runs units of work with savepoints: a failed inner transaction rolls back only itself', async () => {
    await thread.db.unitOfWork(async () => {
      await thread.db.query(`INSERT INTO things (id, n, at) VALUES ('thg_unit_1', 1, now())`);
      await assert.rejects(
        thread.db.transaction(async (tx) => {
          await tx.query(`INSERT INTO things (id, n, at) VALUES ('thg_unit_2', 2, now())`);
          throw new Error('inner fails');
        }),
        /inner fails/,
      );
      await thread.db.query(`INSERT INTO things (id, n, at) VALUES ('thg_unit_3', 3, now())`);
    });
    const { rows } = await thread.db.query<{ id: string }>(`SELECT id FROM things WHERE id LIKE 'thg_unit_%' ORDER BY id`);
    assert.deepEqual(
      rows.map((row) => row.id),
      ['thg_unit_1', 'thg_unit_3'],
    );
  });

  it('refuses the outer database inside a transaction, the mistake that would deadlock', async () => {
    await assert.rejects(
      thread.db.transaction(async () => {
        await thread.db.query('SELECT 1');
      }),
      /inside a transaction/,
    );
    assert.equal((await thread.db.query<{ one: number }>('SELECT 1 AS one')).rows[0]!.one, 1);
  });

  it('keeps what it committed in a data directory across a close and reopen, and refuses statements once closed', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'merx-pglite-thread-'));
    try {
      const first = await openPgliteThread(dir);
      await first.db.exec('CREATE TABLE kept (n integer PRIMARY KEY)');
      await first.db.transaction(async (tx) => void (await tx.query('INSERT INTO kept SELECT generate_series(1, 100)')));
      await first.close();
      await assert.rejects(first.db.query('SELECT 1'), /closed|exited/i);
      const second = await openPgliteThread(dir);
      try {
        assert.equal((await second.db.query<{ count: number }>('SELECT count(*)::int AS count FROM kept')).rows[0]!.count, 100);
      } finally {
        await second.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
