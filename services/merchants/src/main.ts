import { connectDistributedInfrastructure, createLogger, exitOnConfigError, loadConfig, stopOnSignals } from '@merx/kit';
import { startMerchants } from './service.js';
import { merchantsServiceConfig, toMerchantsSettings } from './settings.js';

/** Distributed entry point: one merchants process against PostgreSQL and RabbitMQ. */
let config;
try {
  config = loadConfig('merchants', merchantsServiceConfig);
} catch (error) {
  exitOnConfigError(error);
}
const logger = createLogger('merchants', config.LOG_LEVEL);
const infrastructure = await connectDistributedInfrastructure('merchants', config, logger);
const merchants = await startMerchants({ ...infrastructure, logger, port: config.PORT, host: config.HOST, settings: toMerchantsSettings(config) });
logger.info({ url: merchants.url }, 'merchants listening');
stopOnSignals(logger, async () => {
  await merchants.stop();
  await infrastructure.close();
});
