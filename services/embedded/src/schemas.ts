import { AUDIT_SCHEMA, auditMigrations } from '@merx/audit';
import { CATALOG_SCHEMA, catalogMigrations } from '@merx/catalog';
import { CONSOLE_SCHEMA, consoleMigrations } from '@merx/console';
import { BUS_SCHEMA, busMigrations, migrationChecksum, type Migration } from '@merx/kit';
import { MERCHANTS_SCHEMA, merchantsMigrations } from '@merx/merchants';
import { OAUTH_SCHEMA, oauthMigrations } from '@merx/oauth';
import { WEBHOOKS_SCHEMA, webhooksMigrations } from '@merx/webhooks';

export interface DeploymentSchema {
  schema: string;
  migrations: Migration[];
}

/** Every schema a deployment's PostgreSQL holds, in the order the migrate command applies them. */
export const SERVICE_SCHEMAS: DeploymentSchema[] = [
  { schema: OAUTH_SCHEMA, migrations: oauthMigrations },
  { schema: CATALOG_SCHEMA, migrations: catalogMigrations },
  { schema: AUDIT_SCHEMA, migrations: auditMigrations },
  { schema: WEBHOOKS_SCHEMA, migrations: webhooksMigrations },
  { schema: MERCHANTS_SCHEMA, migrations: merchantsMigrations },
  { schema: CONSOLE_SCHEMA, migrations: consoleMigrations },
];

/** The embedded mode's bus lives in its database too: its migrations are frozen like the rest. */
export const FROZEN_SCHEMAS: DeploymentSchema[] = [...SERVICE_SCHEMAS, { schema: BUS_SCHEMA, migrations: busMigrations }];

/** `schema/id` → checksum for every migration in the code: what `migrations.lock.json` freezes. */
export function currentChecksums(): Record<string, string> {
  const checksums: Record<string, string> = {};
  for (const { schema, migrations } of FROZEN_SCHEMAS) {
    for (const migration of [...migrations].sort((a, b) => a.id.localeCompare(b.id))) checksums[`${schema}/${migration.id}`] = migrationChecksum(migration);
  }
  return checksums;
}

export interface LockDifferences {
  /** Shipped migrations whose SQL changed: never allowed. */
  changed: string[];
  /** Shipped migrations that were deleted or renamed: never allowed. */
  missing: string[];
  /** New migrations not in the lock yet: `npm run migrations:lock` adds them. */
  added: string[];
}

export function compareWithLock(lock: Record<string, string>, current: Record<string, string> = currentChecksums()): LockDifferences {
  return {
    changed: Object.keys(lock).filter((key) => key in current && current[key] !== lock[key]),
    missing: Object.keys(lock).filter((key) => !(key in current)),
    added: Object.keys(current).filter((key) => !(key in lock)),
  };
}
