import assert from 'node:assert/strict';
import { createPgliteDb, migrateSchema, migrationChecksum, MigrationRefused, type Db, type Migration } from '../src/index.js';
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
    assert.deepEqual(
      rows.map((row) => row.id),
      ['001_widgets', '002_widgets_colour'],
    );
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

  it('records a checksum per migration and refuses to start when a shipped file was changed', async () => {
    const schema = freshSchema();
    await migrateSchema(db, schema, migrations);
    const { rows } = await db.query<{ id: string; checksum: string }>(`SELECT id, checksum FROM ${schema}.schema_migrations ORDER BY id`);
    assert.deepEqual(
      rows.map((row) => row.checksum),
      [migrations[1]!, migrations[0]!].map((migration) => migrationChecksum(migration)),
    );
    const edited = [migrations[0]!, { ...migrations[1]!, sql: `${migrations[1]!.sql}\n-- a harmless-looking edit` }];
    const refusal = await migrateSchema(db, schema, edited).then(
      () => assert.fail('an edited migration was accepted'),
      (error: unknown) => error,
    );
    assert.ok(refusal instanceof MigrationRefused);
    assert.match(refusal.message, new RegExp(`migration ${schema}/001_widgets was changed after it was applied .*put the change in a new migration`));
  });

  it('adopts migrations applied before checksums were recorded, then holds them to their checksum', async () => {
    const schema = freshSchema();
    // What a release before checksums left behind: ids only.
    await db.exec(`CREATE SCHEMA ${schema}; CREATE TABLE ${schema}.schema_migrations (id text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now());`);
    await db.exec(migrations[1]!.sql.replaceAll('{{schema}}', schema));
    await db.query(`INSERT INTO ${schema}.schema_migrations (id) VALUES ('001_widgets')`);
    assert.deepEqual(await migrateSchema(db, schema, migrations), ['002_widgets_colour']);
    assert.deepEqual(await applications(schema), ['001', '002']);
    const { rows } = await db.query<{ checksum: string | null }>(`SELECT checksum FROM ${schema}.schema_migrations WHERE id = '001_widgets'`);
    assert.equal(rows[0]?.checksum, migrationChecksum(migrations[1]!));
    await assert.rejects(migrateSchema(db, schema, [migrations[0]!, { ...migrations[1]!, sql: 'SELECT 1' }]), MigrationRefused);
  });

  it('refuses a schema that a newer release migrated', async () => {
    const schema = freshSchema();
    const newer: Migration = { id: '003_widgets_size', sql: 'ALTER TABLE {{schema}}.widgets ADD COLUMN size int' };
    await migrateSchema(db, schema, [...migrations, newer]);
    await assert.rejects(migrateSchema(db, schema, migrations), /has migration 003_widgets_size, which this release does not know/);
    await assert.rejects(migrateSchema(db, schema, migrations, 'verify'), MigrationRefused);
  });

  it('in verify mode changes nothing: refuses a schema behind the release, accepts a current one', async () => {
    const schema = freshSchema();
    await assert.rejects(migrateSchema(db, schema, migrations, 'verify'), /001_widgets, 002_widgets_colour not applied; run the migrate command first/);
    const exists = await db.query(`SELECT 1 FROM information_schema.schemata WHERE schema_name = $1`, [schema]);
    assert.equal(exists.rowCount, 0, 'verify created nothing');
    await migrateSchema(db, schema, migrations.slice(1));
    await assert.rejects(migrateSchema(db, schema, migrations, 'verify'), /002_widgets_colour not applied/);
    await migrateSchema(db, schema, migrations);
    assert.deepEqual(await migrateSchema(db, schema, migrations, 'verify'), []);
  });

  it('runs a migration marked transaction: false outside a transaction (CREATE INDEX CONCURRENTLY), in order with the rest', async () => {
    const schema = freshSchema();
    const concurrently: Migration = {
      id: '003_widgets_colour_index',
      transaction: false,
      sql: 'CREATE INDEX CONCURRENTLY IF NOT EXISTS widgets_by_colour ON {{schema}}.widgets (colour)',
    };
    const after: Migration = { id: '004_widgets_size', sql: 'ALTER TABLE {{schema}}.widgets ADD COLUMN size int' };
    assert.deepEqual(await migrateSchema(db, schema, [after, concurrently, ...migrations]), [
      '001_widgets',
      '002_widgets_colour',
      '003_widgets_colour_index',
      '004_widgets_size',
    ]);
    const { rows } = await db.query<{ indisvalid: boolean }>(
      `SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = 'widgets_by_colour'`,
      [schema],
    );
    assert.deepEqual(rows, [{ indisvalid: true }]);
    assert.deepEqual(await migrateSchema(db, schema, [after, concurrently, ...migrations]), []);
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
      assert.deepEqual(
        rows.map((row) => row.migration),
        ['001', '002'],
      );
      const concurrently: Migration = {
        id: '003_widgets_colour_index',
        transaction: false,
        sql: 'CREATE INDEX CONCURRENTLY IF NOT EXISTS widgets_by_colour ON {{schema}}.widgets (colour)',
      };
      assert.deepEqual(await migrateSchema(db, schema, [...migrations, concurrently]), ['003_widgets_colour_index']);
      await assert.rejects(
        migrateSchema(db, schema, [migrations[0]!, { ...migrations[1]!, sql: 'SELECT 1' }, concurrently]),
        /001_widgets was changed after it was applied/,
      );
    } finally {
      await dropSchema(db, schema);
    }
  });
});
