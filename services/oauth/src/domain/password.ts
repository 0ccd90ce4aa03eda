import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import pLimit from 'p-limit';
import { randomBase62 } from '../provider/api-keys.js';

/** OWASP's scrypt floor (N=2^17, r=8, p=1): ~130 MiB and ~100 ms per hash on a server core. */
const COST = { N: 2 ** 17, r: 8, p: 1 };
const KEY_LENGTH = 32;
const SALT_LENGTH = 16;
export const MIN_PASSWORD_LENGTH = 12;
const GENERATED_PASSWORD_LENGTH = 24;

function scryptAsync(password: string, salt: Buffer, keyLength: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, keyLength, options, (error, key) => (error ? reject(error) : resolve(key)));
  });
}

const maxmemFor = ({ N, r }: { N: number; r: number }) => 256 * N * r;

/**
 * `scrypt$N$r$p$salt$hash` (base64url): the parameters travel with the hash, so raising the cost
 * later leaves existing hashes verifiable.
 */
export async function hashPassword(password: string, cost = COST): Promise<string> {
  const salt = randomBytes(SALT_LENGTH);
  const key = await scryptAsync(password, salt, KEY_LENGTH, { ...cost, maxmem: maxmemFor(cost) });
  return ['scrypt', cost.N, cost.r, cost.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![N, r, p].every((value) => Number.isSafeInteger(value) && value > 0)) return false;
  const expected = Buffer.from(parts[5]!, 'base64url');
  if (expected.length === 0) return false;
  const key = await scryptAsync(password, Buffer.from(parts[4]!, 'base64url'), expected.length, { N, r, p, maxmem: maxmemFor({ N, r }) });
  return timingSafeEqual(key, expected);
}

export function generatePassword(): string {
  return randomBase62(GENERATED_PASSWORD_LENGTH);
}

/** Too many passwords are being hashed already: answer "busy" rather than queue without bound. */
export class PasswordHashingBusy extends Error {
  constructor() {
    super('too many sign-ins are being checked at once');
    this.name = 'PasswordHashingBusy';
  }
}

/**
 * Each scrypt takes ~130 MiB and ~100 ms of a core, and sign-in is unauthenticated: without a
 * cap, anyone could load the CPU and memory by posting passwords. At most `maxConcurrent`
 * hashes run at once and `maxWaiting` more wait; the rest are refused at once.
 */
export function createHashingGate(maxConcurrent: number, maxWaiting: number) {
  const limit = pLimit(maxConcurrent);
  return {
    run<T>(hashing: () => Promise<T>): Promise<T> {
      if (limit.pendingCount >= maxWaiting) return Promise.reject(new PasswordHashingBusy());
      return limit(hashing);
    },
    get active(): number {
      return limit.activeCount;
    },
  };
}

export type HashingGate = ReturnType<typeof createHashingGate>;
