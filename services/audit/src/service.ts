import { isInternalEvent } from '@merx/contracts';
import {
  batchPerKey,
  mountRouter,
  WORK_QUEUES,
  startService,
  type Bus,
  type Consumer,
  type Db,
  type Logger,
  type MerxEvent,
  type ReadinessCheck,
  type RunningService,
  type TokenVerifier,
  type MigrationMode,
} from '@merx/kit';
import { auditRoutes } from './routes/audit.js';
import { purgeEntriesOlderThan } from './store/entries-store.js';
import { AUDIT_SCHEMA, auditMigrations } from './store/migrations.js';
import { auditLog } from './usecases/audit-log.js';

/** The durable queue the audit replicas share (the bus prefixes it with the deployment). */
export const AUDIT_QUEUE = WORK_QUEUES.audit;

export interface AuditDeps {
  /** `verify` when the deployment's migrate command owns the schema. */
  migrationMode?: MigrationMode;
  /** The service credential (MERX_SERVICE_TOKEN): the API and gRPC then answer only calls through the gateway. Absent: anyone with a token (component tests). */
  gatewayCredential?: string;
  db: Db;
  bus: Bus;
  logger: Logger;
  verifier: TokenVerifier;
  port: number;
  host?: string;
  /** Beyond the database and the bus: the revocation list, like every token-checking service. */
  readiness?: ReadinessCheck[];
  /** Entries older than this are purged (after moving the checkpoint); undefined keeps them forever. */
  retentionDays?: number;
  prefetch?: number;
}

export interface RunningAudit extends RunningService {
  consumer: Consumer;
}

export async function startAudit(deps: AuditDeps): Promise<RunningAudit> {
  const log = auditLog(deps.db);
  const { retentionDays } = deps;
  const service = await startService({
    name: 'audit',
    schema: AUDIT_SCHEMA,
    migrations: auditMigrations,
    migrationMode: deps.migrationMode,
    ...(deps.gatewayCredential ? { gatewayCredential: deps.gatewayCredential } : {}),
    db: deps.db,
    bus: deps.bus,
    logger: deps.logger,
    port: deps.port,
    ...(deps.host ? { host: deps.host } : {}),
    ...(deps.readiness ? { readiness: deps.readiness } : {}),
    routes: (koa) => mountRouter(koa, auditRoutes(log, deps.verifier)),
    maintenance: retentionDays
      ? [{ name: 'audit retention', run: () => deps.db.transaction((tx) => purgeEntriesOlderThan(tx, new Date(Date.now() - retentionDays * 86_400_000))) }]
      : [],
  });
  // Every event of every service, through one durable queue (AUDIT_QUEUE); the inbox makes redeliveries harmless.
  // Order per merchant: one replica consumes at a time (the others stand by), and inside it a
  // merchant's events are appended in delivery order, those that queue up during a write going
  // together in the next transaction; different merchants proceed in parallel.
  const appendInOrder = batchPerKey<MerxEvent>((merchantId, events) => log.recordEventsOfMerchant(merchantId, events));
  const consumer = await deps.bus.consume(
    { queue: AUDIT_QUEUE, bindings: ['#'], prefetch: deps.prefetch ?? 256, singleActiveConsumer: true },
    async (event) => {
      // Messages between services are plumbing; the public event of the same change is what is audited.
      if (isInternalEvent(event.topic)) return;
      await appendInOrder(event.merchant_id, event);
    },
  );
  return {
    ...service,
    consumer,
    async stop() {
      await consumer.close();
      await service.stop();
    },
  };
}
