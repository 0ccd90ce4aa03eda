import { PGlite } from '@electric-sql/pglite';
import { AmqpBus } from './amqp-bus.js';
import { createJwksTokenVerifier, type TokenVerifier } from './auth.js';
import type { Bus } from './bus.js';
import { configFields, z } from './config.js';
import { createPgliteDb, createPostgresDb, type Db } from './db.js';
import type { Logger } from './logger.js';

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
  });

export type DistributedServiceConfig = z.infer<ReturnType<typeof distributedServiceConfig>>;

export interface Infrastructure {
  db: Db;
  bus: Bus;
  verifier: TokenVerifier;
  close(): Promise<void>;
}

export async function connectDistributedInfrastructure(service: string, config: DistributedServiceConfig, logger: Logger): Promise<Infrastructure> {
  const db = createPostgresDb(config.DATABASE_URL, { maxConnections: config.MERX_DB_POOL_SIZE, applicationName: `merx-${service}` });
  await db.ping();
  const bus = await AmqpBus.connect({ url: config.AMQP_URL, service, logger });
  const verifier = createJwksTokenVerifier({ jwksUrl: config.MERX_JWKS_URL, issuer: issuerOf(config.MERX_PUBLIC_URL), audience: API_AUDIENCE });
  return {
    db,
    bus,
    verifier,
    async close() {
      await bus.close();
      await db.close();
    },
  };
}

/** PGlite returns int8 as bigint; the pg driver is set to numbers. Both drivers must look alike to stores. */
export async function openPglite(dataDir: string | undefined): Promise<PGlite> {
  return PGlite.create(dataDir ? { dataDir, parsers: { 20: (value: string) => Number(value) } } : { parsers: { 20: (value: string) => Number(value) } });
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
