/**
 * Verifying the webhooks Merx sends: `merx.webhooks.verify(payload, headers, secret)`.
 *
 * Each delivery is signed twice with the subscription's `whsec_` secret (the HMAC key is the
 * base64 after the prefix):
 * - the Standard Webhooks headers: `webhook-signature: v1,<base64 HMAC-SHA256 of
 *   "{webhook-id}.{webhook-timestamp}.{body}">`, two signatures for 24 hours after a secret
 *   rotation (newest first), and `webhook-timestamp` refused when more than five minutes off;
 * - `hmac_sha256` in the body: the hex HMAC-SHA256 of the RFC 8785 canonical JSON of the body's
 *   other fields, which still verifies after the JSON was parsed and stored (`verifyBodyHmac`).
 *
 * No API key and no network: a receiver can verify with this module alone.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { WebhookVerificationError } from './core/errors.js';
import type { WebhookEvent } from './generated/types.js';

/** How far `webhook-timestamp` may be from this machine's clock, either way, in seconds. */
export const DEFAULT_TOLERANCE_SECONDS = 300;

const SECRET_PREFIX = 'whsec_';

/** The raw request body exactly as received: never re-serialised JSON. */
export type WebhookPayload = string | Uint8Array;
/** Node's `req.headers`, a fetch `Headers`, or any record; names match regardless of case. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;
/** One `whsec_` secret, or several while moving to a rotated one. */
export type WebhookSecrets = string | readonly string[];

export interface VerifyOptions {
  /** Seconds; 300 by default. */
  tolerance?: number;
}

/**
 * Checks a webhook request and returns its typed event. Throws `WebhookVerificationError` when a
 * header is missing, the timestamp is more than `tolerance` seconds off, no signature matches,
 * or the body's `hmac_sha256` does not.
 *
 * During a secret rotation Merx signs the headers with both secrets but the body's `hmac_sha256`
 * with the new one only; a receiver still holding only the old secret is verified by the header
 * signature alone (it covers the whole body, `hmac_sha256` included), so rotating never breaks a
 * receiver.
 */
export function verify(payload: WebhookPayload, headers: WebhookHeaders, secret: WebhookSecrets, options: VerifyOptions = {}): WebhookEvent {
  const body = bodyBytes(payload);
  const keys = keysOf(secret);
  const matchedIndex = verifyHeaders(body, headers, keys, options.tolerance ?? DEFAULT_TOLERANCE_SECONDS);
  const document = parse(body);
  if (!bodyHmacMatches(document, keys) && matchedIndex === 0) {
    // The newest signature matched one of our keys, so the body hmac was made with a key we
    // hold: a mismatch means the body was not produced by Merx for this secret.
    throw new WebhookVerificationError('hmac_sha256 in the body does not match the secret');
  }
  return document as unknown as WebhookEvent;
}

/** Checks only the Standard Webhooks headers, for bodies without an envelope (an `http` destination receives the routed record alone). */
export function verifySignature(payload: WebhookPayload, headers: WebhookHeaders, secret: WebhookSecrets, options: VerifyOptions = {}): void {
  verifyHeaders(bodyBytes(payload), headers, keysOf(secret), options.tolerance ?? DEFAULT_TOLERANCE_SECONDS);
}

/** Checks the body's `hmac_sha256` alone, for an event stored earlier (parsed or as text). */
export function verifyBodyHmac(payload: WebhookPayload | Record<string, unknown>, secret: WebhookSecrets): WebhookEvent {
  const document = typeof payload === 'string' || payload instanceof Uint8Array ? parse(bodyBytes(payload)) : payload;
  if (!bodyHmacMatches(document, keysOf(secret))) throw new WebhookVerificationError('hmac_sha256 in the body does not match the secret');
  return document as unknown as WebhookEvent;
}

/** The `webhook-signature` value Merx would send for this body (`v1,<base64>`): to test a receiver without a server. */
export function sign(payload: WebhookPayload, options: { secret: string; messageId: string; timestamp?: number }): string {
  const stamp = String(options.timestamp ?? Math.floor(Date.now() / 1000));
  const [key] = keysOf(options.secret);
  return `v1,${headerHmac(key!, options.messageId, stamp, bodyBytes(payload)).toString('base64')}`;
}

/**
 * RFC 8785 (JCS) canonical JSON, exactly as the server computes it: object members sorted by
 * their UTF-16 code units (JavaScript's own string order), no whitespace, numbers and strings as
 * ECMAScript serialises them. Built by hand rather than with a JSON.stringify replacer, which
 * would turn a parsed `"__proto__"` member into a prototype.
 */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number' && !Number.isFinite(value)) throw new TypeError('JCS cannot represent a non-finite number');
    return JSON.stringify(value) ?? 'null';
  }
  if (Array.isArray(value)) return `[${value.map((item) => (item === undefined ? 'null' : canonicalJson(item))).join(',')}]`;
  const record = value as Record<string, unknown>;
  const members = Object.keys(record)
    .filter((key) => record[key] !== undefined)
    .sort()
    .map((key) => `${JSON.stringify(key)}:${canonicalJson(record[key])}`);
  return `{${members.join(',')}}`;
}

/** The methods `merx.webhooks` offers beside its resources; also exported alone as `webhooks`, needing no client. */
export const webhooks = { verify, verifySignature, verifyBodyHmac, sign, canonicalJson };

function verifyHeaders(body: Buffer, headers: WebhookHeaders, keys: Buffer[], tolerance: number): number {
  const messageId = header(headers, 'webhook-id');
  const timestamp = header(headers, 'webhook-timestamp');
  const signatures = header(headers, 'webhook-signature');
  if (!messageId || !timestamp || !signatures) throw new WebhookVerificationError('missing webhook-id, webhook-timestamp or webhook-signature header');
  if (!/^\d+$/.test(timestamp)) throw new WebhookVerificationError('webhook-timestamp is not unix seconds');
  const drift = Date.now() / 1000 - Number(timestamp);
  if (drift > tolerance) throw new WebhookVerificationError('webhook-timestamp is too old');
  if (drift < -tolerance) throw new WebhookVerificationError('webhook-timestamp is in the future');
  const expected = keys.map((key) => headerHmac(key, messageId, timestamp, body));
  const candidates = signatures.split(/\s+/).filter(Boolean);
  for (const [index, versioned] of candidates.entries()) {
    const comma = versioned.indexOf(',');
    if (comma < 0 || versioned.slice(0, comma) !== 'v1') continue;
    const received = Buffer.from(versioned.slice(comma + 1), 'base64');
    if (expected.some((candidate) => candidate.length === received.length && timingSafeEqual(candidate, received))) return index;
  }
  throw new WebhookVerificationError('no webhook-signature matches the secret');
}

function headerHmac(key: Buffer, messageId: string, timestamp: string, body: Buffer): Buffer {
  return createHmac('sha256', key).update(`${messageId}.${timestamp}.`).update(body).digest();
}

function bodyHmacMatches(document: Record<string, unknown>, keys: Buffer[]): boolean {
  const claimed = document.hmac_sha256;
  if (typeof claimed !== 'string') throw new WebhookVerificationError('the body has no hmac_sha256');
  const { hmac_sha256: _claimed, ...signed } = document;
  const text = canonicalJson(signed);
  const claimedBytes = Buffer.from(claimed, 'utf8');
  return keys.some((key) => {
    const computed = Buffer.from(createHmac('sha256', key).update(text).digest('hex'), 'utf8');
    return computed.length === claimedBytes.length && timingSafeEqual(computed, claimedBytes);
  });
}

function keysOf(secret: WebhookSecrets): Buffer[] {
  const secrets = typeof secret === 'string' ? [secret] : [...secret];
  if (secrets.length === 0) throw new TypeError('give the webhook secret (whsec_...)');
  return secrets.map((value) => {
    const encoded = value.startsWith(SECRET_PREFIX) ? value.slice(SECRET_PREFIX.length) : value;
    if (!/^[A-Za-z0-9+/]+={0,2}$/.test(encoded)) throw new TypeError('a webhook secret is whsec_ followed by base64');
    return Buffer.from(encoded, 'base64');
  });
}

function bodyBytes(payload: WebhookPayload): Buffer {
  if (typeof payload === 'string') return Buffer.from(payload, 'utf8');
  if (payload instanceof Uint8Array) return Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength);
  throw new TypeError('payload is the raw request body: a string or bytes, not parsed JSON');
}

function parse(body: Buffer): Record<string, unknown> {
  let document: unknown;
  try {
    document = JSON.parse(body.toString('utf8'));
  } catch {
    throw new WebhookVerificationError('the body is not JSON');
  }
  if (document === null || typeof document !== 'object' || Array.isArray(document)) throw new WebhookVerificationError('the body is not a JSON object');
  return document as Record<string, unknown>;
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function' && typeof (headers as Headers).forEach === 'function') return (headers as Headers).get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (key.toLowerCase() !== name || value === undefined) continue;
    return Array.isArray(value) ? value.join(' ') : value;
  }
  return undefined;
}
