import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Context as TraceContext,
  type Link,
  type Span,
  type SpanOptions,
} from '@opentelemetry/api';
import { loadConfig, z } from './config.js';

/**
 * OpenTelemetry traces at our own boundaries: HTTP in and out, each SQL statement, every publish
 * and consume on the bus. Spans are made by hand where requests cross those boundaries instead of
 * by auto-instrumentation, which under ESM needs an `--import` loader hook and patches libraries.
 *
 * Off by default and then free: without OTEL_EXPORTER_OTLP_ENDPOINT the SDK is never imported,
 * every helper here returns at its first line, and no event carries a trace context.
 */

/** The W3C fields a carried context consists of (`traceparent`, and `tracestate` when present). */
export type TraceCarrier = Record<string, string>;

/** Both an empty string (Compose's `${VAR:-}`) and an absent variable mean "not set". */
const unsetWhenEmpty = (value: unknown) => (typeof value === 'string' && value.trim() === '' ? undefined : value);

const otlpUrl = z.preprocess(
  unsetWhenEmpty,
  z
    .string()
    .refine((value) => {
      try {
        return ['http:', 'https:'].includes(new URL(value).protocol);
      } catch {
        return false;
      }
    }, 'must be an http:// or https:// URL of an OTLP/HTTP receiver (e.g. http://otel-collector:4318)')
    .optional(),
);
const otlpProtocol = z.preprocess(
  unsetWhenEmpty,
  z
    .enum(['http/protobuf', 'http/json'], {
      error: "must be http/protobuf or http/json (OTLP over gRPC is not built in; point it at a collector's HTTP port, 4318)",
    })
    .optional(),
);

export const TRACE_SAMPLERS = [
  'always_on',
  'always_off',
  'traceidratio',
  'parentbased_always_on',
  'parentbased_always_off',
  'parentbased_traceidratio',
] as const;

/** The standard OTel variables we honour; the exporter itself also reads OTEL_EXPORTER_OTLP_HEADERS and _TIMEOUT. */
export const tracingSettingsSchema = z
  .object({
    OTEL_SDK_DISABLED: z.preprocess(unsetWhenEmpty, z.enum(['true', 'false'], { error: 'must be true or false' }).default('false')),
    OTEL_TRACES_EXPORTER: z.preprocess(unsetWhenEmpty, z.enum(['otlp', 'none'], { error: 'must be otlp or none' }).default('otlp')),
    OTEL_EXPORTER_OTLP_ENDPOINT: otlpUrl,
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: otlpUrl,
    OTEL_EXPORTER_OTLP_PROTOCOL: otlpProtocol,
    OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: otlpProtocol,
    OTEL_SERVICE_NAME: z.preprocess(unsetWhenEmpty, z.string().optional()),
    OTEL_TRACES_SAMPLER: z.preprocess(
      unsetWhenEmpty,
      z.enum(TRACE_SAMPLERS, { error: `must be one of ${TRACE_SAMPLERS.join(', ')}` }).default('parentbased_always_on'),
    ),
    OTEL_TRACES_SAMPLER_ARG: z.preprocess(
      unsetWhenEmpty,
      z.coerce
        .number({ error: 'must be a ratio between 0 and 1' })
        .min(0, 'must be a ratio between 0 and 1')
        .max(1, 'must be a ratio between 0 and 1')
        .optional(),
    ),
  })
  .transform((env) => ({
    disabled: env.OTEL_SDK_DISABLED === 'true' || env.OTEL_TRACES_EXPORTER === 'none',
    // The signal-specific endpoint is used as given; the general one gets the traces path (OTLP spec).
    endpoint:
      env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ??
      (env.OTEL_EXPORTER_OTLP_ENDPOINT ? `${env.OTEL_EXPORTER_OTLP_ENDPOINT.replace(/\/+$/, '')}/v1/traces` : undefined),
    protocol: env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL ?? 'http/protobuf',
    serviceName: env.OTEL_SERVICE_NAME,
    sampler: env.OTEL_TRACES_SAMPLER,
    samplerRatio: env.OTEL_TRACES_SAMPLER_ARG ?? 1,
  }));

export type TracingSettings = z.infer<typeof tracingSettingsSchema>;

/** Validates the OTEL_* settings (a ConfigError names each bad one); for main.ts, before any port opens. */
export function tracingSettingsFromEnv(env: Record<string, string | undefined> = process.env): TracingSettings {
  return loadConfig('tracing', tracingSettingsSchema, env);
}

export interface Tracing {
  /** True when spans are recorded and exported. */
  readonly enabled: boolean;
  /** Where spans go (the traces URL), for the start-up log line. */
  readonly endpoint?: string;
  /** Exports what is buffered and stops; spans made afterwards are dropped. */
  shutdown(): Promise<void>;
}

const OFF: Tracing = { enabled: false, shutdown: async () => undefined };

let enabled = false;
let active: Tracing = OFF;

/** Whether this process records spans; every boundary checks it first. */
export function tracingEnabled(): boolean {
  return enabled;
}

/**
 * Starts exporting spans when an OTLP endpoint is configured; otherwise does nothing and loads
 * nothing. `defaultServiceName` (`merx-catalog`) stands unless OTEL_SERVICE_NAME says otherwise.
 * Throws ConfigError for a bad setting. One SDK per process: a second start replaces the first.
 */
export async function startTracing(defaultServiceName: string, env: Record<string, string | undefined> = process.env): Promise<Tracing> {
  const settings = tracingSettingsFromEnv(env);
  if (settings.disabled || !settings.endpoint) return OFF;
  await stopTracing();
  const { registerTracerProvider } = await import('./tracing-sdk.js');
  const provider = await registerTracerProvider({ ...settings, endpoint: settings.endpoint, serviceName: settings.serviceName ?? defaultServiceName });
  enabled = true;
  active = {
    enabled: true,
    endpoint: settings.endpoint,
    shutdown: async () => {
      enabled = false;
      await provider.shutdown();
    },
  };
  return active;
}

/** Flushes and stops the process's tracing, if any (stopOnSignals calls it last). */
export async function stopTracing(): Promise<void> {
  const current = active;
  active = OFF;
  await current.shutdown();
}

const tracer = () => trace.getTracer('merx');

/** The current context as W3C fields, or undefined when nothing is being traced. */
export function currentTraceCarrier(): TraceCarrier | undefined {
  if (!enabled || !trace.getSpan(context.active())?.spanContext()) return undefined;
  const carrier: TraceCarrier = {};
  propagation.inject(context.active(), carrier);
  return carrier.traceparent ? carrier : undefined;
}

/** The context a carrier describes (the root context when it holds none). */
export function contextFromCarrier(carrier: TraceCarrier | Record<string, unknown> | undefined): TraceContext {
  if (!carrier) return ROOT_CONTEXT;
  const fields: TraceCarrier = {};
  for (const name of ['traceparent', 'tracestate']) {
    const value = carrier[name];
    if (typeof value === 'string') fields[name] = value;
    else if (Buffer.isBuffer(value)) fields[name] = value.toString('latin1'); // AMQP may hand header strings back as bytes
  }
  return propagation.extract(ROOT_CONTEXT, fields);
}

/** Adds `traceparent` (and `tracestate`) for the active span to outgoing headers; nothing when not tracing. */
export function injectTraceHeaders(headers: Record<string, string>): void {
  if (enabled) propagation.inject(context.active(), headers);
}

/** Header names an edge must not forward from a client: the trace a request joins is the edge's decision. */
export const TRACE_HEADERS = ['traceparent', 'tracestate'] as const;

function failed(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}

/** Runs `work` in a span made current for it; an error ends the span as failed. Without tracing, just runs it. */
export async function inSpan<T>(name: string, options: SpanOptions & { parent?: TraceContext }, work: (span: Span | undefined) => Promise<T>): Promise<T> {
  if (!enabled) return work(undefined);
  const parent = options.parent ?? context.active();
  const span = tracer().startSpan(name, options, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => work(span));
  } catch (error) {
    failed(span, error);
    throw error;
  } finally {
    span.end();
  }
}

// ---------------------------------------------------------------------------------------------
// HTTP

export interface ServerSpanOptions {
  service: string;
  method: string;
  path: string;
  headers: Record<string, string | string[] | undefined>;
  /**
   * Services continue the trace of the gateway that called them. The edge starts its own and
   * only links the client's: a caller must not choose our sampling or splice into our traces.
   */
  continueIncomingTrace: boolean;
}

export interface ServerSpan {
  /** Runs the request's handling inside the span. */
  run<T>(work: () => Promise<T>): Promise<T>;
  end(outcome: { status: number; route?: string; requestId: string; merchantId?: string | null }): void;
}

const headerText = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/** A SERVER span for one HTTP request; undefined when not tracing. */
export function startServerSpan(options: ServerSpanOptions): ServerSpan | undefined {
  if (!enabled) return undefined;
  const incoming = contextFromCarrier({ traceparent: headerText(options.headers.traceparent), tracestate: headerText(options.headers.tracestate) });
  const incomingSpan = trace.getSpanContext(incoming);
  const links: Link[] = !options.continueIncomingTrace && incomingSpan ? [{ context: incomingSpan }] : [];
  const parent = options.continueIncomingTrace ? incoming : ROOT_CONTEXT;
  const span = tracer().startSpan(
    options.method,
    { kind: SpanKind.SERVER, links, attributes: { 'http.request.method': options.method, 'url.path': options.path, 'merx.service': options.service } },
    parent,
  );
  return {
    run: (work) => context.with(trace.setSpan(parent, span), work),
    end({ status, route, requestId, merchantId }) {
      if (route) {
        span.updateName(`${options.method} ${route}`);
        span.setAttribute('http.route', route);
      }
      span.setAttribute('http.response.status_code', status);
      span.setAttribute('merx.request_id', requestId);
      if (merchantId) span.setAttribute('merx.merchant_id', merchantId);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    },
  };
}

/** A CLIENT span around a call to another service, its context added to `headers`. */
export function inClientSpan<T>(
  peer: string,
  method: string,
  url: string,
  headers: Record<string, string>,
  work: (span: Span | undefined) => Promise<T>,
): Promise<T> {
  if (!enabled) return work(undefined);
  return inSpan(
    `${method} ${peer}`,
    { kind: SpanKind.CLIENT, attributes: { 'http.request.method': method, 'url.full': url, 'merx.peer.service': peer } },
    (span) => {
      injectTraceHeaders(headers);
      return work(span);
    },
  );
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL

const MAX_STATEMENT_TEXT = 2_000;

/**
 * A CLIENT span per SQL statement, only inside a traced unit of work: the relay's and the
 * schedulers' polling would otherwise make a trace of their own every second. The text is the
 * parameterised statement; values are never recorded.
 */
export function traceQuery<T>(system: 'postgres' | 'pglite', sql: string, work: () => Promise<T>): Promise<T> {
  if (!enabled || !trace.getSpan(context.active())) return work();
  const operation = /^\s*([A-Za-z]+)/.exec(sql)?.[1]?.toUpperCase() ?? 'SQL';
  return inSpan(
    operation,
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'db.system.name': 'postgresql',
        'db.operation.name': operation,
        'db.query.text': sql.length > MAX_STATEMENT_TEXT ? `${sql.slice(0, MAX_STATEMENT_TEXT)}…` : sql,
        'merx.db.driver': system === 'postgres' ? 'pg' : 'pglite',
      },
    },
    work,
  );
}

/** An INTERNAL span around a database transaction, so its statements group under it. */
export function traceTransaction<T>(work: () => Promise<T>): Promise<T> {
  if (!enabled || !trace.getSpan(context.active())) return work();
  return inSpan('transaction', { kind: SpanKind.INTERNAL, attributes: { 'db.system.name': 'postgresql' } }, work);
}

// ---------------------------------------------------------------------------------------------
// Bus

/**
 * The context an event was written in travels from the outbox row to the bus here: the relay
 * parses each event afresh, so it is attached beside the object rather than inside it (the event
 * itself is what subscribers receive and the audit log hashes, and stays as it was).
 */
const eventCarriers = new WeakMap<object, TraceCarrier>();

export function attachTraceCarrier(event: object, carrier: TraceCarrier | undefined): void {
  if (carrier) eventCarriers.set(event, carrier);
}

export function traceCarrierOf(event: object): TraceCarrier | undefined {
  return eventCarriers.get(event);
}

/** The stored form of a carrier (an outbox column); null when there is none. */
export function serializeTraceCarrier(carrier: TraceCarrier | undefined): string | null {
  return carrier ? JSON.stringify(carrier) : null;
}

export function parseTraceCarrier(text: string | null | undefined): TraceCarrier | undefined {
  if (!text) return undefined;
  try {
    const parsed = JSON.parse(text) as unknown;
    return parsed && typeof parsed === 'object' ? (parsed as TraceCarrier) : undefined;
  } catch {
    return undefined;
  }
}

export interface PublishSpan {
  /** W3C fields for the message's headers: the consumer's parent. */
  headers: TraceCarrier;
  end(error?: unknown): void;
}

/**
 * A PRODUCER span for one event, child of the context the event was written in (or the active
 * one); undefined when not tracing or when the event was written outside any trace.
 */
export function startPublishSpan(event: { id: string; topic: string }, service: string, system: 'rabbitmq' | 'merx-embedded'): PublishSpan | undefined {
  if (!enabled) return undefined;
  const stored = traceCarrierOf(event);
  const parent = stored ? contextFromCarrier(stored) : context.active();
  if (!trace.getSpanContext(parent)) return undefined;
  const span = tracer().startSpan(
    `publish ${event.topic}`,
    {
      kind: SpanKind.PRODUCER,
      attributes: {
        'messaging.system': system,
        'messaging.operation.type': 'send',
        'messaging.destination.name': event.topic,
        'messaging.message.id': event.id,
        'merx.service': service,
      },
    },
    parent,
  );
  const headers: TraceCarrier = {};
  propagation.inject(trace.setSpan(parent, span), headers);
  return {
    headers,
    end(error) {
      if (error) failed(span, error);
      span.end();
    },
  };
}

/**
 * Runs a consumer's handling of one message in a CONSUMER span, child of the publish span its
 * headers name (a new trace when they name none).
 */
export function inConsumeSpan<T>(
  message: { id: string; topic: string; headers: Record<string, unknown> | undefined },
  consumer: { service: string; queue: string; system: 'rabbitmq' | 'merx-embedded'; deliveryCount: number },
  work: () => Promise<T>,
): Promise<T> {
  if (!enabled) return work();
  return inSpan(
    `process ${message.topic}`,
    {
      kind: SpanKind.CONSUMER,
      parent: contextFromCarrier(message.headers),
      attributes: {
        'messaging.system': consumer.system,
        'messaging.operation.type': 'process',
        'messaging.destination.name': message.topic,
        'messaging.consumer.group.name': consumer.queue,
        'messaging.message.id': message.id,
        'merx.delivery_count': consumer.deliveryCount,
        'merx.service': consumer.service,
      },
    },
    work,
  );
}
