import { configFields, createPostgresDb, exitOnConfigError, exitOnStartFailure, loadConfig, z } from '@merx/kit';
import { resealSigningSecrets } from './signing-secrets.js';

/**
 * `npm run secrets:reseal`: seals every stored signing secret under the first key of
 * MERX_SECRETS_KEYS. Run after an upgrade from a version that kept secrets in plaintext, and to
 * rotate the key: put the new key first (keep the old one after it), roll the services, run this,
 * then drop the old key. Safe to run at any time and more than once; services keep running.
 */
const resealConfig = z.object({
  DATABASE_URL: configFields.databaseUrl,
  MERX_SECRETS_KEYS: configFields.secretKeys,
});

let config;
try {
  config = loadConfig('secrets:reseal', resealConfig);
} catch (error) {
  exitOnConfigError(error);
}
const db = createPostgresDb(config.DATABASE_URL, { maxConnections: 1, applicationName: 'merx-secrets-reseal', statementTimeoutMs: 0 });
try {
  const changed = await resealSigningSecrets(db, config.MERX_SECRETS_KEYS);
  for (const [table, rows] of Object.entries(changed))
    process.stdout.write(`secrets:reseal: ${table}: ${rows} row(s) resealed under key ${config.MERX_SECRETS_KEYS.activeKeyId}\n`);
} catch (error) {
  await db.close().catch(() => undefined);
  exitOnStartFailure('secrets:reseal', error);
}
await db.close();
