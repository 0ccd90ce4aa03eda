import assert from 'node:assert/strict';
import { buildEvent, newId, sealSecret, trustedMerchantId, type Db } from '@merx/kit';
import { generateWebhookSecret } from '../src/delivery/signing.js';
import { toWebhookPayload } from '../src/domain/delivery.js';
import { insertDeliveries } from '../src/store/deliveries-store.js';
import { insertEvents } from '../src/store/events-store.js';
import { insertSubscriptionForMerchant } from '../src/store/subscriptions-store.js';
import { claimDueDeliveries, OpenedSecrets } from '../src/store/claims-store.js';
import { beatWorker, recordAttempts, releaseClaimsOfDeadWorkers, type AttemptResult } from '../src/store/work-queue-store.js';
import { pendingSubscriptionDelivery, productObject, useMigratedScratchDatabase } from './harness.js';

/**
 * The work queue's statements on their own, against PostgreSQL: what a claim takes and leaves,
 * what a batch of recorded attempts changes row by row, and what the release of a dead worker's
 * claims does. The engine's behaviour over HTTP is in delivery.test.ts.
 */
describe('the work queue in PostgreSQL', function () {
  this.timeout(30_000);
  const scratch = useMigratedScratchDatabase('webhooks_queue_test');
  let db: Db;
  before(() => void (db = scratch()));
  const start = new Date('2030-01-01T00:00:00.000Z');
  const at = (ms: number) => new Date(start.getTime() + ms);

  /** A merchant with `endpoints` subscriptions and `perEndpoint` deliveries due to each, one event per delivery, in due order. */
  async function queue(endpoints: number, perEndpoint: number) {
    const merchantId = newId('mch');
    const subscriptions: Array<{ id: string; secret: string }> = [];
    for (let i = 0; i < endpoints; i++) {
      const id = newId('wh');
      const secret = generateWebhookSecret();
      await insertSubscriptionForMerchant(
        db,
        trustedMerchantId(merchantId),
        id,
        { url: `http://127.0.0.1:9/${i}`, topics: ['*'], description: null, status: 'enabled' },
        secret,
        start,
      );
      subscriptions.push({ id, secret });
    }
    const deliveries = new Map<string, string[]>(subscriptions.map((s) => [s.id, []]));
    const payloads = new Map<string, string>();
    for (let n = 0; n < perEndpoint; n++) {
      const event = buildEvent('products.created', merchantId, { object: productObject(`SKU-${n}`) });
      const payload = toWebhookPayload(event);
      payloads.set(event.id, JSON.stringify(payload));
      // Each event's deliveries become due a millisecond after the previous event's.
      await db.transaction(async (tx) => {
        await insertEvents(tx, [{ id: event.id, merchantId, topic: event.topic, createdAt: start, payload, payloadText: payloads.get(event.id)! }]);
        const made = subscriptions.map((s) => pendingSubscriptionDelivery(merchantId, s.id, { eventId: event.id, topic: event.topic, payloadText: null }));
        await insertDeliveries(tx, made, at(n));
        for (const delivery of made) deliveries.get(delivery.endpointId)!.push(delivery.id);
      });
    }
    return { merchantId, subscriptions, deliveries, payloads };
  }

  const claim = (workerId: string, budget: number, now: Date, maxInFlightPerEndpoint = 3) =>
    db.transaction((tx) => claimDueDeliveries(tx, workerId, { budget, maxInFlightPerEndpoint }, now));

  async function deliveryRows(merchantId: string) {
    const { rows } = await db.query<{ id: string; status: string; attempt_count: number; next_attempt_at: Date | null; completed_at: Date | null }>(
      `SELECT id, status, attempt_count, next_attempt_at, completed_at FROM webhooks.deliveries WHERE merchant_id = $1`,
      [merchantId],
    );
    return new Map(rows.map((row) => [row.id, row]));
  }

  async function claimsOf(merchantId: string) {
    const { rows } = await db.query<{ delivery_id: string; worker_id: string }>(
      `SELECT delivery_id, worker_id FROM webhooks.claims WHERE merchant_id = $1 ORDER BY delivery_id`,
      [merchantId],
    );
    return rows.map((row) => [row.delivery_id, row.worker_id]);
  }

  async function queueOf(merchantId: string) {
    const { rows } = await db.query<{ delivery_id: string; next_attempt_at: Date }>(
      `SELECT delivery_id, next_attempt_at FROM webhooks.queue WHERE merchant_id = $1 ORDER BY delivery_id`,
      [merchantId],
    );
    return rows.map((row) => [row.delivery_id, row.next_attempt_at.toISOString()]);
  }

  async function dueAt(merchantId: string, endpointId: string): Promise<Date | null> {
    const { rows } = await db.query<{ due_at: Date | null }>(`SELECT due_at FROM webhooks.endpoints WHERE merchant_id = $1 AND id = $2`, [
      merchantId,
      endpointId,
    ]);
    return rows[0]!.due_at;
  }

  function attempt(
    merchantId: string,
    endpointId: string,
    deliveryId: string,
    outcome: Pick<AttemptResult, 'status' | 'nextAttemptAt' | 'statusCode' | 'error'>,
  ): AttemptResult {
    return {
      merchantId,
      deliveryId,
      endpointId,
      number: 1,
      startedAt: at(100),
      durationMs: 3,
      errorMessage: outcome.error ? `HTTP ${outcome.statusCode}` : null,
      responseExcerpt: '',
      firstAttemptAt: at(100),
      ...outcome,
    };
  }

  it('claims the oldest due deliveries of each endpoint up to its cap, once, and moves due_at to what is left', async () => {
    const { merchantId, subscriptions, deliveries, payloads } = await queue(2, 5);
    const [a, b] = subscriptions as [{ id: string; secret: string }, { id: string; secret: string }];
    const first = await claim('wkr_first', 100, at(2));
    // Three were due per endpoint at 2 ms (0, 1 and 2 ms), and the cap is three.
    assert.deepEqual(first.deliveries.map((d) => d.id).sort(), [...deliveries.get(a.id)!.slice(0, 3), ...deliveries.get(b.id)!.slice(0, 3)].sort());
    assert.equal(first.moreMayBeDue, false);
    for (const delivery of first.deliveries) {
      assert.equal(delivery.payloadText, payloads.get(delivery.eventId));
      assert.equal(delivery.secret, subscriptions.find((s) => s.id === delivery.endpointId)!.secret);
      assert.equal(delivery.attemptCount, 0);
      assert.deepEqual(delivery.claimedAt, at(2));
    }
    assert.equal((await claimsOf(merchantId)).length, 6);
    // What was claimed left the queue; the rest waits there in due order.
    assert.deepEqual(
      await queueOf(merchantId),
      [
        ...deliveries
          .get(a.id)!
          .slice(3)
          .map((id, n) => [id, at(3 + n).toISOString()]),
        ...deliveries
          .get(b.id)!
          .slice(3)
          .map((id, n) => [id, at(3 + n).toISOString()]),
      ].sort(),
    );
    assert.deepEqual(await dueAt(merchantId, a.id), at(3), 'the earliest delivery left');
    // Both endpoints are at their cap: another worker finds nothing, even once all are due.
    const second = await claim('wkr_second', 100, at(10));
    assert.deepEqual(second.deliveries, []);
    // With room for more, the rest is claimed; nothing of either endpoint waits any more.
    const third = await claim('wkr_second', 4, at(10), 5);
    assert.deepEqual(third.deliveries.map((d) => d.id).sort(), [...deliveries.get(a.id)!.slice(3), ...deliveries.get(b.id)!.slice(3)].sort());
    assert.equal(third.moreMayBeDue, true, 'the budget ran out');
    assert.equal(await dueAt(merchantId, a.id), null);
    assert.equal(await dueAt(merchantId, b.id), null);
    assert.equal((await claimsOf(merchantId)).length, 10);
    assert.deepEqual(await queueOf(merchantId), []);
    const rows = await deliveryRows(merchantId);
    assert.ok(
      [...rows.values()].every((row) => row.status === 'pending' && row.attempt_count === 0),
      'a claim changes no delivery',
    );
  });

  it('records a batch: a success, a retry, a dead letter and a delivery handed on each land in their own state', async () => {
    const { merchantId, subscriptions, deliveries } = await queue(1, 4);
    const endpointId = subscriptions[0]!.id;
    const [succeeded, retried, died, handedOn] = deliveries.get(endpointId)! as [string, string, string, string];
    const { deliveries: claimed } = await claim('wkr_recorder', 10, at(10), 10);
    assert.equal(claimed.length, 4);
    // The recorder was presumed dead for one of them: its claim went to another worker meanwhile.
    await db.query(`UPDATE webhooks.claims SET worker_id = 'wkr_next' WHERE merchant_id = $1 AND delivery_id = $2`, [merchantId, handedOn]);
    const retryAt = at(5_000);
    const recorded = await db.transaction((tx) =>
      recordAttempts(
        tx,
        'wkr_recorder',
        [
          attempt(merchantId, endpointId, succeeded, { status: 'succeeded', nextAttemptAt: null, statusCode: 200, error: null }),
          attempt(merchantId, endpointId, retried, { status: 'failing', nextAttemptAt: retryAt, statusCode: 500, error: 'http' }),
          attempt(merchantId, endpointId, died, { status: 'dead', nextAttemptAt: null, statusCode: 410, error: 'http' }),
          attempt(merchantId, endpointId, handedOn, { status: 'succeeded', nextAttemptAt: null, statusCode: 200, error: null }),
        ],
        at(200),
      ),
    );
    assert.deepEqual([...recorded].sort(), [succeeded, retried, died].sort());
    const rows = await deliveryRows(merchantId);
    assert.deepEqual(
      [succeeded, retried, died, handedOn].map((id) => {
        const row = rows.get(id)!;
        return [row.status, row.attempt_count, row.next_attempt_at?.toISOString() ?? null, row.completed_at?.toISOString() ?? null];
      }),
      [
        ['succeeded', 1, null, at(200).toISOString()],
        ['failing', 1, retryAt.toISOString(), null],
        ['dead', 1, null, at(200).toISOString()],
        ['pending', 0, at(3).toISOString(), null],
      ],
    );
    // Only the retry waits again, for its time; only the dead letter has a time of death.
    assert.deepEqual(await queueOf(merchantId), [[retried, retryAt.toISOString()]]);
    const { rows: deaths } = await db.query<{ id: string }>(`SELECT id FROM webhooks.deliveries WHERE merchant_id = $1 AND dead_at = $2`, [
      merchantId,
      at(200),
    ]);
    assert.deepEqual(
      deaths.map((row) => row.id),
      [died],
    );
    const { rows: attempts } = await db.query<{ delivery_id: string; status_code: number }>(
      `SELECT delivery_id, status_code FROM webhooks.attempts WHERE merchant_id = $1 ORDER BY status_code`,
      [merchantId],
    );
    assert.deepEqual(
      attempts.map((row) => [row.delivery_id, row.status_code]),
      [
        [succeeded, 200],
        [died, 410],
        [retried, 500],
      ],
    );
    // Only the claim of the worker now sending it is left.
    assert.deepEqual(await claimsOf(merchantId), [[handedOn, 'wkr_next']]);
    // The retry waits for its time, then is claimed again; the delivery handed on never is.
    await db.query(`UPDATE webhooks.endpoints SET due_at = $3 WHERE merchant_id = $1 AND id = $2`, [merchantId, endpointId, retryAt]);
    assert.deepEqual((await claim('wkr_later', 10, at(4_999), 10)).deliveries, []);
    const later = await claim('wkr_later', 10, retryAt, 10);
    assert.deepEqual(
      later.deliveries.map((d) => [d.id, d.attemptCount]),
      [[retried, 1]],
    );
  });

  it('signs with the secrets the endpoint has at the claim, though opened secrets are kept between claims', async () => {
    const { merchantId, subscriptions } = await queue(1, 2);
    const { id: endpointId, secret: first } = subscriptions[0]!;
    const secrets = new OpenedSecrets();
    const claimOne = (now: Date) => db.transaction((tx) => claimDueDeliveries(tx, 'wkr_signer', { budget: 1, maxInFlightPerEndpoint: 10 }, now, secrets));
    const before = await claimOne(at(10));
    assert.deepEqual(
      before.deliveries.map((d) => [d.secret, d.previousSecret]),
      [[first, null]],
    );
    // A rotation: the new secret signs, the old one too while its overlap lasts.
    const second = generateWebhookSecret();
    await db.query(`UPDATE webhooks.endpoints SET secret = $3, previous_secret = $4, previous_secret_expires_at = $5 WHERE merchant_id = $1 AND id = $2`, [
      merchantId,
      endpointId,
      sealSecret(second, { merchantId, recordId: endpointId }),
      sealSecret(first, { merchantId, recordId: endpointId }),
      at(60_000),
    ]);
    const after = await claimOne(at(10));
    assert.deepEqual(
      after.deliveries.map((d) => [d.secret, d.previousSecret]),
      [[second, first]],
    );
  });

  it("hands a dead worker's claims back as interrupted attempts, due at once, and leaves a live worker's alone", async () => {
    const { merchantId, subscriptions, deliveries } = await queue(1, 3);
    const endpointId = subscriptions[0]!.id;
    const [lost, alsoLost, kept] = deliveries.get(endpointId)! as [string, string, string];
    await beatWorker(db, 'wkr_dead', at(0));
    await beatWorker(db, 'wkr_live', at(20_000));
    await claim('wkr_dead', 2, at(10), 10);
    await claim('wkr_live', 1, at(10), 10);
    assert.deepEqual(await claimsOf(merchantId), [
      [lost, 'wkr_dead'],
      [alsoLost, 'wkr_dead'],
      [kept, 'wkr_live'],
    ]);
    // Other tests' workers never beat: their claims are released too, so only this merchant's are looked at.
    const release = async () =>
      (await db.transaction((tx) => releaseClaimsOfDeadWorkers(tx, at(15_000), at(20_000)))).filter((claim) => claim.merchantId === merchantId);
    const released = await release();
    assert.deepEqual(released.map((claim) => [claim.deliveryId, claim.number, claim.claimedAt.toISOString()]).sort(), [
      [lost, 1, at(10).toISOString()],
      [alsoLost, 1, at(10).toISOString()],
    ]);
    assert.deepEqual(await claimsOf(merchantId), [[kept, 'wkr_live']]);
    assert.deepEqual(
      await queueOf(merchantId),
      [lost, alsoLost].sort().map((id) => [id, at(20_000).toISOString()]),
    );
    const rows = await deliveryRows(merchantId);
    for (const id of [lost, alsoLost]) {
      assert.equal(rows.get(id)!.status, 'failing');
      assert.equal(rows.get(id)!.attempt_count, 1);
      assert.deepEqual(rows.get(id)!.next_attempt_at, at(20_000));
    }
    assert.equal(rows.get(kept)!.attempt_count, 0);
    const { rows: attempts } = await db.query<{ delivery_id: string; error: string }>(
      `SELECT delivery_id, error FROM webhooks.attempts WHERE merchant_id = $1 ORDER BY delivery_id`,
      [merchantId],
    );
    assert.deepEqual(
      attempts.map((row) => [row.delivery_id, row.error]),
      [
        [lost, 'interrupted'],
        [alsoLost, 'interrupted'],
      ],
    );
    assert.ok((await dueAt(merchantId, endpointId))! <= at(20_000));
    // A second release finds nothing more to do.
    assert.deepEqual(await release(), []);
  });
});

describe('the work queue with cached plans and stale statistics (PostgreSQL)', function () {
  this.timeout(60_000);
  const scratch = useMigratedScratchDatabase('webhooks_plans_test');
  let db: Db;
  before(() => void (db = scratch()));
  const at = (ms: number) => new Date(Date.parse('2030-01-01T00:00:00.000Z') + ms);

  const succeeded = (merchantId: string, delivery: { id: string; endpointId: string }): AttemptResult => ({
    merchantId,
    deliveryId: delivery.id,
    endpointId: delivery.endpointId,
    number: 1,
    startedAt: at(30),
    durationMs: 5,
    statusCode: 200,
    error: null,
    errorMessage: null,
    responseExcerpt: 'ok',
    status: 'succeeded',
    nextAttemptAt: null,
    firstAttemptAt: at(30),
  });

  /** A merchant with `endpointCount` endpoints and `perEndpoint` deliveries due to each. */
  async function merchantWithWaiting(perEndpoint: number, endpointCount = 30): Promise<string> {
    const merchantId = newId('mch');
    const endpoints: string[] = [];
    for (let i = 0; i < endpointCount; i++) {
      const id = newId('wh');
      await insertSubscriptionForMerchant(
        db,
        trustedMerchantId(merchantId),
        id,
        { url: `http://127.0.0.1:9/${i}`, topics: ['*'], description: null, status: 'enabled' },
        generateWebhookSecret(),
        at(0),
      );
      endpoints.push(id);
    }
    await db.transaction((tx) =>
      insertDeliveries(
        tx,
        endpoints.flatMap((endpointId) => Array.from({ length: perEndpoint }, () => pendingSubscriptionDelivery(merchantId, endpointId))),
        at(0),
      ),
    );
    return merchantId;
  }

  const count = async (table: string, merchantId: string) =>
    (await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM webhooks.${table} WHERE merchant_id = $1`, [merchantId])).rows[0]!.n;

  // The statements find and delete rows by their place in the table (claims-store, recordAttempts):
  // planned generically on stale statistics, a join with the queue or the claims went over the
  // whole table for every row. What this shows is that they take exactly their own rows so planned.
  it('claims and records exactly their own rows under the plan PostgreSQL caches, on statistics that know none of them', async () => {
    // Statistics taken after a quiet spell (a merchant's hundred deliveries sent and recorded),
    // then far more rows than they know of, as the queue's and the claims' always are in service.
    const quiet = await merchantWithWaiting(100, 1);
    const sent = await db.transaction((tx) => claimDueDeliveries(tx, 'wkr_quiet', { budget: 100, maxInFlightPerEndpoint: 100 }, at(5)));
    await db.transaction((tx) =>
      recordAttempts(
        tx,
        'wkr_quiet',
        sent.deliveries.map((d) => succeeded(quiet, d)),
        at(6),
      ),
    );
    for (const table of ['endpoints', 'deliveries', 'queue', 'claims']) await db.query(`ANALYZE webhooks.${table}`);
    // Another merchant's 600 requests in flight, among which the record finds its own claims.
    const busy = await merchantWithWaiting(20);
    await db.transaction((tx) => claimDueDeliveries(tx, 'wkr_busy', { budget: 600, maxInFlightPerEndpoint: 20 }, at(10)));
    const merchantId = await merchantWithWaiting(40);
    const recorded = await db.transaction(async (tx) => {
      // The plan PostgreSQL caches for a statement prepared on a connection after its fifth run.
      await tx.query('SET LOCAL plan_cache_mode = force_generic_plan');
      const { deliveries } = await claimDueDeliveries(tx, 'wkr_generic', { budget: 60, maxInFlightPerEndpoint: 2 }, at(20));
      assert.equal(deliveries.length, 60);
      assert.equal(new Set(deliveries.map((d) => d.endpointId)).size, 30, 'two from each endpoint');
      return recordAttempts(
        tx,
        'wkr_generic',
        deliveries.map((d) => succeeded(merchantId, d)),
        at(40),
      );
    });
    assert.equal(recorded.size, 60);
    assert.deepEqual(
      [await count('queue', merchantId), await count('claims', merchantId), await count('claims', busy), await count('attempts', merchantId)],
      [1_140, 0, 600, 60],
    );
  });
});
