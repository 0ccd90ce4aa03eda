import { createLocalJWKSet, errors as joseErrors, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';
import { Unavailable } from './errors.js';

export interface JwksCacheOptions {
  /** Where the keys are published; a function when the address is known only after start. */
  url: string | (() => string);
  /** Keys are refetched this often in the background, so retired keys drop out (default 5 min). */
  refreshEveryMs?: number;
  /** A token with an unknown key id triggers a refetch at most this often (default 5 s). */
  cooldownMs?: number;
  fetchTimeoutMs?: number;
}

/**
 * The signing keys every verifier needs, kept through an outage of the service that publishes
 * them: the last keys fetched keep verifying while a refetch fails (stale-if-error), so the
 * oauth service being down stops token issuance, not every other API. Keys are fetched at once
 * (not on the first request, which might come while oauth is down), refreshed in the background,
 * and refetched when a token names a key id not seen yet (a rotation's next key).
 */
export function createJwksCache(options: JwksCacheOptions): JWTVerifyGetKey & { refresh(): Promise<void>; close(): void } {
  const cooldownMs = options.cooldownMs ?? 5_000;
  let keys: ReturnType<typeof createLocalJWKSet> | undefined;
  let lastAttempt = 0;
  let inFlight: Promise<void> | undefined;

  const refresh = (): Promise<void> => {
    inFlight ??= (async () => {
      lastAttempt = Date.now();
      const url = typeof options.url === 'function' ? options.url() : options.url;
      const response = await fetch(url, { signal: AbortSignal.timeout(options.fetchTimeoutMs ?? 3_000) });
      if (response.status !== 200) throw new Error(`${url} answered ${response.status}`);
      const set = (await response.json()) as JSONWebKeySet;
      if (!Array.isArray(set.keys)) throw new Error(`${url} did not answer a JSON Web Key Set`);
      keys = createLocalJWKSet(set);
    })().finally(() => {
      inFlight = undefined;
    });
    return inFlight;
  };
  const quietly = () => refresh().catch(() => undefined);
  void quietly();
  const timer = setInterval(quietly, options.refreshEveryMs ?? 5 * 60_000);
  timer.unref();

  const getKey: JWTVerifyGetKey = async (header, token) => {
    if (!keys) {
      await refresh().catch((error: unknown) => {
        throw new Unavailable('The token signing keys cannot be fetched right now.', error);
      });
    }
    try {
      return await keys!(header, token);
    } catch (error) {
      if (!(error instanceof joseErrors.JWKSNoMatchingKey) || Date.now() - lastAttempt < cooldownMs) throw error;
      // A key id we have not seen: perhaps a rotation's next key. Ask again, keep what we had if that fails.
      await quietly();
      return keys!(header, token);
    }
  };
  return Object.assign(getKey, { refresh, close: () => clearInterval(timer) });
}
