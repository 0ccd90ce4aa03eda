import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Db, Queryable } from './db.js';

/**
 * Signing secrets (webhook subscriptions' and destinations') are kept sealed at rest: AES-256-GCM
 * under a key from configuration (MERX_SECRETS_KEYS), so a copy of the database, a backup or a
 * log of a message on the bus does not hand out the keys merchants verify deliveries with.
 *
 * A sealed value describes itself, `sealed:v1:<keyId>:<base64url of iv | ciphertext | tag>`, so
 * a key ring of several keys opens values sealed under any of them and an operator rotates by
 * putting a new key first, resealing, then dropping the old one. The record's identity (merchant
 * and record id) is the associated data: a sealed value copied to another row does not open.
 */
export const SEALED_PREFIX = 'sealed:v1:';

/** Whose secret a sealed value is: bound into the ciphertext as associated data. */
export interface SealingContext {
  merchantId: string;
  recordId: string;
}

const KEY_ID = /^[A-Za-z0-9_-]{1,32}$/;
const IV_BYTES = 12;
const TAG_BYTES = 16;

export class SecretKeyRingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SecretKeyRingError';
  }
}

/** A sealed value that does not open: unknown key, tampered bytes, or another record's. */
export class UnsealError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UnsealError';
  }
}

const associatedData = (context: SealingContext) => Buffer.from(`merx-secret:v1\n${context.merchantId}\n${context.recordId}`, 'utf8');

export function isSealed(value: string): boolean {
  return value.startsWith(SEALED_PREFIX);
}

/** The key id a sealed value names, or undefined for plaintext (a row from before sealing). */
export function sealedKeyId(value: string): string | undefined {
  if (!isSealed(value)) return undefined;
  return value.slice(SEALED_PREFIX.length).split(':', 1)[0];
}

/** The ordered keys of MERX_SECRETS_KEYS: the first seals, every one opens. */
export class SecretKeyRing {
  private constructor(
    private readonly keys: ReadonlyMap<string, Buffer>,
    readonly activeKeyId: string,
  ) {}

  /** `keyId:base64-of-32-bytes[,keyId:…]`; throws SecretKeyRingError naming what is wrong (never the key). */
  static parse(text: string): SecretKeyRing {
    const entries = text
      .split(',')
      .map((entry) => entry.trim())
      .filter(Boolean);
    if (entries.length === 0) throw new SecretKeyRingError('lists no key');
    const keys = new Map<string, Buffer>();
    for (const [index, entry] of entries.entries()) {
      const separator = entry.indexOf(':');
      const id = separator < 0 ? '' : entry.slice(0, separator);
      const encoded = separator < 0 ? '' : entry.slice(separator + 1);
      if (!KEY_ID.test(id)) throw new SecretKeyRingError(`entry ${index + 1} must be keyId:base64 with a key id of letters, digits, _ or - (at most 32)`);
      if (keys.has(id)) throw new SecretKeyRingError(`key id ${id} appears twice`);
      const key = Buffer.from(encoded, 'base64');
      if (!/^[A-Za-z0-9+/_-]+={0,2}$/.test(encoded) || key.length !== 32) throw new SecretKeyRingError(`key ${id} must be base64 of exactly 32 bytes`);
      keys.set(id, key);
    }
    return new SecretKeyRing(keys, entries[0]!.split(':', 1)[0]!);
  }

  /** A new ring of one random key: what the embedded mode keeps in `.merx/` and tests use. */
  static generate(keyId = `k${randomBytes(4).toString('hex')}`): SecretKeyRing {
    return SecretKeyRing.parse(newSecretKeyEntry(keyId));
  }

  /** `sealing`'s keys first (its active key seals), then those of `alsoOpening` it lacks. */
  static combine(sealing: SecretKeyRing, alsoOpening: SecretKeyRing): SecretKeyRing {
    const keys = new Map(sealing.keys);
    for (const [id, key] of alsoOpening.keys) {
      const known = keys.get(id);
      if (known && !known.equals(key)) throw new SecretKeyRingError(`key id ${id} names two different keys`);
      keys.set(id, key);
    }
    return new SecretKeyRing(keys, sealing.activeKeyId);
  }

  get keyIds(): string[] {
    return [...this.keys.keys()];
  }

  /** Whether `value` is already what sealing it today would give (modulo the random IV). */
  isCurrent(value: string): boolean {
    return sealedKeyId(value) === this.activeKeyId;
  }

  seal(plaintext: string, context: SealingContext): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(this.activeKeyId)!, iv);
    cipher.setAAD(associatedData(context));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return `${SEALED_PREFIX}${this.activeKeyId}:${Buffer.concat([iv, ciphertext, cipher.getAuthTag()]).toString('base64url')}`;
  }

  /** The plaintext of a sealed value; a value without the `sealed:` prefix is a row from before sealing and is returned as is. */
  open(stored: string, context: SealingContext): string {
    if (!isSealed(stored)) return stored;
    const [keyId, encoded, ...rest] = stored.slice(SEALED_PREFIX.length).split(':');
    const key = keyId === undefined ? undefined : this.keys.get(keyId);
    if (!key)
      throw new UnsealError(
        `a secret is sealed under key ${keyId ?? '?'}, which MERX_SECRETS_KEYS does not list (keep the old key until secrets:reseal has run)`,
      );
    const bytes = Buffer.from(encoded ?? '', 'base64url');
    if (rest.length > 0 || bytes.length < IV_BYTES + TAG_BYTES) throw new UnsealError('a sealed secret is malformed');
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
      decipher.setAAD(associatedData(context));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES, bytes.length - TAG_BYTES)), decipher.final()]).toString('utf8');
    } catch {
      throw new UnsealError(
        `a secret sealed under key ${keyId} does not open for ${context.merchantId}/${context.recordId} (altered, or copied from another record)`,
      );
    }
  }

  /** The same value sealed under the active key (plaintext, or sealed under an older one). */
  reseal(stored: string, context: SealingContext): string {
    return this.isCurrent(stored) ? stored : this.seal(this.open(stored, context), context);
  }
}

/** One MERX_SECRETS_KEYS entry with a fresh random key. */
export function newSecretKeyEntry(keyId: string): string {
  return `${keyId}:${randomBytes(32).toString('base64')}`;
}

/**
 * The key ring the stores of this process seal and open with. Services install theirs at start
 * (`startWebhooks`, `startMerchants`) from validated configuration; store functions reach it
 * here rather than through every signature, because sealing is an encoding of the row, not a
 * decision of the use case. Installing adds keys: one process may run several embedded stacks
 * (tests), each with its own key, and every one of their rows must still open. The last
 * installed ring's active key seals.
 */
let processRing: SecretKeyRing | undefined;

export function installSecretKeyRing(ring: SecretKeyRing): void {
  processRing = processRing ? SecretKeyRing.combine(ring, processRing) : ring;
}

function installedRing(): SecretKeyRing {
  if (!processRing) throw new SecretKeyRingError('no secret key ring is installed (MERX_SECRETS_KEYS)');
  return processRing;
}

/** For stores: seal a signing secret on its way into a row. */
export function sealSecret(plaintext: string, context: SealingContext): string {
  return installedRing().seal(plaintext, context);
}

export function sealOptionalSecret(plaintext: string | null, context: SealingContext): string | null {
  return plaintext === null ? null : sealSecret(plaintext, context);
}

/** For stores and message codecs: open a signing secret read from a row or a message. */
export function openSecret(stored: string, context: SealingContext): string {
  return installedRing().open(stored, context);
}

export function openOptionalSecret(stored: string | null, context: SealingContext): string | null {
  return stored === null ? null : openSecret(stored, context);
}

/** A table whose columns hold sealed secrets, for `resealSecretColumns`. */
export interface SealedColumns {
  /** Schema-qualified table name. */
  table: string;
  /** Columns holding a secret or NULL; the row's identity is (merchant_id, id). */
  columns: string[];
}

/**
 * Reseals every secret of these columns that is not sealed under the ring's active key
 * (plaintext rows from before sealing, rows under an older key), a batch of rows per
 * transaction with the rows locked, so writes going on meanwhile are neither lost nor blocked
 * for long. Answers how many rows changed. What `npm run secrets:reseal` runs.
 */
export async function resealSecretColumns(db: Db, ring: SecretKeyRing, target: SealedColumns, batchSize = 500): Promise<number> {
  const current = `${SEALED_PREFIX}${ring.activeKeyId}:%`;
  const stale = target.columns.map((column) => `(${column} IS NOT NULL AND ${column} NOT LIKE $1)`).join(' OR ');
  let changed = 0;
  for (let after: [string, string] = ['', '']; ;) {
    const batch = await db.transaction(async (tx: Queryable) => {
      const { rows } = await tx.query<Record<string, string | null>>(
        `SELECT merchant_id, id, ${target.columns.join(', ')} FROM ${target.table}
         WHERE (merchant_id, id) > ($2, $3) AND (${stale}) ORDER BY merchant_id, id LIMIT ${Number(batchSize)} FOR UPDATE`,
        [current, after[0], after[1]],
      );
      if (rows.length === 0) return undefined;
      const values = target.columns.map((column) =>
        rows.map((row) => {
          const stored = row[column] ?? null;
          return stored === null ? null : ring.reseal(stored, { merchantId: row.merchant_id!, recordId: row.id! });
        }),
      );
      await tx.query(
        `UPDATE ${target.table} t SET ${target.columns.map((column, index) => `${column} = u.c${index}`).join(', ')}
         FROM unnest($1::text[], $2::text[]${target.columns.map((_, index) => `, $${index + 3}::text[]`).join('')}) AS u(m, i${target.columns.map((_, index) => `, c${index}`).join('')})
         WHERE t.merchant_id = u.m AND t.id = u.i`,
        [rows.map((row) => row.merchant_id), rows.map((row) => row.id), ...values],
      );
      const last = rows[rows.length - 1]!;
      return { count: rows.length, last: [last.merchant_id!, last.id!] as [string, string] };
    });
    if (!batch) return changed;
    changed += batch.count;
    after = batch.last;
  }
}
