import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { startCatalog, type RunningCatalog } from '@merx/catalog';
import { startGateway, type RunningGateway } from '@merx/gateway';
import { API_AUDIENCE, createJwksTokenVerifier, createPgliteDb, freePort, issuerOf, MemoryBus, openPglite, type Db, type Logger } from '@merx/kit';
import { provisionMerchant, startOauth, type RunningOauth } from '@merx/oauth';

export interface EmbeddedOptions {
  /** Where PGlite keeps its data and dev.json is written; undefined keeps everything in memory (tests). */
  dataDir: string | undefined;
  /** The gateway's port; 0 picks a free one. */
  port: number;
  logger: Logger;
  publicUrl?: string;
  accessTokenTtlSeconds?: number;
}

export interface DevCredentials {
  base_url: string;
  merchant_id: string;
  api_key: string;
  operator_token: string;
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

  const oauth = await startOauth({
    db,
    bus,
    logger: logger.child({ service: 'oauth' }),
    issuer: issuerOf(baseUrl),
    audience: API_AUDIENCE,
    accessTokenTtlSeconds: options.accessTokenTtlSeconds ?? 900,
    operatorToken: secrets.operator_token,
    cookieSecret: secrets.cookie_secret,
    port: 0,
  });
  const verifier = () => createJwksTokenVerifier({ jwksUrl: `${oauth.url}/oauth/jwks`, issuer: issuerOf(baseUrl), audience: API_AUDIENCE });
  const catalog = await startCatalog({ db, bus, logger: logger.child({ service: 'catalog' }), verifier: verifier(), port: 0 });
  const gateway = await startGateway({
    logger: logger.child({ service: 'gateway' }),
    verifier: verifier(),
    publicUrl: baseUrl,
    upstreams: { oauth: oauth.url, catalog: catalog.url },
    port,
    host: '0.0.0.0',
  });

  const devFile = options.dataDir ? path.join(options.dataDir, 'dev.json') : undefined;
  let credentials = devFile ? await readJson<DevCredentials>(devFile) : undefined;
  const firstStart = credentials === undefined;
  if (!credentials) {
    const provisioned = await provisionMerchant(oauth.outbox, { name: 'Sandbox merchant', mode: 'sandbox' });
    credentials = { base_url: baseUrl, merchant_id: provisioned.merchant.id, api_key: provisioned.api_key.secret!, operator_token: secrets.operator_token };
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
    async stop() {
      await gateway.stop();
      await catalog.stop();
      await oauth.stop();
      await bus.close();
      await pglite.close();
    },
  };
}
