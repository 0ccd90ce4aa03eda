import {
  adminListenerSettings,
  AmqpBus,
  API_AUDIENCE,
  amqpBusSettingsOf,
  amqpPublishSettings,
  busRetrySettings,
  configFields,
  createJwksTokenVerifier,
  deploymentField,
  createLogger,
  DEFAULT_MAX_TOKEN_LIFETIME_SECONDS,
  ensureAdminPortFree,
  ensurePortFree,
  exitOnConfigError,
  exitOnStartFailure,
  httpRevocationLoader,
  issuerOf,
  jwksUrlOf,
  loadConfig,
  RevocationList,
  startAdminServer,
  startRevocationFeed,
  stopOnSignals,
  z,
  startTracing,
} from '@merx/kit';
import { loadApiReference } from './docs.js';
import { startGateway } from './service.js';
import { grpcConnectionSettingsFromEnv } from './grpc/connections.js';
import { throttleSettingsFromEnv } from './throttle/config.js';

// host:port, or a grpc-js target such as dns:///catalog-grpc:50052 (every address of a headless Service).
const grpcAddress = (fallback: string) =>
  z
    .string()
    .regex(/^(dns:\/\/\/)?([A-Za-z0-9.-]+|\[[0-9a-fA-F:]+\]):\d{1,5}$/, 'must be host:port or dns:///host:port (e.g. catalog:50052)')
    .default(fallback);

const gatewayConfig = z.object({
  PORT: configFields.port(8080),
  HOST: z.string().default('0.0.0.0'),
  // /metrics and the detailed /readyz (which upstream is degraded, and why): never routed by the ingress.
  ...adminListenerSettings(9080, '0.0.0.0'),
  LOG_LEVEL: configFields.logLevel,
  MERX_PUBLIC_URL: configFields.httpUrl('http://localhost:8080'),
  MERX_OAUTH_URL: configFields.httpUrl('http://oauth:3001'),
  MERX_JWKS_URL: configFields.httpUrl('http://oauth:3001/oauth/jwks').optional(),
  MERX_CATALOG_URL: configFields.httpUrl('http://catalog:3002'),
  MERX_AUDIT_URL: configFields.httpUrl('http://audit:3003'),
  MERX_WEBHOOKS_URL: configFields.httpUrl('http://webhooks:3004'),
  MERX_MERCHANTS_URL: configFields.httpUrl('http://merchants:3005'),
  MERX_CONSOLE_URL: configFields.httpUrl('http://console:3006'),
  // The public gRPC port, and where each owning service serves its gRPC on the service network (host:port).
  GRPC_PORT: configFields.port(50051),
  MERX_CATALOG_GRPC: grpcAddress('catalog:50052'),
  MERX_MERCHANTS_GRPC: grpcAddress('merchants:50055'),
  MERX_WEBHOOKS_GRPC: grpcAddress('webhooks:50054'),
  // Only for revocations (api_keys.revoked, apps.grant_revoked): a revoked token dies at the edge within a second.
  AMQP_URL: configFields.amqpUrl,
  MERX_DEPLOYMENT: deploymentField,
  // Shared limiter state for every replica (throttle classes); without it each replica counts alone, in memory.
  REDIS_URL: configFields.redisUrl.optional(),
  // An ingress or load balancer in front: whose X-Forwarded-For names the client (default: nobody).
  MERX_TRUSTED_PROXIES: configFields.trustedProxies,
  MERX_SERVICE_TOKEN: configFields.secret("the credential services present to each other's internal routes"),
  ...busRetrySettings,
  ...amqpPublishSettings,
});

let config;
let apiReference;
try {
  config = loadConfig('gateway', gatewayConfig);
  apiReference = loadApiReference();
} catch (error) {
  exitOnConfigError(error);
}
const logger = createLogger('gateway', config.LOG_LEVEL);
// OTEL_* checked here, before any port opens; without an endpoint nothing of the SDK is loaded.
await startTracing('merx-gateway').catch((error: unknown) => exitOnStartFailure('gateway', error));
let throttleSettings;
let grpcConnections;
try {
  throttleSettings = throttleSettingsFromEnv(process.env);
  grpcConnections = grpcConnectionSettingsFromEnv(process.env);
} catch (error) {
  process.stderr.write(`gateway: configuration error: ${(error as Error).message}\n`);
  process.exit(78);
}
await ensurePortFree(config.PORT, config.HOST).catch((error: unknown) => exitOnStartFailure('gateway', error));
await ensurePortFree(config.GRPC_PORT, config.HOST).catch((error: unknown) => exitOnStartFailure('gateway', error));
await ensureAdminPortFree(config).catch((error: unknown) => exitOnStartFailure('gateway', error));
const bus = await AmqpBus.connect({ url: config.AMQP_URL, service: 'gateway', logger, deployment: config.MERX_DEPLOYMENT, ...amqpBusSettingsOf(config) });
const revocations = new RevocationList({ maxTokenLifetimeSeconds: DEFAULT_MAX_TOKEN_LIFETIME_SECONDS });
const revocationFeed = await startRevocationFeed({
  list: revocations,
  bus,
  service: 'gateway',
  logger,
  load: httpRevocationLoader(config.MERX_OAUTH_URL, config.MERX_SERVICE_TOKEN),
}).catch((error: unknown) => exitOnStartFailure('gateway', error));
const verifier = createJwksTokenVerifier({
  jwksUrl: config.MERX_JWKS_URL ?? jwksUrlOf(config.MERX_OAUTH_URL),
  issuer: issuerOf(config.MERX_PUBLIC_URL),
  audience: API_AUDIENCE,
  revocations,
});
const gateway = await startGateway({
  logger,
  verifier,
  readiness: [revocationFeed.readiness],
  throttle: { settings: throttleSettings, bus },
  publicUrl: config.MERX_PUBLIC_URL,
  apiReference,
  upstreams: {
    oauth: config.MERX_OAUTH_URL,
    catalog: config.MERX_CATALOG_URL,
    audit: config.MERX_AUDIT_URL,
    webhooks: config.MERX_WEBHOOKS_URL,
    merchants: config.MERX_MERCHANTS_URL,
    console: config.MERX_CONSOLE_URL,
  },
  trustedProxies: config.MERX_TRUSTED_PROXIES,
  serviceToken: config.MERX_SERVICE_TOKEN,
  port: config.PORT,
  host: config.HOST,
  grpc: {
    port: config.GRPC_PORT,
    upstreams: { catalog: config.MERX_CATALOG_GRPC, merchants: config.MERX_MERCHANTS_GRPC, webhooks: config.MERX_WEBHOOKS_GRPC },
    connections: grpcConnections,
  },
}).catch((error: unknown) => exitOnStartFailure('gateway', error));
const admin = await startAdminServer({
  port: config.ADMIN_PORT,
  host: config.ADMIN_HOST,
  logger,
  sources: [{ service: 'gateway', readiness: gateway.readiness }],
}).catch((error: unknown) => exitOnStartFailure('gateway', error));
logger.info({ url: gateway.url, admin: admin.url, grpc: gateway.grpc!.address }, 'gateway listening');
stopOnSignals(logger, async () => {
  await gateway.stop();
  await admin.close();
  await revocationFeed.stop();
  await bus.close();
});
