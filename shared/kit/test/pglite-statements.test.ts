import assert from 'node:assert/strict';
import type { PGlite } from '@electric-sql/pglite';
import { pgliteStatements, type PgliteStatements } from '../src/pglite-statements.js';
import { openPglite } from '../src/runtime.js';

/**
 * The embedded mode's statements skip `PGlite.query` (pglite-statements.ts). These cases hold
 * that path to `PGlite.query` itself: the same rows, counts and errors, and prepared statements
 * that survive every way a statement can fail.
 */
describe('PGlite statements prepared once and run in one trip', function () {
  this.timeout(60_000);
  let pglite: PGlite;
  let statements: PgliteStatements;
  /** How many prepared statements PostgreSQL holds for this SQL text. */
  const preparedCopies = async (sql: string) =>
    (await pglite.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement = $1', [sql])).rows[0]!.n;

  before(async () => {
    pglite = await openPglite(undefined);
    statements = pgliteStatements(pglite);
    await pglite.exec(`
      CREATE TABLE items (id text PRIMARY KEY, n bigint, at timestamptz, doc jsonb, raw bytea, tags text[], price numeric(12, 2), ok boolean, note text);
    `);
  });
  after(() => pglite.close());

  it('returns what PGlite.query returns, for every kind of value a store binds', async () => {
    const at = new Date('2026-11-27T03:04:05.678Z');
    const values = (id: string) => [
      id,
      9_007_199_254,
      at,
      { a: [1, 'two', null], ü: true },
      Buffer.from([0, 1, 254, 255]),
      ['x', 'y,z', 'q"'],
      '19.99',
      true,
      null,
    ];
    const insert = 'INSERT INTO items (id, n, at, doc, raw, tags, price, ok, note) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)';
    const viaStatements = await statements.query(insert, values('fast'), false);
    const viaQuery = await pglite.query(insert, values('slow'));
    assert.equal(viaStatements.rowCount, 1);
    assert.equal(viaQuery.affectedRows, 1);
    const select = 'SELECT n, at, doc, raw, tags, price, ok, note FROM items WHERE id = $1';
    const [fast, slow] = [(await statements.query(select, ['fast'], false)).rows, (await pglite.query(select, ['slow'])).rows];
    assert.deepEqual(fast, slow);
    assert.deepEqual(fast[0], {
      n: 9_007_199_254,
      at,
      doc: { a: [1, 'two', null], ü: true },
      raw: new Uint8Array([0, 1, 254, 255]),
      tags: ['x', 'y,z', 'q"'],
      price: '19.99',
      ok: true,
      note: null,
    });
  });

  it('counts the rows a statement touched, as PGlite.query does', async () => {
    await statements.query("INSERT INTO items (id) SELECT 'cnt_' || g FROM generate_series(1, $1::int) g", [3], false);
    const update = "UPDATE items SET note = $1 WHERE id LIKE 'cnt_%'";
    assert.equal((await statements.query(update, ['seen'], false)).rowCount, (await pglite.query(update, ['seen'])).affectedRows);
    assert.equal((await statements.query(update, ['seen'], false)).rowCount, 3);
    assert.equal((await statements.query('DELETE FROM items WHERE id = $1', ['cnt_none'], false)).rowCount, 0);
  });

  it('parses a statement once and runs it by name after that', async () => {
    const sql = 'SELECT id FROM items WHERE id = $1 AND $2::int > 0';
    for (let i = 1; i <= 3; i += 1) assert.deepEqual((await statements.query(sql, ['fast', i], false)).rows, [{ id: 'fast' }]);
    assert.equal(await preparedCopies(sql), 1);
  });

  it('keeps PostgreSQL error fields, and a statement that failed after its parse still runs by name', async () => {
    const insert = 'INSERT INTO items (id, note) VALUES ($1, $2)';
    await statements.query(insert, ['dup', 'first'], false);
    const fast = (await statements.query(insert, ['dup', 'again'], false).catch((error: unknown) => error)) as Record<string, unknown>;
    const slow = (await pglite.query(insert, ['dup', 'again']).catch((error: unknown) => error)) as Record<string, unknown>;
    assert.ok(fast instanceof Error);
    for (const field of ['message', 'code', 'constraint', 'detail', 'table']) assert.equal(fast[field], slow[field], field);
    assert.equal(fast.code, '23505');
    // Failing at bind: the value is not an integer. The name stays PostgreSQL's, and usable.
    const typed = 'SELECT $1::int + 1 AS next';
    await assert.rejects(statements.query(typed, ['not a number'], false), { code: '22P02' });
    assert.deepEqual((await statements.query(typed, [41], false)).rows, [{ next: 42 }]);
    assert.equal(await preparedCopies(typed), 1);
  });

  it('recovers from a statement PostgreSQL could not parse, and prepares nothing for it', async () => {
    const broken = 'SELEC id FROM items WHERE id = $1';
    await assert.rejects(statements.query(broken, ['x'], false), { code: '42601' });
    await assert.rejects(statements.query(broken, ['x'], false), { code: '42601' });
    assert.equal(await preparedCopies(broken), 0);
    assert.equal((await statements.query('SELECT id FROM items WHERE id = $1', ['fast'], false)).rows.length, 1);
  });

  it('keeps a statement first prepared in a transaction that rolled back', async () => {
    const sql = 'UPDATE items SET note = $2 WHERE id = $1';
    await pglite
      .transaction(async (tx) => {
        await statements.query(sql, ['fast', 'rolled back'], true);
        await tx.rollback();
      })
      .catch(() => undefined);
    assert.equal((await statements.query<{ note: string | null }>('SELECT note FROM items WHERE id = $1', ['fast'], false)).rows[0]!.note, null);
    assert.equal((await statements.query(sql, ['fast', 'kept'], false)).rowCount, 1);
    assert.equal((await statements.query<{ note: string | null }>('SELECT note FROM items WHERE id = $1', ['fast'], false)).rows[0]!.note, 'kept');
  });

  it('runs SQL texts beyond its bound of names unnamed, parsed each time', async () => {
    // Names are counted per database: a fresh one, so that the bound is reached here.
    const own = await openPglite(undefined);
    try {
      await boundedToOneName(own);
    } finally {
      await own.close();
    }
  });

  async function boundedToOneName(own: PGlite) {
    const bounded = pgliteStatements(own, { maxNamed: 1 });
    const preparedCopies = async (sql: string) =>
      (await own.query<{ n: number }>('SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement = $1', [sql])).rows[0]!.n;
    const first = 'SELECT $1::text AS first';
    const second = 'SELECT $1::text AS second';
    for (let i = 0; i < 2; i += 1) {
      assert.deepEqual((await bounded.query(first, ['a'], false)).rows, [{ first: 'a' }]);
      assert.deepEqual((await bounded.query(second, ['b'], false)).rows, [{ second: 'b' }]);
    }
    assert.equal(await preparedCopies(first), 1);
    assert.equal(await preparedCopies(second), 0);
  }

  it('parses a statement again once a table it reads has changed shape', async () => {
    await pglite.exec('CREATE TABLE shapes (id text PRIMARY KEY)');
    const sql = 'SELECT * FROM shapes WHERE id <> $1';
    await statements.query(sql, ['none'], false);
    await pglite.exec("ALTER TABLE shapes ADD COLUMN size int; INSERT INTO shapes VALUES ('s', 3)");
    // PostgreSQL refuses the old plan once; the statement is then parsed afresh.
    const first = await statements.query(sql, ['none'], false).then(
      (result) => result.rows,
      (error: { code?: string }) => error.code,
    );
    assert.equal(first, '0A000');
    assert.deepEqual((await statements.query(sql, ['none'], false)).rows, [{ id: 's', size: 3 }]);
  });

  it('waits for an open transaction before a statement outside it, and then sees its commit', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let inserted!: () => void;
    const insertedInside = new Promise<void>((resolve) => (inserted = resolve));
    const transaction = pglite.transaction(async () => {
      await statements.query('INSERT INTO items (id) VALUES ($1)', ['in_tx'], true);
      inserted();
      await held;
    });
    await insertedInside;
    const outside = statements.query('SELECT count(*)::int AS n FROM items WHERE id = $1', ['in_tx'], false);
    let answered = false;
    void outside.then(() => (answered = true));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(answered, false);
    release();
    await transaction;
    assert.deepEqual((await outside).rows, [{ n: 1 }]);
  });
});
