import type Koa from 'koa';
import type { Bus } from './bus.js';
import type { Db } from './db.js';
import { createServiceApp, type ReadinessCheck } from './http.js';
import { purgeExpiredIdempotencyKeys } from './idempotency.js';
import type { Logger } from './logger.js';
import { scheduleMaintenance, type MaintenanceTask } from './maintenance.js';
import { migrateSchema, type Migration, type MigrationMode } from './migrations.js';
import { MemoryBus } from './memory-bus.js';
import { Outbox, OutboxRelay } from './outbox.js';
import { listen, type RunningServer } from './server.js';

export interface ServiceDefinition {
  /** Also the name of the service's own database schema. */
  name: string;
  schema: string;
  migrations: Migration[];
  /** `verify` when the deployment's migrate command owns the schema (default `apply`). */
  migrationMode?: MigrationMode;
  db: Db;
  bus: Bus;
  logger: Logger;
  port: number;
  host?: string;
  /** Runs once the schema is migrated and before the app is built (load keys, warm caches). */
  prepare?(): Promise<void>;
  /** Mounts the service's routers, given the outbox its use cases write events through. */
  routes(app: Koa, outbox: Outbox): void;
  beforeJsonBody?(app: Koa, outbox: Outbox): void;
  maintenance?: MaintenanceTask[];
  readiness?: ReadinessCheck[];
  /** The service credential (MERX_SERVICE_TOKEN): the API then answers only calls the gateway vouches for. */
  gatewayCredential?: string;
}

export interface RunningService extends RunningServer {
  /** Every check of the public /readyz, for the admin listener's detailed one. */
  readiness: ReadinessCheck[];
  outbox: Outbox;
  relay: OutboxRelay;
  stop(): Promise<void>;
}

/**
 * What every backend service does the same way: migrate its schema, open the outbox and its
 * relay, serve HTTP with the shared middleware and readiness checks, keep house, stop in order
 * (stop taking requests, then drain the relay).
 */
export async function startService(definition: ServiceDefinition): Promise<RunningService> {
  const { db, bus, logger, schema } = definition;
  await migrateSchema(db, schema, definition.migrations, definition.migrationMode);
  await definition.prepare?.();
  // The embedded bus keeps its queues in this database: events go straight into them with the change.
  const outbox = new Outbox(db, schema, bus instanceof MemoryBus && bus.storesIn(db) ? bus : undefined);
  const relay = new OutboxRelay({ db, bus, outbox, logger, service: definition.name });
  const readiness: ReadinessCheck[] = [
    { name: 'database', check: () => db.ping() },
    {
      // Writes go on without the broker (their events wait in the outbox), so a lost broker
      // degrades the service instead of taking it out of its load balancer.
      name: 'bus',
      check: () => (bus.isConnected() ? undefined : 'broker not connected: events wait in the outbox and consumers are paused'),
    },
    { name: 'poison', check: () => poisonDetail(bus) },
    ...(definition.readiness ?? []),
  ];
  const app = createServiceApp({
    service: definition.name,
    logger,
    readiness,
    ...(definition.beforeJsonBody ? { beforeJsonBody: (koa: Koa) => definition.beforeJsonBody!(koa, outbox) } : {}),
    routes: (koa) => definition.routes(koa, outbox),
    ...(definition.gatewayCredential ? { gatewayCredential: definition.gatewayCredential } : {}),
  });
  const server = await listen(app, definition.port, definition.host);
  relay.start();
  const maintenance = scheduleMaintenance(
    [{ name: 'expired idempotency keys', run: () => purgeExpiredIdempotencyKeys(db, schema) }, ...(definition.maintenance ?? [])],
    logger,
  );
  return {
    ...server,
    readiness,
    outbox,
    relay,
    async stop() {
      maintenance.stop();
      await server.close();
      await relay.stop();
    },
  };
}

/**
 * Poisoned messages make a service degraded, never unready: it still serves and consumes, and
 * taking it out of rotation would not bring them back. The detail names the queues and the way
 * to list and replay them. A broker that cannot answer is the bus check's to report.
 */
async function poisonDetail(bus: Bus): Promise<string | undefined> {
  const queues = bus.poison.consumedQueues();
  if (queues.length === 0) return undefined;
  const counts = await bus.poison.counts(queues).catch(() => ({}) as Record<string, number>);
  const poisoned = Object.entries(counts).filter(([, count]) => count > 0);
  if (poisoned.length === 0) return undefined;
  const listed = poisoned.map(([queue, count]) => `${count} in ${queue}`).join(', ');
  return `poisoned messages: ${listed}; list and replay them with GET /admin/v1/bus/poison and POST /admin/v1/bus/poison/replay`;
}
