/**
 * `merx listen --forward-to`: each streamed event is POSTed to a local URL as Merx would deliver
 * it to a webhook subscription, signed with a secret of this session, so the receiver's own
 * verification (`webhooks.verify(body, headers, secret)` of any SDK) runs unchanged.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { webhooks } from '@merx/sdk';
import { VERSION } from './version.js';

export interface StreamedEvent {
  id: string;
  topic: string;
  created_at: string;
  data: unknown;
}

export function newSessionSecret(): string {
  return `whsec_${randomBytes(24).toString('base64')}`;
}

/** The delivery body: the webhook envelope with its `hmac_sha256` over the canonical JSON of the rest. */
export function envelopeOf(event: StreamedEvent, merchantId: string, secret: string): string {
  const envelope = { id: event.id, topic: event.topic, merchant_id: merchantId, created_at: event.created_at, api_version: 'v1', data: event.data };
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const hmac = createHmac('sha256', key).update(webhooks.canonicalJson(envelope)).digest('hex');
  return JSON.stringify({ ...envelope, hmac_sha256: hmac });
}

export interface ForwardResult {
  status: number | null;
  ms: number;
  error?: string;
}

export async function forward(url: string, event: StreamedEvent, merchantId: string, secret: string, timeoutMs = 10_000): Promise<ForwardResult> {
  const body = envelopeOf(event, merchantId, secret);
  const timestamp = Math.floor(Date.now() / 1000);
  const started = performance.now();
  try {
    const response = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'user-agent': `merx-cli/${VERSION} (listen)`,
        'webhook-id': event.id,
        'webhook-timestamp': String(timestamp),
        'webhook-signature': webhooks.sign(body, { secret, messageId: event.id, timestamp }),
      },
      body,
      signal: AbortSignal.timeout(timeoutMs),
    });
    await response.arrayBuffer();
    return { status: response.status, ms: Math.round(performance.now() - started) };
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code;
    return { status: null, ms: Math.round(performance.now() - started), error: cause ?? (error as Error).message };
  }
}
