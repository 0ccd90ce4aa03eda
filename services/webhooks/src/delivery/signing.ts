import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { canonicalJson, KeptValues, SIGNING_SECRET_PREFIX } from '@merx/kit';
import { toWebhookPayload, type WebhookPayload } from '../domain/delivery.js';
import type { DeliveryFormat } from '../domain/endpoint.js';

/**
 * Webhook signing. Two signatures protect each request:
 * - the Standard Webhooks headers (`webhook-signature` over "{id}.{timestamp}.{body}"), so any
 *   Standard Webhooks library verifies a Merx webhook and replays of old requests are detectable;
 * - `hmac_sha256` in the body, over the RFC 8785 canonical JSON of the payload, which survives
 *   re-serialisation (a receiver that parsed the JSON and stored it can still verify it later).
 * Both use the same key: the bytes of the secret after `whsec_`.
 */

const SECRET_PREFIX = SIGNING_SECRET_PREFIX;

/** A new secret for a subscription or a destination: one generator for the whole platform. */
export { generateSigningSecret as generateWebhookSecret } from '@merx/kit';

/** The HMAC key of a secret, exactly the one Standard Webhooks derives from it. */
export function secretKey(secret: string): Buffer {
  if (!secret.startsWith(SECRET_PREFIX)) throw new TypeError('a webhook secret starts with whsec_');
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  if (key.length === 0) throw new TypeError('a webhook secret has key bytes after whsec_');
  return key;
}

/** Hex HMAC-SHA256 of the payload's canonical JSON: independent of key order and whitespace. */
export function bodyHmac(payload: WebhookPayload, secret: string): string {
  return hexHmac(secret, canonicalJson(toWebhookPayload(payload)));
}

function hexHmac(secret: string, text: string): string {
  return createHmac('sha256', hmacKey(secret)).update(text).digest('hex');
}

/** Secrets whose HMAC key is kept: far more than the endpoints one worker sends to at once. */
const KEPT_KEYS = 4_096;
/**
 * `secretKey` as a KeyObject, made once per secret: every request is signed twice (body and
 * headers) with a secret that stays the same for thousands of requests.
 */
const hmacKeys = new KeptValues<string, KeyObject>(KEPT_KEYS);
const hmacKey = (secret: string): KeyObject => hmacKeys.get(secret, (kept) => createSecretKey(secretKey(kept)));

/** The request body: the payload's fields in order, then `hmac_sha256`. */
export function webhookBody(payload: WebhookPayload, secret: string): string {
  return signedEnvelope(toWebhookPayload(payload))(secret);
}

/**
 * The envelope's body for any secret. Everything but `hmac_sha256` is the same for every
 * endpoint an event goes to, so the canonical JSON and the serialisation are done once, and the
 * body is that serialisation with the member appended: the bytes `JSON.stringify` gives for the
 * fields followed by `hmac_sha256`.
 */
function signedEnvelope(envelope: WebhookPayload): (secret: string) => string {
  const canonical = canonicalJson(envelope);
  const fields = JSON.stringify(envelope);
  const head = fields === '{}' ? '{' : `${fields.slice(0, -1)},`;
  return (secret) => `${head}"hmac_sha256":"${hexHmac(secret, canonical)}"}`;
}

/**
 * The request body for an endpoint's format: the signed envelope, or for an `http` destination
 * (an ERP's import API, say) the routed record alone. Either way the signature headers are
 * computed over exactly these bytes.
 */
export function requestBody(format: DeliveryFormat, payload: WebhookPayload, secret: string): string {
  return format === 'http' ? JSON.stringify(payload.data.object) : webhookBody(payload, secret);
}

/**
 * `requestBody` for a stored payload, prepared once for every endpoint of one format it goes to:
 * an event fans out to many subscriptions, each with its own secret, and parsing and serialising
 * it for each was most of the cost of signing.
 */
export function prepareRequestBody(format: DeliveryFormat, payloadText: string): (secret: string) => string {
  const payload = JSON.parse(payloadText) as WebhookPayload;
  if (format === 'http') {
    const body = JSON.stringify(payload.data.object);
    return () => body;
  }
  return signedEnvelope(toWebhookPayload(payload));
}

/**
 * Request bodies prepared once per payload (`prepareRequestBody`): an event goes to many
 * subscriptions whose deliveries differ only in the secret that signs them, claimed together or
 * a few claims apart (each endpoint's queue moves at its own pace). The most recent payloads are
 * kept, up to `keptCharacters` of them; what is derived from each is about twice as much again.
 */
export class RequestBodies {
  private readonly prepared = new Map<string, (secret: string) => string>();
  private characters = 0;

  constructor(private readonly keptCharacters = 2_000_000) {}

  of(format: DeliveryFormat, payloadText: string): (secret: string) => string {
    const key = format === 'webhook' ? payloadText : `${format}\n${payloadText}`;
    let body = this.prepared.get(key);
    if (!body) {
      body = prepareRequestBody(format, payloadText);
      this.prepared.set(key, body);
      this.characters += key.length;
      // Oldest first, as a Map iterates; the newest is always kept.
      for (const oldest of this.prepared.keys()) {
        if (this.characters <= this.keptCharacters || oldest === key) break;
        this.prepared.delete(oldest);
        this.characters -= oldest.length;
      }
    }
    return body;
  }

  /** How many payloads are prepared and kept. */
  get size(): number {
    return this.prepared.size;
  }
}

export interface SignatureHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/**
 * The Standard Webhooks headers. During a rotation overlap both secrets sign (newest first), so a
 * receiver holding either one verifies the request. The timestamp is the attempt's, not the
 * event's: receivers refuse requests older than a few minutes, and retries happen hours later.
 */
export function signatureHeaders(input: { messageId: string; timestampSeconds: number; body: string; secrets: string[] }): SignatureHeaders {
  if (input.secrets.length === 0) throw new TypeError('a webhook is signed with at least one secret');
  if (!Number.isInteger(input.timestampSeconds)) throw new TypeError('webhook-timestamp is whole unix seconds');
  const signed = `${input.messageId}.${input.timestampSeconds}.${input.body}`;
  const signatures = input.secrets.map((secret) => `v1,${createHmac('sha256', hmacKey(secret)).update(signed).digest('base64')}`);
  return {
    'webhook-id': input.messageId,
    'webhook-timestamp': String(input.timestampSeconds),
    'webhook-signature': signatures.join(' '),
  };
}
