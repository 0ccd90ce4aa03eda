import assert from 'node:assert/strict';
import { startTracing, stopTracing } from '@merx/kit';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedSpan } from '@merx/kit/testing';
import { call, createMerchant, eventually, sharedStack, type Stack } from '../src/harness/index.js';

/** OTLP span kinds as the receiver gets them. */
const KIND = { server: 2, client: 3, producer: 4, consumer: 5 } as const;

/** The services a product's creation goes through, and those that consume its event. */
const TRACED_SERVICES = ['gateway', 'catalog', 'audit', 'webhooks'] as const;

/**
 * One `POST /api/v1/products` followed through every service: the gateway's span, its call to
 * the catalog, the catalog's SQL, the publication of products.created and its processing by the
 * audit and webhooks consumers, all in one trace, each span the child of the one before.
 */
describe('tracing across services (OpenTelemetry over OTLP)', () => {
  let stack: Stack;
  let receiver: OtlpReceiver;

  before(async function () {
    this.timeout(180_000);
    stack = await sharedStack();
    receiver = await startOtlpReceiver();
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '100' };
    if (stack.mode === 'distributed') {
      // The shared stack runs without tracing, as a deployment does by default: these four restart with it.
      for (const service of TRACED_SERVICES) {
        await stack.kill(service);
        await stack.start(service, env);
      }
    } else {
      process.env.OTEL_BSP_SCHEDULE_DELAY = env.OTEL_BSP_SCHEDULE_DELAY;
      await startTracing('merx', env);
    }
  });

  after(async function () {
    this.timeout(180_000);
    if (!stack || !receiver) return; // the stack never started: nothing to restore
    if (stack.mode === 'distributed') {
      for (const service of TRACED_SERVICES) {
        await stack.kill(service);
        await stack.start(service);
      }
    } else {
      await stopTracing();
      delete process.env.OTEL_BSP_SCHEDULE_DELAY;
    }
    await receiver.close();
  });

  /** Which service made a span: the resource's name per process, or the span's own attribute in the one embedded process. */
  function serviceOf(span: ReceivedSpan): string {
    return stack.mode === 'distributed' ? span.service.replace(/^merx-/, '') : String(span.attributes['merx.service'] ?? '');
  }

  it('follows one product creation from the gateway through the catalog, PostgreSQL and the bus to its consumers', async function () {
    this.timeout(60_000);
    const merchant = await createMerchant(stack);
    // A caller's own trace is linked, never joined: the edge decides what is traced.
    const callerTrace = { traceId: 'c0ffee00c0ffee00c0ffee00c0ffee00', spanId: 'c0ffee00c0ffee00' };
    const created = await call(stack, 'POST', '/api/v1/products', {
      token: merchant.token,
      body: { sku: 'TRACE-1', title: 'Traced', price: '10.00', currency: 'EUR' },
      headers: { traceparent: `00-${callerTrace.traceId}-${callerTrace.spanId}-01` },
    });
    assert.equal(created.status, 201, created.text);
    const requestId = created.headers.get('x-request-id');

    const edge = await eventually(
      async () => receiver.spans.find((span) => span.kind === KIND.server && serviceOf(span) === 'gateway' && span.attributes['merx.request_id'] === requestId),
      (span) => span !== undefined,
      'the gateway span of the request',
    );
    const traceId = edge!.traceId;
    const inTrace = () => receiver.spans.filter((span) => span.traceId === traceId);
    const consumedBy = (spans: ReceivedSpan[], service: string) =>
      spans.find((span) => span.kind === KIND.consumer && span.name === 'process products.created' && serviceOf(span) === service);
    // Each process exports on its own schedule: the catalog's request span ends after the
    // relay has published, so the consumers' spans can arrive before it. Wait for every part.
    const spans = await eventually(
      async () => inTrace(),
      (found) =>
        consumedBy(found, 'audit') !== undefined &&
        consumedBy(found, 'webhooks') !== undefined &&
        found.some((span) => span.kind === KIND.server && serviceOf(span) === 'catalog') &&
        found.some((span) => span.kind === KIND.producer && span.name === 'publish products.created') &&
        found.some((span) => span.kind === KIND.client && span.name === 'POST catalog'),
      "every service's spans",
    );

    const byId = new Map(spans.map((span) => [span.spanId, span]));
    const parentOf = (span: ReceivedSpan) => byId.get(span.parentSpanId);
    const one = (what: string, predicate: (span: ReceivedSpan) => boolean) => {
      const found = spans.filter(predicate);
      assert.equal(found.length, 1, `one ${what} in ${spans.map((span) => `${serviceOf(span)}:${span.name}`).join(', ')}`);
      return found[0]!;
    };

    assert.equal(edge!.parentSpanId, '', 'the edge starts the trace');
    assert.notEqual(traceId, callerTrace.traceId);
    assert.deepEqual(edge!.links, [callerTrace]);
    assert.ok(
      receiver.spans.every((span) => span.traceId !== callerTrace.traceId),
      "no service joined the caller's trace",
    );
    assert.equal(edge!.attributes['http.request.method'], 'POST');
    assert.equal(edge!.attributes['http.response.status_code'], 201);
    const proxied = one(
      'gateway call to the catalog',
      (span) => span.kind === KIND.client && serviceOf(parentOf(span) ?? span) === 'gateway' && span.name === 'POST catalog',
    );
    assert.equal(proxied.parentSpanId, edge!.spanId);
    const catalog = one('catalog request', (span) => span.kind === KIND.server && serviceOf(span) === 'catalog');
    assert.equal(catalog.parentSpanId, proxied.spanId, "the catalog continues the gateway's trace (traceparent over HTTP)");
    assert.equal(catalog.name, 'POST /api/v1/products');
    assert.equal(catalog.attributes['merx.merchant_id'], merchant.merchantId);

    const descendsFrom = (span: ReceivedSpan, ancestor: ReceivedSpan): boolean => {
      for (let current = parentOf(span); current; current = parentOf(current)) if (current.spanId === ancestor.spanId) return true;
      return false;
    };
    const statements = spans.filter(
      (span) => span.attributes['db.system.name'] === 'postgresql' && span.attributes['db.query.text'] !== undefined && descendsFrom(span, catalog),
    );
    assert.ok(
      statements.some((span) => /INSERT INTO catalog\.products/.test(String(span.attributes['db.query.text']))),
      "the catalog's SQL is in the trace",
    );

    const publish = one('publication of products.created', (span) => span.kind === KIND.producer && span.name === 'publish products.created');
    assert.ok(descendsFrom(publish, catalog), "the outbox relay publishes inside the request's trace");
    for (const service of ['audit', 'webhooks']) {
      const consumed = consumedBy(spans, service)!;
      assert.equal(consumed.parentSpanId, publish.spanId, `${service} continues the trace from the message headers`);
      assert.equal(consumed.attributes['messaging.destination.name'], 'products.created');
    }
    // Every span of the trace hangs from the edge's: nothing is orphaned on the way.
    for (const span of spans) if (span !== edge) assert.ok(descendsFrom(span, edge!), `${serviceOf(span)}:${span.name} is linked to the request`);
  });
});
