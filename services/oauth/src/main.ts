import { API_AUDIENCE, configFields, connectDistributedInfrastructure, createLogger, distributedServiceConfig, exitOnConfigError, issuerOf, loadConfig, stopOnSignals, z } from '@merx/kit';
import { DEFAULT_OAUTH_QUEUE } from './events/merchant-events.js';
import { startOauth } from './service.js';
import { revocationsFromStore } from './usecases/revocations.js';

const oauthConfig = distributedServiceConfig(3001).extend({
  MERX_OPERATOR_TOKEN: configFields.secret('the operator credential for /admin/v1'),
  MERX_COOKIE_SECRET: configFields.secret('signs OAuth interaction cookies'),
  MERX_ACCESS_TOKEN_TTL: configFields.positiveInt(900),
  // Configurable because stacks that share one RabbitMQ (e2e runs) must not share a queue.
  MERX_OAUTH_QUEUE: z.string().regex(/^[a-z0-9._-]{1,200}$/, 'must be a queue name of a-z 0-9 . _ -').default(DEFAULT_OAUTH_QUEUE),
});

let config;
try {
  config = loadConfig('oauth', oauthConfig);
} catch (error) {
  exitOnConfigError(error);
}
const logger = createLogger('oauth', config.LOG_LEVEL);
const accessTokenTtlSeconds = config.MERX_ACCESS_TOKEN_TTL;
// The oauth service owns the revoked keys, so it loads its list from its own tables, not over HTTP.
const infrastructure = await connectDistributedInfrastructure('oauth', config, logger, { loadRevocations: (db) => revocationsFromStore(db, accessTokenTtlSeconds) });
const oauth = await startOauth({
  db: infrastructure.db,
  bus: infrastructure.bus,
  logger,
  issuer: issuerOf(config.MERX_PUBLIC_URL),
  audience: API_AUDIENCE,
  accessTokenTtlSeconds: config.MERX_ACCESS_TOKEN_TTL,
  operatorToken: config.MERX_OPERATOR_TOKEN,
  cookieSecret: config.MERX_COOKIE_SECRET,
  verifier: infrastructure.verifier,
  readiness: infrastructure.readiness,
  port: config.PORT,
  host: config.HOST,
  queue: config.MERX_OAUTH_QUEUE,
});
logger.info({ url: oauth.url }, 'oauth listening');
stopOnSignals(logger, async () => {
  await oauth.stop();
  await infrastructure.close();
});
