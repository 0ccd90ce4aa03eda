import { createHmac } from 'node:crypto';
import { canonicalJson, SIGNING_SECRET_PREFIX } from '@merx/kit';
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
  return createHmac('sha256', secretKey(secret))
    .update(canonicalJson(toWebhookPayload(payload)))
    .digest('hex');
}

/** The request body: the payload's fields in order, then `hmac_sha256`. */
export function webhookBody(payload: WebhookPayload, secret: string): string {
  return JSON.stringify({ ...toWebhookPayload(payload), hmac_sha256: bodyHmac(payload, secret) });
}

/**
 * The request body for an endpoint's format: the signed envelope, or for an `http` destination
 * (an ERP's import API, say) the routed record alone. Either way the signature headers are
 * computed over exactly these bytes.
 */
export function requestBody(format: DeliveryFormat, payload: WebhookPayload, secret: string): string {
  return format === 'http' ? JSON.stringify(payload.data.object) : webhookBody(payload, secret);
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
  const signatures = input.secrets.map((secret) => `v1,${createHmac('sha256', secretKey(secret)).update(signed).digest('base64')}`);
  return {
    'webhook-id': input.messageId,
    'webhook-timestamp': String(input.timestampSeconds),
    'webhook-signature': signatures.join(' '),
  };
}
