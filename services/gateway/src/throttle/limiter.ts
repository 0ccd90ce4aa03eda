import type { Context } from 'koa';
import { currentContext, RateLimited, readBoundedBody, serviceAuthorization, WORK_QUEUES, type Bus, type Consumer, type Logger } from '@merx/kit';
import pRetry from 'p-retry';
import type { Decision } from './algorithms.js';
import { ConcurrencyCapReached, ConcurrencySlots, type HeldSlot } from './concurrency-slots.js';
import type { ThrottleSettings } from './config.js';
import { FailoverLimiterStore } from './failover-store.js';
import { LeasedLimiterStore } from './lease-store.js';
import { MemoryLimiterStore } from './memory-store.js';
import { classesFor, overrideFieldsOf, PLANS, specOf, type ClassSpec, type Plan, type ThrottleClass } from './policy.js';
import { RedisLimiterStore } from './redis-store.js';
import type { LimiterStore } from './store.js';

/** RFC 8941 Structured Fields, one item per class: `"burst";q=100;w=2, "sustained";q=20000;w=3600`. */
export function rateLimitHeaders(decision: Decision): { policy: string; state: string } {
  return {
    policy: decision.classes.map((c) => `"${c.name}";q=${c.quota};w=${c.window}`).join(', '),
    state: decision.classes.map((c) => `"${c.name}";r=${c.remaining};t=${c.reset}`).join(', '),
  };
}

const MAX_TOKEN_FORM_BYTES = 64 * 1024;
const MAX_CLIENT_ID_LENGTH = 256;

function clientIdFromBasic(header: string): string | undefined {
  const match = /^Basic\s+([A-Za-z0-9+/=._-]+)\s*$/i.exec(header);
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) return undefined;
  try {
    // RFC 6749 §2.3.1: the client id is form-encoded inside the Basic credentials.
    return decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' '));
  } catch {
    return decoded.slice(0, colon);
  }
}

/** One merchant's operator override as the oauth service keeps it. */
export interface StoredThrottleOverride {
  merchant_id: string;
  overrides: Record<string, Record<string, number>>;
  version: number;
}

/** `GET /internal/v1/throttle-overrides` of the oauth service. */
export function httpThrottleOverridesLoader(oauthUrl: string, serviceToken: string): () => Promise<StoredThrottleOverride[]> {
  return async () => {
    const response = await fetch(`${oauthUrl}/internal/v1/throttle-overrides`, {
      headers: serviceAuthorization(serviceToken),
      signal: AbortSignal.timeout(5_000),
    });
    if (response.status !== 200) throw new Error(`the oauth service answered ${response.status} to the throttle overrides request`);
    const body = (await response.json()) as { overrides?: StoredThrottleOverride[] };
    if (!Array.isArray(body.overrides)) throw new Error('the throttle overrides answer is malformed');
    return body.overrides;
  };
}

export interface Throttle {
  readonly store: LimiterStore;
  /** Words for /readyz while the limiter is not all it should be (overrides not loaded yet, Redis away). */
  degradation(): string | undefined;
  /** Counts a merchant request in its classes; sets the headers; throws RateLimited when a class is empty. */
  merchantRequest(ctx: Context, merchantId: string, plan: string | undefined): Promise<void>;
  /**
   * `POST /oauth/token`, per client id in the sensitive class, before any of the body goes upstream.
   * Returns the body when it had to be read to find the client id (client_secret_post).
   */
  tokenRequest(ctx: Context): Promise<Buffer | undefined>;
  /** A gRPC call as REST requests count: burst and sustained, and writes for a write. */
  merchantCall(merchantId: string, plan: string | undefined, write: boolean): Promise<Decision>;
  /** Paces one stream's items in the merchant's bulk class (shared by every stream and replica). */
  bulkPacer(merchantId: string, plan: string | undefined): BulkPacer;
  /**
   * Charges the items of a unary batch (BatchCreateProducts) to the merchant's bulk class, as a
   * page of a stream is: resolves once they may go, waiting while the class is empty; rejects
   * with RateLimited once the wait would pass `maxWaitMs`. What a lot leaves over goes to the
   * merchant's next batch on this replica, so a small batch is not charged a whole lot.
   */
  chargeBatch(merchantId: string, plan: string | undefined, items: number, options?: BulkTakeOptions): Promise<void>;
  /**
   * One of the merchant's StreamEvents slots (shared by every replica), held until released;
   * throws ConcurrencyCapReached (RESOURCE_EXHAUSTED, naming the cap) when all are taken.
   */
  openEventStream(merchantId: string, plan: string | undefined): Promise<HeldSlot>;
  /** The slots this replica holds. */
  readonly slots: ConcurrencySlots;
  stop(): Promise<void>;
}

export interface BulkTakeOptions {
  /** The longest the whole take may wait for the class; MERX_THROTTLE_BULK_MAX_WAIT_MS by default. */
  maxWaitMs?: number;
  /** A caller that went away: stop waiting, and taking lots, for it. */
  cancelled?: () => boolean;
  /**
   * The call's deadline (ms since the epoch), if it has one: the wait ends within three quarters
   * of the time left, so the work keeps the last quarter and the caller hears RESOURCE_EXHAUSTED
   * with RetryInfo rather than DEADLINE_EXCEEDED.
   */
  deadline?: number;
}

export interface BulkPacer {
  /**
   * Undefined when `items` (1 unless a message carries a page) may go at once; otherwise resolves
   * when they may, or rejects with RateLimited once the take would wait longer than its longest wait.
   */
  take(items?: number, options?: BulkTakeOptions): Promise<void> | undefined;
}

/**
 * Items are taken from the store in lots, one round trip per lot rather than per item: a
 * tenth of a second's worth, at most 50. The class is a bucket of lots holding one second's worth.
 */
export function bulkLotOf(itemsPerSecond: number): { lot: number; spec: ClassSpec } {
  const lot = Math.max(1, Math.min(50, Math.floor(itemsPerSecond / 10)));
  const lotsPerSecond = itemsPerSecond / lot;
  return { lot, spec: { name: 'bulk', kind: 'bucket', a: Math.max(1, Math.floor(lotsPerSecond)), b: lotsPerSecond } };
}

export interface ThrottleDeps {
  settings: ThrottleSettings;
  logger: Logger;
  /** Delivers operator overrides (merchants.throttle_updated) into the store. */
  bus?: Bus;
  /** Tests inject a store (e.g. a memory store with a fake clock). */
  store?: LimiterStore;
  /**
   * Every stored operator override, applied at start: an in-memory store starts empty, and a
   * Redis may have been flushed, so without this a restart would lift every lowered limit.
   */
  loadOverrides?: () => Promise<StoredThrottleOverride[]>;
  /** How long a concurrency slot counts without a renewal (30 s); tests shorten it. */
  slotLeaseMs?: number;
}

/** The queue the gateway replicas share for merchants.throttle_updated (the bus prefixes it with the deployment). */
export const THROTTLE_OVERRIDES_QUEUE = WORK_QUEUES.gatewayThrottle;

async function storeFor(deps: ThrottleDeps): Promise<LimiterStore> {
  if (deps.store) return deps.store;
  const { settings, logger } = deps;
  if (!settings.redisUrl) return new MemoryLimiterStore();
  const redis = new RedisLimiterStore({ url: settings.redisUrl, keyPrefix: settings.keyPrefix, logger });
  const leased = new LeasedLimiterStore(redis, { logger, maxLease: settings.maxLease });
  const store = new FailoverLimiterStore(leased, { logger, expectedReplicas: settings.expectedReplicas });
  await store.start();
  return store;
}

export async function createThrottle(deps: ThrottleDeps): Promise<Throttle> {
  const { settings } = deps;
  const store = await storeFor(deps);
  const specsByPlan = new Map<Plan, Map<ThrottleClass, ClassSpec>>(
    PLANS.map((plan) => [plan, new Map((['burst', 'sustained', 'writes', 'sensitive'] as const).map((name) => [name, specOf(name, settings.plans[plan])]))]),
  );
  const planOf = (plan: string | undefined): Plan => (plan && specsByPlan.has(plan as Plan) ? (plan as Plan) : settings.defaultPlan);
  const tokenSpec: ClassSpec = { name: 'sensitive', kind: 'window', a: settings.tokenEndpoint.limit, b: settings.tokenEndpoint.window_seconds };

  // Loaded in the background, retried until it works: the gateway serves meanwhile and says so in /readyz.
  let overridesLoaded = deps.loadOverrides === undefined;
  let stopping = false;
  const loading = deps.loadOverrides
    ? pRetry(
        async () => {
          if (stopping) return;
          for (const stored of await deps.loadOverrides!()) await store.setOverride(stored.merchant_id, overrideFieldsOf(stored.overrides), stored.version);
          overridesLoaded = true;
        },
        {
          retries: Number.POSITIVE_INFINITY,
          minTimeout: 200,
          maxTimeout: 5_000,
          shouldRetry: () => !stopping,
          onFailedAttempt: ({ error, attemptNumber }) =>
            deps.logger.warn({ err: error, attempt: attemptNumber }, 'throttle overrides not loaded yet; retrying'),
        },
      ).catch(() => undefined)
    : Promise.resolve();
  // Most starts find oauth up: serving only after the first load spares a moment of plan limits.
  await Promise.race([loading, new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);

  let consumer: Consumer | undefined;
  if (deps.bus) {
    // One durable queue for every replica: whichever takes the event writes the shared store.
    consumer = await deps.bus.consume({ queue: THROTTLE_OVERRIDES_QUEUE, bindings: ['merchants.throttle_updated'] }, async (event) => {
      const object = event.data.object as { overrides?: Record<string, Record<string, number>>; version?: number };
      await store.setOverride(event.merchant_id, overrideFieldsOf(object.overrides ?? {}), object.version ?? 0);
    });
  }

  const apply = (ctx: Context, decision: Decision) => {
    const headers = rateLimitHeaders(decision);
    ctx.set('RateLimit-Policy', headers.policy);
    ctx.set('RateLimit', headers.state);
    if (!decision.allowed) throw new RateLimited(decision.refusedBy!, decision.retryAfterSeconds);
  };

  const slots = new ConcurrencySlots(store, { logger: deps.logger, ...(deps.slotLeaseMs ? { ttlMs: deps.slotLeaseMs } : {}) });

  const bulkPacer = (merchantId: string, plan: string | undefined): BulkPacer => {
    const itemsPerSecond = settings.bulk[planOf(plan)];
    const { lot, spec } = bulkLotOf(itemsPerSecond);
    let allowance = 0;
    const waitForLot = async (items: number, started: number, maxWaitMs: number, cancelled: () => boolean) => {
      for (;;) {
        if (cancelled()) throw new Error('the caller went away while waiting for the bulk class');
        const decision = await store.consume({ subject: `m:${merchantId}`, specs: [spec] });
        if (decision.allowed) {
          allowance += lot;
          return;
        }
        const waitMs = Math.max(5, Math.ceil(1000 / spec.b));
        if (Date.now() - started + waitMs > maxWaitMs) {
          // When every item still missing could have come, not only the next lot.
          throw new RateLimited('bulk', Math.max(decision.retryAfterSeconds, Math.ceil((items - allowance) / itemsPerSecond)));
        }
        await new Promise((resolve) => setTimeout(resolve, waitMs));
      }
    };
    return {
      take(items = 1, options = {}) {
        if (allowance >= items) {
          allowance -= items;
          return undefined;
        }
        const started = Date.now();
        const withinDeadline = options.deadline === undefined ? Number.POSITIVE_INFINITY : 0.75 * (options.deadline - started);
        const maxWaitMs = Math.min(options.maxWaitMs ?? settings.bulkMaxWaitMs, withinDeadline);
        const cancelled = options.cancelled ?? (() => false);
        // A page may need several lots: each is taken (and waited for) in turn, all within one longest wait.
        return (async () => {
          while (allowance < items) await waitForLot(items, started, maxWaitMs, cancelled);
          allowance -= items;
        })();
      },
    };
  };
  // Each merchant's leftover of its last lot, for its next batch; forgotten once it has been idle a while.
  const batchPacers = new Map<string, { pacer: BulkPacer; usedAt: number }>();
  const sweeper = setInterval(() => {
    const idleSince = Date.now() - 10_000;
    for (const [key, { usedAt }] of batchPacers) if (usedAt < idleSince) batchPacers.delete(key);
  }, 10_000);
  sweeper.unref();

  return {
    store,
    slots,
    degradation() {
      if (!overridesLoaded) return "operators' throttle overrides are not loaded yet: plan limits apply meanwhile";
      return store.degradation();
    },
    async merchantRequest(ctx, merchantId, plan) {
      const specs = specsByPlan.get((plan && specsByPlan.has(plan as Plan) ? plan : settings.defaultPlan) as Plan)!;
      const classes = classesFor(ctx.method, ctx.path);
      apply(ctx, await store.consume({ subject: `m:${merchantId}`, merchantId, specs: classes.map((name) => specs.get(name)!) }));
    },
    async tokenRequest(ctx) {
      let clientId = clientIdFromBasic(ctx.get('authorization'));
      let body: Buffer | undefined;
      if (!clientId && ctx.is('application/x-www-form-urlencoded')) {
        body = await readBoundedBody(ctx, MAX_TOKEN_FORM_BYTES);
        clientId = new URLSearchParams(body.toString('utf8')).get('client_id') ?? undefined;
      }
      // Without a client id nothing can be issued; such requests share a budget per address.
      const subject = clientId ? `c:${clientId.slice(0, MAX_CLIENT_ID_LENGTH)}` : `ip:${currentContext()?.ip ?? ctx.ip}`;
      apply(ctx, await store.consume({ subject, specs: [tokenSpec] }));
      return body;
    },
    async merchantCall(merchantId, plan, write) {
      const specs = specsByPlan.get(planOf(plan))!;
      const classes: ThrottleClass[] = write ? ['burst', 'sustained', 'writes'] : ['burst', 'sustained'];
      return store.consume({ subject: `m:${merchantId}`, merchantId, specs: classes.map((name) => specs.get(name)!) });
    },
    bulkPacer,
    chargeBatch(merchantId, plan, items, options) {
      const key = `${merchantId}|${planOf(plan)}`;
      let batches = batchPacers.get(key);
      if (!batches) batchPacers.set(key, (batches = { pacer: bulkPacer(merchantId, plan), usedAt: 0 }));
      batches.usedAt = Date.now();
      return batches.pacer.take(items, options) ?? Promise.resolve();
    },
    async openEventStream(merchantId, plan) {
      const { decision, slot } = await slots.acquire(merchantId, 'event_streams', settings.plans[planOf(plan)].event_streams.concurrent);
      if (!slot) throw new ConcurrencyCapReached('event_streams', 'StreamEvents streams', decision);
      return slot;
    },
    async stop() {
      stopping = true;
      clearInterval(sweeper);
      await loading;
      await consumer?.close();
      await slots.close();
      await store.close();
    },
  };
}
