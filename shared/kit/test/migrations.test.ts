import assert from 'node:assert/strict';
import { createPgliteDb, migrateSchema, type Db, type Migration } from '../src/index.js';
import { connectPostgres, dropSchema, sharedPglite, uniqueName } from './support.js';

// Not idempotent on purpose: applying either twice fails or leaves a second row behind.
const migrations: Migration[] = [
  {
    id: '002_widgets_colour',
    sql: `ALTER TABLE {{schema}}.widgets ADD COLUMN colour text; INSERT INTO {{schema}}.applications (migration) VALUES ('002');`,
  },
  {
    id: '001_widgets',
    sql: `
      CREATE TABLE {{schema}}.applications (migration text NOT NULL);
      SELECT pg_sleep(0.2); -- keeps the first migrator inside its transaction while the others arrive
      CREATE TABLE {{schema}}.widgets (id text PRIMARY KEY);
      INSERT INTO {{schema}}.applications (migration) VALUES ('001');
    `,
  },
];

describe('migrateSchema on PostgreSQL', () => {
  const schemas: string[] = [];
  const pools: Db[] = [];
  let db: Db;

  const freshSchema = () => {
    const schema = uniqueName('kit_test_');
    schemas.push(schema);
    return schema;
  };
  const applications = async (schema: string) =>
    (await db.query<{ migration: string }>(`SELECT migration FROM ${schema}.applications ORDER BY migration`)).rows.map((row) => row.migration);

  before(async () => {
    db = await connectPostgres();
  });

  after(async () => {
    for (const pool of pools) await pool.close();
    for (const schema of schemas) await dropSchema(db, schema);
    await db.close();
  });

  it('applies migrations in id order once, and finds nothing to do the second time', async () => {
    const schema = freshSchema();
    assert.deepEqual(await migrateSchema(db, schema, migrations), ['001_widgets', '002_widgets_colour']);
    assert.deepEqual(await migrateSchema(db, schema, migrations), []);
    assert.deepEqual(await applications(schema), ['001', '002']);
    const { rows } = await db.query<{ id: string }>(`SELECT id FROM ${schema}.schema_migrations ORDER BY id`);
    assert.deepEqual(rows.map((row) => row.id), ['001_widgets', '002_widgets_colour']);
    await db.query(`INSERT INTO ${schema}.widgets (id, colour) VALUES ('w1', 'red')`);
  });

  it('applies only the new migrations of a later release', async () => {
    const schema = freshSchema();
    assert.deepEqual(await migrateSchema(db, schema, migrations.slice(1)), ['001_widgets']);
    assert.deepEqual(await migrateSchema(db, schema, migrations), ['002_widgets_colour']);
    assert.deepEqual(await applications(schema), ['001', '002']);
  });

  it('lets concurrent replicas start at once: each migration is applied exactly once', async () => {
    const schema = freshSchema();
    const replicas = await Promise.all(Array.from({ length: 4 }, () => connectPostgres({ maxConnections: 1 })));
    pools.push(...replicas);
    const results = await Promise.all(replicas.map((replica) => migrateSchema(replica, schema, migrations)));
    assert.deepEqual(results.flat().sort(), ['001_widgets', '002_widgets_colour']);
    assert.equal(results.filter((applied) => applied.length === 2).length, 1, 'one replica migrated, the others found nothing to do');
    assert.deepEqual(await applications(schema), ['001', '002']);
  });

  it('rolls back the whole run when a migration fails', async () => {
    const schema = freshSchema();
    const broken: Migration = { id: '003_broken', sql: 'ALTER TABLE {{schema}}.no_such_table ADD COLUMN x int' };
    await assert.rejects(migrateSchema(db, schema, [...migrations, broken]), /no_such_table/);
    const exists = await db.query(`SELECT 1 FROM information_schema.schemata WHERE schema_name = $1`, [schema]);
    assert.equal(exists.rowCount, 0, 'not even the schema was left behind');
    assert.deepEqual(await migrateSchema(db, schema, migrations), ['001_widgets', '002_widgets_colour']);
  });

  it('refuses a schema name that is not a plain identifier', async () => {
    for (const name of ['Catalog', 'catalog; DROP SCHEMA public', '1catalog', 'cat-alog', '']) {
      await assert.rejects(migrateSchema(db, name, migrations), /invalid schema name/);
    }
  });
});

describe('migrateSchema on PGlite', () => {
  it('runs the same migrations once', async () => {
    const db = createPgliteDb(await sharedPglite());
    const schema = uniqueName('kit_test_');
    try {
      assert.deepEqual(await migrateSchema(db, schema, migrations), ['001_widgets', '002_widgets_colour']);
      assert.deepEqual(await migrateSchema(db, schema, migrations), []);
      const { rows } = await db.query<{ migration: string }>(`SELECT migration FROM ${schema}.applications ORDER BY migration`);
      assert.deepEqual(rows.map((row) => row.migration), ['001', '002']);
    } finally {
      await dropSchema(db, schema);
    }
  });
});
