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
  startTracing,
  ensureAdminPortFree,
  startAdminServer,
} from '@merx/kit';
import { startCatalog } from './service.js';

// GRPC_PORT: merx.v1.ProductService for the edge, on the service network only.
const catalogConfig = distributedServiceConfig(3002, 9002).extend({ GRPC_PORT: configFields.port(50052) });

/** Distributed entry point: one catalog process against PostgreSQL and RabbitMQ. */
let config;
try {
  config = loadConfig('catalog', catalogConfig);
} catch (error) {
  exitOnConfigError(error);
}
const logger = createLogger('catalog', config.LOG_LEVEL);
// OTEL_* checked here, before any port opens; without an endpoint nothing of the SDK is loaded.
await startTracing('merx-catalog').catch((error: unknown) => exitOnStartFailure('catalog', error));
await ensurePortFree(config.PORT, config.HOST).catch((error: unknown) => exitOnStartFailure('catalog', error));
await ensureAdminPortFree(config).catch((error: unknown) => exitOnStartFailure('catalog', error));
const infrastructure = await connectDistributedInfrastructure('catalog', config, logger).catch((error: unknown) => exitOnStartFailure('catalog', error));
const catalog = await startCatalog({ ...infrastructure, logger, port: config.PORT, host: config.HOST, grpcPort: config.GRPC_PORT }).catch((error: unknown) =>
  exitOnStartFailure('catalog', error),
);
const admin = await startAdminServer({
  port: config.ADMIN_PORT,
  host: config.ADMIN_HOST,
  logger,
  sources: [{ service: 'catalog', readiness: catalog.readiness }],
}).catch((error: unknown) => exitOnStartFailure('catalog', error));
logger.info({ url: catalog.url, admin: admin.url, grpc: catalog.grpc.address }, 'catalog listening');
stopOnSignals(logger, async () => {
  await catalog.stop();
  await admin.close();
  await infrastructure.close();
});
