import { createContractValidator } from '@merx/contracts';
import {
  installSecretKeyRing,
  mountRouter,
  WORK_QUEUES,
  startGrpcServer,
  startService,
  type RunningGrpcServer,
  type Bus,
  type Consumer,
  type Db,
  type Logger,
  type ReadinessCheck,
  type RunningService,
  type SecretKeyRing,
  type TokenVerifier,
  type MigrationMode,
} from '@merx/kit';
import { WebhookSender } from './delivery/sender.js';
import type { HostResolver } from '@merx/kit';
import { DeliveryWorker } from './engine/worker.js';
import { eventGrpcService } from './grpc/event-service.js';
import { eventRoutes, webhookRoutes } from './routes/webhooks.js';
import type { WebhookSettings } from './settings.js';
import { purgeTombstones } from './store/destinations-store.js';
import { purgeExpiredEvents } from './store/events-store.js';
import { WEBHOOKS_SCHEMA, webhooksMigrations } from './store/migrations.js';
import { deliveryUseCases } from './usecases/deliveries.js';
import { DEFAULT_EVENT_STREAM_TIMING, eventStreamUseCase, type EventStreamTiming } from './usecases/event-stream.js';
import { EventTail } from './usecases/event-tail.js';
import { fanOut, fanOutPerMerchant } from './usecases/fanout.js';
import { attemptOutcomes } from './usecases/outcomes.js';
import { subscriptionUseCases } from './usecases/subscriptions.js';

/** Fan-out's durable queue, shared by the replicas (the bus prefixes it with the deployment). */
export const WEBHOOKS_QUEUE = WORK_QUEUES.webhooks;

export interface WebhooksDeps {
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
  settings: WebhookSettings;
  /** Seals subscriptions' and destinations' signing secrets at rest (MERX_SECRETS_KEYS). */
  secretKeys: SecretKeyRing;
  /** The internal gRPC port of merx.v1.EventService (the edge forwards to it); a free one when absent. */
  grpcPort?: number;
  /** Tests shorten how long StreamEvents lets events settle. */
  eventStreamTiming?: EventStreamTiming;
  /** DNS for the address checks (tests inject one); the system resolver otherwise. */
  resolver?: HostResolver;
  /** Tests pin time and jitter. */
  now?: () => Date;
  random?: () => number;
  /** How often an idle worker looks for retries that became due. */
  pollIntervalMs?: number;
}

export interface RunningWebhooks extends RunningService {
  consumer: Consumer;
  worker: DeliveryWorker;
  grpc: RunningGrpcServer;
  /** The one reader of new events behind every StreamEvents of this process. */
  eventTail: EventTail;
}

/**
 * Subscriptions, the events API, fan-out from the bus and the delivery workers. Every replica
 * runs all of them: fan-out shares the durable queue, workers share the PostgreSQL work queue.
 * The same engine delivers the records the merchants service routes to its destinations, and
 * takes part in sandbox resets, from the same queue.
 */
export async function startWebhooks(deps: WebhooksDeps): Promise<RunningWebhooks> {
  const { db, logger, settings } = deps;
  installSecretKeyRing(deps.secretKeys);
  const now = deps.now ?? (() => new Date());
  const policy = { allowPrivateAddresses: settings.allowPrivateAddresses, allowedPrivateHosts: settings.allowedPrivateHosts, requireHttps: false };
  const sender = new WebhookSender({
    policy,
    connectTimeoutMs: settings.connectTimeoutMs,
    totalTimeoutMs: settings.totalTimeoutMs,
    // The per-endpoint cap is the claim's to keep; many subscriptions may share one host, so a
    // host gets as many sockets as the worker has attempts in flight.
    connectionsPerOrigin: settings.workerConcurrency,
    ...(deps.resolver ? { lookup: deps.resolver } : {}),
  });
  let worker: DeliveryWorker | undefined;
  const service = await startService({
    name: 'webhooks',
    schema: WEBHOOKS_SCHEMA,
    migrations: webhooksMigrations,
    migrationMode: deps.migrationMode,
    ...(deps.gatewayCredential ? { gatewayCredential: deps.gatewayCredential } : {}),
    db,
    bus: deps.bus,
    logger,
    port: deps.port,
    ...(deps.host ? { host: deps.host } : {}),
    ...(deps.readiness ? { readiness: deps.readiness } : {}),
    routes: (koa, outbox) => {
      const subscriptions = subscriptionUseCases({ db, outbox, settings, now, ...(deps.resolver ? { lookup: deps.resolver } : {}) });
      const deliveries = deliveryUseCases({ db, outbox, eventRetentionDays: settings.eventRetentionDays, onDeliveriesDue: () => worker?.wake(), now });
      mountRouter(koa, webhookRoutes(subscriptions, deliveries, deps.verifier, db));
      mountRouter(koa, eventRoutes(deliveries, deps.verifier));
    },
    maintenance: [
      {
        name: 'expired events and deliveries',
        run: () => db.transaction((tx) => purgeExpiredEvents(tx, new Date(now().getTime() - settings.eventRetentionDays * 86_400_000))),
      },
      {
        // Kept as long as the inbox remembers a message: a sync older than that would be taken as new anyway.
        name: 'destination tombstones',
        run: () => db.transaction((tx) => purgeTombstones(tx, new Date(now().getTime() - settings.eventRetentionDays * 86_400_000))),
      },
    ],
  });
  worker = new DeliveryWorker({
    db,
    logger: logger.child({ component: 'delivery-worker' }),
    sender,
    recordFinishedAttempts: attemptOutcomes(service.outbox),
    retryPolicy: { schedule: settings.retrySchedule, windowMs: settings.retryWindowMs, ...(deps.random ? { random: deps.random } : {}) },
    concurrency: settings.workerConcurrency,
    slowConcurrency: settings.slowWorkerConcurrency,
    maxInFlightPerEndpoint: settings.maxInFlightPerEndpoint,
    maxInFlightPerMerchant: settings.maxInFlightPerMerchant,
    slowMaxInFlightPerMerchant: settings.slowMaxInFlightPerMerchant,
    slowAfterMs: settings.slowAfterMs,
    staleAfterMs: settings.workerStaleAfterMs,
    now,
    ...(deps.pollIntervalMs ? { pollIntervalMs: deps.pollIntervalMs } : {}),
  });
  let grpc: RunningGrpcServer;
  const eventStreamTiming = deps.eventStreamTiming ?? DEFAULT_EVENT_STREAM_TIMING;
  const eventTail = new EventTail({
    db,
    logger: logger.child({ component: 'event-tail' }),
    timing: eventStreamTiming,
    bufferSize: settings.eventStreamBuffer,
    now,
  });
  try {
    const followEvents = eventStreamUseCase({ db, tail: eventTail, eventRetentionDays: settings.eventRetentionDays, now, timing: eventStreamTiming });
    grpc = await startGrpcServer({
      port: deps.grpcPort ?? 0,
      ...(deps.host ? { host: deps.host } : {}),
      ...(deps.gatewayCredential ? { gatewayCredential: deps.gatewayCredential } : {}),
      services: [eventGrpcService(followEvents, deps.verifier, logger)],
    });
  } catch (error) {
    await service.stop();
    throw error;
  }
  await worker.start();
  const fanOutEvents = fanOut({ outbox: service.outbox, logger, validator: createContractValidator(), secretOverlapMs: settings.secretOverlapMs, now });
  const fanOutInBatches = fanOutPerMerchant(fanOutEvents, () => worker!.wake());
  const consumer = await deps.bus.consume({ queue: WEBHOOKS_QUEUE, bindings: ['#'], prefetch: 512 }, fanOutInBatches);
  return {
    ...service,
    consumer,
    worker,
    grpc,
    eventTail,
    async stop() {
      await grpc.stop();
      await eventTail.stop();
      await consumer.close();
      await worker!.stop();
      await service.stop();
      await sender.close();
    },
  };
}
