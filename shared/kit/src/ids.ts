import { randomBytes } from 'node:crypto';

/**
 * Ids are `<prefix>_<26 chars>`: 10 chars of millisecond time and 16 of randomness in Crockford
 * base32, lower case. They sort by creation time (so cursors can be ids) and reveal neither
 * counts nor tenants. Within one process ids minted in the same millisecond are made strictly
 * increasing, so a list ordered by id is exactly creation order for one writer.
 */
const ALPHABET = '0123456789abcdefghjkmnpqrstvwxyz';
const TIME_LENGTH = 10;
const RANDOM_LENGTH = 16;

export const idPrefixes = {
  merchant: 'mch',
  product: 'prod',
  apiKey: 'key',
  event: 'evt',
  request: 'req',
  user: 'usr',
  app: 'app',
  error: 'err',
} as const;

export type IdPrefix = (typeof idPrefixes)[keyof typeof idPrefixes] | string;

let lastTime = -1;
let lastRandom: number[] = [];

function encodeTime(time: number): string {
  let out = '';
  for (let i = TIME_LENGTH - 1; i >= 0; i--) {
    const mod = time % 32;
    out = ALPHABET[mod] + out;
    time = (time - mod) / 32;
  }
  return out;
}

function freshRandom(): number[] {
  const bytes = randomBytes(RANDOM_LENGTH);
  return Array.from(bytes, (b) => b & 31);
}

function incrementRandom(digits: number[]): number[] {
  const next = digits.slice();
  for (let i = next.length - 1; i >= 0; i--) {
    if (next[i]! < 31) {
      next[i]! += 1;
      return next;
    }
    next[i] = 0;
  }
  return freshRandom();
}

export function newId(prefix: IdPrefix, now: number = Date.now()): string {
  if (now === lastTime) {
    lastRandom = incrementRandom(lastRandom);
  } else {
    lastTime = now;
    lastRandom = freshRandom();
  }
  return `${prefix}_${encodeTime(now)}${lastRandom.map((d) => ALPHABET[d]).join('')}`;
}

/**
 * The smallest id string above every id minted before `ms` and below every id minted from it on:
 * a cursor for "from this time" over id-ordered rows.
 */
export function idFloorAt(prefix: IdPrefix, ms: number): string {
  return `${prefix}_${encodeTime(Math.max(0, Math.floor(ms)))}`;
}

const ID_BODY = /^[0-9a-hjkmnp-tv-z]{26}$/;

export function isId(value: unknown, prefix: IdPrefix): value is string {
  if (typeof value !== 'string' || !value.startsWith(`${prefix}_`)) return false;
  return ID_BODY.test(value.slice(prefix.length + 1));
}
