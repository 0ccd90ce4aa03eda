import type { Context } from 'koa';
import { PayloadTooLarge, RateLimited, type Bus, type Consumer, type Logger } from '@merx/kit';
import type { Decision } from './algorithms.js';
import type { ThrottleSettings } from './config.js';
import { FailoverLimiterStore } from './failover-store.js';
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

async function readBounded(ctx: Context): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    size += (chunk as Buffer).length;
    if (size > MAX_TOKEN_FORM_BYTES) throw new PayloadTooLarge(MAX_TOKEN_FORM_BYTES);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

export interface Throttle {
  readonly store: LimiterStore;
  /** Counts a merchant request in its classes; sets the headers; throws RateLimited when a class is empty. */
  merchantRequest(ctx: Context, merchantId: string, plan: string | undefined): Promise<void>;
  /**
   * `POST /oauth/token`, per client id in the sensitive class, before any of the body goes upstream.
   * Returns the body when it had to be read to find the client id (client_secret_post).
   */
  tokenRequest(ctx: Context): Promise<Buffer | undefined>;
  stop(): Promise<void>;
}

export interface ThrottleDeps {
  settings: ThrottleSettings;
  logger: Logger;
  /** Delivers operator overrides (merchants.throttle_updated) into the store. */
  bus?: Bus;
  /** Tests inject a store (e.g. a memory store with a fake clock). */
  store?: LimiterStore;
}

async function storeFor(deps: ThrottleDeps): Promise<LimiterStore> {
  if (deps.store) return deps.store;
  const { settings, logger } = deps;
  if (!settings.redisUrl) return new MemoryLimiterStore();
  const redis = new RedisLimiterStore({ url: settings.redisUrl, keyPrefix: settings.keyPrefix, logger });
  const store = new FailoverLimiterStore(redis, { logger, expectedReplicas: settings.expectedReplicas });
  await store.start();
  return store;
}

export async function createThrottle(deps: ThrottleDeps): Promise<Throttle> {
  const { settings } = deps;
  const store = await storeFor(deps);
  const specsByPlan = new Map<Plan, Map<ThrottleClass, ClassSpec>>(
    PLANS.map((plan) => [plan, new Map((['burst', 'sustained', 'writes', 'sensitive'] as const).map((name) => [name, specOf(name, settings.plans[plan])]))]),
  );
  const tokenSpec: ClassSpec = { name: 'sensitive', kind: 'window', a: settings.tokenEndpoint.limit, b: settings.tokenEndpoint.window_seconds };

  let consumer: Consumer | undefined;
  if (deps.bus) {
    // One durable queue for every replica: whichever takes the event writes the shared store.
    consumer = await deps.bus.consume({ queue: settings.overridesQueue, bindings: ['merchants.throttle_updated'] }, async (event) => {
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

  return {
    store,
    async merchantRequest(ctx, merchantId, plan) {
      const specs = specsByPlan.get((plan && specsByPlan.has(plan as Plan) ? plan : settings.defaultPlan) as Plan)!;
      const classes = classesFor(ctx.method, ctx.path);
      apply(ctx, await store.consume({ subject: `m:${merchantId}`, merchantId, specs: classes.map((name) => specs.get(name)!) }));
    },
    async tokenRequest(ctx) {
      let clientId = clientIdFromBasic(ctx.get('authorization'));
      let body: Buffer | undefined;
      if (!clientId && ctx.is('application/x-www-form-urlencoded')) {
        body = await readBounded(ctx);
        clientId = new URLSearchParams(body.toString('utf8')).get('client_id') ?? undefined;
      }
      // Without a client id nothing can be issued; such requests share a budget per address.
      const subject = clientId ? `c:${clientId.slice(0, MAX_CLIENT_ID_LENGTH)}` : `ip:${ctx.ip}`;
      apply(ctx, await store.consume({ subject, specs: [tokenSpec] }));
      return body;
    },
    async stop() {
      await consumer?.close();
      await store.close();
    },
  };
}
