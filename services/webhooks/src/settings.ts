import { configFields, distributedServiceConfig, loadConfig, z } from '@merx/kit';

/** How the delivery engine behaves; validated before the service opens a port. */
export interface WebhookSettings {
  /** Deliver to private, loopback, link-local and CGNAT addresses (local development only). */
  allowPrivateAddresses: boolean;
  /** Exact hostnames or IP literals exempt from the private-address refusal (an operator's internal ERP). */
  allowedPrivateHosts: string[];
  /** Waits between attempts, in ms: the n-th failure waits the n-th step, the last step repeats. */
  retrySchedule: number[];
  /** No attempt is scheduled later than this long after the first one; then the delivery is dead. */
  retryWindowMs: number;
  /** Attempts in flight to one endpoint at once, across every worker. */
  maxInFlightPerEndpoint: number;
  /** Attempts in flight to one merchant's endpoints in the fast lane, across every worker. */
  maxInFlightPerMerchant: number;
  /** An attempt that times out or takes this long moves its endpoint to the slow lane; one answered sooner moves it back. */
  slowAfterMs: number;
  /** Attempts in flight to one merchant's endpoints in the slow lane, across every worker: apart from its fast lane's. */
  slowMaxInFlightPerMerchant: number;
  /** Attempts in flight in one worker process. */
  workerConcurrency: number;
  /** Of those, how many may be to endpoints in the slow lane; the rest is always there for the fast lane. */
  slowWorkerConcurrency: number;
  /** A worker silent this long is presumed dead and its claimed deliveries go back to the queue. */
  workerStaleAfterMs: number;
  connectTimeoutMs: number;
  totalTimeoutMs: number;
  /** How long after a rotation the old secret keeps signing. */
  secretOverlapMs: number;
  /** Events (and finished deliveries) older than this are purged. */
  eventRetentionDays: number;
  /** Events one StreamEvents call may have waiting to be sent; past it the stream reads the database at its own pace until it has caught up. */
  eventStreamBuffer: number;
}

/** Standard Webhooks' schedule, stretched to fill the 72-hour window. */
export const DEFAULT_RETRY_SCHEDULE = '5s,5m,30m,2h,5h,10h,14h,20h';
export const DEFAULT_RETRY_WINDOW = '72h';

const duration = configFields.duration;
const schedule = configFields.durations(DEFAULT_RETRY_SCHEDULE);

const flag = (fallback: boolean) =>
  z
    .enum(['true', 'false', '1', '0'], { error: 'must be true or false' })
    .default(fallback ? 'true' : 'false')
    .transform((value) => value === 'true' || value === '1');

/** The environment variables of the delivery engine, shared by the distributed and embedded modes. */
export const webhookSettingsSchema = (defaults: { allowPrivate: boolean }) =>
  z.object({
    MERX_WEBHOOK_ALLOW_PRIVATE: flag(defaults.allowPrivate),
    MERX_WEBHOOK_ALLOWED_PRIVATE_HOSTS: z
      .string()
      .default('')
      .transform((text) =>
        text
          .split(',')
          .map((host) => host.trim().toLowerCase())
          .filter(Boolean),
      ),
    MERX_WEBHOOK_RETRY_SCHEDULE: schedule,
    MERX_WEBHOOK_RETRY_WINDOW: duration(DEFAULT_RETRY_WINDOW),
    MERX_WEBHOOK_MAX_IN_FLIGHT: configFields.positiveInt(10),
    MERX_WEBHOOK_MAX_IN_FLIGHT_PER_MERCHANT: configFields.positiveInt(200),
    MERX_WEBHOOK_SLOW_AFTER: duration('5s'),
    MERX_WEBHOOK_SLOW_MAX_IN_FLIGHT_PER_MERCHANT: configFields.positiveInt(20),
    // Requests waiting on receivers cost a socket and a few KiB each, not a thread: thousands fit.
    MERX_WEBHOOK_CONCURRENCY: configFields.positiveInt(4096),
    // A quarter of MERX_WEBHOOK_CONCURRENCY when absent.
    MERX_WEBHOOK_SLOW_CONCURRENCY: z.coerce.number().int().positive().optional(),
    MERX_WEBHOOK_WORKER_STALE_AFTER: duration('15s'),
    MERX_WEBHOOK_CONNECT_TIMEOUT: duration('5s'),
    MERX_WEBHOOK_TIMEOUT: duration('15s'),
    MERX_WEBHOOK_SECRET_OVERLAP: duration('24h'),
    MERX_EVENT_RETENTION_DAYS: configFields.positiveInt(30),
    MERX_EVENT_STREAM_BUFFER: configFields.positiveInt(1_000),
  });

export function toWebhookSettings(config: z.infer<ReturnType<typeof webhookSettingsSchema>>): WebhookSettings {
  return {
    allowPrivateAddresses: config.MERX_WEBHOOK_ALLOW_PRIVATE,
    allowedPrivateHosts: config.MERX_WEBHOOK_ALLOWED_PRIVATE_HOSTS,
    retrySchedule: config.MERX_WEBHOOK_RETRY_SCHEDULE,
    retryWindowMs: config.MERX_WEBHOOK_RETRY_WINDOW,
    maxInFlightPerEndpoint: config.MERX_WEBHOOK_MAX_IN_FLIGHT,
    maxInFlightPerMerchant: config.MERX_WEBHOOK_MAX_IN_FLIGHT_PER_MERCHANT,
    slowAfterMs: config.MERX_WEBHOOK_SLOW_AFTER,
    slowMaxInFlightPerMerchant: config.MERX_WEBHOOK_SLOW_MAX_IN_FLIGHT_PER_MERCHANT,
    workerConcurrency: config.MERX_WEBHOOK_CONCURRENCY,
    // More than the whole would mean the same as the whole.
    slowWorkerConcurrency: Math.min(
      config.MERX_WEBHOOK_SLOW_CONCURRENCY ?? Math.max(1, Math.floor(config.MERX_WEBHOOK_CONCURRENCY / 4)),
      config.MERX_WEBHOOK_CONCURRENCY,
    ),
    workerStaleAfterMs: config.MERX_WEBHOOK_WORKER_STALE_AFTER,
    connectTimeoutMs: config.MERX_WEBHOOK_CONNECT_TIMEOUT,
    totalTimeoutMs: config.MERX_WEBHOOK_TIMEOUT,
    secretOverlapMs: config.MERX_WEBHOOK_SECRET_OVERLAP,
    eventRetentionDays: config.MERX_EVENT_RETENTION_DAYS,
    eventStreamBuffer: config.MERX_EVENT_STREAM_BUFFER,
  };
}

/** Settings from an environment; the embedded mode allows private addresses by default (a laptop's receiver). */
export function webhookSettingsFromEnv(env: Record<string, string | undefined>, defaults = { allowPrivate: false }): WebhookSettings {
  return toWebhookSettings(loadConfig('webhooks', webhookSettingsSchema(defaults), env));
}

export const webhooksServiceConfig = distributedServiceConfig(3004, 9004)
  .extend(webhookSettingsSchema({ allowPrivate: false }).shape)
  // GRPC_PORT: merx.v1.EventService for the edge, on the service network only.
  .extend({ GRPC_PORT: configFields.port(50054) })
  // Shared with the merchants service: destinations' secrets travel sealed between the two.
  .extend({ MERX_SECRETS_KEYS: configFields.secretKeys });
