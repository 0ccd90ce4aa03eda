import assert from 'node:assert/strict';
import { RuleRunner } from './rule-runner.js';
import { routeThroughRules } from './routing.js';
import type { RoutingJob, RuleForRouting } from './types.js';

const RECORD = {
  type: 'order',
  external_id: 'ord-1001',
  occurred_at: '2025-03-01T10:15:00.000Z',
  source_id: 'src_01jd3k7q8m2x4v6b9c0d1e2f3g',
  data: { total: 120, currency: 'EUR' },
};

function forward(id: string, condition: string): RuleForRouting {
  return { id, eventTypes: ['orders.created'], condition, action: 'forward', transform: null, enabled: true };
}

const NORMAL_JOB: RoutingJob = {
  eventType: 'orders.created',
  record: RECORD,
  rules: [{ ...forward('rul_tag', 'true'), action: 'transform', transform: { set: { 'meta.via': 'merx' } } }, forward('rul_eur', 'data.currency == "EUR"')],
};

/**
 * Quadratic and never short-circuiting: every pair is compared. At about 140 ns a pair, 20,000
 * items take close to a minute, far beyond any deadline. Two levels pass the static check, so
 * only the worker's deadline can stop it.
 */
const SLOW_JOB: RoutingJob = {
  eventType: 'orders.created',
  record: { ...RECORD, data: { items: Array.from({ length: 20_000 }, (_, index) => index) } },
  rules: [forward('rul_slow', 'data.items.exists(x, data.items.exists(y, x + y < 0.0))')],
};

/**
 * The deadline the tests about deadlines use: far below the slow job's minute, and far above what
 * a trivial job needs even when a loaded machine makes it wait for a core.
 */
const DEADLINE_MS = 1_500;
const MERCHANT = 'mch_a';
const TIMED_OUT = { outcome: 'filtered', ruleId: null, reason: `rule evaluation exceeded ${DEADLINE_MS} ms; the record was not routed` };

describe('RuleRunner', () => {
  let runner: RuleRunner;
  afterEach(() => runner.close());

  // Tests that are not about the deadline give it room: on a loaded machine a trivial job can
  // wait longer than the default 100 ms for a core, and that would be the machine, not the runner.
  const UNHURRIED = { timeoutMs: 10_000 };

  it('answers as routeThroughRules does in process', async () => {
    runner = new RuleRunner({ ...UNHURRIED, poolSize: 1 });
    assert.equal(runner.workerCount, 0);
    assert.deepEqual(await runner.route(MERCHANT, NORMAL_JOB), routeThroughRules(NORMAL_JOB));
    assert.equal(runner.workerCount, 2, 'the pool of one and its spare');
  });

  it('answers queued jobs one at a time, each with its own decision', async () => {
    runner = new RuleRunner(UNHURRIED);
    const jobs = ['EUR', 'USD', 'EUR'].map((currency) => ({ ...NORMAL_JOB, record: { ...RECORD, data: { ...RECORD.data, currency } } }));
    const decisions = await Promise.all(jobs.map((job) => runner.route(MERCHANT, job)));
    assert.deepEqual(
      decisions.map((decision) => decision.outcome),
      ['routed', 'filtered', 'routed'],
    );
  });

  it('stops a job past its deadline, resolves it as not routed and serves the next job', async () => {
    runner = new RuleRunner({ timeoutMs: DEADLINE_MS, poolSize: 1 });
    await runner.route(MERCHANT, NORMAL_JOB); // the worker is up, so the time measured below is the deadline alone
    const started = performance.now();
    const slow = runner.route(MERCHANT, SLOW_JOB);
    const next = runner.route(MERCHANT, NORMAL_JOB);
    assert.deepEqual(await slow, TIMED_OUT);
    // Unstopped it would run for close to a minute; 15 s leaves a loaded machine room and still proves the deadline.
    assert.ok(performance.now() - started < 15_000, `the slow job took ${Math.round(performance.now() - started)} ms`);
    assert.deepEqual(await next, routeThroughRules(NORMAL_JOB));
    assert.equal(runner.workerCount, 2);
  });

  it('runs no more jobs at once than the pool size, though it keeps a spare worker', async () => {
    runner = new RuleRunner({ timeoutMs: DEADLINE_MS, poolSize: 1 });
    await runner.route('mch_b', NORMAL_JOB);
    const slow = runner.route('mch_b', SLOW_JOB);
    const started = performance.now();
    await runner.route('mch_a', NORMAL_JOB);
    assert.ok(performance.now() - started >= DEADLINE_MS - 50, "A's job waited for the only place in the pool");
    assert.deepEqual(await slow, TIMED_OUT);
  });

  it('keeps the deadline for every slow job in a row', async () => {
    runner = new RuleRunner({ timeoutMs: DEADLINE_MS, poolSize: 1 });
    const decisions = await Promise.all([runner.route(MERCHANT, SLOW_JOB), runner.route(MERCHANT, SLOW_JOB), runner.route(MERCHANT, NORMAL_JOB)]);
    assert.deepEqual(decisions, [TIMED_OUT, TIMED_OUT, routeThroughRules(NORMAL_JOB)]);
  });

  it('lets a pool answer fast jobs while one worker is stuck', async () => {
    runner = new RuleRunner({ timeoutMs: 5_000, poolSize: 2, fairShare: { maxRunningPerMerchant: 2 } });
    await Promise.all([runner.route(MERCHANT, NORMAL_JOB), runner.route(MERCHANT, NORMAL_JOB)]);
    const slow = runner.route(MERCHANT, SLOW_JOB);
    const fast = runner.route(MERCHANT, NORMAL_JOB);
    // The slow job runs for close to a minute (or until its 5 s deadline): whichever settles first tells.
    const first = await Promise.race([
      fast.then(() => 'fast'),
      slow.then(
        () => 'slow',
        () => 'slow',
      ),
    ]);
    assert.equal(first, 'fast', 'the fast job waited for the slow one');
    assert.deepEqual(await fast, routeThroughRules(NORMAL_JOB));
    const slowOutcome = assert.rejects(slow, /closed before the job finished/);
    await runner.close();
    await slowOutcome;
  });

  it('ends its workers on close and refuses jobs afterwards', async () => {
    runner = new RuleRunner();
    await runner.route(MERCHANT, NORMAL_JOB);
    await runner.close();
    assert.equal(runner.workerCount, 0);
    await assert.rejects(runner.route(MERCHANT, NORMAL_JOB), /the RuleRunner is closed/);
    await runner.close();
  });

  it('rejects a job that cannot be sent to a worker, and goes on', async () => {
    runner = new RuleRunner(UNHURRIED);
    const unsendable = { ...NORMAL_JOB, record: { ...RECORD, data: { callback: () => 1 } } } as unknown as RoutingJob;
    await runner.route(MERCHANT, NORMAL_JOB);
    await assert.rejects(runner.route(MERCHANT, unsendable), /could not be cloned/);
    assert.deepEqual(await runner.route(MERCHANT, NORMAL_JOB), routeThroughRules(NORMAL_JOB));
  });

  describe('between merchants', () => {
    it("runs another merchant's job while one merchant's slow jobs queue, keeping a worker free of the slow merchant", async () => {
      runner = new RuleRunner({ timeoutMs: DEADLINE_MS, poolSize: 2 });
      assert.equal(runner.limits.maxRunningPerMerchant, 1, 'one worker is always left to the others');
      await Promise.all([runner.route('mch_b', NORMAL_JOB), runner.route('mch_a', NORMAL_JOB)]);
      const slow = [1, 2, 3].map(() => runner.route('mch_b', SLOW_JOB));
      const started = performance.now();
      assert.deepEqual(await runner.route('mch_a', NORMAL_JOB), routeThroughRules(NORMAL_JOB));
      const waited = performance.now() - started;
      // Behind B's first slow job it would wait its 1.5 s deadline; FIFO, all three.
      assert.ok(waited < DEADLINE_MS, `A's job waited ${Math.round(waited)} ms behind B's`);
      assert.deepEqual(await Promise.all(slow), [TIMED_OUT, TIMED_OUT, TIMED_OUT]);
    });

    it('serves merchants in turns on a single worker: a job queued behind a long queue runs next', async () => {
      runner = new RuleRunner({ ...UNHURRIED, poolSize: 1 });
      await runner.route('mch_b', NORMAL_JOB);
      const finished: string[] = [];
      const queued = [
        ...[1, 2, 3].map((n) => runner.route('mch_b', NORMAL_JOB).then(() => finished.push(`b${n}`))),
        runner.route('mch_a', NORMAL_JOB).then(() => finished.push('a')),
      ];
      await Promise.all(queued);
      assert.deepEqual(finished, ['b1', 'a', 'b2', 'b3']);
    });

    it('holds back a merchant that used up its worker time, and not the others', async () => {
      // B may use 200 ms of worker time a second; each slow job costs it the 600 ms deadline.
      runner = new RuleRunner({ timeoutMs: 600, poolSize: 2, fairShare: { maxRunningPerMerchant: 1, workerMsPerSecond: 200, burstMs: 200 } });
      await Promise.all([runner.route('mch_b', NORMAL_JOB), runner.route('mch_a', NORMAL_JOB)]);
      const first = runner.route('mch_b', SLOW_JOB);
      const second = runner.route('mch_b', SLOW_JOB);
      const firstAt = await first.then(() => performance.now());
      // Both workers are free, but B is 400 ms in debt: it earns that back in 2 s.
      const a = performance.now();
      assert.deepEqual(await runner.route('mch_a', NORMAL_JOB), routeThroughRules(NORMAL_JOB));
      assert.ok(performance.now() - a < 1_000, 'A is not held back by B');
      assert.deepEqual(await second, { ...TIMED_OUT, reason: 'rule evaluation exceeded 600 ms; the record was not routed' });
      const gap = performance.now() - firstAt;
      assert.ok(gap >= 1_900 + 600, `B's second job ended ${Math.round(gap)} ms after its first: it should have waited about 2 s to start`);
    });
  });

  it('checks its options', () => {
    runner = new RuleRunner();
    assert.throws(() => new RuleRunner({ timeoutMs: 0 }), RangeError);
    assert.throws(() => new RuleRunner({ poolSize: 0 }), RangeError);
    assert.throws(() => new RuleRunner({ poolSize: 1.5 }), RangeError);
  });
});
