import assert from 'node:assert/strict';
import { WebhookReceiver } from '@merx/webhooks/testing';
import { createMerchant, E2E_WEBHOOK_ENV, eventually, sharedStack, type Stack, type TestMerchant } from '../src/harness/index.js';
import { describeFigures, latencyFigures, neighbourBound, type LatencyFigures } from '../src/harness/neighbours/latency.js';
import {
  allDeliveries,
  deliveryStages,
  deliveryWithAttempts,
  HangingEndpoint,
  measureDeliveryNeighbours,
  type HangingEndpointsAttack,
} from '../src/harness/neighbours/webhooks.js';

/**
 * Webhook delivery is fair by merchant (issue 29): merchant B points 30 subscriptions at an
 * endpoint that accepts the connection and never answers, then creates products in waves; merchant
 * A's deliveries to a fast receiver, measured quiet and then under the attack in the same run,
 * keep their p99 within twice the quiet figure (and under a second). B's deliveries are all
 * recorded: every request its endpoint saw is a timed-out attempt in the log.
 *
 * The e2e stack's retry window (3 s) is no longer than its timeout (3 s), so each of B's deliveries
 * dies at its first attempt and the engine switches the endpoint off; B switches them back on
 * before each wave, as an attacker within its limits would. Those API calls and the dead letters'
 * alerts are load of their own on the same processes, which the production schedule (72 hours of
 * retries) would not bring.
 */

/** Deliveries timed per phase: the p99 is then the second slowest, not the one outlier a busy machine makes. */
const SAMPLES = 100;
/** A's products are created one every 100 ms: a steady load, each delivery timed on its own. */
const INTERVAL_MS = 100;
const SUBSCRIPTIONS_OF_B = 30;
const PRODUCTS_PER_WAVE = 12;
const TIMEOUT_MS = Number.parseFloat(E2E_WEBHOOK_ENV.MERX_WEBHOOK_TIMEOUT) * 1_000;
/**
 * Twice the quiet p99, but not below 250 ms (as the other neighbours tests): a quiet p99 of 40 to
 * 70 ms doubles in the noise of a busy two-core machine, and in the embedded mode B's calls to
 * switch its endpoints back on share A's process. A slot held by B costs a whole timeout (3 s).
 */
const FLOOR_MS = 250;

describe('neighbours on webhook delivery: an endpoint of B that never answers', () => {
  let stack: Stack;
  const closing: Array<{ close(): Promise<void> }> = [];

  before(async function () {
    this.timeout(90_000);
    stack = await sharedStack();
  });
  afterEach(async () => {
    await Promise.all(closing.splice(0).map((opened) => opened.close()));
  });

  it("leaves A's delivery latency within 2× of quiet, and every one of B's attempts is logged", async function () {
    this.timeout(300_000);
    const [a, b] = await Promise.all([createMerchant(stack), createMerchant(stack)]);
    const fast = await WebhookReceiver.start();
    closing.push(fast);
    const hanging = await HangingEndpoint.start();
    closing.push(hanging);
    const { quiet, attacked, attack, attackedIds, holding, heldMost } = await measureDeliveryNeighbours(
      stack,
      { a, b },
      { fast, hanging },
      {
        samples: SAMPLES,
        intervalMs: INTERVAL_MS,
        attack: { subscriptions: SUBSCRIPTIONS_OF_B, productsPerWave: PRODUCTS_PER_WAVE, waveEveryMs: TIMEOUT_MS },
      },
    );
    await report(stack, a, fast, attackedIds, { quiet, attacked, waves: attack.waves, holding, heldMost });

    assert.ok(holding >= 0.9, `B's requests hung while A was measured (in ${(holding * 100).toFixed(0)} % of the samples)`);
    const bound = neighbourBound(quiet, FLOOR_MS);
    assert.ok(
      attacked.p99 <= bound,
      `A's deliveries under attack: ${describeFigures(attacked)}; quiet: ${describeFigures(quiet)}; bound ${bound.toFixed(0)} ms`,
    );

    await everyAttemptOfBRecorded(attack, hanging);
  });

  /**
   * Nothing of B's is lost: once the engine has switched B's endpoints off (no success through a
   * retry window) and no request of B is open, every request the endpoint saw is an attempt in the
   * log, every attempt is a timeout, and every delivery never attempted waits, paused, for its
   * endpoint to be switched on again.
   */
  async function everyAttemptOfBRecorded(attack: HangingEndpointsAttack, hanging: HangingEndpoint): Promise<void> {
    const b = attack.merchant;
    await eventually(
      () => attack.subscriptions(),
      (subscriptions) => subscriptions.every((subscription) => subscription.status === 'disabled'),
      'every endpoint of B switched off after failing through a retry window',
      120_000,
    );
    const deliveries = await eventually(
      () => allDeliveries(stack, b),
      (found) => hanging.open === 0 && found.reduce((sum, delivery) => sum + delivery.attempt_count, 0) === hanging.requests.length,
      "every request B's endpoint saw logged as an attempt",
      60_000,
      500,
    );
    const pathOf = new Map(attack.subscriptionIds.map((id, i) => [id, `/b/${i}`]));
    const pairs = new Set(deliveries.map((delivery) => `${delivery.event_id} ${pathOf.get(delivery.subscription_id)}`));
    assert.equal(pairs.size, deliveries.length, 'one delivery per event and subscription');
    for (const request of hanging.requests) {
      assert.ok(pairs.has(`${request.webhookId} ${request.path}`), `the request for ${request.webhookId} at ${request.path} is a delivery of B`);
    }
    const attempted = deliveries.filter((delivery) => delivery.attempt_count > 0);
    for (const delivery of attempted) {
      assert.equal(delivery.last_error, 'timeout', `delivery ${delivery.id} timed out`);
      assert.ok(
        delivery.status === 'dead' || (delivery.status === 'failing' && delivery.next_attempt_at !== null),
        `delivery ${delivery.id} is retried or dead by the schedule: ${JSON.stringify(delivery)}`,
      );
    }
    for (const delivery of deliveries.filter((d) => d.attempt_count === 0)) {
      assert.deepEqual([delivery.status, delivery.next_attempt_at !== null], ['pending', true], `delivery ${delivery.id} waits, paused`);
    }
    // The first wave fanned out to all 30 subscriptions, each enabled and never tried yet.
    for (const productId of attack.productIds.slice(0, PRODUCTS_PER_WAVE)) {
      const event = await stack.events.waitFor(
        (e) => e.topic === 'products.created' && (e.data.object as { id?: string }).id === productId,
        10_000,
        `products.created of ${productId}`,
      );
      assert.equal(deliveries.filter((delivery) => delivery.event_id === event.id).length, SUBSCRIPTIONS_OF_B, `event ${event.id} reached every subscription`);
    }
    // Each subscription's attempts as logged: timeouts after the whole timeout, numbered from 1.
    for (const subscriptionId of attack.subscriptionIds) {
      const sample = attempted.find((delivery) => delivery.subscription_id === subscriptionId);
      assert.ok(sample, `subscription ${subscriptionId} had an attempt`);
      const logged = await deliveryWithAttempts(stack, b, sample.id);
      assert.deepEqual(
        logged.attempts.map((attempt: any) => [attempt.number, attempt.error, attempt.status_code]),
        logged.attempts.map((_: unknown, i: number) => [i + 1, 'timeout', null]),
      );
      assert.ok(
        logged.attempts.every((attempt: any) => attempt.duration_ms >= TIMEOUT_MS - 50),
        `held for the whole timeout: ${logged.attempts.map((x: any) => x.duration_ms)}`,
      );
    }
    const byStatus = new Map<string, number>();
    for (const delivery of deliveries) byStatus.set(delivery.status, (byStatus.get(delivery.status) ?? 0) + 1);
    const statuses = [...byStatus].map(([status, count]) => `${count} ${status}`).join(', ');
    console.log(`      B: ${deliveries.length} deliveries (${statuses}); ${hanging.requests.length} requests, each an attempt in the log`);
  }
});

/** The figures of the run, and where A's deliveries under attack spent their time. */
async function report(
  stack: Stack,
  a: TestMerchant,
  fast: WebhookReceiver,
  attackedIds: string[],
  run: { quiet: LatencyFigures; attacked: LatencyFigures; waves: number; holding: number; heldMost: number },
): Promise<void> {
  const stages = await deliveryStages(stack, a, fast, attackedIds);
  const stage = (name: 'toFanOut' | 'toClaim' | 'toReceiver') => latencyFigures(stages.map((s) => s[name]));
  const row = (name: string, f: LatencyFigures) =>
    `      ${name.padEnd(34)} ${String(f.p50).padStart(6)} ${String(f.p99).padStart(6)} ${String(f.max).padStart(6)}`;
  console.log(`      A's deliveries (${stack.mode}), ms              p50    p99    max`);
  console.log(row('quiet', run.quiet));
  console.log(row('attacked', run.attacked));
  console.log(row('  created → fanned out', stage('toFanOut')));
  console.log(row('  fanned out → first attempt', stage('toClaim')));
  console.log(row('  first attempt → at the receiver', stage('toReceiver')));
  console.log(`      B: ${run.waves} waves; requests hanging in ${(run.holding * 100).toFixed(0)} % of the samples, at most ${run.heldMost} at once`);
}
