import {
  mountRouter,
  startGrpcServer,
  startService,
  type Bus,
  type RunningGrpcServer,
  type Consumer,
  type Db,
  type Logger,
  type ReadinessCheck,
  type RunningService,
  type TokenVerifier,
  type MigrationMode,
} from '@merx/kit';
import { consumeCatalogEvents } from './events/consumer.js';
import { productRoutes } from './routes/products.js';
import { CATALOG_SCHEMA, catalogMigrations } from './store/migrations.js';
import { productGrpcService } from './grpc/product-service.js';
import { bulkProductUseCases } from './usecases/bulk-products.js';
import { productUseCases } from './usecases/products.js';
import { sandboxResetUseCase } from './usecases/sandbox-reset.js';

export interface CatalogDeps {
  /** `verify` when the deployment's migrate command owns the schema. */
  migrationMode?: MigrationMode;
  /** The service credential (MERX_SERVICE_TOKEN): the API and gRPC then answer only calls through the gateway. Absent: anyone with a token (component tests). */
  gatewayCredential?: string;
  db: Db;
  bus: Bus;
  logger: Logger;
  verifier: TokenVerifier;
  /** Extra /readyz checks (the revocation list being loaded). */
  readiness?: ReadinessCheck[];
  port: number;
  host?: string;
  /** The internal gRPC port of merx.v1.ProductService (the edge forwards to it); a free one when absent. */
  grpcPort?: number;
}

export interface RunningCatalog extends RunningService {
  consumer: Consumer;
  grpc: RunningGrpcServer;
}

/** The catalog: products, and its part of sandbox resets. Same code in both run modes. */
export async function startCatalog(deps: CatalogDeps): Promise<RunningCatalog> {
  const { db, logger } = deps;
  const service = await startService({
    name: 'catalog',
    schema: CATALOG_SCHEMA,
    migrations: catalogMigrations,
    migrationMode: deps.migrationMode,
    ...(deps.gatewayCredential ? { gatewayCredential: deps.gatewayCredential } : {}),
    db,
    bus: deps.bus,
    logger,
    port: deps.port,
    ...(deps.host ? { host: deps.host } : {}),
    ...(deps.readiness ? { readiness: deps.readiness } : {}),
    routes: (koa, outbox) => mountRouter(koa, productRoutes(productUseCases({ db, outbox }), deps.verifier, db)),
  });
  let consumer: Consumer;
  let grpc: RunningGrpcServer;
  try {
    grpc = await startGrpcServer({
      port: deps.grpcPort ?? 0,
      ...(deps.host ? { host: deps.host } : {}),
      ...(deps.gatewayCredential ? { gatewayCredential: deps.gatewayCredential } : {}),
      services: [productGrpcService(bulkProductUseCases({ db, outbox: service.outbox }), deps.verifier, logger)],
    });
  } catch (error) {
    await service.stop();
    throw error;
  }
  try {
    consumer = await consumeCatalogEvents({
      bus: deps.bus,
      logger,
      resetSandboxProducts: sandboxResetUseCase({ outbox: service.outbox }),
    });
  } catch (error) {
    await grpc.stop();
    await service.stop();
    throw error;
  }
  return {
    ...service,
    consumer,
    grpc,
    async stop() {
      await grpc.stop();
      // No delivery may start on a database the service is letting go of.
      await consumer.close();
      await service.stop();
    },
  };
}
