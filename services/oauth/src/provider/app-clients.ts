import { hashApiKey, randomBase62, verifyApiKey } from './api-keys.js';

const APP_CLIENT_ID = /^mxapp_[0-9A-Za-z]{20}$/;

export interface GeneratedAppCredentials {
  clientId: string;
  /** Shown to the operator once; only `hashAppSecret(clientSecret)` is stored. */
  clientSecret: string;
}

/** Distinct from API key client ids (`mx_<mode>_...`), so the client adapter knows where to look from the id alone. */
export function generateAppCredentials(): GeneratedAppCredentials {
  return { clientId: `mxapp_${randomBase62(20)}`, clientSecret: `mxsec_${randomBase62(40)}` };
}

export const isAppClientId = (clientId: string) => APP_CLIENT_ID.test(clientId);

// App secrets are 40 random base62 characters: a plain SHA-256 protects them as well as it does API keys.
export const hashAppSecret = hashApiKey;
export const verifyAppSecret = verifyApiKey;
