import client from 'prom-client';

/**
 * One registry per process. In the embedded mode several services share a process, so series
 * carry a `service` label rather than living in separate registries.
 */
export const metricsRegistry = new client.Registry();
/**
 * prom-client samples event-loop lag with a timer every 10 ms by default: 100 wake-ups a second
 * that cost an idle process about 7 ms of CPU each second (measured on Node 20), every service of
 * the distributed mode together about 5 % of a core doing nothing. Every 100 ms still gives a
 * scrape interval of 15 s 150 samples: a stall longer than that always shows as a late sample,
 * a shorter one when it covers a sample's time (the percentiles stay right over many scrapes).
 */
export const EVENT_LOOP_SAMPLE_MS = 100;
client.collectDefaultMetrics({ register: metricsRegistry, eventLoopMonitoringPrecision: EVENT_LOOP_SAMPLE_MS });

export const httpRequestDuration = new client.Histogram({
  name: 'merx_http_request_duration_seconds',
  help: 'HTTP request latency by service, method, route and status',
  labelNames: ['service', 'method', 'route', 'status'] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
  registers: [metricsRegistry],
});

export const busMessages = new client.Counter({
  name: 'merx_bus_messages_total',
  help: 'Bus messages by direction (published, consumed, duplicate, poisoned) and topic',
  labelNames: ['service', 'direction', 'topic'] as const,
  registers: [metricsRegistry],
});

export const busPoisoned = new client.Counter({
  name: 'merx_bus_poisoned_total',
  help: 'Messages moved to a poison queue after their last allowed delivery failed, by consuming service, logical queue and topic',
  labelNames: ['service', 'queue', 'topic'] as const,
  registers: [metricsRegistry],
});

export const busRetried = new client.Counter({
  name: 'merx_bus_retried_total',
  help: 'Failed deliveries scheduled for a later retry, by consuming service, logical queue and topic',
  labelNames: ['service', 'queue', 'topic'] as const,
  registers: [metricsRegistry],
});

/** The gateway's public gRPC port: connections open now, and those it closed itself, by why. */
export const grpcConnectionsOpen = new client.Gauge({
  name: 'merx_grpc_connections',
  help: 'Connections open on the public gRPC port',
  registers: [metricsRegistry],
});

export const grpcConnectionsClosed = new client.Counter({
  name: 'merx_grpc_connections_closed_total',
  help: 'Connections the public gRPC port closed itself, by reason (capacity, per_address, unauthenticated, too_many_pings)',
  labelNames: ['reason'] as const,
  registers: [metricsRegistry],
});

export const outboxBacklog = new client.Gauge({
  name: 'merx_outbox_backlog',
  help: 'Outbox rows seen waiting for publication at the last relay pass',
  labelNames: ['service'] as const,
  registers: [metricsRegistry],
});

/**
 * Every statement sent to the database, by driver, counted where each one is sent (not BEGIN and
 * COMMIT): the load a feature puts on the database shows here as statements per second, in both
 * modes (the embedded process counts every service's; each distributed process its own).
 */
export const dbStatements = new client.Counter({
  name: 'merx_db_statements_total',
  help: 'Statements sent to the database, by driver (pg or pglite)',
  labelNames: ['driver'] as const,
  registers: [metricsRegistry],
});

export const readinessState = new client.Gauge({
  name: 'merx_readiness_check',
  help: 'Each readiness check at the last /readyz or /metrics: 1 ok, 0.5 degraded (serving, some routes answer 503), 0 failed (not ready)',
  labelNames: ['service', 'check'] as const,
  registers: [metricsRegistry],
});

export { client as promClient };
