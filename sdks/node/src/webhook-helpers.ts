import { APIResource } from './core/resource.js';
import type { WebhookEvent } from './generated/types.js';
import { verify, verifyBodyHmac, verifySignature, type VerifyOptions, type WebhookHeaders, type WebhookPayload, type WebhookSecrets } from './webhooks.js';

/** `merx.webhooks`: the subscriptions, deliveries and dead letters resources, plus verification of what they deliver. */
export abstract class WebhookHelpers extends APIResource {
  /** See `verify` in webhooks.ts: checks the Standard Webhooks headers and the body's hmac_sha256, and returns the typed event. */
  verify(payload: WebhookPayload, headers: WebhookHeaders, secret: WebhookSecrets, options?: VerifyOptions): WebhookEvent {
    return verify(payload, headers, secret, options);
  }

  verifySignature(payload: WebhookPayload, headers: WebhookHeaders, secret: WebhookSecrets, options?: VerifyOptions): void {
    verifySignature(payload, headers, secret, options);
  }

  verifyBodyHmac(payload: WebhookPayload | Record<string, unknown>, secret: WebhookSecrets): WebhookEvent {
    return verifyBodyHmac(payload, secret);
  }
}
