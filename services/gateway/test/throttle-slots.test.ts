import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createLogger } from '@merx/kit';
import { ConcurrencySlots, type HeldSlot } from '../src/throttle/concurrency-slots.js';
import { throttleSettingsFromEnv } from '../src/throttle/config.js';
import { FailoverLimiterStore } from '../src/throttle/failover-store.js';
import { LeasedLimiterStore } from '../src/throttle/lease-store.js';
import { MemoryLimiterStore } from '../src/throttle/memory-store.js';
import { DEFAULT_PLAN_LIMITS } from '../src/throttle/policy.js';
import { purgeThrottleState, RedisLimiterStore } from '../src/throttle/redis-store.js';
import type { LimiterStore } from '../src/throttle/store.js';

const REDIS_URL = process.env.MERX_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const logger = createLogger('throttle-slots-test', 'silent');

async function until(condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const merchant = () => `mch_${randomBytes(8).toString('hex')}`;
const slotOf = (index: number) => `slot-${index}-${randomBytes(4).toString('hex')}`;

describe('concurrency caps: plans and settings', () => {
  it('gives every plan a StreamEvents cap, and MERX_THROTTLE_PLANS changes it', () => {
    assert.deepEqual(Object.fromEntries(Object.entries(DEFAULT_PLAN_LIMITS).map(([plan, limits]) => [plan, limits.event_streams.concurrent])), {
      sandbox: 10,
      standard: 50,
      scale: 200,
    });
    const settings = throttleSettingsFromEnv({ MERX_THROTTLE_PLANS: '{"standard":{"event_streams":{"concurrent":7}}}' });
    assert.equal(settings.plans.standard.event_streams.concurrent, 7);
    assert.equal(settings.plans.scale.event_streams.concurrent, 200);
    assert.throws(
      () => throttleSettingsFromEnv({ MERX_THROTTLE_PLANS: '{"standard":{"event_streams":{"concurrent":0}}}' }),
      /MERX_THROTTLE_PLANS: standard\.event_streams\.concurrent/,
    );
  });
});

/** The same behaviour of both stores: what the component and e2e tests rely on in either mode. */
function behavesAsACap(name: string, make: () => Promise<{ store: LimiterStore; other: LimiterStore; close(): Promise<void> }>) {
  describe(`concurrency slots in the ${name} store`, function () {
    this.timeout(20_000);
    let store: LimiterStore;
    let other: LimiterStore;
    let close: () => Promise<void>;
    before(async () => {
      ({ store, other, close } = await make());
    });
    after(() => close());

    it('grants up to the cap, refuses past it naming the cap and the count, and a release frees a slot', async () => {
      const merchantId = merchant();
      const slots = [0, 1, 2].map(slotOf);
      for (const [index, slot] of slots.entries()) {
        const decision = await store.acquireSlot({ merchantId, name: 'event_streams', cap: 3, slot, ttlMs: 10_000 });
        assert.deepEqual(decision, { allowed: true, cap: 3, open: index + 1 });
      }
      assert.deepEqual(await other.acquireSlot({ merchantId, name: 'event_streams', cap: 3, slot: slotOf(3), ttlMs: 10_000 }), {
        allowed: false,
        cap: 3,
        open: 3,
      });
      assert.equal(
        (await store.acquireSlot({ merchantId: merchant(), name: 'event_streams', cap: 3, slot: slotOf(4), ttlMs: 10_000 })).allowed,
        true,
        'another merchant is untouched',
      );
      await store.releaseSlot(merchantId, 'event_streams', slots[1]!);
      assert.equal((await other.acquireSlot({ merchantId, name: 'event_streams', cap: 3, slot: slotOf(5), ttlMs: 10_000 })).allowed, true);
    });

    it("an operator override replaces the plan's cap for its merchant only", async () => {
      const merchantId = merchant();
      await store.setOverride(merchantId, { 'event_streams.concurrent': 5 }, 1);
      let granted = 0;
      while ((await other.acquireSlot({ merchantId, name: 'event_streams', cap: 2, slot: slotOf(granted), ttlMs: 10_000 })).allowed) granted += 1;
      assert.equal(granted, 5);
      await store.setOverride(merchantId, {}, 2);
      const back = await other.acquireSlot({ merchantId, name: 'event_streams', cap: 2, slot: slotOf(9), ttlMs: 10_000 });
      assert.deepEqual(back, { allowed: false, cap: 2, open: 5 }, 'back on the plan, the five still open count');
    });

    it('a slot whose lease ran out no longer counts; a renewal keeps it, and counts one the store lost', async () => {
      const merchantId = merchant();
      const kept = slotOf(0);
      assert.equal((await store.acquireSlot({ merchantId, name: 'event_streams', cap: 2, slot: kept, ttlMs: 300 })).allowed, true);
      assert.equal((await store.acquireSlot({ merchantId, name: 'event_streams', cap: 2, slot: slotOf(1), ttlMs: 300 })).allowed, true);
      await new Promise((resolve) => setTimeout(resolve, 150));
      await store.renewSlots(merchantId, 'event_streams', [kept], 10_000);
      await until(
        async () => (await store.acquireSlot({ merchantId, name: 'event_streams', cap: 2, slot: slotOf(2), ttlMs: 10_000 })).allowed,
        5_000,
        'the unrenewed slot expires',
      );
      assert.equal(
        (await store.acquireSlot({ merchantId, name: 'event_streams', cap: 2, slot: slotOf(3), ttlMs: 10_000 })).allowed,
        false,
        'the renewed one still counts',
      );
      const lost = merchant();
      await store.renewSlots(lost, 'event_streams', [slotOf(4)], 10_000);
      assert.deepEqual(await store.acquireSlot({ merchantId: lost, name: 'event_streams', cap: 1, slot: slotOf(5), ttlMs: 10_000 }), {
        allowed: false,
        cap: 1,
        open: 1,
      });
    });
  });
}

behavesAsACap('memory', async () => {
  const store = new MemoryLimiterStore();
  return { store, other: store, close: () => store.close() };
});

behavesAsACap('Redis (two replicas, leased as in production)', async () => {
  const prefix = `merx:test:${randomBytes(6).toString('hex')}:`;
  const replica = () => new LeasedLimiterStore(new RedisLimiterStore({ url: REDIS_URL, keyPrefix: prefix, logger }), { logger, maxLease: 64 });
  const store = replica();
  const other = replica();
  await store.ready(5_000);
  await other.ready(5_000);
  return {
    store,
    other,
    async close() {
      await store.close();
      await other.close();
      await purgeThrottleState(REDIS_URL, prefix);
    },
  };
});

describe('concurrency slots held by a replica (real Redis)', function () {
  this.timeout(20_000);
  const prefix = `merx:test:${randomBytes(6).toString('hex')}:`;
  const opened: Array<{ close(): Promise<void> }> = [];
  const replica = async () => {
    const store = new FailoverLimiterStore(
      new LeasedLimiterStore(new RedisLimiterStore({ url: REDIS_URL, keyPrefix: prefix, logger }), { logger, maxLease: 64 }),
      {
        logger,
        expectedReplicas: 2,
      },
    );
    await store.start();
    opened.push(store);
    return store;
  };
  after(async () => {
    for (const each of opened.reverse()) await each.close();
    await purgeThrottleState(REDIS_URL, prefix);
  });

  it('keeps its slots past their lease by renewing them, and releases each once', async () => {
    const store = await replica();
    const slots = new ConcurrencySlots(store, { logger, ttlMs: 400, renewEveryMs: 100 });
    opened.push(slots);
    const merchantId = merchant();
    const held: HeldSlot[] = [];
    for (let index = 0; index < 2; index++) held.push((await slots.acquire(merchantId, 'event_streams', 2)).slot!);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    assert.equal((await slots.acquire(merchantId, 'event_streams', 2)).decision.allowed, false, 'renewed slots still count after 2.5 leases');
    held[0]!.release();
    held[0]!.release();
    assert.equal(slots.heldCount(merchantId), 1);
    await until(async () => (await slots.acquire(merchantId, 'event_streams', 2)).decision.allowed, 2_000, 'the released slot is free');
    assert.equal((await slots.acquire(merchantId, 'event_streams', 2)).decision.allowed, false, 'a double release freed one slot, not two');
  });

  it('a replica that dies leaks its slots for one lease only: another replica gets them back', async () => {
    const dying = new ConcurrencySlots(await replica(), { logger, ttlMs: 600, renewEveryMs: 200 });
    const survivor = new ConcurrencySlots(await replica(), { logger, ttlMs: 600, renewEveryMs: 200 });
    opened.push(survivor);
    const merchantId = merchant();
    for (let index = 0; index < 3; index++) assert.ok((await dying.acquire(merchantId, 'event_streams', 3)).slot);
    assert.equal((await survivor.acquire(merchantId, 'event_streams', 3)).decision.allowed, false);
    // A crash: no release, no renewal from now on.
    (dying as unknown as { renewer: NodeJS.Timeout }).renewer.close();
    const died = Date.now();
    await until(async () => (await survivor.acquire(merchantId, 'event_streams', 3)).decision.allowed, 5_000, "the dead replica's slots expire");
    assert.ok(Date.now() - died < 2_000, `freed ${Date.now() - died} ms after the last renewal`);
  });

  it('stopping releases every slot the replica holds', async () => {
    const stopping = new ConcurrencySlots(await replica(), { logger, ttlMs: 60_000 });
    const survivor = new ConcurrencySlots(await replica(), { logger, ttlMs: 60_000 });
    opened.push(survivor);
    const merchantId = merchant();
    for (let index = 0; index < 2; index++) assert.ok((await stopping.acquire(merchantId, 'event_streams', 2)).slot);
    await stopping.close();
    assert.equal((await survivor.acquire(merchantId, 'event_streams', 2)).decision.allowed, true, 'free at once, not after the 60 s lease');
  });
});
