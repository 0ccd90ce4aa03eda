import assert from 'node:assert/strict';
import {
  afterFailure,
  DEFAULT_SIGN_IN_THROTTLE,
  secondsLocked,
  signInThrottleFromEnv,
  type LoginFailures,
  type LoginThrottlePolicy,
} from './login-throttle.js';

const policy: LoginThrottlePolicy = { freeFailures: 3, firstLockSeconds: 1, maxLockSeconds: 8, forgetAfterSeconds: 60 };

describe('sign-in throttle policy', () => {
  it('lets the free failures pass, then locks for twice as long after each further one, up to the cap', () => {
    let now = new Date('2026-11-23T10:00:00Z');
    let record: LoginFailures | undefined;
    const locks: number[] = [];
    for (let attempt = 0; attempt < 8; attempt += 1) {
      record = afterFailure(record, now, policy);
      locks.push(secondsLocked(record, now));
      now = new Date(now.getTime() + secondsLocked(record, now) * 1000);
    }
    assert.deepEqual(locks, [0, 0, 0, 1, 2, 4, 8, 8]);
  });

  it('forgets failures after a quiet period, and a lock ends when its time is up', () => {
    const start = new Date('2026-11-23T10:00:00Z');
    let record: LoginFailures | undefined;
    for (let attempt = 0; attempt < 4; attempt += 1) record = afterFailure(record, start, policy);
    assert.equal(secondsLocked(record, start), 1);
    assert.equal(secondsLocked(record, new Date(start.getTime() + 1000)), 0);
    const later = new Date(start.getTime() + 61_000);
    assert.equal(afterFailure(record, later, policy).failures, 1);
  });

  it('reads MERX_SIGNIN_THROTTLE over the defaults and names the variable when it is wrong', () => {
    assert.deepEqual(signInThrottleFromEnv({}), DEFAULT_SIGN_IN_THROTTLE);
    const changed = signInThrottleFromEnv({ MERX_SIGNIN_THROTTLE: '{"account":{"free_failures":2,"first_lock_seconds":3}}' });
    assert.deepEqual(changed.account, { ...DEFAULT_SIGN_IN_THROTTLE.account, freeFailures: 2, firstLockSeconds: 3 });
    assert.deepEqual(changed.address, DEFAULT_SIGN_IN_THROTTLE.address);
    assert.throws(() => signInThrottleFromEnv({ MERX_SIGNIN_THROTTLE: '{"account":{"free_failures":-1}}' }), /MERX_SIGNIN_THROTTLE: account\.free_failures/);
    assert.throws(() => signInThrottleFromEnv({ MERX_SIGNIN_THROTTLE: 'soon' }), /MERX_SIGNIN_THROTTLE must be JSON/);
  });
});
