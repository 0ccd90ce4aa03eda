import { randomFillSync } from 'node:crypto';

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
let lastTimeText = '';
/** The random part of the last id, one base32 digit (0–31) per character. */
const lastRandom = new Uint8Array(RANDOM_LENGTH);

function encodeTime(time: number): string {
  let out = '';
  for (let i = TIME_LENGTH - 1; i >= 0; i--) {
    const mod = time % 32;
    out = ALPHABET[mod] + out;
    time = (time - mod) / 32;
  }
  return out;
}

// Randomness comes from the CSPRNG in blocks: a randomBytes call (and its array) for every
// millisecond that mints an id was most of newId's cost, and fan-out mints one per delivery.
const RANDOM_POOL_BYTES = RANDOM_LENGTH * 256;
const randomPool = Buffer.alloc(RANDOM_POOL_BYTES);
let randomPoolOffset = RANDOM_POOL_BYTES;

function drawFreshRandom(): void {
  if (randomPoolOffset === RANDOM_POOL_BYTES) {
    randomFillSync(randomPool);
    randomPoolOffset = 0;
  }
  for (let i = 0; i < RANDOM_LENGTH; i++) lastRandom[i] = randomPool[randomPoolOffset + i]! & 31;
  randomPoolOffset += RANDOM_LENGTH;
}

/** The next random part within one millisecond; past the largest, a fresh one (as good as never). */
function incrementRandom(): void {
  for (let i = RANDOM_LENGTH - 1; i >= 0; i--) {
    if (lastRandom[i]! < 31) {
      lastRandom[i]! += 1;
      return;
    }
    lastRandom[i] = 0;
  }
  drawFreshRandom();
}

export function newId(prefix: IdPrefix, now: number = Date.now()): string {
  if (now === lastTime) {
    incrementRandom();
  } else {
    lastTime = now;
    lastTimeText = encodeTime(now);
    drawFreshRandom();
  }
  let random = '';
  for (let i = 0; i < RANDOM_LENGTH; i++) random += ALPHABET[lastRandom[i]!];
  return `${prefix}_${lastTimeText}${random}`;
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
