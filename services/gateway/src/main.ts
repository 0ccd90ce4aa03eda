import {
  AmqpBus,
  API_AUDIENCE,
  configFields,
  createJwksTokenVerifier,
  createLogger,
  DEFAULT_MAX_TOKEN_LIFETIME_SECONDS,
  exitOnConfigError,
  httpRevocationLoader,
  issuerOf,
  loadConfig,
  RevocationList,
  startRevocationFeed,
  stopOnSignals,
  z,
} from '@merx/kit';
import { startGateway } from './service.js';
import { throttleSettingsFromEnv } from './throttle/config.js';

const gatewayConfig = z.object({
  PORT: configFields.port(8080),
  HOST: z.string().default('0.0.0.0'),
  LOG_LEVEL: configFields.logLevel,
  MERX_PUBLIC_URL: configFields.httpUrl('http://localhost:8080'),
  MERX_JWKS_URL: configFields.httpUrl('http://oauth:3001/oauth/jwks'),
  MERX_OAUTH_URL: configFields.httpUrl('http://oauth:3001'),
  MERX_CATALOG_URL: configFields.httpUrl('http://catalog:3002'),
  MERX_AUDIT_URL: configFields.httpUrl('http://audit:3003'),
  MERX_WEBHOOKS_URL: configFields.httpUrl('http://webhooks:3004'),
  MERX_MERCHANTS_URL: configFields.httpUrl('http://merchants:3005'),
  // Only for revocations (api_keys.revoked, apps.grant_revoked): a revoked token dies at the edge within a second.
  AMQP_URL: configFields.amqpUrl,
  // Shared limiter state for every replica (throttle classes); without it each replica counts alone, in memory.
  REDIS_URL: configFields.redisUrl.optional(),
});

let config;
try {
  config = loadConfig('gateway', gatewayConfig);
} catch (error) {
  exitOnConfigError(error);
}
const logger = createLogger('gateway', config.LOG_LEVEL);
let throttleSettings;
try {
  throttleSettings = throttleSettingsFromEnv(process.env);
} catch (error) {
  process.stderr.write(`gateway: configuration error: ${(error as Error).message}\n`);
  process.exit(78);
}
const bus = await AmqpBus.connect({ url: config.AMQP_URL, service: 'gateway', logger });
const revocations = new RevocationList({ maxTokenLifetimeSeconds: DEFAULT_MAX_TOKEN_LIFETIME_SECONDS });
const revocationFeed = await startRevocationFeed({ list: revocations, bus, service: 'gateway', logger, load: httpRevocationLoader(config.MERX_OAUTH_URL) });
const verifier = createJwksTokenVerifier({ jwksUrl: config.MERX_JWKS_URL, issuer: issuerOf(config.MERX_PUBLIC_URL), audience: API_AUDIENCE, revocations });
const gateway = await startGateway({
  logger,
  verifier,
  readiness: [revocationFeed.readiness],
  throttle: { settings: throttleSettings, bus },
  publicUrl: config.MERX_PUBLIC_URL,
  upstreams: { oauth: config.MERX_OAUTH_URL, catalog: config.MERX_CATALOG_URL, audit: config.MERX_AUDIT_URL, webhooks: config.MERX_WEBHOOKS_URL, merchants: config.MERX_MERCHANTS_URL },
  port: config.PORT,
  host: config.HOST,
});
logger.info({ url: gateway.url }, 'gateway listening');
stopOnSignals(logger, async () => {
  await gateway.stop();
  await revocationFeed.stop();
  await bus.close();
});
