import {
  createServiceApp,
  listen,
  migrateSchema,
  mountRouter,
  Outbox,
  purgeExpiredIdempotencyKeys,
  scheduleMaintenance,
  OutboxRelay,
  type Bus,
  type Db,
  type Logger,
  type RunningServer,
  type TokenVerifier,
} from '@merx/kit';
import { productRoutes } from './routes/products.js';
import { CATALOG_SCHEMA, catalogMigrations } from './store/migrations.js';
import { productUseCases } from './usecases/products.js';

export interface CatalogDeps {
  db: Db;
  bus: Bus;
  logger: Logger;
  verifier: TokenVerifier;
  port: number;
  host?: string;
}

export interface RunningCatalog extends RunningServer {
  relay: OutboxRelay;
  stop(): Promise<void>;
}

/** Wires the catalog: migrations, the outbox relay, the HTTP app. Same code in both run modes. */
export async function startCatalog(deps: CatalogDeps): Promise<RunningCatalog> {
  await migrateSchema(deps.db, CATALOG_SCHEMA, catalogMigrations);
  const outbox = new Outbox(deps.db, CATALOG_SCHEMA);
  const relay = new OutboxRelay({ db: deps.db, bus: deps.bus, outbox, logger: deps.logger, service: 'catalog' });
  const products = productUseCases({ db: deps.db, outbox });
  const app = createServiceApp({
    service: 'catalog',
    logger: deps.logger,
    readiness: [
      { name: 'database', check: () => deps.db.ping() },
      { name: 'bus', check: () => { if (!deps.bus.isConnected()) throw new Error('broker not connected'); } },
    ],
    routes: (koa) => mountRouter(koa, productRoutes(products, deps.verifier, deps.db)),
  });
  const server = await listen(app, deps.port, deps.host);
  relay.start();
  const maintenance = scheduleMaintenance([{ name: 'expired idempotency keys', run: () => purgeExpiredIdempotencyKeys(deps.db, CATALOG_SCHEMA) }], deps.logger);
  return {
    ...server,
    relay,
    async stop() {
      maintenance.stop();
      await server.close();
      await relay.stop();
    },
  };
}
