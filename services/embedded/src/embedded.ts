import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { startAudit, type RunningAudit } from '@merx/audit';
import { startCatalog, type RunningCatalog } from '@merx/catalog';
import {
  loadApiReference,
  startGateway,
  throttleSettingsFromEnv,
  type ApiReference,
  type GrpcConnectionSettings,
  type RunningGateway,
  type ThrottleSettings,
} from '@merx/gateway';
import {
  API_AUDIENCE,
  busRetryPolicyFromEnv,
  createJwksTokenVerifier,
  ensureAdminPortFree,
  ensurePortFree,
  freePort,
  issuerOf,
  MemoryBus,
  newServiceToken,
  openPgliteThread,
  RevocationList,
  SecretKeyRing,
  startAdminServer,
  startRevocationFeed,
  startTableUpkeep,
  type Db,
  type Logger,
  type RetryPolicy,
  type RunningServer,
} from '@merx/kit';
import { consoleRedirectUri } from '@merx/contracts';
import { DEFAULT_SESSION_IDLE_SECONDS, DEFAULT_SESSION_MAX_AGE_SECONDS, startConsole, type RunningConsole } from '@merx/console';
import { provisionMerchant, revocationsFromStore, startOauth, type RunningOauth, type SignInThrottle } from '@merx/oauth';
import { httpMerchantLookup, merchantsSettingsFromEnv, startMerchants, type MerchantsSettings, type RunningMerchants } from '@merx/merchants';
import { startWebhooks, webhookSettingsFromEnv, type RunningWebhooks, type WebhookSettings } from '@merx/webhooks';
import { resealSigningSecrets } from './signing-secrets.js';
import { loadOrCreateDevSecrets, readJsonFile, SANDBOX_OWNER_EMAIL, writeJsonFile, type DevCredentials } from './dev-files.js';

export interface EmbeddedOptions {
  /** Where PGlite keeps its data and dev.json is written; undefined keeps everything in memory (tests). */
  dataDir: string | undefined;
  /** The gateway's port; 0 picks a free one. */
  port: number;
  /** The public gRPC port (main.ts reads GRPC_PORT, 50051 by default); 0 or absent picks a free one. */
  grpcPort?: number;
  /** The gateway's interface: loopback (127.0.0.1) unless given. */
  host?: string;
  /** The admin listener (/metrics, the detailed /readyz of every service); 0 or absent picks a free one. */
  adminPort?: number;
  /** The admin listener's interface: loopback (127.0.0.1) unless given. */
  adminHost?: string;
  logger: Logger;
  publicUrl?: string;
  accessTokenTtlSeconds?: number;
  /** Throttle classes (plans, MERX_THROTTLE=off); the defaults when absent. Always in memory here: one gateway. */
  throttle?: ThrottleSettings;
  /** How the public gRPC port bounds connections (MERX_GRPC_*); the defaults when absent. */
  grpcConnections?: GrpcConnectionSettings;
  /**
   * The delivery engine; absent reads MERX_WEBHOOK_* with private addresses allowed, so a
   * receiver on the developer's own machine (http://localhost:…) works out of the box.
   */
  webhooks?: WebhookSettings;
  /** The /docs renderer; loaded first thing when absent, so a missing one stops the start before any data is touched. */
  apiReference?: ApiReference;
  /** Growing delays after failed sign-ins; the defaults when absent. */
  signInThrottle?: SignInThrottle;
  /** Merchant configuration (destinations follow the delivery engine's address policy); from MERX_* when absent. */
  merchants?: MerchantsSettings;
  /** How the bus retries failed deliveries; from MERX_BUS_RETRY_SCHEDULE and MERX_BUS_DELIVERY_LIMIT when absent. */
  busRetry?: RetryPolicy;
  /** Proxies in front of the gateway whose X-Forwarded-For names the client; nobody when absent. */
  trustedProxies?: string[];
  /** MERX_SECRETS_KEYS when set: its first key seals; the key generated into the data directory keeps opening. */
  secretKeys?: SecretKeyRing;
  /**
   * MERX_SERVICE_TOKEN when set: the credential the gateway vouches with on each service's own
   * ports (a benchmark that measures a service without the gateway presents it); a fresh one per
   * start otherwise.
   */
  serviceToken?: string;
}

export interface RunningEmbedded {
  baseUrl: string;
  /** The public gRPC address, `host:port` (what grpcurl and grpc-js clients take). */
  grpcUrl: string;
  /** The admin listener: /metrics and /readyz with every service's checks, details and degradations. */
  admin: RunningServer;
  credentials: DevCredentials;
  /** The credential the gateway sends to the services' own ports (they refuse the API without it). */
  serviceToken: string;
  /** True when this start created the sandbox merchant (first start). */
  firstStart: boolean;
  db: Db;
  bus: MemoryBus;
  gateway: RunningGateway;
  oauth: RunningOauth;
  catalog: RunningCatalog;
  audit: RunningAudit;
  webhooks: RunningWebhooks;
  merchants: RunningMerchants;
  console: RunningConsole;
  stop(): Promise<void>;
}

function inMemory(settings: ThrottleSettings): ThrottleSettings {
  const { redisUrl: _shared, ...local } = settings;
  return local;
}

/** Every service in one process on PGlite and the in-process bus: the same code as the distributed mode. */
export async function startEmbedded(options: EmbeddedOptions): Promise<RunningEmbedded> {
  const { logger } = options;
  const host = options.host ?? '127.0.0.1';
  const adminHost = options.adminHost ?? '127.0.0.1';
  const apiReference = options.apiReference ?? loadApiReference();
  const busRetry = options.busRetry ?? busRetryPolicyFromEnv(process.env);
  // Before anything is written: a port in use must not leave a half-made data directory behind.
  await ensurePortFree(options.port, host);
  await ensurePortFree(options.grpcPort ?? 0, host);
  await ensureAdminPortFree({ ADMIN_PORT: options.adminPort ?? 0, ADMIN_HOST: adminHost });
  if (options.dataDir) await mkdir(options.dataDir, { recursive: true });
  const secrets = await loadOrCreateDevSecrets(options.dataDir);
  // The data directory's own key always opens: a key given in MERX_SECRETS_KEYS seals from now on.
  const directoryKeys = SecretKeyRing.parse(secrets.secrets_keys);
  const secretKeys = options.secretKeys ? SecretKeyRing.combine(options.secretKeys, directoryKeys) : directoryKeys;
  const port = options.port === 0 ? await freePort() : options.port;
  const baseUrl = options.publicUrl ?? `http://localhost:${port}`;

  // PGlite on its own thread: it does most of the work of every request and event, and on the
  // main thread it left the second core idle while HTTP waited behind it.
  const database = await openPgliteThread(options.dataDir ? path.join(options.dataDir, 'pgdata') : undefined);
  // What a failed start has opened so far, closed again in reverse order (the data directory's lock last).
  const opened: Array<{ stop(): Promise<void> }> = [{ stop: () => database.close() }];
  const track = <T extends { stop(): Promise<void> }>(running: T): T => {
    opened.push(running);
    return running;
  };
  try {
    const db = database.db;
    // Work queues are rows of this database: what the outbox hands over survives any crash, and
    // so does what was poisoned; a restart delivers what the last run had not finished.
    const bus = await MemoryBus.durable(db, { logger: logger.child({ component: 'bus' }), service: 'embedded', retry: busRetry });

    // One list for every service of the process: fed by the in-process bus, loaded from the oauth tables.
    const accessTokenTtlSeconds = options.accessTokenTtlSeconds ?? 900;
    const revocations = new RevocationList({ maxTokenLifetimeSeconds: accessTokenTtlSeconds });
    let oauthUrl: string | undefined;
    const verifier = () =>
      createJwksTokenVerifier({ jwksUrl: () => `${oauthUrl!}/oauth/jwks`, issuer: issuerOf(baseUrl), audience: API_AUDIENCE, revocations });
    // The gateway loads throttle overrides from oauth's internal routes, even in one process.
    const serviceToken = options.serviceToken ?? newServiceToken();
    const oauth = track(
      await startOauth({
        db,
        bus,
        verifier: verifier(),
        logger: logger.child({ service: 'oauth' }),
        issuer: issuerOf(baseUrl),
        audience: API_AUDIENCE,
        accessTokenTtlSeconds,
        operatorToken: secrets.operator_token,
        cookieSecret: secrets.cookie_secret,
        serviceToken,
        gatewayCredential: serviceToken,
        console: { clientSecret: secrets.console_client_secret, redirectUri: consoleRedirectUri(baseUrl) },
        port: 0,
        ...(options.signInThrottle ? { signInThrottle: options.signInThrottle } : {}),
      }),
    );
    oauthUrl = oauth.url;
    const revocationFeed = track(
      await startRevocationFeed({ list: revocations, bus, service: 'embedded', logger, load: revocationsFromStore(db, accessTokenTtlSeconds) }),
    );
    await revocationFeed.bootstrapped;
    // Every service's own ports answer only calls the gateway vouches for: its throttle classes
    // would otherwise be a loopback connection away from a valid token.
    const gatewayCredential = serviceToken;
    const catalog = track(
      await startCatalog({ db, bus, logger: logger.child({ service: 'catalog' }), verifier: verifier(), port: 0, grpcPort: 0, gatewayCredential }),
    );
    const audit = track(await startAudit({ db, bus, logger: logger.child({ service: 'audit' }), verifier: verifier(), port: 0, gatewayCredential }));
    const webhooks = track(
      await startWebhooks({
        db,
        bus,
        logger: logger.child({ service: 'webhooks' }),
        verifier: verifier(),
        port: 0,
        settings: options.webhooks ?? webhookSettingsFromEnv(process.env, { allowPrivate: true }),
        secretKeys,
        gatewayCredential,
      }),
    );
    const merchants = track(
      await startMerchants({
        db,
        bus,
        logger: logger.child({ service: 'merchants' }),
        verifier: verifier(),
        port: 0,
        settings: options.merchants ?? merchantsSettingsFromEnv(process.env, { allowPrivate: true }),
        lookupMerchant: httpMerchantLookup(oauth.url, serviceToken),
        secretKeys,
        gatewayCredential,
      }),
    );
    // One process owns this database: it converts what an older version left in plaintext, and
    // finishes a rotation (a new key first in MERX_SECRETS_KEYS), before the API opens.
    const resealed = await resealSigningSecrets(db, secretKeys);
    // PGlite has no autovacuum: without this its planner never learns what the tables hold, and
    // queue tables keep every row they ever held.
    track(startTableUpkeep(db, logger.child({ component: 'table-upkeep' })));
    if (Object.values(resealed).some((rows) => rows > 0)) logger.info({ resealed, key: secretKeys.activeKeyId }, 'signing secrets resealed');
    // Before the gateway, which routes /console to it; it calls the API back through the gateway's port.
    const consoleApp = track(
      await startConsole({
        db,
        logger: logger.child({ service: 'console' }),
        settings: {
          publicUrl: baseUrl,
          gatewayUrl: `http://${host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host}:${port}`,
          oauthUrl: oauth.url,
          clientSecret: secrets.console_client_secret,
          sessionMaxAgeSeconds: DEFAULT_SESSION_MAX_AGE_SECONDS,
          sessionIdleSeconds: DEFAULT_SESSION_IDLE_SECONDS,
        },
        port: 0,
      }),
    );
    const gateway = track(
      await startGateway({
        logger: logger.child({ service: 'gateway' }),
        verifier: verifier(),
        publicUrl: baseUrl,
        apiReference,
        upstreams: { oauth: oauth.url, catalog: catalog.url, audit: audit.url, webhooks: webhooks.url, merchants: merchants.url, console: consoleApp.url },
        // Every service runs in this process: the gateway calls them without their ports (in-process.ts).
        inProcessUpstreams: { oauth, catalog, audit, webhooks, merchants, console: consoleApp },
        port,
        host,
        trustedProxies: options.trustedProxies ?? [],
        serviceToken,
        throttle: { settings: inMemory(options.throttle ?? throttleSettingsFromEnv({})), bus },
        grpc: {
          port: options.grpcPort ?? 0,
          upstreams: { catalog: catalog.grpc.address, merchants: merchants.grpc.address, webhooks: webhooks.grpc.address },
          ...(options.grpcConnections ? { connections: options.grpcConnections } : {}),
        },
      }),
    );
    const grpcUrl = `${new URL(baseUrl).hostname}:${gateway.grpc!.port}`;
    // One admin listener for the whole process: every service's checks, named `<service>.<check>` as in the distributed mode.
    const admin = await startAdminServer({
      port: options.adminPort ?? 0,
      host: adminHost,
      logger,
      sources: [
        { service: 'gateway', readiness: gateway.readiness },
        { service: 'oauth', readiness: oauth.readiness },
        { service: 'catalog', readiness: catalog.readiness },
        { service: 'audit', readiness: audit.readiness },
        { service: 'webhooks', readiness: webhooks.readiness },
        { service: 'merchants', readiness: merchants.readiness },
        { service: 'console', readiness: consoleApp.readiness },
      ],
    });
    track({ stop: () => admin.close() });
    const adminUrl = admin.url;

    const devFile = options.dataDir ? path.join(options.dataDir, 'dev.json') : undefined;
    let credentials = devFile ? await readJsonFile<DevCredentials>(devFile) : undefined;
    const firstStart = credentials === undefined;
    if (!credentials) {
      const provisioned = await provisionMerchant(oauth.outbox, { name: 'Sandbox merchant', mode: 'sandbox', owner: { email: SANDBOX_OWNER_EMAIL } });
      credentials = {
        base_url: baseUrl,
        grpc_url: grpcUrl,
        admin_url: adminUrl,
        merchant_id: provisioned.merchant.id,
        api_key: provisioned.api_key.secret!,
        operator_token: secrets.operator_token,
        owner_email: provisioned.owner.email,
        owner_password: provisioned.owner.password!,
      };
      if (devFile) await writeJsonFile(devFile, credentials);
    } else if (credentials.base_url !== baseUrl || credentials.grpc_url !== grpcUrl || credentials.admin_url !== adminUrl) {
      credentials = { ...credentials, base_url: baseUrl, grpc_url: grpcUrl, admin_url: adminUrl };
      if (devFile) await writeJsonFile(devFile, credentials);
    }

    return {
      baseUrl,
      grpcUrl,
      admin,
      credentials: credentials!,
      serviceToken,
      firstStart,
      db,
      bus,
      gateway,
      oauth,
      catalog,
      audit,
      webhooks,
      merchants,
      console: consoleApp,
      async stop() {
        await admin.close();
        await gateway.stop();
        await consoleApp.stop();
        await merchants.stop();
        await catalog.stop();
        // Before audit: the events it publishes while stopping are still recorded.
        await webhooks.stop();
        await audit.stop();
        await oauth.stop();
        await revocationFeed.stop();
        await bus.close();
        await database.close();
      },
    };
  } catch (error) {
    for (const running of opened.reverse()) await running.stop().catch(() => undefined);
    throw error;
  }
}
