import {
  API_AUDIENCE,
  ConfigError,
  configFields,
  connectDistributedInfrastructure,
  createLogger,
  distributedServiceConfig,
  ensurePortFree,
  exitOnConfigError,
  exitOnStartFailure,
  issuerOf,
  loadConfig,
  stopOnSignals,
  startTracing,
  ensureAdminPortFree,
  startAdminServer,
} from '@merx/kit';
import { consoleRedirectUri } from '@merx/contracts';
import { signInThrottleFromEnv } from './domain/login-throttle.js';
import { startOauth } from './service.js';
import { revocationsFromStore } from './usecases/revocations.js';

const oauthConfig = distributedServiceConfig(3001, 9001).extend({
  MERX_OPERATOR_TOKEN: configFields.secret('the operator credential for /admin/v1'),
  MERX_COOKIE_SECRET: configFields.secret('signs OAuth interaction cookies'),
  MERX_ACCESS_TOKEN_TTL: configFields.positiveInt(900),
  MERX_CONSOLE_CLIENT_SECRET: configFields.secret('authenticates the merchant console, a first-party OAuth client'),
});

let config;
let signInThrottle;
try {
  config = loadConfig('oauth', oauthConfig);
  try {
    signInThrottle = signInThrottleFromEnv(process.env);
  } catch (error) {
    throw new ConfigError('oauth', [(error as Error).message]);
  }
} catch (error) {
  exitOnConfigError(error);
}
const logger = createLogger('oauth', config.LOG_LEVEL);
// OTEL_* checked here, before any port opens; without an endpoint nothing of the SDK is loaded.
await startTracing('merx-oauth').catch((error: unknown) => exitOnStartFailure('oauth', error));
const accessTokenTtlSeconds = config.MERX_ACCESS_TOKEN_TTL;
// The oauth service owns the revoked keys, so it loads its list from its own tables, not over HTTP.
await ensurePortFree(config.PORT, config.HOST).catch((error: unknown) => exitOnStartFailure('oauth', error));
await ensureAdminPortFree(config).catch((error: unknown) => exitOnStartFailure('oauth', error));
const infrastructure = await connectDistributedInfrastructure('oauth', config, logger, {
  loadRevocations: (db) => revocationsFromStore(db, accessTokenTtlSeconds),
}).catch((error: unknown) => exitOnStartFailure('oauth', error));
const oauth = await startOauth({
  db: infrastructure.db,
  bus: infrastructure.bus,
  logger,
  issuer: issuerOf(config.MERX_PUBLIC_URL),
  audience: API_AUDIENCE,
  accessTokenTtlSeconds: config.MERX_ACCESS_TOKEN_TTL,
  operatorToken: config.MERX_OPERATOR_TOKEN,
  serviceToken: config.MERX_SERVICE_TOKEN,
  gatewayCredential: infrastructure.gatewayCredential,
  cookieSecret: config.MERX_COOKIE_SECRET,
  verifier: infrastructure.verifier,
  readiness: infrastructure.readiness,
  migrationMode: infrastructure.migrationMode,
  port: config.PORT,
  host: config.HOST,
  signInThrottle,
  console: { clientSecret: config.MERX_CONSOLE_CLIENT_SECRET, redirectUri: consoleRedirectUri(config.MERX_PUBLIC_URL) },
}).catch((error: unknown) => exitOnStartFailure('oauth', error));
const admin = await startAdminServer({
  port: config.ADMIN_PORT,
  host: config.ADMIN_HOST,
  logger,
  sources: [{ service: 'oauth', readiness: oauth.readiness }],
}).catch((error: unknown) => exitOnStartFailure('oauth', error));
logger.info({ url: oauth.url, admin: admin.url }, 'oauth listening');
stopOnSignals(logger, async () => {
  await oauth.stop();
  await admin.close();
  await infrastructure.close();
});
