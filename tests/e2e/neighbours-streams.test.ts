import assert from 'node:assert/strict';
import { call, createMerchant, eventually, sharedStack, type Stack } from '../src/harness/index.js';
import { eventStreamsOpen, measureStreamNeighbours, type StreamsAttack } from '../src/harness/neighbours/streams.js';
import { describeFigures, neighbourBound } from '../src/harness/neighbours/latency.js';

/**
 * Issue 29, event streams: merchant B holds 1,000 StreamEvents calls open (its cap raised by the
 * operator, as the gateway allows), and nothing happens on them. The database must not work
 * harder for 1,000 open streams than for one (statements per second within 10 %), and merchant
 * A's GET /api/v1/merchant must keep its quiet latency, measured in the same run.
 *
 * The bound on A is p99 under attack ≤ max(2 × quiet p99, quiet p99 + 50 ms), and under 1 s: a
 * quiet p99 of a few milliseconds doubles with one garbage collection or a busy core alone.
 * Statements are every process's merx_db_statements_total, summed: the whole stack's load on its
 * database, each window 20 s (the idle stack has jobs every few tens of seconds), with nothing
 * else asked of the stack.
 */

const STREAMS = 1_000;
const SAMPLES = 200;
const WINDOW_MS = 20_000;

describe('neighbours on event streams: B holds 1,000 StreamEvents calls open', () => {
  let stack: Stack;
  const attacks: StreamsAttack[] = [];

  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
  });
  afterEach(async function () {
    this.timeout(60_000);
    for (const attack of attacks.splice(0)) attack.close();
    await eventually(
      () => eventStreamsOpen(stack),
      (open) => open === 0,
      'every stream of the attack closed at the webhooks service',
      30_000,
      200,
    );
  });

  it("costs the database no more with 1,000 open streams than with one, and leaves A's latency within 2× of quiet", async function () {
    this.timeout(300_000);
    const [a, b] = [await createMerchant(stack), await createMerchant(stack)];
    const { quiet, attacked, oneStream, allStreams, oneStreamAfter, attack, openBefore } = await measureStreamNeighbours(
      stack,
      { a, b },
      { streams: STREAMS, samples: SAMPLES, windowMs: WINDOW_MS },
    );
    attacks.push(attack);

    // The streams are live: one product of B reaches every one of them.
    await attack.holdOpen(stack, STREAMS, { openBefore });
    const product = await call(stack, 'POST', '/api/v1/products', {
      token: b.token,
      body: { sku: `NB-STREAMS-${Date.now()}`, title: 'One for every stream', price: '1.00', currency: 'EUR' },
    });
    assert.equal(product.status, 201, product.text);
    const event = await stack.events.waitFor((e) => e.topic === 'products.created' && (e.data.object as { id?: string }).id === product.body.id, 20_000);
    await eventually(
      async () => {
        attack.check();
        return attack.receivedBy(event.id);
      },
      (count) => count === STREAMS,
      `B's products.created on all ${STREAMS} streams`,
      60_000,
      200,
    );
    assert.equal(attack.received, STREAMS, 'each stream received that one event, once');

    const allowed = neighbourBound(quiet, quiet.p99 + 50);
    console.log(
      [
        `      database statements/s (${stack.mode}): ${oneStream.perSecond.toFixed(1)} with 1 stream of B, ${allStreams.perSecond.toFixed(1)} with ${STREAMS}, ` +
          `${oneStreamAfter.perSecond.toFixed(1)} with 1 again`,
        `      A's GET /api/v1/merchant quiet:    ${describeFigures(quiet)}`,
        `      A's GET /api/v1/merchant attacked: ${describeFigures(attacked)} (allowed p99 ${allowed.toFixed(1)} ms)`,
      ].join('\n'),
    );
    const oneStreamRate = Math.max(oneStream.perSecond, oneStreamAfter.perSecond);
    assert.ok(
      allStreams.perSecond <= oneStreamRate * 1.1,
      `${allStreams.perSecond.toFixed(1)} statements/s with ${STREAMS} streams, ${oneStreamRate.toFixed(1)} with one: more than 10 % apart`,
    );
    assert.ok(
      attacked.p99 <= allowed,
      `A's p99 under attack is ${attacked.p99.toFixed(1)} ms; quiet it was ${quiet.p99.toFixed(1)} ms, so at most ${allowed.toFixed(1)} ms is allowed`,
    );
  });
});
