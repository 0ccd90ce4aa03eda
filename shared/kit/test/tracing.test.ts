import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import amqp from 'amqplib';
import { SpanKind } from '@opentelemetry/api';
import {
  AmqpBus,
  attachTraceCarrier,
  buildEvent,
  ConfigError,
  currentTraceCarrier,
  inSpan,
  MemoryBus,
  migrateSchema,
  Outbox,
  OutboxRelay,
  outboxMigration,
  outboxTraceContextMigration,
  startPublishSpan,
  startTracing,
  stopTracing,
  tracingEnabled,
  tracingSettingsFromEnv,
  type MerxEvent,
  type TraceCarrier,
} from '../src/index.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '../src/testing.js';
import { AMQP_URL, connectPostgres, deleteDeployment, dropSchema, silentLogger, testDeployment, uniqueName, waitFor } from './support.js';

const MERCHANT = 'mch_01jd3k7q8m2x4v6b9c0d1e2f3g';
// The tracing module alone: the probe measures what it loads, not the rest of the kit.
const tracingEntry = new URL('../src/tracing.js', import.meta.url).href;

/** Which OpenTelemetry SDK modules a fresh process has loaded after startTracing with `env`. */
async function sdkModulesLoadedWith(env: Record<string, string>): Promise<{ enabled: boolean; loaded: string[] }> {
  const script = `
    import { createRequire } from 'node:module';
    import { startTracing, stopTracing } from ${JSON.stringify(tracingEntry)};
    const tracing = await startTracing('probe', process.env);
    const loaded = Object.keys(createRequire(import.meta.url).cache).filter((file) => /@opentelemetry[\\\\/](sdk-trace|exporter-trace|resources)/.test(file));
    await stopTracing();
    process.stdout.write(JSON.stringify({ enabled: tracing.enabled, loaded }));
  `;
  const { stdout } = await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { env: { PATH: process.env.PATH ?? '', ...env } });
  return JSON.parse(stdout) as { enabled: boolean; loaded: string[] };
}

const traceIdOf = (carrier: TraceCarrier | undefined) => carrier?.traceparent?.split('-')[1];

describe('tracing', () => {
  describe('off by default', () => {
    it('loads no SDK and no exporter without an endpoint, and does when one is set', async function () {
      this.timeout(60_000);
      // Compose passes unset variables as empty strings: the same as unset.
      assert.deepEqual(await sdkModulesLoadedWith({ OTEL_EXPORTER_OTLP_ENDPOINT: '' }), { enabled: false, loaded: [] });
      // The probe sees the SDK when it is there, so an empty list above means something.
      const on = await sdkModulesLoadedWith({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' });
      assert.equal(on.enabled, true);
      assert.ok(
        on.loaded.some((file) => file.includes('sdk-trace-node')),
        on.loaded.join(', '),
      );
      assert.ok(
        on.loaded.some((file) => file.includes('exporter-trace-otlp-proto')),
        'http/protobuf is the default protocol',
      );
    });

    it('records nothing in this process until started: no carrier, no publish span', async () => {
      assert.equal(tracingEnabled(), false);
      await inSpan('nothing', {}, async (span) => {
        assert.equal(span, undefined);
        assert.equal(currentTraceCarrier(), undefined);
      });
      assert.equal(startPublishSpan({ id: 'evt_x', topic: 'things.created' }, 'kit-test', 'rabbitmq'), undefined);
    });

    it('refuses bad settings with one clear line naming each', () => {
      assert.throws(
        () =>
          tracingSettingsFromEnv({
            OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
            OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
            OTEL_TRACES_SAMPLER: 'sometimes',
            OTEL_TRACES_SAMPLER_ARG: '2',
          }),
        (error: unknown) => {
          assert.ok(error instanceof ConfigError);
          for (const name of ['OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_TRACES_SAMPLER', 'OTEL_TRACES_SAMPLER_ARG'])
            assert.match(error.message, new RegExp(name));
          return true;
        },
      );
      const settings = tracingSettingsFromEnv({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/',
        OTEL_TRACES_SAMPLER: 'parentbased_traceidratio',
        OTEL_TRACES_SAMPLER_ARG: '0.25',
      });
      assert.equal(settings.endpoint, 'http://collector:4318/v1/traces');
      assert.equal(settings.samplerRatio, 0.25);
      assert.equal(tracingSettingsFromEnv({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://otlp.example/traces' }).endpoint, 'https://otlp.example/traces');
      assert.equal(tracingSettingsFromEnv({}).endpoint, undefined);
      assert.equal(tracingSettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }).disabled, true);
      assert.equal(tracingSettingsFromEnv({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_TRACES_EXPORTER: 'none' }).disabled, true);
    });
  });

  describe('exporting to an OTLP receiver', () => {
    let receiver: OtlpReceiver;

    beforeEach(async () => {
      receiver = await startOtlpReceiver();
      const tracing = await startTracing('kit-test', { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' });
      assert.equal(tracing.enabled, true);
    });
    afterEach(async () => {
      await stopTracing();
      await receiver.close();
    });

    /** Flushes what the SDK holds (stopTracing exports it), then the spans of one trace. */
    async function exportedTrace(traceId: string): Promise<ReceivedSpan[]> {
      await stopTracing();
      return receiver.spans.filter((span) => span.traceId === traceId);
    }

    function only(spans: ReceivedSpan[], kind: SpanKind, name: string): ReceivedSpan {
      const found = spans.filter((span) => span.kind === kind + 1 && span.name === name);
      assert.equal(found.length, 1, `one ${name} span among ${spans.map((span) => `${span.name}/${span.kind}`).join(', ')}`);
      return found[0]!;
    }

    it('carries a stored context in broker message headers to the consumer, parent to child', async function () {
      this.timeout(30_000);
      const deployment = testDeployment();
      const bus = await AmqpBus.connect({ url: AMQP_URL, service: 'kit-test', logger: silentLogger, deployment });
      const connection = await amqp.connect(AMQP_URL);
      try {
        const seen: Array<{ event: MerxEvent; carrier: TraceCarrier | undefined }> = [];
        await bus.consume({ queue: uniqueName('trace.'), bindings: ['traced.#'], transient: true }, async (event) => {
          seen.push({ event, carrier: currentTraceCarrier() });
        });
        const raw = await connection.createChannel();
        const { queue: rawQueue } = await raw.assertQueue('', { exclusive: true });
        await raw.bindQueue(rawQueue, bus.names.exchange, 'traced.#');

        let requestTraceId = '';
        const event = buildEvent('traced.created', MERCHANT, { object: { n: 1 } });
        await inSpan('POST /things', { kind: SpanKind.SERVER }, async (span) => {
          requestTraceId = span!.spanContext().traceId;
          attachTraceCarrier(event, currentTraceCarrier());
        });
        // Published outside the request, as the outbox relay does: only the stored carrier links them.
        await bus.publish([event]);
        await waitFor(() => seen.length === 1, 'the traced delivery');
        let message: amqp.GetMessage | false = false;
        await waitFor(async () => (message = await raw.get(rawQueue, { noAck: true })) !== false, 'the raw copy');
        const headers = (message as unknown as amqp.GetMessage).properties.headers ?? {};
        const body = JSON.parse((message as unknown as amqp.GetMessage).content.toString('utf8')) as Record<string, unknown>;

        const spans = await exportedTrace(requestTraceId);
        const request = only(spans, SpanKind.SERVER, 'POST /things');
        const publish = only(spans, SpanKind.PRODUCER, 'publish traced.created');
        const processed = only(spans, SpanKind.CONSUMER, 'process traced.created');
        assert.equal(publish.parentSpanId, request.spanId);
        assert.equal(processed.parentSpanId, publish.spanId);
        assert.equal(String(headers.traceparent), `00-${requestTraceId}-${publish.spanId}-01`);
        assert.equal(traceIdOf(seen[0]!.carrier), requestTraceId, 'the handler runs inside the consumer span');
        assert.equal(processed.attributes['messaging.message.id'], event.id);
        assert.equal(body.trace_context, undefined, 'the event subscribers receive is unchanged');
        assert.deepEqual(Object.keys(body).sort(), Object.keys(event).sort());
      } finally {
        await connection.close();
        await bus.close();
        await deleteDeployment(deployment, []);
      }
    });

    it('gives each event of a batch message its own trace: two requests published together stay two traces', async function () {
      this.timeout(30_000);
      const deployment = testDeployment();
      const bus = await AmqpBus.connect({ url: AMQP_URL, service: 'kit-test', logger: silentLogger, deployment });
      try {
        const seen: Array<{ event: MerxEvent; carrier: TraceCarrier | undefined }> = [];
        await bus.consume({ queue: uniqueName('trace.'), bindings: ['batched.#'], transient: true }, async (event) => {
          seen.push({ event, carrier: currentTraceCarrier() });
        });
        const events = [0, 1].map((n) => buildEvent('batched.created', MERCHANT, { object: { n } }));
        const traceIds: string[] = [];
        for (const event of events)
          await inSpan('POST /things', { kind: SpanKind.SERVER }, async (span) => {
            traceIds.push(span!.spanContext().traceId);
            attachTraceCarrier(event, currentTraceCarrier());
          });
        await bus.publish(events);
        await waitFor(() => seen.length === 2, 'both deliveries');
        for (const [index, event] of events.entries()) {
          const handled = seen.find((delivery) => delivery.event.id === event.id)!;
          assert.equal(traceIdOf(handled.carrier), traceIds[index], 'the handler of each event runs in its own trace');
        }
        await stopTracing();
        for (const traceId of traceIds) {
          const spans = receiver.spans.filter((span) => span.traceId === traceId);
          const publish = only(spans, SpanKind.PRODUCER, 'publish batched.created');
          const processed = only(spans, SpanKind.CONSUMER, 'process batched.created');
          assert.equal(processed.parentSpanId, publish.spanId);
        }
      } finally {
        await bus.close();
        await deleteDeployment(deployment, []);
      }
    });

    it("keeps the context with the outbox row, so the relay and the consumer continue the writer's trace", async function () {
      this.timeout(30_000);
      const db = await connectPostgres();
      const schema = uniqueName('kit_test_');
      await migrateSchema(db, schema, [outboxMigration, outboxTraceContextMigration]);
      const bus = new MemoryBus({ logger: silentLogger, service: 'kit-test' });
      try {
        const outbox = new Outbox(db, schema);
        const relay = new OutboxRelay({ db, bus, outbox, logger: silentLogger, service: 'kit-test' });
        const seen: MerxEvent[] = [];
        await bus.consume({ queue: 'audit.events', bindings: ['#'] }, async (event) => {
          seen.push(event);
        });
        let requestTraceId = '';
        await inSpan('POST /things', { kind: SpanKind.SERVER }, async (span) => {
          requestTraceId = span!.spanContext().traceId;
          await outbox.transaction(async (_tx, emit) => emit(buildEvent('things.created', MERCHANT, { object: { n: 1 } })));
        });
        const { rows } = await db.query<{ trace_context: string }>(`SELECT trace_context FROM ${schema}.outbox`);
        assert.equal(traceIdOf(JSON.parse(rows[0]!.trace_context) as TraceCarrier), requestTraceId);
        await relay.relayBatch();
        await waitFor(() => seen.length === 1, 'the relayed delivery');

        const spans = await exportedTrace(requestTraceId);
        const request = only(spans, SpanKind.SERVER, 'POST /things');
        const transaction = only(spans, SpanKind.INTERNAL, 'transaction');
        const insert = only(spans, SpanKind.CLIENT, 'INSERT');
        const publish = only(spans, SpanKind.PRODUCER, 'publish things.created');
        const processed = only(spans, SpanKind.CONSUMER, 'process things.created');
        assert.equal(transaction.parentSpanId, request.spanId);
        assert.equal(insert.parentSpanId, transaction.spanId);
        assert.equal(insert.attributes['db.system.name'], 'postgresql');
        assert.match(String(insert.attributes['db.query.text']), /INSERT INTO kit_test_\w+\.outbox/);
        assert.equal(publish.parentSpanId, transaction.spanId, 'the relay publishes as a child of where the event was written');
        assert.equal(processed.parentSpanId, publish.spanId);
        assert.equal(processed.attributes['merx.service'], 'audit');
        // The relay's own polling statements run outside any trace and make no spans.
        assert.ok(
          receiver.spans.every((span) => !String(span.attributes['db.query.text'] ?? '').startsWith('DELETE FROM')),
          "no span for the relay's claim",
        );
      } finally {
        await bus.close();
        await dropSchema(db, schema);
        await db.close();
      }
    });
  });
});
