import assert from 'node:assert/strict';
import { anyUnpack } from '@bufbuild/protobuf/wkt';
import { ErrorInfoSchema, RetryInfoSchema } from '@merx/contracts/grpc';
import { decodeGrpcStatusDetails, grpc } from '@merx/kit';
import { call, createMerchant, E2E_GRPC_ENV, eventually, grpcClients, sharedStack, type Stack } from '../src/harness/index.js';
import { measureConnectionNeighbours, gatewayMetric, openEventStream, refusalOf, timedBatch, type HeldEventStream } from '../src/harness/neighbours/grpc.js';
import { describeFigures, neighbourBound } from '../src/harness/neighbours/latency.js';

/**
 * Issue 29 at the public gRPC port, in both modes. Each part has merchant A beside what another
 * does within its limits:
 * (a) connections that never authenticate (50 silent TCP connections, 50 HTTP/2 sessions with the
 *     preface and no stream, 5 sessions whose every call is refused UNAUTHENTICATED, each opened
 *     again as the gateway closes it) are closed within the deadline to authenticate, while A's
 *     unary gRPC calls keep p99 ≤ max(2 × quiet p99, quiet p99 + 50 ms) and under 1 s (a quiet
 *     p99 of a few milliseconds doubles with one garbage collection on a busy core);
 * (b) BatchCreateProducts is charged per item to the bulk class: B, on a plan of 200 items/s,
 *     waits for its items and is refused what cannot go within its deadline, while A's batches go
 *     at once;
 * (c) past the StreamEvents cap a stream is refused RESOURCE_EXHAUSTED naming it, an ended stream
 *     frees its slot, and the operator's override raises the cap.
 */

const AUTH_DEADLINE_MS = Number(E2E_GRPC_ENV.MERX_GRPC_AUTH_DEADLINE_MS);
const SAMPLES = 200;

describe('neighbours on the public gRPC port', function () {
  this.timeout(120_000);
  let stack: Stack;
  const cleanups: Array<() => void> = [];

  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
  });
  afterEach(() => {
    for (const cleanup of cleanups.splice(0).reverse()) cleanup();
  });

  it("closes connections that never authenticate within the deadline, and A's unary calls keep their quiet latency", async () => {
    const a = await createMerchant(stack);
    const clients = grpcClients(stack);
    cleanups.push(() => clients.close());
    const closedBefore = await gatewayMetric(stack, 'merx_grpc_connections_closed_total', 'reason="unauthenticated"');

    const { quiet, attacked, attack, openAtTheEnd } = await measureConnectionNeighbours(stack, clients.products, a, {
      samples: SAMPLES,
      counts: { silent: 50, prefaceOnly: 50, refusedCalls: 5 },
    });
    cleanups.push(() => attack.close());
    await attack.allClosed(AUTH_DEADLINE_MS + 10_000);

    const bound = neighbourBound(quiet, quiet.p99 + 50);
    const longest = (lifetimes: number[]) => Math.max(...lifetimes);
    console.log(
      [
        `      silent TCP connections (${stack.mode}): ${attack.lifetimes.silent.length} closed, the longest after ${longest(attack.lifetimes.silent).toFixed(0)} ms (deadline ${AUTH_DEADLINE_MS} ms)`,
        `      preface-only sessions: ${attack.lifetimes.prefaceOnly.length} closed, the longest after ${longest(attack.lifetimes.prefaceOnly).toFixed(0)} ms`,
        `      sessions refused UNAUTHENTICATED: ${attack.lifetimes.refusedCalls.length} closed after ${attack.unauthenticated} refused calls, the longest after ${longest(attack.lifetimes.refusedCalls).toFixed(0)} ms`,
        `      A's BatchCreateProducts quiet:    ${describeFigures(quiet)}`,
        `      A's BatchCreateProducts attacked: ${describeFigures(attacked)} (allowed p99 ${bound.toFixed(1)} ms)`,
      ].join('\n'),
    );
    assert.ok(openAtTheEnd >= 100, `the attack held ${openAtTheEnd} connections while A was measured`);
    for (const kind of ['silent', 'prefaceOnly', 'refusedCalls'] as const) {
      assert.ok(attack.lifetimes[kind].length >= (kind === 'refusedCalls' ? 5 : 50), `every ${kind} connection was closed`);
      for (const lifetime of attack.lifetimes[kind])
        assert.ok(lifetime >= AUTH_DEADLINE_MS - 500 && lifetime < AUTH_DEADLINE_MS + 3_000, `a ${kind} connection lived ${lifetime.toFixed(0)} ms`);
    }
    assert.ok(attack.unauthenticated >= 5, 'the refused sessions kept calling');
    assert.deepEqual(attack.otherAnswers, [], 'every call with a bad token was refused UNAUTHENTICATED');
    const closedByGateway = (await gatewayMetric(stack, 'merx_grpc_connections_closed_total', 'reason="unauthenticated"')) - closedBefore;
    assert.ok(closedByGateway >= 105, `merx_grpc_connections_closed_total{reason="unauthenticated"} grew by ${closedByGateway}`);
    assert.ok(
      attacked.p99 <= bound,
      `A's p99 under attack is ${attacked.p99.toFixed(1)} ms; quiet it was ${quiet.p99.toFixed(1)} ms, so at most ${bound.toFixed(1)} ms`,
    );
    // A's own connection authenticated: it is still the one A calls on.
    assert.equal((await timedBatch(clients.products, a, 'NB-AFTER', 1)).error, undefined);
  });

  it('charges BatchCreateProducts per item to the bulk class: B waits for its items or is refused, A is unaffected', async () => {
    // B is on the standard plan, whose bulk class the e2e stack sets to 200 items/s (a second's worth in the bucket).
    const [a, b] = [await createMerchant(stack), await createMerchant(stack, { plan: 'standard' })];
    const clients = grpcClients(stack);
    cleanups.push(() => clients.close());
    const quietA = await timedBatch(clients.products, a, 'NB-A-QUIET', 1_000);
    assert.equal(quietA.error, undefined, quietA.error?.details);

    const within = await timedBatch(clients.products, b, 'NB-B-1', 150);
    assert.equal(within.error, undefined, within.error?.details);
    assert.equal(within.response!.results.length, 150);

    // 400 more items need about 1.75 s of the class (50 left, 200/s): the call waits, then goes.
    const paced = timedBatch(clients.products, b, 'NB-B-2', 400, 20_000);
    // A's batch of 1,000 while B waits: A's class is its own.
    const attackedA = await timedBatch(clients.products, a, 'NB-A-ATTACKED', 1_000);
    const pacedB = await paced;
    assert.equal(pacedB.error, undefined, pacedB.error?.details);
    assert.ok(pacedB.elapsedMs >= 1_000, `B's 400 items went through after ${pacedB.elapsedMs.toFixed(0)} ms, not paced at 200 items/s`);
    assert.equal(attackedA.error, undefined, attackedA.error?.details);
    assert.ok(
      attackedA.elapsedMs <= Math.max(2 * quietA.elapsedMs, quietA.elapsedMs + 250),
      `A's batch of 1,000 took ${attackedA.elapsedMs.toFixed(0)} ms while B waited; ${quietA.elapsedMs.toFixed(0)} ms quiet`,
    );

    // 1,000 items need about 5 s; the call has 2 s: refused within them, RetryInfo naming the wait, nothing created.
    const refused = await timedBatch(clients.products, b, 'NB-B-3', 1_000, 2_000);
    assert.equal(refused.error?.code, grpc.status.RESOURCE_EXHAUSTED, `got ${refused.error?.code}: ${refused.error?.details}`);
    assert.ok(refused.elapsedMs < 2_000, `refused after ${refused.elapsedMs.toFixed(0)} ms`);
    const details = decodeGrpcStatusDetails(refused.error!.metadata)!.details;
    assert.equal(details.map((detail) => anyUnpack(detail, ErrorInfoSchema)?.reason).find(Boolean), 'rate_limited');
    const delay = details.map((detail) => anyUnpack(detail, RetryInfoSchema)?.retryDelay).find(Boolean);
    assert.ok(delay && Number(delay.seconds) >= 3, `RetryInfo: ${delay?.seconds}s`);
    const listed = await call(stack, 'GET', '/api/v1/products?sku=NB-B-3-0', { token: b.token });
    assert.deepEqual(listed.body.data, [], 'the refused batch created nothing');
    console.log(
      `      B's 400 items at 200 items/s (${stack.mode}): ${pacedB.elapsedMs.toFixed(0)} ms; 1,000 with a 2 s deadline refused after ${refused.elapsedMs.toFixed(0)} ms; A's 1,000: ${quietA.elapsedMs.toFixed(0)} ms quiet, ${attackedA.elapsedMs.toFixed(0)} ms beside B`,
    );
  });

  it('refuses a StreamEvents call past the cap naming it, frees a slot when a stream ends, and the override raises it', async () => {
    const c = await createMerchant(stack);
    const clients = grpcClients(stack);
    const streams: HeldEventStream[] = [];
    cleanups.push(() => {
      for (const stream of streams) stream.call.cancel();
      clients.close();
    });
    const since = new Date();
    const open = () => {
      const stream = openEventStream(clients.events, c, { startTime: since });
      streams.push(stream);
      return stream;
    };
    /** Streams that every one of has received a new product's event: they are all open. */
    const allLive = async (live: HeldEventStream[], sku: string) => {
      const created = await call(stack, 'POST', '/api/v1/products', { token: c.token, body: { sku, title: sku, price: '1.00', currency: 'EUR' } });
      assert.equal(created.status, 201, created.text);
      const event = await stack.events.waitFor((e) => e.topic === 'products.created' && (e.data.object as { id?: string }).id === created.body.id, 20_000);
      await eventually(
        async () => live.filter((stream) => stream.events.includes(event.id)).length,
        (count) => count === live.length,
        `${live.length} streams received ${event.id}`,
      );
    };

    // A sandbox merchant may hold 10.
    const first = Array.from({ length: 10 }, open);
    await allLive(first, 'NB-C-1');
    const eleventh = await refusalOf(open(), 10_000);
    assert.equal(eleventh?.code, grpc.status.RESOURCE_EXHAUSTED, `the eleventh stream: ${eleventh?.code} ${eleventh?.details}`);
    assert.match(eleventh!.details, /already has 10 StreamEvents streams open, its cap of 10 \(event_streams\.concurrent\)/);

    // One ends (the client cancels): its slot is free again.
    first[0]!.call.cancel();
    await first[0]!.ended;
    const replacement = await eventually(
      async () => {
        const stream = open();
        return { stream, refusal: await refusalOf(stream, 2_000) };
      },
      ({ refusal }) => refusal === undefined,
      'a stream opened in the freed slot',
    );
    await allLive([...first.slice(1), replacement.stream], 'NB-C-2');

    // The operator raises C's cap to 12: two more, then the thirteenth is refused naming 12.
    const raised = await call(stack, 'PUT', `/admin/v1/merchants/${c.merchantId}/throttle`, {
      headers: { authorization: `Bearer ${stack.operatorToken}` },
      body: { event_streams: { concurrent: 12 } },
    });
    assert.equal(raised.status, 200, raised.text);
    assert.deepEqual(raised.body.overrides, { event_streams: { concurrent: 12 } });
    const more: HeldEventStream[] = [];
    for (let index = 0; index < 2; index++) {
      const admitted = await eventually(
        async () => {
          const stream = open();
          return { stream, refusal: await refusalOf(stream, 2_000) };
        },
        ({ refusal }) => refusal === undefined,
        'a stream past the plan cap once the override is known',
      );
      more.push(admitted.stream);
    }
    await allLive([...first.slice(1), replacement.stream, ...more], 'NB-C-3');
    const thirteenth = await refusalOf(open(), 10_000);
    assert.equal(thirteenth?.code, grpc.status.RESOURCE_EXHAUSTED);
    assert.match(thirteenth!.details, /its cap of 12 /);
  });
});
