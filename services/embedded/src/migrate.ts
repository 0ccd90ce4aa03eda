import { configFields, createPostgresDb, exitOnConfigError, exitOnStartFailure, loadConfig, migrateSchema, z } from '@merx/kit';
import { SERVICE_SCHEMAS } from './schemas.js';

/**
 * The deployment's migrate command: applies every service's pending migrations once, before the
 * services start (Compose: the one-shot `migrate` service; Kubernetes: the `merx-migrate` Job),
 * so replicas run with MERX_MIGRATIONS=verify and never race an upgrade. Exits 0 when the
 * schemas are current, 1 with one line naming the problem otherwise.
 */
const migrateConfig = z.object({
  DATABASE_URL: configFields.databaseUrl,
  LOG_LEVEL: configFields.logLevel,
});

let config;
try {
  config = loadConfig('migrate', migrateConfig);
} catch (error) {
  exitOnConfigError(error);
}
const db = createPostgresDb(config.DATABASE_URL, { maxConnections: 1, applicationName: 'merx-migrate', statementTimeoutMs: 0 });
try {
  for (const { schema, migrations } of SERVICE_SCHEMAS) {
    const applied = await migrateSchema(db, schema, migrations);
    process.stdout.write(`migrate: ${schema}: ${applied.length > 0 ? `applied ${applied.join(', ')}` : 'up to date'}\n`);
  }
} catch (error) {
  await db.close().catch(() => undefined);
  exitOnStartFailure('migrate', error);
}
await db.close();
