import { API_AUDIENCE, configFields, createJwksTokenVerifier, createLogger, exitOnConfigError, issuerOf, loadConfig, stopOnSignals, z } from '@merx/kit';
import { startGateway } from './service.js';

const gatewayConfig = z.object({
  PORT: configFields.port(8080),
  HOST: z.string().default('0.0.0.0'),
  LOG_LEVEL: configFields.logLevel,
  MERX_PUBLIC_URL: configFields.httpUrl('http://localhost:8080'),
  MERX_JWKS_URL: configFields.httpUrl('http://oauth:3001/oauth/jwks'),
  MERX_OAUTH_URL: configFields.httpUrl('http://oauth:3001'),
  MERX_CATALOG_URL: configFields.httpUrl('http://catalog:3002'),
  // Shared limiter state for every replica (throttle classes); optional until the limiter uses it.
  REDIS_URL: configFields.redisUrl.optional(),
});

let config;
try {
  config = loadConfig('gateway', gatewayConfig);
} catch (error) {
  exitOnConfigError(error);
}
const logger = createLogger('gateway', config.LOG_LEVEL);
const verifier = createJwksTokenVerifier({ jwksUrl: config.MERX_JWKS_URL, issuer: issuerOf(config.MERX_PUBLIC_URL), audience: API_AUDIENCE });
const gateway = await startGateway({
  logger,
  verifier,
  publicUrl: config.MERX_PUBLIC_URL,
  upstreams: { oauth: config.MERX_OAUTH_URL, catalog: config.MERX_CATALOG_URL },
  port: config.PORT,
  host: config.HOST,
});
logger.info({ url: gateway.url }, 'gateway listening');
stopOnSignals(logger, () => gateway.stop());
