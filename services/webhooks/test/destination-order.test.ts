import assert from 'node:assert/strict';
import { buildEvent, createLogger, type MerxEvent } from '@merx/kit';
import { fanOut } from '../src/usecases/fanout.js';
import { destinationEndpoint, routedRecord, sandboxReset } from './destination-fixtures.js';
import { contract, startHarness, type Harness } from './harness.js';

/** Every order of `items`: n! of them. */
function permutations<T>(items: readonly T[]): T[][] {
  if (items.length <= 1) return [[...items]];
  return items.flatMap((item, index) => permutations([...items.slice(0, index), ...items.slice(index + 1)]).map((rest) => [item, ...rest]));
}

/** A deterministic shuffle (mulberry32), so a failing order can be replayed from its seed. */
function shuffled<T>(items: readonly T[], seed: number): T[] {
  let state = seed;
  const random = () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const copy = [...items];
  for (let i = copy.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [copy[i], copy[j]] = [copy[j]!, copy[i]!];
  }
  return copy;
}

/**
 * What the merchants service sends about one sandbox merchant's destinations, in the order it
 * sends them: an ERP destination created and then changed (a new secret), a record routed to it,
 * then a seeded reset, for which it removes the ERP destination (version 3) and seeds a new one.
 * Replicas may handle these in any order; the end state must not depend on it.
 */
function storyOf(merchantId: string) {
  // Active, at an address that refuses at once: the delivery workers run alongside, as in a replica.
  const erp = destinationEndpoint('http://127.0.0.1:9/merx', { version: 1 });
  const seeded = destinationEndpoint('https://erp.example.com/merx/orders', { status: 'paused', version: 1 });
  const messages = {
    syncV1: buildEvent('internal.destination_synced', merchantId, { object: erp }),
    syncV2: buildEvent('internal.destination_synced', merchantId, { object: { ...erp, version: 2, secret: destinationEndpoint('x').secret } }),
    reset: buildEvent('sandbox.reset', merchantId, { object: sandboxReset(true) }),
    removedV3: buildEvent('internal.destination_removed', merchantId, { object: { id: erp.id, object: 'destination_endpoint', version: 3 } }),
    seededSync: buildEvent('internal.destination_synced', merchantId, { object: seeded }),
  };
  return { erp, seeded, messages, routed: buildEvent('internal.record_routed', merchantId, { object: routedRecord(merchantId, erp.id) }) };
}

/**
 * Hands one message to a replica as the bus would: a batch that fails (a deadlock with a delivery
 * worker or the other replica, which PostgreSQL breaks by aborting one side) is rolled back and
 * delivered again.
 */
async function deliver(handle: (messages: MerxEvent[]) => Promise<number>, message: MerxEvent): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await handle([message]);
      return;
    } catch (error) {
      const code = (error as { code?: string }).code;
      if (attempt >= 5 || (code !== '40P01' && code !== '40001')) throw error;
    }
  }
}

for (const embedded of [false, true]) {
  describe(`destination messages out of order across replicas on ${embedded ? 'PGlite' : 'PostgreSQL'}`, function () {
    this.timeout(120_000);
    let harness: Harness;
    /** Two replicas' fan-out handlers over one database: each call is one batch, one transaction. */
    let replicas: Array<(messages: MerxEvent[]) => Promise<number>>;

    before(async () => {
      harness = await startHarness({ embedded });
      const logger = createLogger('webhooks', process.env.LOG_LEVEL ?? 'silent');
      replicas = [0, 1].map(() => fanOut({ outbox: harness.webhooks.outbox, logger, validator: contract, secretOverlapMs: 86_400_000 }));
    });
    after(async () => {
      await harness.stop();
    });

    async function endState(merchantId: string) {
      const { rows: endpoints } = await harness.db.query<{ id: string; status: string; version: number; url: string }>(
        `SELECT id, status, version, url FROM webhooks.endpoints WHERE merchant_id = $1 AND kind = 'destination' ORDER BY id`,
        [merchantId],
      );
      const { rows: deliveries } = await harness.db.query<{ endpoint_id: string }>(`SELECT endpoint_id FROM webhooks.deliveries WHERE merchant_id = $1`, [
        merchantId,
      ]);
      const { rows: tombstones } = await harness.db.query<{ id: string; version: number }>(
        `SELECT id, version FROM webhooks.destination_tombstones WHERE merchant_id = $1`,
        [merchantId],
      );
      return {
        endpoints: endpoints.map((e) => ({ ...e, version: Number(e.version) })),
        deliveries,
        tombstones: tombstones.map((t) => ({ ...t, version: Number(t.version) })),
      };
    }

    function expectedEndState(story: ReturnType<typeof storyOf>) {
      return {
        endpoints: [{ id: story.seeded.id, status: 'disabled', version: 1, url: story.seeded.url }],
        deliveries: [],
        tombstones: [{ id: story.erp.id, version: 3 }],
      };
    }

    it('ends the same after every order of sync v1, sync v2, the reset, removal v3 and the seeded sync, one message per batch', async () => {
      const orders = permutations(['syncV1', 'syncV2', 'reset', 'removedV3', 'seededSync'] as const);
      assert.equal(orders.length, 120);
      for (const [index, order] of orders.entries()) {
        const merchant = await harness.merchant();
        const story = storyOf(merchant.merchantId);
        // Alternate replicas, as a shared queue hands messages round robin.
        for (const [step, name] of order.entries()) await replicas[step % 2]!([story.messages[name]]);
        assert.deepEqual(await endState(merchant.merchantId), expectedEndState(story), `order #${index}: ${order.join(', ')}`);
      }
    });

    it('ends the same when two replicas handle shuffled messages at the same time, routings included', async () => {
      for (let seed = 1; seed <= 40; seed++) {
        const merchant = await harness.merchant();
        const story = storyOf(merchant.merchantId);
        const order = shuffled([...Object.values(story.messages), story.routed], seed);
        // Each replica takes every other message, in its own order, concurrently with the other.
        await Promise.all(
          replicas.map(async (handle, replica) => {
            for (const message of order.filter((_, index) => index % 2 === replica)) await deliver(handle, message);
          }),
        );
        assert.deepEqual(await endState(merchant.merchantId), expectedEndState(story), `seed ${seed}: ${order.map((m) => m.topic).join(', ')}`);
      }
    });

    it("drops a sync and a routing that overtook their destination's removal, and a repeated removal changes nothing", async () => {
      const merchant = await harness.merchant();
      const story = storyOf(merchant.merchantId);
      await replicas[0]!([story.messages.removedV3]);
      await replicas[1]!([story.messages.syncV2, story.routed]);
      assert.deepEqual((await endState(merchant.merchantId)).endpoints, [], "the removal's tombstone outranks the sync it overtook");
      assert.deepEqual((await endState(merchant.merchantId)).deliveries, [], 'a record routed to a removed destination waits for nothing');
      // A second copy of the removal (another publisher's retry) changes nothing either.
      await replicas[1]!([
        buildEvent('internal.destination_removed', merchant.merchantId, { object: { id: story.erp.id, object: 'destination_endpoint', version: 3 } }),
      ]);
      assert.deepEqual((await endState(merchant.merchantId)).tombstones, [{ id: story.erp.id, version: 3 }]);
    });
  });
}
