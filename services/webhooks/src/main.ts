import { connectDistributedInfrastructure, createLogger, exitOnConfigError, loadConfig, stopOnSignals } from '@merx/kit';
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
const infrastructure = await connectDistributedInfrastructure('webhooks', config, logger);
const webhooks = await startWebhooks({
  ...infrastructure,
  logger,
  port: config.PORT,
  host: config.HOST,
  queue: config.MERX_WEBHOOKS_QUEUE,
  settings: toWebhookSettings(config),
});
logger.info({ url: webhooks.url }, 'webhooks listening');
stopOnSignals(logger, async () => {
  await webhooks.stop();
  await infrastructure.close();
});
