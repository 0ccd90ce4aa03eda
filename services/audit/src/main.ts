import {
  configFields,
  connectDistributedInfrastructure,
  createLogger,
  distributedServiceConfig,
  ensurePortFree,
  exitOnConfigError,
  exitOnStartFailure,
  loadConfig,
  stopOnSignals,
  z,
  startTracing,
  ensureAdminPortFree,
  startAdminServer,
} from '@merx/kit';
import { startAudit } from './service.js';

const auditConfig = distributedServiceConfig(3003, 9003).extend({
  // Days to keep entries; 0 keeps them forever (the default).
  MERX_AUDIT_RETENTION_DAYS: z.coerce.number().int().min(0).default(0),
  MERX_AUDIT_PREFETCH: configFields.positiveInt(256),
});

let config;
try {
  config = loadConfig('audit', auditConfig);
} catch (error) {
  exitOnConfigError(error);
}
const logger = createLogger('audit', config.LOG_LEVEL);
// OTEL_* checked here, before any port opens; without an endpoint nothing of the SDK is loaded.
await startTracing('merx-audit').catch((error: unknown) => exitOnStartFailure('audit', error));
await ensurePortFree(config.PORT, config.HOST).catch((error: unknown) => exitOnStartFailure('audit', error));
await ensureAdminPortFree(config).catch((error: unknown) => exitOnStartFailure('audit', error));
const infrastructure = await connectDistributedInfrastructure('audit', config, logger).catch((error: unknown) => exitOnStartFailure('audit', error));
const audit = await startAudit({
  ...infrastructure,
  logger,
  port: config.PORT,
  host: config.HOST,
  prefetch: config.MERX_AUDIT_PREFETCH,
  ...(config.MERX_AUDIT_RETENTION_DAYS > 0 ? { retentionDays: config.MERX_AUDIT_RETENTION_DAYS } : {}),
}).catch((error: unknown) => exitOnStartFailure('audit', error));
const admin = await startAdminServer({
  port: config.ADMIN_PORT,
  host: config.ADMIN_HOST,
  logger,
  sources: [{ service: 'audit', readiness: audit.readiness }],
}).catch((error: unknown) => exitOnStartFailure('audit', error));
logger.info({ url: audit.url, admin: admin.url }, 'audit listening');
stopOnSignals(logger, async () => {
  await audit.stop();
  await admin.close();
  await infrastructure.close();
});
