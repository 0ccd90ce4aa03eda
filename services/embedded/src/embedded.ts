import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { startAudit, type RunningAudit } from '@merx/audit';
import { startCatalog, type RunningCatalog } from '@merx/catalog';
import { startGateway, throttleSettingsFromEnv, type RunningGateway, type ThrottleSettings } from '@merx/gateway';
import {
  API_AUDIENCE,
  createJwksTokenVerifier,
  createPgliteDb,
  freePort,
  issuerOf,
  MemoryBus,
  openPglite,
  RevocationList,
  startRevocationFeed,
  type Db,
  type Logger,
} from '@merx/kit';
import { provisionMerchant, revocationsFromStore, startOauth, type RunningOauth } from '@merx/oauth';
import { merchantsSettingsFromEnv, startMerchants, type MerchantsSettings, type RunningMerchants } from '@merx/merchants';
import { startWebhooks, webhookSettingsFromEnv, type RunningWebhooks, type WebhookSettings } from '@merx/webhooks';

export interface EmbeddedOptions {
  /** Where PGlite keeps its data and dev.json is written; undefined keeps everything in memory (tests). */
  dataDir: string | undefined;
  /** The gateway's port; 0 picks a free one. */
  port: number;
  logger: Logger;
  publicUrl?: string;
  accessTokenTtlSeconds?: number;
  /** Throttle classes (plans, MERX_THROTTLE=off); the defaults when absent. Always in memory here: one gateway. */
  throttle?: ThrottleSettings;
  /**
   * The delivery engine; absent reads MERX_WEBHOOK_* with private addresses allowed, so a
   * receiver on the developer's own machine (http://localhost:…) works out of the box.
   */
  webhooks?: WebhookSettings;
  /** Merchant configuration (destinations follow the delivery engine's address policy); from MERX_* when absent. */
  merchants?: MerchantsSettings;
}

export interface DevCredentials {
  base_url: string;
  merchant_id: string;
  api_key: string;
  operator_token: string;
  /** The sandbox merchant's owner: signs in on the app consent pages. */
  owner_email: string;
  owner_password: string;
}

export interface RunningEmbedded {
  baseUrl: string;
  credentials: DevCredentials;
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
  stop(): Promise<void>;
}

interface EmbeddedSecrets {
  operator_token: string;
  cookie_secret: string;
}

const randomSecret = () => randomBytes(32).toString('base64url');

async function readJson<T>(file: string): Promise<T | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as T;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new Error(`${file} is not readable JSON: ${(error as Error).message}`);
  }
}

/**
 * Development secrets are generated on first start and kept beside the data (mode 0600): the
 * embedded mode is the only place Merx makes up a secret instead of demanding one.
 */
async function loadOrCreateSecrets(dataDir: string | undefined): Promise<EmbeddedSecrets> {
  const fresh = { operator_token: randomSecret(), cookie_secret: randomSecret() };
  if (!dataDir) return fresh;
  const file = path.join(dataDir, 'secrets.json');
  const existing = await readJson<EmbeddedSecrets>(file);
  if (existing) return existing;
  await writeFile(file, JSON.stringify(fresh, null, 2), { mode: 0o600 });
  return fresh;
}

function inMemory(settings: ThrottleSettings): ThrottleSettings {
  const { redisUrl: _shared, ...local } = settings;
  return local;
}

/** Every service in one process on PGlite and the in-process bus: the same code as the distributed mode. */
export async function startEmbedded(options: EmbeddedOptions): Promise<RunningEmbedded> {
  const { logger } = options;
  if (options.dataDir) await mkdir(options.dataDir, { recursive: true });
  const secrets = await loadOrCreateSecrets(options.dataDir);
  const port = options.port === 0 ? await freePort() : options.port;
  const baseUrl = options.publicUrl ?? `http://localhost:${port}`;

  const pglite = await openPglite(options.dataDir ? path.join(options.dataDir, 'pgdata') : undefined);
  const db = createPgliteDb(pglite);
  const bus = new MemoryBus(logger.child({ component: 'bus' }));

  // One list for every service of the process: fed by the in-process bus, loaded from the oauth tables.
  const accessTokenTtlSeconds = options.accessTokenTtlSeconds ?? 900;
  const revocations = new RevocationList({ maxTokenLifetimeSeconds: accessTokenTtlSeconds });
  let oauthUrl: string | undefined;
  const verifier = () =>
    createJwksTokenVerifier({ jwksUrl: () => `${oauthUrl!}/oauth/jwks`, issuer: issuerOf(baseUrl), audience: API_AUDIENCE, revocations });
  const oauth = await startOauth({
    db,
    bus,
    verifier: verifier(),
    logger: logger.child({ service: 'oauth' }),
    issuer: issuerOf(baseUrl),
    audience: API_AUDIENCE,
    accessTokenTtlSeconds,
    operatorToken: secrets.operator_token,
    cookieSecret: secrets.cookie_secret,
    port: 0,
  });
  oauthUrl = oauth.url;
  const revocationFeed = await startRevocationFeed({ list: revocations, bus, service: 'embedded', logger, load: revocationsFromStore(db, accessTokenTtlSeconds) });
  await revocationFeed.bootstrapped;
  const catalog = await startCatalog({ db, bus, logger: logger.child({ service: 'catalog' }), verifier: verifier(), port: 0 });
  const audit = await startAudit({ db, bus, logger: logger.child({ service: 'audit' }), verifier: verifier(), port: 0 });
  const webhooks = await startWebhooks({
    db,
    bus,
    logger: logger.child({ service: 'webhooks' }),
    verifier: verifier(),
    port: 0,
    settings: options.webhooks ?? webhookSettingsFromEnv(process.env, { allowPrivate: true }),
  });
  const merchants = await startMerchants({
    db,
    bus,
    logger: logger.child({ service: 'merchants' }),
    verifier: verifier(),
    port: 0,
    settings: options.merchants ?? merchantsSettingsFromEnv(process.env, { allowPrivate: true }),
  });
  const gateway = await startGateway({
    logger: logger.child({ service: 'gateway' }),
    verifier: verifier(),
    publicUrl: baseUrl,
    upstreams: { oauth: oauth.url, catalog: catalog.url, audit: audit.url, webhooks: webhooks.url, merchants: merchants.url },
    port,
    host: '0.0.0.0',
    throttle: { settings: inMemory(options.throttle ?? throttleSettingsFromEnv({})), bus },
  });

  const devFile = options.dataDir ? path.join(options.dataDir, 'dev.json') : undefined;
  let credentials = devFile ? await readJson<DevCredentials>(devFile) : undefined;
  const firstStart = credentials === undefined;
  if (!credentials) {
    const provisioned = await provisionMerchant(oauth.outbox, { name: 'Sandbox merchant', mode: 'sandbox', owner: { email: 'owner@sandbox.merx.localhost' } });
    credentials = {
      base_url: baseUrl,
      merchant_id: provisioned.merchant.id,
      api_key: provisioned.api_key.secret!,
      operator_token: secrets.operator_token,
      owner_email: provisioned.owner.email,
      owner_password: provisioned.owner.password!,
    };
    if (devFile) await writeFile(devFile, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  } else if (credentials.base_url !== baseUrl) {
    credentials = { ...credentials, base_url: baseUrl };
    if (devFile) await writeFile(devFile, `${JSON.stringify(credentials, null, 2)}\n`, { mode: 0o600 });
  }

  return {
    baseUrl,
    credentials: credentials!,
    firstStart,
    db,
    bus,
    gateway,
    oauth,
    catalog,
    audit,
    webhooks,
    merchants,
    async stop() {
      await gateway.stop();
      await merchants.stop();
      await catalog.stop();
      // Before audit: the events it publishes while stopping are still recorded.
      await webhooks.stop();
      await audit.stop();
      await oauth.stop();
      await revocationFeed.stop();
      await bus.close();
      await pglite.close();
    },
  };
}
