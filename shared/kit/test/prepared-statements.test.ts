import assert from 'node:assert/strict';
import { buildEvent, createPgliteDb, createPostgresDb, migrateSchema, Outbox, outboxMigration, outboxTraceContextMigration, type Db } from '../src/index.js';
import { dropSchema, sharedPglite, uniqueName } from './support.js';

const DATABASE_URL = process.env.MERX_TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const MERCHANT = 'mch_01jd3k7q8m2x4v6b9c0d1e2f3g';

/** The prepared statements of the pool's one connection that touch `table`. */
async function preparedOn(db: Db, table: string): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_prepared_statements WHERE statement LIKE '%' || $1 || '%'`, [table]);
  return rows[0]!.n;
}

describe('prepared statements stay bounded, and can be switched off for PgBouncer', () => {
  const schema = uniqueName('kit_test_');
  const events = (count: number) => Array.from({ length: count }, (_, i) => buildEvent('things.created', MERCHANT, { object: { id: `thing_${i}` } }));

  for (const mode of ['named', 'unnamed'] as const) {
    it(`${mode}: outbox batches of 1 to 40 events ${mode === 'named' ? 'share one prepared statement' : 'prepare none'}, and every row lands`, async () => {
      const db = createPostgresDb(DATABASE_URL, { maxConnections: 1, preparedStatements: mode });
      try {
        await migrateSchema(db, schema, [outboxMigration, outboxTraceContextMigration]);
        const outbox = new Outbox(db, schema);
        for (let size = 1; size <= 40; size += 3) await outbox.transaction(async (_tx, emit) => events(size).forEach(emit));
        const { rows } = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${schema}.outbox`);
        assert.equal(
          rows[0]!.n,
          Array.from({ length: 14 }, (_, i) => 1 + 3 * i).reduce((a, b) => a + b, 0),
        );
        assert.equal(await preparedOn(db, `${schema}.outbox (event_id`), mode === 'named' ? 1 : 0);
      } finally {
        await dropSchema(db, schema).catch(() => undefined);
        await db.close();
      }
    });
  }

  it('unnest batches work on PGlite too', async () => {
    const db = createPgliteDb(await sharedPglite());
    const pgliteSchema = uniqueName('kit_test_');
    try {
      await migrateSchema(db, pgliteSchema, [outboxMigration, outboxTraceContextMigration]);
      await new Outbox(db, pgliteSchema).transaction(async (_tx, emit) => events(5).forEach(emit));
      const { rows } = await db.query<{ n: number; topics: string[] }>(
        `SELECT count(*)::int AS n, array_agg(DISTINCT topic) AS topics FROM ${pgliteSchema}.outbox`,
      );
      assert.equal(rows[0]!.n, 5);
      assert.deepEqual(rows[0]!.topics, ['things.created']);
    } finally {
      await dropSchema(db, pgliteSchema);
    }
  });
});
