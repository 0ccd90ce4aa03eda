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
const TIMED_OUT = { outcome: 'filtered', ruleId: null, reason: `rule evaluation exceeded ${DEADLINE_MS} ms; the record was not routed` };

describe('RuleRunner', () => {
  let runner: RuleRunner;
  afterEach(() => runner.close());

  // Tests that are not about the deadline give it room: on a loaded machine a trivial job can
  // wait longer than the default 100 ms for a core, and that would be the machine, not the runner.
  const UNHURRIED = { timeoutMs: 10_000 };

  it('answers as routeThroughRules does in process', async () => {
    runner = new RuleRunner(UNHURRIED);
    assert.equal(runner.workerCount, 0);
    assert.deepEqual(await runner.route(NORMAL_JOB), routeThroughRules(NORMAL_JOB));
    assert.equal(runner.workerCount, 1);
  });

  it('answers queued jobs one at a time, each with its own decision', async () => {
    runner = new RuleRunner(UNHURRIED);
    const jobs = ['EUR', 'USD', 'EUR'].map((currency) => ({ ...NORMAL_JOB, record: { ...RECORD, data: { ...RECORD.data, currency } } }));
    const decisions = await Promise.all(jobs.map((job) => runner.route(job)));
    assert.deepEqual(
      decisions.map((decision) => decision.outcome),
      ['routed', 'filtered', 'routed'],
    );
  });

  it('stops a job past its deadline, resolves it as not routed and serves the next job', async () => {
    runner = new RuleRunner({ timeoutMs: DEADLINE_MS });
    await runner.route(NORMAL_JOB); // the worker is up, so the time measured below is the deadline alone
    const started = performance.now();
    const slow = runner.route(SLOW_JOB);
    const next = runner.route(NORMAL_JOB);
    assert.deepEqual(await slow, TIMED_OUT);
    // Unstopped it would run for close to a minute; 15 s leaves a loaded machine room and still proves the deadline.
    assert.ok(performance.now() - started < 15_000, `the slow job took ${Math.round(performance.now() - started)} ms`);
    assert.deepEqual(await next, routeThroughRules(NORMAL_JOB));
    assert.equal(runner.workerCount, 1);
  });

  it('keeps the deadline for every slow job in a row', async () => {
    runner = new RuleRunner({ timeoutMs: DEADLINE_MS });
    const decisions = await Promise.all([runner.route(SLOW_JOB), runner.route(SLOW_JOB), runner.route(NORMAL_JOB)]);
    assert.deepEqual(decisions, [TIMED_OUT, TIMED_OUT, routeThroughRules(NORMAL_JOB)]);
  });

  it('lets a pool answer fast jobs while one worker is stuck', async () => {
    runner = new RuleRunner({ timeoutMs: 5_000, poolSize: 2 });
    await Promise.all([runner.route(NORMAL_JOB), runner.route(NORMAL_JOB)]);
    const slow = runner.route(SLOW_JOB);
    const fast = runner.route(NORMAL_JOB);
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
    await runner.route(NORMAL_JOB);
    await runner.close();
    assert.equal(runner.workerCount, 0);
    await assert.rejects(runner.route(NORMAL_JOB), /the RuleRunner is closed/);
    await runner.close();
  });

  it('rejects a job that cannot be sent to a worker, and goes on', async () => {
    runner = new RuleRunner(UNHURRIED);
    const unsendable = { ...NORMAL_JOB, record: { ...RECORD, data: { callback: () => 1 } } } as unknown as RoutingJob;
    await runner.route(NORMAL_JOB);
    await assert.rejects(runner.route(unsendable), /could not be cloned/);
    assert.deepEqual(await runner.route(NORMAL_JOB), routeThroughRules(NORMAL_JOB));
  });

  it('checks its options', () => {
    runner = new RuleRunner();
    assert.throws(() => new RuleRunner({ timeoutMs: 0 }), RangeError);
    assert.throws(() => new RuleRunner({ poolSize: 0 }), RangeError);
    assert.throws(() => new RuleRunner({ poolSize: 1.5 }), RangeError);
  });
});
