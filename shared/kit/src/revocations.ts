import pRetry from 'p-retry';
import { serviceAuthorization } from './service-credential.js';
import type { Bus, Consumer } from './bus.js';
import type { MerxEvent } from './events.js';
import type { ReadinessCheck } from './http.js';
import { newId } from './ids.js';
import type { Logger } from './logger.js';

/**
 * One revoked credential: every access token of `client_id` (of `merchant_id` only, when named:
 * an app's grant belongs to one merchant) issued at or before `revoked_at` is dead.
 */
export interface RevocationEntry {
  client_id: string;
  merchant_id?: string;
  /** ISO 8601 UTC. */
  revoked_at: string;
}

export interface RevocationSubject {
  clientId: string;
  merchantId: string;
  /** The token's `iat`, in seconds. */
  issuedAt: number;
}

/**
 * Topics whose events revoke tokens; each process listens to them on a transient queue. A
 * suspension is a `merchants.standing_changed`; `merchants.updated` stays for the suspensions the
 * release before it announced that way, which may still be on the bus during an upgrade.
 */
export const REVOCATION_TOPICS = ['api_keys.revoked', 'apps.grant_revoked', 'merchants.standing_changed', 'merchants.updated'];

/** The client id of a merchant-wide entry (a suspension): every client of that merchant. */
export const EVERY_CLIENT = '*';

interface StoredEntry {
  merchantId: string | undefined;
  revokedAtSeconds: number;
}

/**
 * The revoked credentials of the last max-token-lifetime, kept in memory by every process that
 * verifies tokens. JWTs cannot be recalled, so the verifier asks this list on every call, cached
 * token or not; the check is one map lookup. Older entries are dropped: a token issued before
 * them has expired anyway.
 */
export class RevocationList {
  private readonly byClient = new Map<string, StoredEntry[]>();
  private bootstrapped = false;
  private retentionSeconds: number;
  private readonly now: () => number;

  constructor(options: { maxTokenLifetimeSeconds: number; now?: () => number }) {
    this.retentionSeconds = options.maxTokenLifetimeSeconds;
    this.now = options.now ?? Date.now;
  }

  /** Until the list has loaded what was revoked before this process started, it cannot vouch for any token. */
  get ready(): boolean {
    return this.bootstrapped;
  }

  markBootstrapped(): void {
    this.bootstrapped = true;
  }

  get maxTokenLifetimeSeconds(): number {
    return this.retentionSeconds;
  }

  /** The authorization server says how long its tokens live; entries are kept that long. */
  setMaxTokenLifetime(seconds: number): void {
    this.retentionSeconds = seconds;
    this.prune();
  }

  get size(): number {
    let count = 0;
    for (const entries of this.byClient.values()) count += entries.length;
    return count;
  }

  add(entry: RevocationEntry): void {
    const revokedAtMs = Date.parse(entry.revoked_at);
    if (!entry.client_id || Number.isNaN(revokedAtMs)) return;
    // A merchant-wide entry without its merchant would revoke every token on the platform.
    if (entry.client_id === EVERY_CLIENT && !entry.merchant_id) return;
    const revokedAtSeconds = Math.floor(revokedAtMs / 1000);
    if (this.isStale(revokedAtSeconds)) return;
    const entries = this.byClient.get(entry.client_id) ?? [];
    const merchantId = entry.merchant_id || undefined;
    const same = entries.find((existing) => existing.merchantId === merchantId);
    if (same) same.revokedAtSeconds = Math.max(same.revokedAtSeconds, revokedAtSeconds);
    else entries.push({ merchantId, revokedAtSeconds });
    this.byClient.set(entry.client_id, entries);
  }

  isRevoked(subject: RevocationSubject): boolean {
    const revokedBy = (entries: Array<{ merchantId?: string | undefined; revokedAtSeconds: number }> | undefined) =>
      entries?.some((entry) => (entry.merchantId === undefined || entry.merchantId === subject.merchantId) && subject.issuedAt <= entry.revokedAtSeconds) ??
      false;
    return revokedBy(this.byClient.get(subject.clientId)) || revokedBy(this.byClient.get(EVERY_CLIENT));
  }

  prune(): void {
    for (const [clientId, entries] of this.byClient) {
      const kept = entries.filter((entry) => !this.isStale(entry.revokedAtSeconds));
      if (kept.length === 0) this.byClient.delete(clientId);
      else this.byClient.set(clientId, kept);
    }
  }

  private isStale(revokedAtSeconds: number): boolean {
    return revokedAtSeconds < Math.floor(this.now() / 1000) - this.retentionSeconds;
  }
}

/** What an event contributes to the list; undefined for events that revoke nothing. */
export function revocationEntryOf(event: MerxEvent): RevocationEntry | undefined {
  const object = event.data.object as Record<string, unknown>;
  if (event.topic === 'api_keys.revoked') {
    // A key's client id is unique on the platform, so its entry names no merchant.
    const clientId = object.prefix;
    const revokedAt = object.revoked_at ?? event.created_at;
    return typeof clientId === 'string' && typeof revokedAt === 'string' ? { client_id: clientId, revoked_at: revokedAt } : undefined;
  }
  if (event.topic === 'merchants.standing_changed' || event.topic === 'merchants.updated') {
    // A suspension revokes every token the merchant holds; a merchant-wide entry never lacks its merchant.
    if (object.status !== 'suspended' || (event.data.previous as Record<string, unknown> | undefined)?.status === undefined) return undefined;
    const revokedAt = object.updated_at ?? event.created_at;
    return typeof revokedAt === 'string' ? { client_id: EVERY_CLIENT, merchant_id: event.merchant_id, revoked_at: revokedAt } : undefined;
  }
  if (event.topic === 'apps.grant_revoked') {
    const clientId = object.client_id;
    const revokedAt = object.revoked_at ?? event.created_at;
    return typeof clientId === 'string' && typeof revokedAt === 'string'
      ? { client_id: clientId, merchant_id: event.merchant_id, revoked_at: revokedAt }
      : undefined;
  }
  return undefined;
}

export interface RevocationSnapshot {
  entries: RevocationEntry[];
  max_token_lifetime_seconds: number;
}

export interface RevocationFeedOptions {
  list: RevocationList;
  bus: Bus;
  /** Names the transient queue: `revocations-<service>-<random>`. */
  service: string;
  logger: Logger;
  /** Everything revoked since `since`: straight from the oauth store in-process, or over HTTP from the oauth service. */
  load(since: Date): Promise<RevocationSnapshot>;
  /**
   * A missed bus message (a broker reconnect loses a transient queue's backlog) must not keep a
   * revoked token alive for its whole lifetime; reloading now and then bounds that gap.
   */
  resyncIntervalMs?: number;
  retry?: { minTimeoutMs?: number; maxTimeoutMs?: number };
}

export interface RevocationFeed {
  readiness: ReadinessCheck;
  /** Resolves once the first load succeeded. */
  bootstrapped: Promise<void>;
  stop(): Promise<void>;
}

/**
 * Feeds a list from the bus (live) and from a loader (at start and then periodically). The
 * consumer is attached before the first load, so nothing revoked in between is missed.
 */
export async function startRevocationFeed(options: RevocationFeedOptions): Promise<RevocationFeed> {
  const { list, logger } = options;
  let stopped = false;
  const consumer: Consumer = await options.bus.consume(
    { queue: `revocations-${options.service}-${newId('req').slice(4)}`, bindings: REVOCATION_TOPICS, transient: true },
    async (event) => {
      const entry = revocationEntryOf(event);
      if (entry) list.add(entry);
    },
  );
  const loadOnce = async () => {
    const since = new Date(Date.now() - 1000 * list.maxTokenLifetimeSeconds);
    const snapshot = await options.load(since);
    list.setMaxTokenLifetime(snapshot.max_token_lifetime_seconds);
    for (const entry of snapshot.entries) list.add(entry);
  };
  const bootstrapped = pRetry(
    async () => {
      if (stopped) return;
      await loadOnce();
      list.markBootstrapped();
    },
    {
      retries: Number.POSITIVE_INFINITY,
      minTimeout: options.retry?.minTimeoutMs ?? 200,
      maxTimeout: options.retry?.maxTimeoutMs ?? 5_000,
      shouldRetry: () => !stopped,
      onFailedAttempt: ({ error, attemptNumber }) => logger.warn({ err: error, attempt: attemptNumber }, 'revocation list not loaded yet; retrying'),
    },
  ).catch((error: unknown) => {
    if (!stopped) logger.error({ err: error }, 'revocation list bootstrap gave up');
  });
  const timer = setInterval(() => {
    list.prune();
    if (!list.ready) return;
    loadOnce().catch((error: unknown) => logger.warn({ err: error }, 'revocation list resync failed'));
  }, options.resyncIntervalMs ?? 30_000);
  timer.unref();
  return {
    readiness: {
      name: 'revocations',
      check: () => {
        if (!list.ready) throw new Error('the revocation list is not loaded yet');
      },
    },
    bootstrapped,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await consumer.close();
    },
  };
}

/** The loader of processes other than oauth: the oauth service's internal endpoint. */
export function httpRevocationLoader(
  oauthUrl: string,
  serviceToken: string,
  options: { timeoutMs?: number } = {},
): (since: Date) => Promise<RevocationSnapshot> {
  return async (since) => {
    const response = await fetch(`${oauthUrl}/internal/v1/revocations?since=${encodeURIComponent(since.toISOString())}`, {
      headers: serviceAuthorization(serviceToken),
      signal: AbortSignal.timeout(options.timeoutMs ?? 3_000),
    });
    if (response.status !== 200) throw new Error(`the oauth service answered ${response.status} to the revocation list request`);
    const body = (await response.json()) as RevocationSnapshot;
    if (!Array.isArray(body.entries) || typeof body.max_token_lifetime_seconds !== 'number') throw new Error('the revocation list answer is malformed');
    return body;
  };
}
