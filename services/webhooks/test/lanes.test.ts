import assert from 'node:assert/strict';
import { newId, trustedMerchantId, type Db } from '@merx/kit';
import { generateWebhookSecret } from '../src/delivery/signing.js';
import { claimDueDeliveries, type ClaimLimits } from '../src/store/claims-store.js';
import { insertDeliveries } from '../src/store/deliveries-store.js';
import { insertSubscriptionForMerchant } from '../src/store/subscriptions-store.js';
import { pendingSubscriptionDelivery, startHarness, testSettings, useMigratedScratchDatabase, type Harness } from './harness.js';
import { WebhookReceiver } from './receiver.js';

/**
 * Sharing the delivery engine between merchants (issue 29): requests in flight capped per
 * merchant in each lane across workers, endpoints that time out served in a slow lane of their
 * own, and a neighbour's delivery going out while another merchant's receivers never answer.
 */
describe('delivery lanes and caps per merchant, in PostgreSQL', function () {
  this.timeout(30_000);
  const scratch = useMigratedScratchDatabase('webhooks_lanes_test');
  let db: Db;
  before(() => void (db = scratch()));
  const start = new Date('2030-01-01T00:00:00.000Z');
  const at = (ms: number) => new Date(start.getTime() + ms);

  /** A merchant's endpoints, each with `perEndpoint` deliveries due at `dueAt`; `lanes` says which are slow. */
  async function merchantWith(lanes: Array<'fast' | 'slow'>, perEndpoint: number, dueAt = at(0)) {
    const merchantId = newId('mch');
    const endpoints: string[] = [];
    for (const lane of lanes) {
      const id = newId('wh');
      await insertSubscriptionForMerchant(
        db,
        trustedMerchantId(merchantId),
        id,
        { url: 'http://127.0.0.1:9/', topics: ['*'], description: null, status: 'enabled' },
        generateWebhookSecret(),
        start,
      );
      if (lane === 'fast') await db.query(`UPDATE webhooks.endpoints SET slow_since = NULL WHERE merchant_id = $1 AND id = $2`, [merchantId, id]);
      endpoints.push(id);
    }
    await db.transaction((tx) =>
      insertDeliveries(
        tx,
        endpoints.flatMap((endpointId) => Array.from({ length: perEndpoint }, () => pendingSubscriptionDelivery(merchantId, endpointId))),
        dueAt,
      ),
    );
    return { merchantId, endpoints };
  }

  const claim = (workerId: string, limits: Partial<ClaimLimits>, now = at(10)) =>
    db.transaction((tx) => claimDueDeliveries(tx, workerId, { budget: 100, maxInFlightPerEndpoint: 10, ...limits }, now));

  async function claimsOf(merchantId: string) {
    const { rows } = await db.query<{ endpoint_id: string; slow: boolean }>(`SELECT endpoint_id, slow FROM webhooks.claims WHERE merchant_id = $1`, [
      merchantId,
    ]);
    return rows;
  }

  it('starts a new endpoint in the slow lane: it has not answered in time yet', async () => {
    const { merchantId, endpoints } = await merchantWith(['slow'], 1);
    const { rows } = await db.query<{ slow_since: Date | null }>(`SELECT slow_since FROM webhooks.endpoints WHERE merchant_id = $1`, [merchantId]);
    assert.notEqual(rows[0]!.slow_since, null);
    const { deliveries } = await claim('wkr_new', {});
    const mine = deliveries.filter((d) => d.merchantId === merchantId);
    assert.deepEqual(
      mine.map((d) => [d.endpointId, d.slow]),
      [[endpoints[0], true]],
    );
    assert.deepEqual(
      (await claimsOf(merchantId)).map((c) => c.slow),
      [true],
    );
  });

  it("caps a merchant's requests in flight in each lane, apart, across workers claiming at once", async () => {
    // Small claims, two at a time, so B's lanes fill over many claims made side by side.
    const limits = { budget: 3, maxInFlightPerMerchant: 7, slowMaxInFlightPerMerchant: 4 };
    const b = await merchantWith(['slow', 'slow', 'slow', 'fast', 'fast', 'fast'], 5);
    const a = await merchantWith(['fast'], 3);
    for (let round = 0; round < 10; round++) await Promise.all([claim('wkr_one', limits), claim('wkr_two', limits)]);
    const held = await claimsOf(b.merchantId);
    const slowEndpoints = new Set(b.endpoints.slice(0, 3));
    assert.equal(held.filter((c) => !c.slow).length, 7, "B's fast lane is full, and no fuller");
    assert.equal(held.filter((c) => c.slow).length, 4, "B's slow lane is full, and no fuller");
    assert.ok(
      held.every((c) => c.slow === slowEndpoints.has(c.endpoint_id)),
      'each claim is counted in its endpoint lane',
    );
    assert.equal((await claimsOf(a.merchantId)).length, 3, 'A, under its caps, got everything it had due');
  });

  it('skips a merchant another worker is claiming for, rather than waiting for it, and serves the others', async () => {
    const b = await merchantWith(['fast'], 2, at(0));
    // A's work becomes due only after the first worker's claim, which therefore locks B alone.
    const a = await merchantWith(['fast'], 2, at(1_000));
    await db.transaction(async (tx) => {
      // One request per endpoint: B's second delivery is left for another claim.
      const first = await claimDueDeliveries(tx, 'wkr_holding', { budget: 100, maxInFlightPerEndpoint: 1 }, at(10));
      assert.equal(first.deliveries.filter((d) => d.merchantId === b.merchantId).length, 1);
      // The first worker's transaction is still open: B is its to claim until it commits.
      const second = await claim('wkr_other', {}, at(2_000));
      assert.equal(second.deliveries.filter((d) => d.merchantId === b.merchantId).length, 0, "B's other delivery waits for the worker claiming for B");
      assert.equal(second.deliveries.filter((d) => d.merchantId === a.merchantId).length, 2, 'A is served meanwhile');
    });
    const later = await claim('wkr_other', {}, at(2_000));
    assert.equal(later.deliveries.filter((d) => d.merchantId === b.merchantId).length, 1, 'B is served once the other claim committed');
  });

  it("keeps slow endpoints within the worker's slow share and fills the rest with fast ones", async () => {
    const b = await merchantWith(['slow', 'slow', 'slow'], 3);
    const a = await merchantWith(['fast'], 5);
    const { deliveries } = await claim('wkr_share', { budget: 6, slowBudget: 2 });
    const ours = deliveries.filter((d) => d.merchantId === a.merchantId || d.merchantId === b.merchantId);
    assert.equal(ours.filter((d) => d.slow).length, 2);
    assert.equal(ours.filter((d) => d.merchantId === a.merchantId).length, 4);
    const none = await claim('wkr_share', { budget: 6, slowBudget: 0 });
    assert.equal(none.deliveries.filter((d) => d.merchantId === b.merchantId).length, 0, 'no slow share left: no slow endpoint is served');
  });
});

describe('delivery lanes in the engine', function () {
  this.timeout(60_000);
  let harness: Harness;
  const opened: Array<{ close(): Promise<void> }> = [];

  before(async () => {
    harness = await startHarness({
      settings: testSettings({
        workerConcurrency: 16,
        slowWorkerConcurrency: 8,
        maxInFlightPerMerchant: 12,
        slowMaxInFlightPerMerchant: 3,
        slowAfterMs: 300,
      }),
    });
  });
  after(async () => {
    await harness.stop();
  });
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((server) => server.close()));
  });

  async function receiver(): Promise<WebhookReceiver> {
    const started = await WebhookReceiver.start();
    opened.push(started);
    return started;
  }

  async function slowSince(merchantId: string, endpointId: string): Promise<Date | null> {
    const { rows } = await harness.db.query<{ slow_since: Date | null }>(`SELECT slow_since FROM webhooks.endpoints WHERE merchant_id = $1 AND id = $2`, [
      merchantId,
      endpointId,
    ]);
    return rows[0]!.slow_since;
  }

  async function laneBecomes(merchantId: string, endpointId: string, lane: 'fast' | 'slow'): Promise<void> {
    const deadline = Date.now() + 15_000;
    while (((await slowSince(merchantId, endpointId)) === null) !== (lane === 'fast')) {
      if (Date.now() > deadline) throw new Error(`endpoint ${endpointId} never moved to the ${lane} lane`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  it("holds a merchant's receivers that never answer to the slow lane's caps, and a neighbour's delivery goes out at once", async () => {
    const dead = await receiver();
    dead.answerWith(() => ({ hang: true }));
    const b = await harness.merchant();
    for (let i = 0; i < 10; i++) await b.subscribe(dead.url(`/b/${i}`), ['products']);
    for (let i = 0; i < 3; i++) await harness.publish(b.merchantId, 'products.created');
    await dead.waitUntil((received) => received.length >= 3);

    const a = await harness.merchant();
    const fast = await receiver();
    await a.subscribe(fast.url(), ['products']);
    const event = await harness.publish(a.merchantId, 'products.created');
    const arrived = await fast.waitFor((request) => request.headers['webhook-id'] === event.id);
    const firstHung = dead.received[0]!.receivedAt.getTime();
    // Had A waited for a slot that B's requests held, it would have come after B's 2 s timeouts.
    assert.ok(arrived.receivedAt.getTime() < firstHung + 2_000, "A's delivery went out while B's first requests still hung");
    // Before the first of them could time out, B had no more requests than its slow lane allows.
    assert.equal(dead.received.filter((request) => request.receivedAt.getTime() < firstHung + 1_900).length, 3);
  });

  it("fans each merchant's events out apart: a batch waiting for one merchant's endpoints holds no one else's", async () => {
    const [a, b] = [await harness.merchant(), await harness.merchant()];
    const [theirs, ours] = [await receiver(), await receiver()];
    await b.subscribe(theirs.url(), ['products']);
    await a.subscribe(ours.url(), ['products']);
    await harness.db.transaction(async (tx) => {
      // B's endpoint is locked, as a claim or a record of its attempts holds it: B's fan-out waits.
      await tx.query(`SELECT 1 FROM webhooks.endpoints WHERE merchant_id = $1 FOR UPDATE`, [b.merchantId]);
      const held = await harness.publish(b.merchantId, 'products.created');
      const event = await harness.publish(a.merchantId, 'products.created');
      await ours.waitFor((request) => request.headers['webhook-id'] === event.id, 10_000);
      assert.equal(theirs.forEvent(held.id).length, 0, "B's delivery is not made while its endpoint is held");
    });
    const released = theirs.received.length === 0 ? await theirs.waitFor(() => true) : theirs.received[0]!;
    assert.equal(released.json.merchant_id, b.merchantId, "B's event goes out once its endpoint is free");
  });

  it('moves an endpoint to the slow lane when an attempt times out or answers late, and back when one answers in time', async () => {
    const target = await receiver();
    let answer: 'now' | 'late' | 'never' = 'now';
    target.answerWith(async () => {
      if (answer === 'never') return { hang: true };
      if (answer === 'late') await new Promise((resolve) => setTimeout(resolve, 500));
      return { status: 200 };
    });
    const merchant = await harness.merchant();
    const subscription = await merchant.subscribe(target.url(), ['products']);
    assert.notEqual(await slowSince(merchant.merchantId, subscription.id), null, 'a new endpoint starts in the slow lane');
    const deliver = async () => {
      const event = await harness.publish(merchant.merchantId, 'products.created');
      await target.waitFor((request) => request.headers['webhook-id'] === event.id);
      return event.id;
    };
    await deliver();
    await laneBecomes(merchant.merchantId, subscription.id, 'fast');
    answer = 'late';
    await deliver();
    await laneBecomes(merchant.merchantId, subscription.id, 'slow');
    answer = 'now';
    await deliver();
    await laneBecomes(merchant.merchantId, subscription.id, 'fast');
    answer = 'never';
    const timedOut = await deliver();
    await laneBecomes(merchant.merchantId, subscription.id, 'slow');
    const [listed] = await merchant.deliveriesOf(timedOut);
    const logged = await merchant.deliveryWhen(listed.id, (delivery) => delivery.attempt_count > 0);
    assert.deepEqual(
      logged.attempts.map((attempt: any) => attempt.error),
      ['timeout'],
      'the timed-out attempt is logged',
    );
  });
});
