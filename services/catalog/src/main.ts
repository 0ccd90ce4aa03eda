import { connectDistributedInfrastructure, createLogger, distributedServiceConfig, exitOnConfigError, loadConfig, stopOnSignals, z } from '@merx/kit';
import { DEFAULT_CATALOG_QUEUE } from './events/consumer.js';
import { startCatalog } from './service.js';

const catalogConfig = distributedServiceConfig(3002).extend({
  // Configurable because stacks that share one RabbitMQ (e2e runs) must not share a queue.
  MERX_CATALOG_QUEUE: z.string().regex(/^[a-z0-9._-]{1,200}$/, 'must be a queue name of a-z 0-9 . _ -').default(DEFAULT_CATALOG_QUEUE),
});

/** Distributed entry point: one catalog process against PostgreSQL and RabbitMQ. */
let config;
try {
  config = loadConfig('catalog', catalogConfig);
} catch (error) {
  exitOnConfigError(error);
}
const logger = createLogger('catalog', config.LOG_LEVEL);
const infrastructure = await connectDistributedInfrastructure('catalog', config, logger);
const catalog = await startCatalog({ ...infrastructure, logger, port: config.PORT, host: config.HOST, queue: config.MERX_CATALOG_QUEUE });
logger.info({ url: catalog.url }, 'catalog listening');
stopOnSignals(logger, async () => {
  await catalog.stop();
  await infrastructure.close();
});
