import {
  createLogger,
  createPostgresDb,
  ensurePortFree,
  exitOnConfigError,
  exitOnStartFailure,
  loadConfig,
  stopOnSignals,
  startTracing,
  ensureAdminPortFree,
  startAdminServer,
} from '@merx/kit';
import { startConsole } from './service.js';
import { consoleConfig, settingsFromConfig } from './settings.js';

/** Distributed entry point: the console against PostgreSQL (its sessions), the gateway and the oauth service. */
let config;
try {
  config = loadConfig('console', consoleConfig);
} catch (error) {
  exitOnConfigError(error);
}
const logger = createLogger('console', config.LOG_LEVEL);
// OTEL_* checked here, before any port opens; without an endpoint nothing of the SDK is loaded.
await startTracing('merx-console').catch((error: unknown) => exitOnStartFailure('console', error));
await ensurePortFree(config.PORT, config.HOST).catch((error: unknown) => exitOnStartFailure('console', error));
await ensureAdminPortFree(config).catch((error: unknown) => exitOnStartFailure('console', error));
const db = createPostgresDb(config.DATABASE_URL, {
  maxConnections: config.MERX_DB_POOL_SIZE,
  applicationName: 'merx-console',
  connectTimeoutMs: config.MERX_DB_CONNECT_TIMEOUT_MS,
  statementTimeoutMs: config.MERX_DB_STATEMENT_TIMEOUT_MS,
  preparedStatements: config.MERX_DB_PREPARED_STATEMENTS,
});
await db.ping().catch((error: unknown) => exitOnStartFailure('console', error));
const running = await startConsole({
  db,
  logger,
  settings: settingsFromConfig(config),
  migrationMode: config.MERX_MIGRATIONS,
  port: config.PORT,
  host: config.HOST,
}).catch((error: unknown) => exitOnStartFailure('console', error));
const admin = await startAdminServer({
  port: config.ADMIN_PORT,
  host: config.ADMIN_HOST,
  logger,
  sources: [{ service: 'console', readiness: running.readiness }],
}).catch((error: unknown) => exitOnStartFailure('console', error));
logger.info({ url: running.url, admin: admin.url }, 'console listening');
stopOnSignals(logger, async () => {
  await running.stop();
  await admin.close();
  await db.close();
});
