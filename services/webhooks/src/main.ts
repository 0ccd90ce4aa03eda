import {
  connectDistributedInfrastructure,
  createLogger,
  ensurePortFree,
  exitOnConfigError,
  exitOnStartFailure,
  loadConfig,
  stopOnSignals,
  startTracing,
  ensureAdminPortFree,
  startAdminServer,
} from '@merx/kit';
import { startWebhooks } from './service.js';
import { toWebhookSettings, webhooksServiceConfig } from './settings.js';

/** Distributed entry point: fan-out, delivery workers and the webhooks API against PostgreSQL and RabbitMQ. */
let config;
try {
  config = loadConfig('webhooks', webhooksServiceConfig);
} catch (error) {
  exitOnConfigError(error);
}
const logger = createLogger('webhooks', config.LOG_LEVEL);
// OTEL_* checked here, before any port opens; without an endpoint nothing of the SDK is loaded.
await startTracing('merx-webhooks').catch((error: unknown) => exitOnStartFailure('webhooks', error));
await ensurePortFree(config.PORT, config.HOST).catch((error: unknown) => exitOnStartFailure('webhooks', error));
await ensureAdminPortFree(config).catch((error: unknown) => exitOnStartFailure('webhooks', error));
const infrastructure = await connectDistributedInfrastructure('webhooks', config, logger).catch((error: unknown) => exitOnStartFailure('webhooks', error));
const webhooks = await startWebhooks({
  ...infrastructure,
  logger,
  port: config.PORT,
  host: config.HOST,
  grpcPort: config.GRPC_PORT,
  settings: toWebhookSettings(config),
  secretKeys: config.MERX_SECRETS_KEYS,
}).catch((error: unknown) => exitOnStartFailure('webhooks', error));
const admin = await startAdminServer({
  port: config.ADMIN_PORT,
  host: config.ADMIN_HOST,
  logger,
  sources: [{ service: 'webhooks', readiness: webhooks.readiness }],
}).catch((error: unknown) => exitOnStartFailure('webhooks', error));
logger.info({ url: webhooks.url, admin: admin.url, grpc: webhooks.grpc.address }, 'webhooks listening');
stopOnSignals(logger, async () => {
  await webhooks.stop();
  await admin.close();
  await infrastructure.close();
});
