import { randomBytes } from 'node:crypto';

export const SIGNING_SECRET_PREFIX = 'whsec_';

/**
 * A new signing secret for a webhook subscription or a destination: `whsec_` + base64 of 24
 * random bytes (192 bits), as Svix issues them, so any Standard Webhooks library accepts it.
 */
export function generateSigningSecret(): string {
  return SIGNING_SECRET_PREFIX + randomBytes(24).toString('base64');
}
