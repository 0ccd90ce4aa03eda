import type { Db, Logger } from '@merx/kit';
import type Provider from 'oidc-provider';
import type { JWK } from 'oidc-provider';
import { generateSigningJwk, ProviderSlot } from '../provider/index.js';
import { loadOrCreateSigningKeyRing, readSigningKeyRing, ringFingerprint, rotateSigningKeys, type SigningKeyRing } from '../store/signing-keys-store.js';

export interface SigningKeysOptions {
  db: Db;
  logger: Logger;
  /** Builds a provider that publishes `keys` and signs with `signingKid`. */
  build(jwks: { keys: JWK[] }, signingKid: string): Provider;
  /** How long a retired key stays in the JWKS: the longest access token lifetime plus clock skew. */
  publishRetiredForSeconds: number;
  /** How often a replica re-reads the key table to learn of another replica's rotation. */
  pollIntervalMs?: number;
}

export interface SigningKeys {
  slot: ProviderSlot;
  rotate(): Promise<{ object: 'signing_key_rotation'; current_kid: string; next_kid: string; published_kids: string[] }>;
  /** Re-reads the table now; true when this replica's provider was replaced. */
  refresh(): Promise<boolean>;
  stop(): void;
}

const published = (ring: SigningKeyRing) => [ring.current, ring.next, ...ring.retired];

/**
 * Keys rotate without a restart: oidc-provider's keystore is fixed at construction, so a new
 * provider is built for the new ring and swapped into the mount. Other replicas notice by
 * polling the table (every 5 s by default) rather than by an event: polling also drops retired
 * keys whose publication ended, needs no bus, and a replica that lags a few seconds still signs
 * with a key the JWKS publishes (the retired one), so no token it issues is unverifiable.
 */
export async function startSigningKeys(options: SigningKeysOptions): Promise<SigningKeys> {
  const { db, logger } = options;
  let ring = await loadOrCreateSigningKeyRing(db, generateSigningJwk);
  const build = (next: SigningKeyRing) => options.build({ keys: published(next) }, next.current.kid!);
  const slot = new ProviderSlot(build(ring));

  const adopt = (next: SigningKeyRing): boolean => {
    if (ringFingerprint(next) === ringFingerprint(ring)) return false;
    slot.swap(build(next));
    ring = next;
    logger.info({ current_kid: ring.current.kid, next_kid: ring.next.kid }, 'signing keys changed; provider replaced');
    return true;
  };

  const refresh = async () => {
    const next = await readSigningKeyRing(db);
    return next ? adopt(next) : false;
  };

  let polling = false;
  const timer = setInterval(() => {
    if (polling) return;
    polling = true;
    refresh()
      .catch((error: unknown) => logger.warn({ err: error }, 'could not re-read the signing keys'))
      .finally(() => {
        polling = false;
      });
  }, options.pollIntervalMs ?? 5_000);
  timer.unref();

  return {
    slot,
    refresh,
    async rotate() {
      adopt(await rotateSigningKeys(db, generateSigningJwk, options.publishRetiredForSeconds));
      return {
        object: 'signing_key_rotation',
        current_kid: ring.current.kid!,
        next_kid: ring.next.kid!,
        published_kids: published(ring).map((key) => key.kid!),
      };
    },
    stop: () => clearInterval(timer),
  };
}
