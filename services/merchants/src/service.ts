import {
  installSecretKeyRing,
  mountRouter,
  startGrpcServer,
  startService,
  type Bus,
  type RunningGrpcServer,
  type Consumer,
  type Db,
  type HostResolver,
  type Logger,
  type ReadinessCheck,
  type RunningService,
  type TokenVerifier,
  type MigrationMode,
  type SecretKeyRing,
} from '@merx/kit';
import { presentDestinationWithSecret } from './domain/destination.js';
import { RuleRunner } from './domain/rules/index.js';
import { consumeMerchantsEvents } from './events/consumer.js';
import { recordGrpcService } from './grpc/record-service.js';
import { configurationRoutes } from './routes/configuration.js';
import { destinationSecretRoutes } from './routes/destination-secrets.js';
import { merchantRoutes } from './routes/merchant.js';
import { recordRoutes } from './routes/records.js';
import { sandboxRoutes } from './routes/sandbox.js';
import type { MerchantsSettings } from './settings.js';
import { MERCHANTS_SCHEMA, merchantsMigrations } from './store/migrations.js';
import { configResourceUseCases } from './usecases/config-resources.js';
import { destinationSecretRotation, engineDisabledDestinations } from './usecases/destination-endpoints.js';
import { merchantProfileUseCases } from './usecases/merchant-profile.js';
import type { MerchantLookup } from './upstream/oauth-merchants.js';
import { recordUseCases } from './usecases/records.js';
import { connectionKind, destinationKind, ruleKind, sourceKind } from './usecases/resource-kinds.js';
import { RoutingQueue } from './usecases/routing-queue.js';
import { recordRouting } from './usecases/routing.js';
import { sandboxUseCases } from './usecases/sandbox.js';

export interface MerchantsDeps {
  /** `verify` when the deployment's migrate command owns the schema. */
  migrationMode?: MigrationMode;
  /** The service credential (MERX_SERVICE_TOKEN): the API and gRPC then answer only calls through the gateway. Absent: anyone with a token (component tests). */
  gatewayCredential?: string;
  db: Db;
  bus: Bus;
  logger: Logger;
  verifier: TokenVerifier;
  readiness?: ReadinessCheck[];
  port: number;
  host?: string;
  settings: MerchantsSettings;
  /** Seals destinations' signing secrets at rest and on the bus (MERX_SECRETS_KEYS, shared with webhooks). */
  secretKeys: SecretKeyRing;
  /** The internal gRPC port of merx.v1.RecordService (the edge forwards to it); a free one when absent. */
  grpcPort?: number;
  /** DNS for the destination address checks (tests inject one); the system resolver otherwise. */
  resolver?: HostResolver;
  /** Asks the oauth service about a merchant this service has no row for (it predates the service, or merchants.created is late). */
  lookupMerchant?: MerchantLookup;
}

export interface RunningMerchants extends RunningService {
  consumer: Consumer;
  grpc: RunningGrpcServer;
}

/**
 * Merchant configuration: the merchant's profile, sources, destinations, rules and connections,
 * record ingestion, routing of records to destinations (through the delivery engine of the
 * webhooks service) and sandbox resets. Same code in both run modes.
 */
export async function startMerchants(deps: MerchantsDeps): Promise<RunningMerchants> {
  const { db, logger, settings } = deps;
  installSecretKeyRing(deps.secretKeys);
  const runner = new RuleRunner({ timeoutMs: settings.ruleTimeoutMs, poolSize: settings.ruleWorkers, fairShare: settings.ruleFairShare });
  let routingQueue: RoutingQueue | undefined;
  let handlers: Parameters<typeof consumeMerchantsEvents>[2] | undefined;
  const service = await startService({
    name: 'merchants',
    schema: MERCHANTS_SCHEMA,
    migrations: merchantsMigrations,
    migrationMode: deps.migrationMode,
    ...(deps.gatewayCredential ? { gatewayCredential: deps.gatewayCredential } : {}),
    db,
    bus: deps.bus,
    logger,
    port: deps.port,
    ...(deps.host ? { host: deps.host } : {}),
    ...(deps.readiness ? { readiness: deps.readiness } : {}),
    routes: (koa, outbox) => {
      const policy = {
        allowPrivateAddresses: settings.allowPrivateAddresses,
        allowedPrivateHosts: settings.allowedPrivateHosts,
        ...(deps.resolver ? { lookup: deps.resolver } : {}),
      };
      const resources = {
        sources: configResourceUseCases(sourceKind, { db, outbox }),
        destinations: configResourceUseCases(destinationKind(policy), { db, outbox }),
        rules: configResourceUseCases(ruleKind, { db, outbox }),
        connections: configResourceUseCases(connectionKind, { db, outbox }),
      };
      const sandbox = sandboxUseCases({ db, outbox, resources });
      mountRouter(koa, merchantRoutes(merchantProfileUseCases({ db, outbox, ...(deps.lookupMerchant ? { lookup: deps.lookupMerchant } : {}) }), deps.verifier));
      mountRouter(koa, recordRoutes(recordUseCases({ db, outbox }), deps.verifier, db));
      mountRouter(koa, configurationRoutes({ path: 'sources', topic: 'sources' }, resources.sources, deps.verifier, db));
      mountRouter(
        koa,
        configurationRoutes(
          { path: 'destinations', topic: 'destinations', presentCreated: presentDestinationWithSecret },
          resources.destinations,
          deps.verifier,
          db,
        ),
      );
      mountRouter(koa, destinationSecretRoutes(destinationSecretRotation({ outbox }), deps.verifier, db));
      mountRouter(koa, configurationRoutes({ path: 'rules', topic: 'rules' }, resources.rules, deps.verifier, db));
      mountRouter(koa, configurationRoutes({ path: 'connections', topic: 'connections' }, resources.connections, deps.verifier, db));
      mountRouter(koa, sandboxRoutes(sandbox, deps.verifier, db));
      const routingLogger = logger.child({ component: 'routing' });
      routingQueue = new RoutingQueue({
        db,
        logger: routingLogger,
        route: recordRouting({ db, outbox, runner, logger: routingLogger }),
        maxPendingPerMerchant: settings.maxRoutingPendingPerMerchant,
      });
      const queue = routingQueue;
      handlers = {
        routeRecordEvent: (event) => queue.submit(event),
        resetMerchantData: sandbox.resetMerchantData,
        recordServiceReport: sandbox.recordServiceReport,
        applyEngineDisable: engineDisabledDestinations({ outbox }),
      };
    },
  });
  let grpc: RunningGrpcServer;
  try {
    grpc = await startGrpcServer({
      port: deps.grpcPort ?? 0,
      ...(deps.host ? { host: deps.host } : {}),
      ...(deps.gatewayCredential ? { gatewayCredential: deps.gatewayCredential } : {}),
      services: [recordGrpcService(recordUseCases({ db, outbox: service.outbox }), deps.verifier, logger)],
    });
  } catch (error) {
    await service.stop();
    await runner.close();
    throw error;
  }
  const consumer = await consumeMerchantsEvents(deps.bus, db, handlers!);
  routingQueue!.start();
  return {
    ...service,
    consumer,
    grpc,
    async stop() {
      await grpc.stop();
      await consumer.close();
      await routingQueue!.stop();
      await service.stop();
      await runner.close();
    },
  };
}
