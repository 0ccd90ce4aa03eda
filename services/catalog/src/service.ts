import { mountRouter, startService, type Bus, type Db, type Logger, type ReadinessCheck, type RunningService, type TokenVerifier } from '@merx/kit';
import { productRoutes } from './routes/products.js';
import { CATALOG_SCHEMA, catalogMigrations } from './store/migrations.js';
import { productUseCases } from './usecases/products.js';

export interface CatalogDeps {
  db: Db;
  bus: Bus;
  logger: Logger;
  verifier: TokenVerifier;
  /** Extra /readyz checks (the revocation list being loaded). */
  readiness?: ReadinessCheck[];
  port: number;
  host?: string;
}

export type RunningCatalog = RunningService;

/** The catalog: products. Same code in both run modes. */
export function startCatalog(deps: CatalogDeps): Promise<RunningCatalog> {
  return startService({
    name: 'catalog',
    schema: CATALOG_SCHEMA,
    migrations: catalogMigrations,
    ...deps,
    routes: (koa, outbox) => mountRouter(koa, productRoutes(productUseCases({ db: deps.db, outbox }), deps.verifier, deps.db)),
  });
}
