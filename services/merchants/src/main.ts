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
import { startMerchants } from './service.js';
import { httpMerchantLookup } from './upstream/oauth-merchants.js';
import { merchantsServiceConfig, toMerchantsSettings } from './settings.js';

/** Distributed entry point: one merchants process against PostgreSQL and RabbitMQ. */
let config;
try {
  config = loadConfig('merchants', merchantsServiceConfig);
} catch (error) {
  exitOnConfigError(error);
}
const logger = createLogger('merchants', config.LOG_LEVEL);
// OTEL_* checked here, before any port opens; without an endpoint nothing of the SDK is loaded.
await startTracing('merx-merchants').catch((error: unknown) => exitOnStartFailure('merchants', error));
await ensurePortFree(config.PORT, config.HOST).catch((error: unknown) => exitOnStartFailure('merchants', error));
await ensureAdminPortFree(config).catch((error: unknown) => exitOnStartFailure('merchants', error));
const infrastructure = await connectDistributedInfrastructure('merchants', config, logger).catch((error: unknown) => exitOnStartFailure('merchants', error));
const merchants = await startMerchants({
  ...infrastructure,
  logger,
  port: config.PORT,
  host: config.HOST,
  grpcPort: config.GRPC_PORT,
  settings: toMerchantsSettings(config),
  secretKeys: config.MERX_SECRETS_KEYS,
  lookupMerchant: httpMerchantLookup(config.MERX_OAUTH_URL, config.MERX_SERVICE_TOKEN),
}).catch((error: unknown) => exitOnStartFailure('merchants', error));
const admin = await startAdminServer({
  port: config.ADMIN_PORT,
  host: config.ADMIN_HOST,
  logger,
  sources: [{ service: 'merchants', readiness: merchants.readiness }],
}).catch((error: unknown) => exitOnStartFailure('merchants', error));
logger.info({ url: merchants.url, admin: admin.url, grpc: merchants.grpc.address }, 'merchants listening');
stopOnSignals(logger, async () => {
  await merchants.stop();
  await admin.close();
  await infrastructure.close();
});
