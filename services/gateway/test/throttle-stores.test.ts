import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createLogger } from '@merx/kit';
import type { Decision } from '../src/throttle/algorithms.js';
import { MemoryLimiterStore } from '../src/throttle/memory-store.js';
import { DEFAULT_PLAN_LIMITS, classesFor, specOf, type ClassSpec } from '../src/throttle/policy.js';
import { purgeThrottleState, RedisLimiterStore } from '../src/throttle/redis-store.js';
import type { LimiterStore } from '../src/throttle/store.js';

const REDIS_URL = process.env.MERX_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const bucket = (name: 'burst' | 'writes', capacity: number, refill: number): ClassSpec => ({ name, kind: 'bucket', a: capacity, b: refill });
const window = (name: 'sustained' | 'sensitive', limit: number, seconds: number): ClassSpec => ({ name, kind: 'window', a: limit, b: seconds });

async function drain(store: LimiterStore, subject: string, specs: ClassSpec[], max = 1000): Promise<{ allowed: number; refusal: Decision }> {
  for (let allowed = 0; allowed < max; allowed += 1) {
    const decision = await store.consume({ subject, specs });
    if (!decision.allowed) return { allowed, refusal: decision };
  }
  throw new Error('never refused');
}

async function until(condition: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('throttle policy', () => {
  it('puts each operation in its classes, sensitive ones by pattern (services still to come included)', () => {
    assert.deepEqual(classesFor('GET', '/api/v1/products'), ['burst', 'sustained']);
    assert.deepEqual(classesFor('PATCH', '/api/v1/products/prod_1'), ['burst', 'sustained', 'writes']);
    for (const [method, path] of [
      ['POST', '/api/v1/api-keys'],
      ['DELETE', '/api/v1/api-keys/key_1'],
      ['POST', '/api/v1/webhooks/subscriptions/wh_1/rotate-secret'],
      ['POST', '/api/v1/destinations/dst_1/rotate-secret'],
      ['POST', '/api/v1/sandbox/reset'],
      ['POST', '/api/v1/webhooks/dead-letters/del_1/replay'],
      ['POST', '/api/v1/webhooks/dead-letters/replay'],
    ] as const) {
      assert.deepEqual(classesFor(method, path), ['burst', 'sustained', 'writes', 'sensitive'], `${method} ${path}`);
    }
    assert.deepEqual(classesFor('GET', '/api/v1/api-keys'), ['burst', 'sustained']);
    assert.deepEqual(specOf('burst', DEFAULT_PLAN_LIMITS.standard), { name: 'burst', kind: 'bucket', a: 100, b: 50 });
  });
});

describe('memory limiter store (injected clock)', () => {
  let now = 1_700_000_000_000;
  const store = new MemoryLimiterStore({ now: () => now });

  it('burst: a token bucket empties at its capacity and refills at its rate', async () => {
    const specs = [bucket('burst', 5, 2)];
    const { allowed, refusal } = await drain(store, 'm:a', specs);
    assert.equal(allowed, 5);
    assert.equal(refusal.refusedBy, 'burst');
    assert.equal(refusal.retryAfterSeconds, 1);
    now += 500;
    assert.equal((await store.consume({ subject: 'm:a', specs })).allowed, true, 'one token back after 0.5 s at 2/s');
    assert.equal((await store.consume({ subject: 'm:a', specs })).allowed, false);
  });

  it('sustained and sensitive: a rolling window refuses past its limit and recovers as the window slides', async () => {
    for (const name of ['sustained', 'sensitive'] as const) {
      const specs = [window(name, 4, 60)];
      const { allowed, refusal } = await drain(store, `m:${name}`, specs);
      assert.equal(allowed, 4);
      assert.equal(refusal.refusedBy, name);
      assert.ok(refusal.retryAfterSeconds >= 1 && refusal.retryAfterSeconds <= 120, String(refusal.retryAfterSeconds));
      now += refusal.retryAfterSeconds * 1000;
      assert.equal((await store.consume({ subject: `m:${name}`, specs })).allowed, true, 'allowed again after Retry-After');
    }
  });

  it("a rolling window's t is when the whole quota is back, not the next window boundary", async () => {
    const specs = [window('sensitive', 4, 60)];
    now = Math.floor(now / 60_000) * 60_000 + 10_000; // 10 s into a fixed window
    const first = await store.consume({ subject: 'm:whole', specs });
    assert.equal(first.classes[0]!.remaining, 3);
    assert.equal(first.classes[0]!.reset, 110, 'this request weighs until the end of the next window: 50 s + 60 s');
    now += 109_000;
    assert.equal((await store.consume({ subject: 'm:whole-probe', specs })).classes[0]!.remaining, 3, 'another subject is untouched');
    const almost = await store.consume({ subject: 'm:whole', specs });
    assert.ok(almost.classes[0]!.remaining < 3, 'a second before t, part of the first request still counts');
    now += 61_000 + 60_000; // past the moment the second request is whole too
    const whole = await store.consume({ subject: 'm:whole', specs });
    assert.equal(whole.classes[0]!.remaining, 3, 'after t the whole quota is back: only this request counts');
  });

  it('writes: refused by the first empty class, and a refusal consumes nothing anywhere', async () => {
    const specs = [bucket('burst', 10, 1), window('sustained', 100, 3600), bucket('writes', 2, 1)];
    const { allowed, refusal } = await drain(store, 'm:w', specs);
    assert.equal(allowed, 2);
    assert.equal(refusal.refusedBy, 'writes');
    const burst = refusal.classes.find((c) => c.name === 'burst')!;
    assert.equal(burst.remaining, 8, 'the refused request took nothing from burst');
    const reads = await store.consume({ subject: 'm:w', specs: specs.slice(0, 2) });
    assert.equal(reads.allowed, true, 'reads still pass while writes are empty');
    assert.equal(reads.classes[0]!.remaining, 7);
  });

  it('applies an operator override only to its merchant, newest version wins', async () => {
    const specs = [bucket('burst', 3, 1)];
    await store.setOverride('mch_o', { 'burst.capacity': 6 }, 2);
    await store.setOverride('mch_o', { 'burst.capacity': 1 }, 1);
    assert.equal(
      (
        await drain(
          store,
          'm:mch_o',
          specs.map((s) => s),
        )
      ).allowed,
      3,
      'subject without merchantId ignores it',
    );
    let allowed = 0;
    while ((await store.consume({ subject: 'm:mch_o2', merchantId: 'mch_o', specs })).allowed) allowed += 1;
    assert.equal(allowed, 6);
  });

  it('a per-replica share grants that fraction of the budget', async () => {
    const half = new MemoryLimiterStore({ now: () => now, share: 0.5 });
    assert.equal((await drain(half, 'm:h', [bucket('burst', 10, 5), window('sustained', 100, 60)])).allowed, 5);
  });
});

describe('redis limiter store (real Redis, one script per request)', function () {
  this.timeout(20_000);
  const prefix = `merx:test:${randomBytes(6).toString('hex')}:`;
  const logger = createLogger('throttle-test', 'silent');
  let a: RedisLimiterStore;
  let b: RedisLimiterStore;

  before(async () => {
    a = new RedisLimiterStore({ url: REDIS_URL, keyPrefix: prefix, logger });
    b = new RedisLimiterStore({ url: REDIS_URL, keyPrefix: prefix, logger });
    await until(async () => a.redis.status === 'ready' && b.redis.status === 'ready', 5_000);
  });
  after(async () => {
    await a.close();
    await b.close();
    await purgeThrottleState(REDIS_URL, prefix);
  });

  it('burst: empties at capacity and refills at its rate', async () => {
    const specs = [bucket('burst', 4, 20)];
    const { allowed, refusal } = await drain(a, 'm:r1', specs);
    assert.equal(allowed, 4);
    assert.equal(refusal.refusedBy, 'burst');
    assert.deepEqual(refusal.classes[0]!.quota, 4);
    await until(async () => (await a.consume({ subject: 'm:r1', specs })).allowed, 2_000);
  });

  it('sustained and sensitive: windows refuse past the limit and recover', async () => {
    for (const name of ['sustained', 'sensitive'] as const) {
      const specs = [window(name, 3, 1)];
      const { allowed, refusal } = await drain(a, `m:r-${name}`, specs);
      assert.ok(allowed <= 3 && allowed >= 1, String(allowed));
      assert.equal(refusal.refusedBy, name);
      assert.ok(refusal.retryAfterSeconds <= 2);
      await until(async () => (await a.consume({ subject: `m:r-${name}`, specs })).allowed, 3_000);
    }
  });

  it("a rolling window's t is when the whole quota is back: beyond the current window, within two", async () => {
    const specs = [window('sensitive', 10, 60)];
    const decision = await a.consume({ subject: 'm:r-whole', specs });
    const reset = decision.classes[0]!.reset;
    assert.ok(reset > 60 && reset <= 120, `t=${reset}`);
  });

  it('writes: the first empty class refuses and nothing is consumed', async () => {
    const specs = [bucket('burst', 10, 0.001), bucket('writes', 2, 0.001)];
    const { allowed, refusal } = await drain(a, 'm:rw', specs);
    assert.equal(allowed, 2);
    assert.equal(refusal.refusedBy, 'writes');
    assert.equal(refusal.classes[0]!.remaining, 8);
    const again = await a.consume({ subject: 'm:rw', specs: specs.slice(0, 1) });
    assert.equal(again.classes[0]!.remaining, 7);
  });

  it('two clients (replicas) share one budget; another merchant is untouched', async () => {
    const specs = [bucket('burst', 6, 0.001)];
    let allowed = 0;
    for (let i = 0; i < 10; i += 1) if ((await (i % 2 ? a : b).consume({ subject: 'm:shared', specs })).allowed) allowed += 1;
    assert.equal(allowed, 6);
    assert.equal((await b.consume({ subject: 'm:other', specs })).allowed, true);
  });

  it('overrides stored in Redis reach every replica, newest version wins', async () => {
    const specs = [bucket('burst', 2, 0.001)];
    await a.setOverride('mch_ro', { 'burst.capacity': 5 }, 3);
    await a.setOverride('mch_ro', { 'burst.capacity': 1 }, 2);
    let allowed = 0;
    while ((await b.consume({ subject: 'm:mch_ro', merchantId: 'mch_ro', specs })).allowed) allowed += 1;
    assert.equal(allowed, 5);
  });
});
