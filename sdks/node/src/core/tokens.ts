/**
 * The access token of an API key: exchanged on first use (client credentials), cached, and
 * exchanged again a minute before it expires (half its lifetime when that is shorter) or after
 * the API refused it. Concurrent callers share one exchange in flight rather than each starting
 * their own, so a burst of calls costs the token endpoint one request.
 */

export interface TokenAnswer {
  accessToken: string;
  /** Seconds. */
  expiresIn: number;
}

/** A token as a `TokenStore` keeps it. */
export interface StoredToken {
  accessToken: string;
  /** When it expires, in milliseconds since the epoch. */
  expiresAt: number;
  /** When a client should exchange the key again rather than use it (before `expiresAt`). */
  refreshAt: number;
}

/**
 * Where a token outlives the process, for programs that start often with the same key (a CLI
 * run a hundred times by a CI script): the client reads it before its first exchange and writes
 * each new one. Keep it as secret as the key; one store per key.
 */
export interface TokenStore {
  load(): StoredToken | undefined | Promise<StoredToken | undefined>;
  save(token: StoredToken): void | Promise<void>;
}

const REFRESH_BEFORE_EXPIRY_MS = 60_000;

export class TokenCache {
  private token: { value: string; refreshAt: number } | undefined;
  private inFlight: Promise<string> | undefined;
  private storeRead = false;

  constructor(
    private readonly exchange: () => Promise<TokenAnswer>,
    private readonly store?: TokenStore,
    private readonly now: () => number = Date.now,
  ) {}

  get(): Promise<string> {
    if (this.token && this.now() < this.token.refreshAt) return Promise.resolve(this.token.value);
    this.inFlight ??= this.fresh().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  /** Drops `value` if it is still the cached token: a call that saw a 401 must not throw away a newer one. */
  invalidate(value: string): void {
    if (this.token?.value === value) this.token = undefined;
  }

  private async fresh(): Promise<string> {
    if (this.store && !this.storeRead) {
      this.storeRead = true; // once: after that the store holds nothing this cache does not
      const stored = await this.store.load();
      if (stored && typeof stored.accessToken === 'string' && Number.isFinite(stored.refreshAt) && this.now() < stored.refreshAt) {
        this.token = { value: stored.accessToken, refreshAt: stored.refreshAt };
        return stored.accessToken;
      }
    }
    const answer = await this.exchange();
    const lifetime = Math.max(0, answer.expiresIn) * 1000;
    const expiresAt = this.now() + lifetime;
    const refreshAt = expiresAt - Math.min(REFRESH_BEFORE_EXPIRY_MS, lifetime / 2);
    this.token = { value: answer.accessToken, refreshAt };
    await this.store?.save({ accessToken: answer.accessToken, expiresAt, refreshAt });
    return answer.accessToken;
  }
}
