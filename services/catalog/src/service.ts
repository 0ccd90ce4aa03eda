import { mountRouter, startService, type Bus, type Consumer, type Db, type Logger, type ReadinessCheck, type RunningService, type TokenVerifier } from '@merx/kit';
import { consumeCatalogEvents, DEFAULT_CATALOG_QUEUE } from './events/consumer.js';
import { productRoutes } from './routes/products.js';
import { CATALOG_SCHEMA, catalogMigrations } from './store/migrations.js';
import { productUseCases } from './usecases/products.js';
import { sandboxResetUseCase } from './usecases/sandbox-reset.js';

export interface CatalogDeps {
  db: Db;
  bus: Bus;
  logger: Logger;
  verifier: TokenVerifier;
  /** Extra /readyz checks (the revocation list being loaded). */
  readiness?: ReadinessCheck[];
  port: number;
  host?: string;
  /** The durable queue the catalog consumes `merx.events` through (`catalog.events`); replicas share it. */
  queue?: string;
}

export interface RunningCatalog extends RunningService {
  consumer: Consumer;
}

/** The catalog: products, and its part of sandbox resets. Same code in both run modes. */
export async function startCatalog(deps: CatalogDeps): Promise<RunningCatalog> {
  const { db, logger } = deps;
  const service = await startService({
    name: 'catalog',
    schema: CATALOG_SCHEMA,
    migrations: catalogMigrations,
    db,
    bus: deps.bus,
    logger,
    port: deps.port,
    ...(deps.host ? { host: deps.host } : {}),
    ...(deps.readiness ? { readiness: deps.readiness } : {}),
    routes: (koa, outbox) => mountRouter(koa, productRoutes(productUseCases({ db, outbox }), deps.verifier, db)),
  });
  let consumer: Consumer;
  try {
    consumer = await consumeCatalogEvents({
      bus: deps.bus,
      logger,
      queue: deps.queue ?? DEFAULT_CATALOG_QUEUE,
      resetSandboxProducts: sandboxResetUseCase({ outbox: service.outbox }),
    });
  } catch (error) {
    await service.stop();
    throw error;
  }
  return {
    ...service,
    consumer,
    async stop() {
      // No delivery may start on a database the service is letting go of.
      await consumer.close();
      await service.stop();
    },
  };
}
