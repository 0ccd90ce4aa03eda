import assert from 'node:assert/strict';
import { FairShare } from './fair-share.js';

/** A clock the test moves by hand, so worker time is earned exactly. */
function manualClock() {
  let now = 0;
  return { now: () => now, advance: (ms: number) => void (now += ms) };
}

const ROOMY = { maxRunningPerMerchant: 10, workerMsPerSecond: 1_000, burstMs: 1_000 };

function startAll<T>(share: FairShare<T>): Array<{ merchantId: string; job: T }> {
  const started = [];
  for (let next = share.next(); next; next = share.next()) started.push(next);
  return started;
}

describe('FairShare', () => {
  it('serves merchants in turns, one job each before anyone gets a second', () => {
    const share = new FairShare<string>(ROOMY, manualClock().now);
    for (const job of ['b1', 'b2', 'b3', 'b4']) share.push('b', job);
    share.push('a', 'a1');
    share.push('c', 'c1');
    share.push('a', 'a2');
    assert.equal(share.queued, 7);
    assert.deepEqual(
      startAll(share).map((next) => next.job),
      ['b1', 'a1', 'c1', 'b2', 'a2', 'b3', 'b4'],
    );
    assert.equal(share.queued, 0);
  });

  it('puts a merchant served to the back of the turns, behind one that arrived meanwhile', () => {
    const share = new FairShare<string>(ROOMY, manualClock().now);
    share.push('b', 'b1');
    share.push('b', 'b2');
    assert.equal(share.next()?.job, 'b1');
    share.push('a', 'a1');
    assert.deepEqual(
      startAll(share).map((next) => next.job),
      ['a1', 'b2'],
    );
  });

  it('starts no more of one merchant than its running maximum, and another one after each end', () => {
    const share = new FairShare<string>({ ...ROOMY, maxRunningPerMerchant: 1 }, manualClock().now);
    share.push('b', 'b1');
    share.push('b', 'b2');
    assert.equal(share.next()?.job, 'b1');
    assert.equal(share.next(), undefined, 'b is at its maximum');
    share.push('a', 'a1');
    assert.equal(share.next()?.job, 'a1', 'another merchant is not held back by it');
    share.finished('b', 5);
    assert.equal(share.next()?.job, 'b2');
  });

  it('holds back a merchant in worker-time debt until it has earned it back, and says when', () => {
    const clock = manualClock();
    const share = new FairShare<string>({ maxRunningPerMerchant: 4, workerMsPerSecond: 100, burstMs: 200 }, clock.now);
    share.push('b', 'b1');
    share.push('b', 'b2');
    assert.equal(share.next()?.job, 'b1');
    assert.equal(share.next()?.job, 'b2', 'a job pays when it ends: the balance is still positive');
    share.finished('b', 500); // 200 - 500 = -300
    share.finished('b', 0);
    share.push('b', 'b3');
    share.push('a', 'a1');
    assert.equal(share.next()?.job, 'a1');
    assert.equal(share.next(), undefined);
    assert.equal(share.msUntilEligible(), 3_010, 'a balance of -300 at 100 ms/s is positive after 3.01 s');
    clock.advance(3_000);
    assert.equal(share.next(), undefined);
    clock.advance(20);
    assert.equal(share.next()?.job, 'b3');
  });

  it('saves up worker time to the burst and no further', () => {
    const clock = manualClock();
    const share = new FairShare<string>({ maxRunningPerMerchant: 4, workerMsPerSecond: 100, burstMs: 200 }, clock.now);
    share.push('b', 'b1');
    share.next();
    share.finished('b', 150); // 50 left
    clock.advance(60_000); // a quiet minute earns 6,000 ms, capped at 200
    share.push('b', 'b2');
    share.next();
    share.finished('b', 250); // -50
    share.push('b', 'b3');
    assert.equal(share.next(), undefined, 'the burst was 200, not 6,050');
    assert.equal(share.msUntilEligible(), 510);
  });

  it('charges worker time used outside a job, such as replacing a worker a job stopped', () => {
    const clock = manualClock();
    const share = new FairShare<string>({ maxRunningPerMerchant: 4, workerMsPerSecond: 100, burstMs: 200 }, clock.now);
    share.charge('b', 300);
    share.push('b', 'b1');
    assert.equal(share.next(), undefined);
    assert.equal(share.msUntilEligible(), 1_010);
  });

  it('says nothing is held back by worker time when every waiting merchant is at its running maximum', () => {
    const share = new FairShare<string>({ ...ROOMY, maxRunningPerMerchant: 1 }, manualClock().now);
    share.push('b', 'b1');
    share.push('b', 'b2');
    share.next();
    assert.equal(share.msUntilEligible(), undefined);
  });

  it('forgets merchants that are idle and paid up, so it keeps state only for the busy ones', () => {
    const clock = manualClock();
    const share = new FairShare<string>({ ...ROOMY, workerMsPerSecond: 1_000, burstMs: 1_000 }, clock.now);
    for (let i = 0; i < 200; i++) {
      share.push(`m${i}`, 'job');
      share.next();
      share.finished(`m${i}`, 10);
      clock.advance(20);
    }
    assert.ok(share.trackedMerchants <= 65, `${share.trackedMerchants} merchants kept`);
  });

  it('hands every queued job back on takeAll', () => {
    const share = new FairShare<string>(ROOMY, manualClock().now);
    share.push('a', 'a1');
    share.push('b', 'b1');
    share.push('a', 'a2');
    assert.deepEqual(share.takeAll().sort(), ['a1', 'a2', 'b1']);
    assert.equal(share.queued, 0);
    assert.equal(share.next(), undefined);
  });

  it('checks its limits', () => {
    assert.throws(() => new FairShare({ ...ROOMY, maxRunningPerMerchant: 0 }), RangeError);
    assert.throws(() => new FairShare({ ...ROOMY, workerMsPerSecond: 0 }), RangeError);
    assert.throws(() => new FairShare({ ...ROOMY, burstMs: -1 }), RangeError);
  });
});
