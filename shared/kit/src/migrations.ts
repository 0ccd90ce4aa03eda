import { createHash } from 'node:crypto';
import type { Db, Queryable } from './db.js';

export interface Migration {
  /** Sortable and never renamed once shipped: `001_products`. */
  id: string;
  /** `{{schema}}` stands for the service's schema. Frozen once shipped: change a schema with a new migration. */
  sql: string;
  /**
   * `false` for one statement that PostgreSQL refuses inside a transaction (`CREATE INDEX
   * CONCURRENTLY`). It runs alone, outside the migration lock, so it must be safe to run twice
   * (`IF NOT EXISTS`): two migrators can both get to it, and a crash can leave it applied but unrecorded.
   */
  transaction?: boolean;
}

/**
 * How a process treats its schema at start: `apply` migrates it (the embedded mode, a single
 * replica), `verify` only checks that the `migrate` command already did (replicas of a deployment,
 * so they never race an upgrade and a start never changes the schema under its neighbours).
 */
export type MigrationMode = 'apply' | 'verify';

/** The schema and the code disagree: refusing to start is the only safe answer. */
export class MigrationRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MigrationRefused';
  }
}

/** What a shipped migration is frozen to: its SQL as written, before the schema is put in. */
export function migrationChecksum(migration: Pick<Migration, 'sql'>): string {
  return createHash('sha256').update(migration.sql).digest('hex');
}

interface AppliedRow {
  id: string;
  checksum: string | null;
}

/**
 * Each service's schema carries its own `schema_migrations` with a checksum per applied
 * migration. An advisory lock keyed by the schema name lets several migrators start at once: one
 * migrates, the others wait and then find nothing to do. A file changed after it was applied, or
 * a schema migrated by a newer release, refuses the start with a message naming the migration.
 * Migrations that ran before checksums were recorded are adopted as they are now.
 */
export async function migrateSchema(db: Db, schema: string, migrations: Migration[], mode: MigrationMode = 'apply'): Promise<string[]> {
  if (!/^[a-z_][a-z0-9_]*$/.test(schema)) throw new Error(`invalid schema name ${schema}`);
  const ordered = [...migrations].sort((a, b) => a.id.localeCompare(b.id));
  for (let i = 1; i < ordered.length; i += 1) {
    if (ordered[i]!.id === ordered[i - 1]!.id) throw new Error(`migration ${schema}/${ordered[i]!.id} is defined twice`);
  }
  const applied: string[] = [];
  for (;;) {
    // Each pass applies every pending migration up to the next one that must run on its own.
    const standalone = await db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`merx-migrate:${schema}`]);
      const pending = await pendingMigrations(tx, schema, ordered, mode);
      if (mode === 'verify') {
        if (pending.length > 0) {
          throw new MigrationRefused(
            `schema ${schema} is behind this release: ${pending.map((m) => m.id).join(', ')} not applied; run the migrate command first ` +
              '(Compose: the migrate service; Kubernetes: the merx-migrate Job), or set MERX_MIGRATIONS=apply',
          );
        }
        return undefined;
      }
      for (const migration of pending) {
        if (migration.transaction === false) return migration;
        await tx.exec(migration.sql.replaceAll('{{schema}}', schema));
        await record(tx, schema, migration);
        applied.push(migration.id);
      }
      return undefined;
    });
    if (!standalone) return applied;
    await db.query(standalone.sql.replaceAll('{{schema}}', schema));
    await db.transaction(async (tx) => {
      await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`merx-migrate:${schema}`]);
      if (await record(tx, schema, standalone)) applied.push(standalone.id);
    });
  }
}

/** Checks what the schema has applied against the code, adopts old rows, and lists what is left to apply. */
async function pendingMigrations(tx: Queryable, schema: string, ordered: Migration[], mode: MigrationMode): Promise<Migration[]> {
  if (mode === 'apply') {
    await tx.query(`CREATE SCHEMA IF NOT EXISTS ${schema}`);
    await tx.query(`CREATE TABLE IF NOT EXISTS ${schema}.schema_migrations (id text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`);
    // Releases before checksums recorded only ids.
    await tx.query(`ALTER TABLE ${schema}.schema_migrations ADD COLUMN IF NOT EXISTS checksum text`);
  }
  const { rows: exists } = await tx.query<{ found: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'schema_migrations' AND column_name = 'checksum') AS found`,
    [schema],
  );
  if (!exists[0]?.found) return ordered; // verify mode on a schema that was never migrated, or predates checksums
  const { rows } = await tx.query<AppliedRow>(`SELECT id, checksum FROM ${schema}.schema_migrations ORDER BY id`);
  const known = new Map(ordered.map((migration) => [migration.id, migration]));
  for (const row of rows) {
    const migration = known.get(row.id);
    if (!migration) {
      throw new MigrationRefused(
        `schema ${schema} has migration ${row.id}, which this release does not know: it was migrated by a newer release; run that release (or newer)`,
      );
    }
    const checksum = migrationChecksum(migration);
    if (row.checksum === null) {
      if (mode === 'apply') await tx.query(`UPDATE ${schema}.schema_migrations SET checksum = $2 WHERE id = $1`, [row.id, checksum]);
    } else if (row.checksum !== checksum) {
      throw new MigrationRefused(
        `migration ${schema}/${row.id} was changed after it was applied (applied ${row.checksum.slice(0, 12)}, now ${checksum.slice(0, 12)}): ` +
          'a shipped migration is frozen; restore it and put the change in a new migration',
      );
    }
  }
  const done = new Set(rows.map((row) => row.id));
  return ordered.filter((migration) => !done.has(migration.id));
}

/** Records an applied migration; false when another migrator recorded it first. */
async function record(tx: Queryable, schema: string, migration: Migration): Promise<boolean> {
  const { rowCount } = await tx.query(`INSERT INTO ${schema}.schema_migrations (id, checksum) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`, [
    migration.id,
    migrationChecksum(migration),
  ]);
  return rowCount > 0;
}
