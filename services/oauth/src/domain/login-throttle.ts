import { z } from '@merx/kit';

/**
 * Sign-in attempts are limited per account and per client address, with growing delays: after
 * `freeFailures` failures in a row, each further failure locks the key for twice as long as the
 * one before (`firstLockSeconds`, twice that, four times, … up to `maxLockSeconds`). A locked key is refused before any
 * password is hashed, so guessing costs the guesser time and the server nothing. Failures are
 * forgotten after `forgetAfterSeconds` without one; a successful sign-in clears its account's
 * count (not the address's: one's own account must not reset the counter for guessing others).
 */
export interface LoginThrottlePolicy {
  freeFailures: number;
  firstLockSeconds: number;
  maxLockSeconds: number;
  forgetAfterSeconds: number;
}

export interface SignInThrottle {
  account: LoginThrottlePolicy;
  address: LoginThrottlePolicy;
}

export const DEFAULT_SIGN_IN_THROTTLE: SignInThrottle = {
  account: { freeFailures: 5, firstLockSeconds: 1, maxLockSeconds: 15 * 60, forgetAfterSeconds: 60 * 60 },
  // Many people may share an address (an office, a carrier's NAT): more room before it slows down.
  address: { freeFailures: 50, firstLockSeconds: 1, maxLockSeconds: 15 * 60, forgetAfterSeconds: 15 * 60 },
};

const policyPatch = z
  .object({
    free_failures: z.number().int().min(0).max(1_000),
    first_lock_seconds: z.number().int().min(1).max(3_600),
    max_lock_seconds: z.number().int().min(1).max(86_400),
    forget_after_seconds: z
      .number()
      .int()
      .min(1)
      .max(7 * 86_400),
  })
  .strict()
  .partial();

/**
 * MERX_SIGNIN_THROTTLE: JSON changing any of the defaults, e.g.
 * `{"account":{"free_failures":10},"address":{"max_lock_seconds":300}}`. Throws a message naming the variable.
 */
export function signInThrottleFromEnv(env: Record<string, string | undefined>): SignInThrottle {
  const raw = env.MERX_SIGNIN_THROTTLE;
  if (raw === undefined || raw.trim() === '') return DEFAULT_SIGN_IN_THROTTLE;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error('MERX_SIGNIN_THROTTLE must be JSON');
  }
  const result = z.object({ account: policyPatch, address: policyPatch }).strict().partial().safeParse(parsed);
  if (!result.success) throw new Error(`MERX_SIGNIN_THROTTLE: ${result.error.issues.map((issue) => `${issue.path.join('.')} ${issue.message}`).join('; ')}`);
  const merged = (base: LoginThrottlePolicy, patch: z.infer<typeof policyPatch> | undefined): LoginThrottlePolicy => ({
    freeFailures: patch?.free_failures ?? base.freeFailures,
    firstLockSeconds: patch?.first_lock_seconds ?? base.firstLockSeconds,
    maxLockSeconds: patch?.max_lock_seconds ?? base.maxLockSeconds,
    forgetAfterSeconds: patch?.forget_after_seconds ?? base.forgetAfterSeconds,
  });
  return { account: merged(DEFAULT_SIGN_IN_THROTTLE.account, result.data.account), address: merged(DEFAULT_SIGN_IN_THROTTLE.address, result.data.address) };
}

export interface LoginFailures {
  failures: number;
  lastFailureAt: Date;
  lockedUntil: Date | undefined;
}

/** Seconds until this key may try again (0: it may now). */
export function secondsLocked(record: LoginFailures | undefined, now: Date): number {
  if (!record?.lockedUntil || record.lockedUntil <= now) return 0;
  return Math.ceil((record.lockedUntil.getTime() - now.getTime()) / 1000);
}

/** The record after one more failure at `now`. */
export function afterFailure(record: LoginFailures | undefined, now: Date, policy: LoginThrottlePolicy): LoginFailures {
  const stale = !record || now.getTime() - record.lastFailureAt.getTime() > policy.forgetAfterSeconds * 1000;
  const failures = (stale ? 0 : record.failures) + 1;
  const over = failures - policy.freeFailures;
  const lockSeconds = over > 0 ? Math.min(policy.maxLockSeconds, policy.firstLockSeconds * 2 ** (over - 1)) : 0;
  return { failures, lastFailureAt: now, lockedUntil: lockSeconds > 0 ? new Date(now.getTime() + lockSeconds * 1000) : undefined };
}

export const accountKey = (email: string) => `account:${email.trim().toLowerCase()}`;
export const addressKey = (ip: string) => `address:${ip}`;
