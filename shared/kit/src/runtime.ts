import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { adminListenerSettings } from './admin-server.js';
import { AmqpBus, DEFAULT_EVENTS_PER_MESSAGE, type AmqpBusOptions } from './amqp-bus.js';
import { deploymentField } from './broker-names.js';
import { createJwksTokenVerifier, type TokenVerifier } from './auth.js';
import { DEFAULT_BUS_RETRY_SCHEDULE, DEFAULT_DELIVERY_LIMIT, type Bus, type RetryPolicy } from './bus.js';
import { configFields, loadConfig, z } from './config.js';
import { createPgliteDb, createPostgresDb, DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_STATEMENT_TIMEOUT_MS, type Db } from './db.js';
import type { MigrationMode } from './migrations.js';
import type { ReadinessCheck } from './http.js';
import type { Logger } from './logger.js';
import { stopTracing } from './tracing.js';
import { httpRevocationLoader, RevocationList, startRevocationFeed, type RevocationSnapshot } from './revocations.js';

/** The audience every Merx access token is issued for and checked against. */
export const API_AUDIENCE = 'urn:merx:api';

export const issuerOf = (publicUrl: string) => `${publicUrl}/oauth`;

/** Where an oauth service publishes its signing keys, from its own origin. */
export const jwksUrlOf = (oauthUrl: string) => `${oauthUrl}/oauth/jwks`;

/** Settings every backend service needs in the distributed mode. */
export const distributedServiceConfig = (defaultPort: number, defaultAdminPort: number) =>
  z.object({
    PORT: configFields.port(defaultPort),
    HOST: z.string().default('0.0.0.0'),
    // /metrics and the detailed /readyz: on every interface of the container, never in the ingress.
    ...adminListenerSettings(defaultAdminPort, '0.0.0.0'),
    LOG_LEVEL: configFields.logLevel,
    DATABASE_URL: configFields.databaseUrl,
    AMQP_URL: configFields.amqpUrl,
    MERX_DEPLOYMENT: deploymentField,
    MERX_PUBLIC_URL: configFields.httpUrl('http://localhost:8080'),
    MERX_DB_POOL_SIZE: configFields.positiveInt(10),
    MERX_MIGRATIONS: configFields.migrationMode,
    MERX_SERVICE_TOKEN: configFields.secret("the credential services present to each other's internal routes"),
    MERX_DB_CONNECT_TIMEOUT_MS: configFields.milliseconds(DEFAULT_CONNECT_TIMEOUT_MS),
    MERX_DB_STATEMENT_TIMEOUT_MS: configFields.milliseconds(DEFAULT_STATEMENT_TIMEOUT_MS),
    MERX_DB_PREPARED_STATEMENTS: configFields.preparedStatements,
    // The oauth service on the service network: the revocation list is loaded from it at start
    // (GET /internal/v1/revocations) and, unless MERX_JWKS_URL says otherwise, its signing keys.
    MERX_OAUTH_URL: configFields.httpUrl('http://oauth:3001').default('http://oauth:3001'),
    MERX_JWKS_URL: configFields.httpUrl('http://oauth:3001/oauth/jwks').optional(),
    ...busRetrySettings,
    ...amqpPublishSettings,
  });

/** How every bus retries a failed delivery (both modes): waits between deliveries, then the poison queue. */
export const busRetrySettings = {
  MERX_BUS_RETRY_SCHEDULE: configFields.durations(DEFAULT_BUS_RETRY_SCHEDULE),
  MERX_BUS_DELIVERY_LIMIT: configFields.positiveInt(DEFAULT_DELIVERY_LIMIT),
};

export function busRetryPolicyOf(config: { MERX_BUS_RETRY_SCHEDULE: number[]; MERX_BUS_DELIVERY_LIMIT: number }): RetryPolicy {
  return { delaysMs: config.MERX_BUS_RETRY_SCHEDULE, deliveryLimit: config.MERX_BUS_DELIVERY_LIMIT };
}

/** How the RabbitMQ bus packs events into messages (the distributed mode's processes). */
export const amqpPublishSettings = {
  MERX_BUS_EVENTS_PER_MESSAGE: configFields.positiveInt(DEFAULT_EVENTS_PER_MESSAGE),
};

/** The RabbitMQ bus's settings from a process's configuration. */
export function amqpBusSettingsOf(config: {
  MERX_BUS_RETRY_SCHEDULE: number[];
  MERX_BUS_DELIVERY_LIMIT: number;
  MERX_BUS_EVENTS_PER_MESSAGE: number;
}): Pick<AmqpBusOptions, 'retry' | 'eventsPerMessage'> {
  return { retry: busRetryPolicyOf(config), eventsPerMessage: config.MERX_BUS_EVENTS_PER_MESSAGE };
}

/** The retry policy from an environment (the embedded mode, the launcher's broker cleanup). */
export function busRetryPolicyFromEnv(env: Record<string, string | undefined>): RetryPolicy {
  return busRetryPolicyOf(loadConfig('bus', z.object(busRetrySettings), env));
}

export type DistributedServiceConfig = z.infer<ReturnType<typeof distributedServiceConfig>>;

export interface Infrastructure {
  db: Db;
  bus: Bus;
  /** Consults `revocations` on every call. */
  verifier: TokenVerifier;
  revocations: RevocationList;
  /** /readyz fails until the revocation list is loaded. */
  readiness: ReadinessCheck[];
  /** Whether this process migrates its schema at start or only checks it (MERX_MIGRATIONS). */
  migrationMode: MigrationMode;
  /** MERX_SERVICE_TOKEN: the service's API and gRPC answer only calls the gateway vouches for with it. */
  gatewayCredential: string;
  close(): Promise<void>;
}

export interface InfrastructureOptions {
  /** The oauth service loads revoked credentials from its own tables; everyone else asks it over HTTP. */
  loadRevocations?(db: Db): (since: Date) => Promise<RevocationSnapshot>;
}

export async function connectDistributedInfrastructure(
  service: string,
  config: DistributedServiceConfig,
  logger: Logger,
  options: InfrastructureOptions = {},
): Promise<Infrastructure> {
  const db = createPostgresDb(config.DATABASE_URL, {
    maxConnections: config.MERX_DB_POOL_SIZE,
    applicationName: `merx-${service}`,
    connectTimeoutMs: config.MERX_DB_CONNECT_TIMEOUT_MS,
    statementTimeoutMs: config.MERX_DB_STATEMENT_TIMEOUT_MS,
    preparedStatements: config.MERX_DB_PREPARED_STATEMENTS,
  });
  await db.ping();
  const bus = await AmqpBus.connect({ url: config.AMQP_URL, service, logger, deployment: config.MERX_DEPLOYMENT, ...amqpBusSettingsOf(config) });
  const revocations = new RevocationList({ maxTokenLifetimeSeconds: DEFAULT_MAX_TOKEN_LIFETIME_SECONDS });
  const feed = await startRevocationFeed({
    list: revocations,
    bus,
    service,
    logger,
    load: options.loadRevocations ? options.loadRevocations(db) : httpRevocationLoader(config.MERX_OAUTH_URL, config.MERX_SERVICE_TOKEN),
  });
  const verifier = createJwksTokenVerifier({
    jwksUrl: config.MERX_JWKS_URL ?? jwksUrlOf(config.MERX_OAUTH_URL),
    issuer: issuerOf(config.MERX_PUBLIC_URL),
    audience: API_AUDIENCE,
    revocations,
  });
  return {
    db,
    bus,
    verifier,
    revocations,
    readiness: [feed.readiness],
    migrationMode: config.MERX_MIGRATIONS,
    gatewayCredential: config.MERX_SERVICE_TOKEN,
    async close() {
      await feed.stop();
      await bus.close();
      await db.close();
    },
  };
}

/** Until the oauth service says otherwise (its snapshot names the real lifetime). */
export const DEFAULT_MAX_TOKEN_LIFETIME_SECONDS = 900;

/** The data directory is someone else's: another Merx process has it open. */
export class DataDirInUse extends Error {
  constructor(dataDir: string, pid: number) {
    super(`${dataDir} is in use by process ${pid}; stop it first or choose another MERX_DATA_DIR`);
    this.name = 'DataDirInUse';
  }
}

function processIsAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * One process per PGlite data directory, and recovery after a crash. PGlite leaves its
 * postmaster.pid behind when the process is killed, and then waits forever on the next open;
 * our own lock file (with a pid we can check) says whether that file is stale. PostgreSQL's WAL
 * replay restores every committed transaction once it is gone.
 */
export function claimDataDir(dataDir: string): () => void {
  const lockFile = path.join(dataDir, 'merx.pid');
  mkdirSync(dataDir, { recursive: true });
  const holder = Number.parseInt(existsSync(lockFile) ? readFileSync(lockFile, 'utf8') : '', 10);
  if (Number.isInteger(holder) && holder !== process.pid && processIsAlive(holder)) throw new DataDirInUse(dataDir, holder);
  rmSync(path.join(dataDir, 'postmaster.pid'), { force: true });
  writeFileSync(lockFile, String(process.pid));
  return () => rmSync(lockFile, { force: true });
}

/** PGlite returns int8 as bigint; the pg driver is set to numbers. Both drivers must look alike to stores. */
export async function openPglite(dataDir: string | undefined): Promise<PGlite> {
  const parsers = { 20: (value: string) => Number(value) };
  if (!dataDir) return PGlite.create({ parsers });
  const release = claimDataDir(dataDir);
  const pglite = await PGlite.create({ dataDir, parsers });
  const close = pglite.close.bind(pglite);
  pglite.close = async () => {
    await close();
    release();
  };
  return pglite;
}

export { createPgliteDb };

/** SIGTERM/SIGINT: stop taking requests, finish in-flight work, exit. A second signal exits at once. */
export function stopOnSignals(logger: Logger, stop: () => Promise<void>): void {
  let stopping = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(1);
    stopping = true;
    logger.info({ signal }, 'shutting down');
    // Spans still buffered are exported last, so the shutdown's own work is in them.
    stop()
      .then(() => stopTracing())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
