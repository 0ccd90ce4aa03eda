import { connectDistributedInfrastructure, createLogger, distributedServiceConfig, exitOnConfigError, loadConfig, stopOnSignals } from '@merx/kit';
import { startCatalog } from './service.js';

/** Distributed entry point: one catalog process against PostgreSQL and RabbitMQ. */
let config;
try {
  config = loadConfig('catalog', distributedServiceConfig(3002));
} catch (error) {
  exitOnConfigError(error);
}
const logger = createLogger('catalog', config.LOG_LEVEL);
const infrastructure = await connectDistributedInfrastructure('catalog', config, logger);
const catalog = await startCatalog({ ...infrastructure, logger, port: config.PORT, host: config.HOST });
logger.info({ url: catalog.url }, 'catalog listening');
stopOnSignals(logger, async () => {
  await catalog.stop();
  await infrastructure.close();
});
