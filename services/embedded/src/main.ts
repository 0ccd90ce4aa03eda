import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import {
  ConfigError,
  configFields,
  createLogger,
  exitOnConfigError,
  exitOnStartFailure,
  loadConfig,
  startTracing,
  stopOnSignals,
  z,
  adminListenerSettings,
} from '@merx/kit';
import { grpcConnectionSettingsFromEnv, loadApiReference, throttleSettingsFromEnv } from '@merx/gateway';
import { signInThrottleFromEnv } from '@merx/oauth';
import { webhookSettingsFromEnv } from '@merx/webhooks';
import { startBanner } from './dev-files.js';
import { startEmbedded } from './embedded.js';

const embeddedConfig = z.object({
  PORT: configFields.port(8080),
  GRPC_PORT: configFields.port(50051),
  // Loopback unless opened on purpose: the embedded default lets webhooks reach private
  // addresses, so a gateway open to the network would let anyone make it call internal hosts.
  HOST: z.string().min(1).default('127.0.0.1'),
  // /metrics and every service's detailed readiness; loopback unless opened on purpose, like HOST.
  ...adminListenerSettings(9080, '127.0.0.1'),
  LOG_LEVEL: configFields.logLevel,
  MERX_DATA_DIR: z.string().min(1).default('./.merx'),
  MERX_PUBLIC_URL: configFields.httpUrl('http://localhost:8080').optional(),
  MERX_ACCESS_TOKEN_TTL: configFields.positiveInt(900),
  MERX_TRUSTED_PROXIES: configFields.trustedProxies,
  // Optional here: the first start generates a key into the data directory.
  MERX_SECRETS_KEYS: configFields.secretKeys.optional(),
  // The credential the gateway vouches with on the services' own ports; a fresh one per start when absent.
  MERX_SERVICE_TOKEN: configFields.secret("the credential the gateway presents to the services' own ports").optional(),
});

let config;
let webhooks;
let throttle;
let grpcConnections;
let signInThrottle;
let apiReference;
try {
  apiReference = loadApiReference();
  config = loadConfig('merx', embeddedConfig);
  // Private addresses allowed by default: a receiver on the developer's own machine just works.
  webhooks = webhookSettingsFromEnv(process.env, { allowPrivate: true });
  try {
    throttle = throttleSettingsFromEnv(process.env);
    grpcConnections = grpcConnectionSettingsFromEnv(process.env);
    signInThrottle = signInThrottleFromEnv(process.env);
  } catch (error) {
    throw new ConfigError('merx', [(error as Error).message]);
  }
} catch (error) {
  exitOnConfigError(error);
}
const logger = createLogger('merx', config.LOG_LEVEL);
// OTEL_* checked before any port opens; one process, so one service name: spans say which service by merx.service.
await startTracing('merx').catch((error: unknown) => exitOnStartFailure('merx', error));
const dataDir = path.resolve(config.MERX_DATA_DIR);
// A first start that fails leaves nothing behind, so the next one is a first start again.
const firstStart = !existsSync(dataDir);
const merx = await startEmbedded({
  dataDir,
  port: config.PORT,
  grpcPort: config.GRPC_PORT,
  host: config.HOST,
  adminPort: config.ADMIN_PORT,
  adminHost: config.ADMIN_HOST,
  logger,
  publicUrl: config.MERX_PUBLIC_URL,
  accessTokenTtlSeconds: config.MERX_ACCESS_TOKEN_TTL,
  trustedProxies: config.MERX_TRUSTED_PROXIES,
  ...(config.MERX_SECRETS_KEYS ? { secretKeys: config.MERX_SECRETS_KEYS } : {}),
  ...(config.MERX_SERVICE_TOKEN ? { serviceToken: config.MERX_SERVICE_TOKEN } : {}),
  throttle,
  grpcConnections,
  signInThrottle,
  webhooks,
  apiReference,
}).catch((error: unknown) => {
  if (firstStart) rmSync(dataDir, { recursive: true, force: true });
  return exitOnStartFailure('merx', error);
});
process.stdout.write(
  startBanner(
    `Merx is running (embedded mode${merx.firstStart ? ', first start: sandbox merchant created' : ''})`,
    merx.credentials,
    path.join(dataDir, 'dev.json'),
  ),
);
stopOnSignals(logger, () => merx.stop());
