import { configFields, connectDistributedInfrastructure, createLogger, distributedServiceConfig, exitOnConfigError, loadConfig, stopOnSignals, z } from '@merx/kit';
import { startAudit } from './service.js';

const auditConfig = distributedServiceConfig(3003).extend({
  MERX_AUDIT_QUEUE: z.string().regex(/^[a-z0-9._-]{1,200}$/, 'must be a queue name of a-z 0-9 . _ -').default('audit.events'),
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
const infrastructure = await connectDistributedInfrastructure('audit', config, logger);
const audit = await startAudit({
  ...infrastructure,
  logger,
  port: config.PORT,
  host: config.HOST,
  queue: config.MERX_AUDIT_QUEUE,
  prefetch: config.MERX_AUDIT_PREFETCH,
  ...(config.MERX_AUDIT_RETENTION_DAYS > 0 ? { retentionDays: config.MERX_AUDIT_RETENTION_DAYS } : {}),
});
logger.info({ url: audit.url }, 'audit listening');
stopOnSignals(logger, async () => {
  await audit.stop();
  await infrastructure.close();
});
