import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PGlite } from '@electric-sql/pglite';
import { AmqpBus } from './amqp-bus.js';
import { createJwksTokenVerifier, type TokenVerifier } from './auth.js';
import type { Bus } from './bus.js';
import { configFields, z } from './config.js';
import { createPgliteDb, createPostgresDb, type Db } from './db.js';
import type { ReadinessCheck } from './http.js';
import type { Logger } from './logger.js';
import { httpRevocationLoader, RevocationList, startRevocationFeed, type RevocationSnapshot } from './revocations.js';

/** The audience every Merx access token is issued for and checked against. */
export const API_AUDIENCE = 'urn:merx:api';

export const issuerOf = (publicUrl: string) => `${publicUrl}/oauth`;

/** Settings every backend service needs in the distributed mode. */
export const distributedServiceConfig = (defaultPort: number) =>
  z.object({
    PORT: configFields.port(defaultPort),
    HOST: z.string().default('0.0.0.0'),
    LOG_LEVEL: configFields.logLevel,
    DATABASE_URL: configFields.databaseUrl,
    AMQP_URL: configFields.amqpUrl,
    MERX_PUBLIC_URL: configFields.httpUrl('http://localhost:8080'),
    MERX_JWKS_URL: configFields.httpUrl('http://oauth:3001/oauth/jwks'),
    MERX_DB_POOL_SIZE: configFields.positiveInt(10),
    // Where the revocation list is loaded from at start (GET /internal/v1/revocations, service network only).
    MERX_OAUTH_URL: configFields.httpUrl('http://oauth:3001').default('http://oauth:3001'),
  });

export type DistributedServiceConfig = z.infer<ReturnType<typeof distributedServiceConfig>>;

export interface Infrastructure {
  db: Db;
  bus: Bus;
  /** Consults `revocations` on every call. */
  verifier: TokenVerifier;
  revocations: RevocationList;
  /** /readyz fails until the revocation list is loaded. */
  readiness: ReadinessCheck[];
  close(): Promise<void>;
}

export interface InfrastructureOptions {
  /** The oauth service loads revoked credentials from its own tables; everyone else asks it over HTTP. */
  loadRevocations?(db: Db): (since: Date) => Promise<RevocationSnapshot>;
}

export async function connectDistributedInfrastructure(service: string, config: DistributedServiceConfig, logger: Logger, options: InfrastructureOptions = {}): Promise<Infrastructure> {
  const db = createPostgresDb(config.DATABASE_URL, { maxConnections: config.MERX_DB_POOL_SIZE, applicationName: `merx-${service}` });
  await db.ping();
  const bus = await AmqpBus.connect({ url: config.AMQP_URL, service, logger });
  const revocations = new RevocationList({ maxTokenLifetimeSeconds: DEFAULT_MAX_TOKEN_LIFETIME_SECONDS });
  const feed = await startRevocationFeed({
    list: revocations,
    bus,
    service,
    logger,
    load: options.loadRevocations ? options.loadRevocations(db) : httpRevocationLoader(config.MERX_OAUTH_URL),
  });
  const verifier = createJwksTokenVerifier({ jwksUrl: config.MERX_JWKS_URL, issuer: issuerOf(config.MERX_PUBLIC_URL), audience: API_AUDIENCE, revocations });
  return {
    db,
    bus,
    verifier,
    revocations,
    readiness: [feed.readiness],
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
function claimDataDir(dataDir: string): () => void {
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
    stop().then(
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
