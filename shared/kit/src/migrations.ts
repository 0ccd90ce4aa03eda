import type { Db } from './db.js';

export interface Migration {
  /** Sortable and never renamed once shipped: `001_products`. */
  id: string;
  sql: string;
}

/**
 * Each service migrates its own schema at start-up. An advisory lock keyed by the schema name
 * lets several replicas start at once: one migrates, the others wait and then find nothing to do.
 */
export async function migrateSchema(db: Db, schema: string, migrations: Migration[]): Promise<string[]> {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`invalid schema name ${schema}`);
  const applied: string[] = [];
  await db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`merx-migrate:${schema}`]);
    await tx.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await tx.query(`CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (id text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    const { rows } = await tx.query<{ id: string }>(`SELECT id FROM ${schema}.schema_migrations`);
    const done = new Set(rows.map((row) => row.id));
    for (const migration of [...migrations].sort((a, b) => a.id.localeCompare(b.id))) {
      if (done.has(migration.id)) continue;
      await tx.exec(migration.sql.replaceAll('{{schema}}', schema));
      await tx.query(`INSERT INTO ${schema}.schema_migrations (id) VALUES ($1)`, [migration.id]);
      applied.push(migration.id);
    }
  });
  return applied;
}
