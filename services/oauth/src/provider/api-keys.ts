import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

export type ApiKeyMode = 'test' | 'live';

export interface GeneratedApiKey {
  keyId: string;
  /** OAuth client id: `mx_<mode>_<keyid>`. */
  clientId: string;
  /** The whole key, shown to its owner once and never stored. */
  apiKey: string;
  /** The non-secret leading part of the key, safe to store, display and log. */
  prefix: string;
}

export interface ParsedApiKey {
  mode: ApiKeyMode;
  keyId: string;
  clientId: string;
  secret: string;
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_ID_LENGTH = 16;
const SECRET_LENGTH = 32;
const API_KEY_PATTERN = /^mx_(test|live)_([0-9A-Za-z]{16})_([0-9A-Za-z]{32})$/;
const CLIENT_ID_PATTERN = /^mx_(test|live)_([0-9A-Za-z]{16})$/;
const SHA256_HEX_PATTERN = /^[0-9a-f]{64}$/;

/**
 * Rejection sampling: a byte maps to a character only below 248 (= 4 * 62), so every character
 * is equally likely; `byte % 62` on all 256 values would favour the first eight characters.
 */
export function randomBase62(length: number): string {
  const limit = 256 - (256 % BASE62.length);
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte >= limit) continue;
      out += BASE62[byte % BASE62.length];
      if (out.length === length) break;
    }
  }
  return out;
}

export function generateApiKey(mode: ApiKeyMode): GeneratedApiKey {
  const keyId = randomBase62(KEY_ID_LENGTH);
  const clientId = `mx_${mode}_${keyId}`;
  return { keyId, clientId, apiKey: `${clientId}_${randomBase62(SECRET_LENGTH)}`, prefix: clientId };
}

export function parseApiKey(key: string): ParsedApiKey | undefined {
  const match = API_KEY_PATTERN.exec(key);
  if (!match) return undefined;
  const [, mode, keyId, secret] = match as unknown as [string, ApiKeyMode, string, string];
  return { mode, keyId, clientId: `mx_${mode}_${keyId}`, secret };
}

export function parseClientId(clientId: string): { mode: ApiKeyMode; keyId: string } | undefined {
  const match = CLIENT_ID_PATTERN.exec(clientId);
  if (!match) return undefined;
  const [, mode, keyId] = match as unknown as [string, ApiKeyMode, string];
  return { mode, keyId };
}

/**
 * A plain SHA-256 is enough: the secret is 32 random base62 characters (about 190 bits), so
 * nobody can guess it from the hash however fast the hash is. Slow password hashes (bcrypt,
 * scrypt) exist to protect low-entropy human passwords and would only cost CPU on every token
 * request here.
 */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Constant-time check of a presented key against a stored `hashApiKey` value. */
export function verifyApiKey(key: string, hash: string): boolean {
  if (typeof key !== 'string' || typeof hash !== 'string' || !SHA256_HEX_PATTERN.test(hash)) return false;
  return timingSafeEqual(Buffer.from(hashApiKey(key), 'hex'), Buffer.from(hash, 'hex'));
}
