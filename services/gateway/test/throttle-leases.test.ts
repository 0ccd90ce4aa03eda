import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { createLogger, newId } from '@merx/kit';
import { Redis } from 'ioredis';
import type { Decision } from '../src/throttle/algorithms.js';
import { throttleSettingsFromEnv } from '../src/throttle/config.js';
import { LeasedLimiterStore } from '../src/throttle/lease-store.js';
import type { ClassSpec } from '../src/throttle/policy.js';
import { purgeThrottleState, RedisLimiterStore, type Take } from '../src/throttle/redis-store.js';
import type { ConsumeRequest } from '../src/throttle/store.js';

const REDIS_URL = process.env.MERX_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
const MAX_LEASE = 64;
const bucket = (name: 'burst' | 'writes', capacity: number, refill: number): ClassSpec => ({ name, kind: 'bucket', a: capacity, b: refill });
const window = (limit: number, seconds: number): ClassSpec => ({ name: 'sustained', kind: 'window', a: limit, b: seconds });
/** Refills too slowly to matter within a test: counts are exact. */
const STILL = 0.001;
const ROOMY_WINDOW = window(100_000_000, 3600);

/** Real Redis; counts the scripts and what each granted. */
class CountingRedisStore extends RedisLimiterStore {
  grants: number[] = [];
  takes: Take[] = [];
  override async take(request: ConsumeRequest, want: number): Promise<Take> {
    const take = await super.take(request, want);
    this.grants.push(take.granted);
    this.takes.push(take);
    return take;
  }
}

async function until(condition: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** `loops` concurrent clients of one replica, each until its first refusal or the deadline. */
async function hammer(store: LeasedLimiterStore, request: ConsumeRequest, loops: number, deadline = Number.POSITIVE_INFINITY): Promise<Decision[]> {
  const allowed: Decision[] = [];
  await Promise.all(
    Array.from({ length: loops }, async () => {
      while (Date.now() < deadline) {
        const decision = await store.consume(request);
        if (!decision.allowed) return;
        allowed.push(decision);
      }
    }),
  );
  return allowed;
}

async function drain(store: RedisLimiterStore | LeasedLimiterStore, request: ConsumeRequest): Promise<number> {
  let allowed = 0;
  while ((await store.consume(request)).allowed) allowed += 1;
  return allowed;
}

describe('throttle leases (two replicas, real Redis)', function () {
  this.timeout(30_000);
  const prefix = `merx:test:${randomBytes(6).toString('hex')}:`;
  const logger = createLogger('throttle-lease-test', 'silent');
  const opened: Array<RedisLimiterStore | LeasedLimiterStore> = [];

  /** A replica: its own connection, its own leases. */
  async function replica(lifeMs?: number, spanMs?: number): Promise<{ redis: CountingRedisStore; leased: LeasedLimiterStore }> {
    const redis = new CountingRedisStore({ url: REDIS_URL, keyPrefix: prefix, logger });
    await redis.ready(5_000);
    const leased = new LeasedLimiterStore(redis, { logger, maxLease: MAX_LEASE, ...(lifeMs ? { lifeMs } : {}), ...(spanMs ? { spanMs } : {}) });
    opened.push(leased);
    return { redis, leased };
  }
  const merchant = (specs: ClassSpec[]): ConsumeRequest => {
    const merchantId = newId('mch');
    return { subject: `m:${merchantId}`, merchantId, specs };
  };

  after(async () => {
    await Promise.all(opened.map((store) => store.close()));
    await purgeThrottleState(REDIS_URL, prefix);
  });

  it('a low limit stays exact: concurrent requests on two replicas get the capacity, each charged in Redis on its own', async () => {
    const [a, b] = [await replica(), await replica()];
    const request = merchant([bucket('burst', 5, STILL), ROOMY_WINDOW]);
    const allowed = (await Promise.all([hammer(a.leased, request, 20), hammer(b.leased, request, 20)])).flat();
    assert.equal(allowed.length, 5);
    assert.deepEqual(
      allowed.map((decision) => decision.classes[0]!.remaining).sort(),
      [0, 1, 2, 3, 4],
      'every admitted request saw its own place in the count',
    );
    assert.deepEqual([...new Set([...a.redis.grants, ...b.redis.grants])].sort(), [0, 1], 'no script granted more than one unit');
    assert.equal(a.leased.heldUnits() + b.leased.heldUnits(), 0);
  });

  it('a roomy budget: most requests are served from leases, the replicas never spend more than Redis holds, and nothing is lost', async () => {
    const [a, b] = [await replica(), await replica()];
    const capacity = 3_000;
    const request = merchant([bucket('burst', capacity, STILL), ROOMY_WINDOW]);
    const allowed = (await Promise.all([hammer(a.leased, request, 25), hammer(b.leased, request, 25)])).flat();
    assert.ok(allowed.length <= capacity, `${allowed.length} admitted of ${capacity}`);
    const scripts = a.redis.grants.length + b.redis.grants.length;
    assert.ok(scripts * 4 < allowed.length, `${scripts} scripts for ${allowed.length} requests`);
    const remaining = allowed.map((decision) => decision.classes[0]!.remaining);
    assert.equal(new Set(remaining).size, allowed.length, 'RateLimit remaining: every admitted request saw its own place in the count');
    assert.ok(Math.max(...remaining) < capacity);
    const held = a.leased.heldUnits() + b.leased.heldUnits();
    assert.ok(held <= 2 * MAX_LEASE, `${held} held`);
    // What the replicas hold goes back when they stop; then Redis has exactly the rest.
    await a.leased.close();
    await b.leased.close();
    const rest = await drain(await replica().then((c) => c.redis), request);
    assert.equal(allowed.length + rest, capacity);
  });

  for (const kind of ['bucket', 'window'] as const) {
    it(`units a replica stops spending go back to Redis within the lease's life (${kind})`, async () => {
      // Room for a few leases of 64 (a sixteenth of what is left), so A holds one after a few tries.
      const limit = 10_000;
      const specs = kind === 'bucket' ? [bucket('burst', limit, STILL), ROOMY_WINDOW] : [bucket('burst', 1_000_000, 1_000_000), window(limit, 3600)];
      const request = merchant(specs);
      const [a, b] = [await replica(), await replica()];
      let spentByA = 0;
      await until(
        async () => {
          spentByA += (await hammer(a.leased, request, 10, Date.now() + 20)).length;
          return a.leased.heldUnits() > 0;
        },
        5_000,
        'replica A holding a lease',
      );
      // A top-up the last request asked for may still be on its way from Redis.
      await a.leased.settled();
      const heldByA = a.leased.heldUnits(request.subject);
      const first = await drain(b.leased, request);
      assert.equal(spentByA + first + heldByA, limit, 'what A holds is counted in Redis');
      await until(() => a.leased.heldUnits() === 0, 2_000, 'the lease given back');
      const second = await drain(b.leased, request);
      assert.equal(second, heldByA, "A's unspent units are B's now");
    });
  }

  it('an override reaches a replica holding a lease within its life, and at once the one that took it', async () => {
    const [a, b] = [await replica(300), await replica(300)];
    const request = merchant([bucket('burst', 100_000, STILL), ROOMY_WINDOW]);
    await until(async () => (await hammer(a.leased, request, 10, Date.now() + 20)).length > 0 && a.leased.heldUnits() > 0, 5_000, 'A holding a lease');
    await until(async () => (await hammer(b.leased, request, 10, Date.now() + 20)).length > 0 && b.leased.heldUnits() > 0, 5_000, 'B holding a lease');
    await b.leased.setOverride(request.merchantId!, { 'burst.capacity': 2 }, 1);
    assert.equal(b.leased.heldUnits(), 0, 'the replica that took the override gave its lease back');
    const next = await b.leased.consume(request);
    assert.equal(next.classes[0]!.quota, 2);
    await until(async () => (await a.leased.consume(request)).classes[0]!.quota === 2, 1_000, 'A on the new quota');
  });

  /** 20 clients per replica that keep asking after refusals; the local time of every admission. */
  async function keepAsking(replicas: LeasedLimiterStore[], request: ConsumeRequest, ms: number): Promise<number[]> {
    const admitted: number[] = [];
    const end = Date.now() + ms;
    const client = async (store: LeasedLimiterStore) => {
      while (Date.now() < end) {
        if ((await store.consume(request)).allowed) admitted.push(Date.now());
        else await new Promise((resolve) => setImmediate(resolve));
      }
    };
    await Promise.all(replicas.flatMap((store) => Array.from({ length: 20 }, () => client(store))));
    return admitted;
  }

  it('a bucket that refills: two replicas admit no more than capacity + refill × time + the units they can hold', async () => {
    const [a, b] = [await replica(), await replica()];
    const [capacity, refill] = [200, 400];
    const request = merchant([bucket('burst', capacity, refill), ROOMY_WINDOW]);
    const started = Date.now();
    const admitted = await keepAsking([a.leased, b.leased], request, 1_500);
    // A span that starts after the replicas have been taking leases for a while.
    const from = started + 500;
    const inSpan = admitted.filter((at) => at >= from);
    const seconds = (Date.now() - from) / 1000;
    const mostHeld = 2 * Math.min(MAX_LEASE, Math.floor(capacity / 16));
    assert.ok(inSpan.length <= capacity + refill * seconds + mostHeld, `${inSpan.length} admitted in ${seconds} s`);
    assert.ok(admitted.length >= capacity + refill * 1.5 * 0.5, `${admitted.length} admitted in all: the budget was used`);
  });

  it('a rolling window: two replicas admit no more than the limit + the units they can hold in any fixed window', async () => {
    const [a, b] = [await replica(), await replica()];
    const limit = 300;
    const request = merchant([bucket('burst', 1_000_000, 1_000_000), window(limit, 1)]);
    const admitted = await keepAsking([a.leased, b.leased], request, 2_500);
    const perWindow = new Map<number, number>();
    for (const at of admitted) perWindow.set(Math.floor(at / 1000), (perWindow.get(Math.floor(at / 1000)) ?? 0) + 1);
    const mostHeld = 2 * Math.min(MAX_LEASE, Math.floor(limit / 16));
    for (const [second, count] of perWindow) assert.ok(count <= limit + mostHeld, `${count} admitted in second ${second}`);
    assert.ok(Math.max(...perWindow.values()) >= limit / 2, 'the limit was reached');
  });

  it("a lease topped up across a window's end gives each unit back to the window it was counted in", async () => {
    // Units last a minute and every lease is as large as it may be, so what A holds is decided here.
    const { redis, leased } = await replica(60_000, 60_000);
    const windowMs = 2_000;
    const request = merchant([bucket('burst', 1_000_000, 1_000_000), window(100_000, windowMs / 1000)]);
    const windowOf = (ms: number) => Math.floor(ms / windowMs);
    await until(() => Date.now() % windowMs < windowMs / 4, windowMs, 'the start of a window');
    const first = windowOf(Date.now());
    let allowed = 0;
    // Window N: a lease (the first request is charged alone, the second takes a lease), a few spent.
    for (let i = 0; i < 12; i += 1) if ((await leased.consume(request)).allowed) allowed += 1;
    await leased.settled();
    assert.ok(
      redis.takes.every((take) => windowOf(take.at) === first),
      'the lease was taken in one window',
    );
    const takenInFirst = redis.takes.reduce((sum, take) => sum + take.granted, 0);
    await until(() => windowOf(Date.now()) === first + 1, 2 * windowMs, 'the next window');
    // Window N+1: spend one unit at a time until a top-up lands while units of window N are left.
    const before = redis.takes.length;
    while (redis.takes.length === before) {
      if ((await leased.consume(request)).allowed) allowed += 1;
      await leased.settled();
    }
    const topUp = redis.takes[redis.takes.length - 1]!;
    assert.equal(windowOf(topUp.at), first + 1);
    const heldFromFirst = leased.heldUnits() - topUp.granted;
    assert.ok(heldFromFirst > 0, `the lease still held units of window N (${heldFromFirst})`);
    await leased.close();
    const reader = new Redis(REDIS_URL);
    const [index, current, previous] = await reader.hmget(`${prefix}{${request.subject}}:sustained`, 'i', 'c', 'p');
    await reader.quit();
    assert.equal(Number(index), first + 1, 'still in window N+1');
    // Every unit spent came from window N's lease (the oldest are spent first); window N+1 got its top-up back whole.
    assert.equal(Number(current), 0, 'window N+1 counts none of the units taken in it');
    assert.equal(Number(previous), takenInFirst - heldFromFirst, 'window N counts what was spent of its units, the rest given back to it');
    assert.equal(Number(previous), allowed);
  });

  it('MERX_THROTTLE_MAX_LEASE: 64 by default, 1 turns leases off, anything else is refused', () => {
    assert.equal(throttleSettingsFromEnv({}).maxLease, 64);
    assert.equal(throttleSettingsFromEnv({ MERX_THROTTLE_MAX_LEASE: '1' }).maxLease, 1);
    for (const bad of ['0', '2.5', 'many', '5000']) assert.throws(() => throttleSettingsFromEnv({ MERX_THROTTLE_MAX_LEASE: bad }), /MERX_THROTTLE_MAX_LEASE/);
  });
});
