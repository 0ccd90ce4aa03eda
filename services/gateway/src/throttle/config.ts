import { deploymentField, redisPrefixOf, z } from '@merx/kit';
import {
  CONCURRENCY_CLASSES,
  DEFAULT_BULK_ITEMS_PER_SECOND,
  DEFAULT_PLAN_LIMITS,
  PLANS,
  THROTTLE_CLASSES,
  type Plan,
  type PlanLimits,
  type WindowLimit,
} from './policy.js';

export interface ThrottleSettings {
  /** MERX_THROTTLE=off turns every class off (benchmarks, emergencies); the default is on. */
  enabled: boolean;
  plans: Record<Plan, PlanLimits>;
  /** For tokens without a `plan` claim (minted before the claim existed). */
  defaultPlan: Plan;
  /** The sensitive budget of `POST /oauth/token`, per client id. */
  tokenEndpoint: WindowLimit;
  /** Shared state for every replica; memory when absent (embedded mode). */
  redisUrl?: string;
  /** This deployment's keys in a Redis it may share (`<MERX_DEPLOYMENT>:rl:`). */
  keyPrefix: string;
  /** How many gateway replicas share a budget; sizes the local fallback while Redis is away. */
  expectedReplicas: number;
  /** The most units a replica takes from Redis at once for one merchant (lease-store.ts); 1: every request is charged in Redis. */
  maxLease: number;
  /** Items per second of the bulk class (gRPC streams), per plan. */
  bulk: Record<Plan, number>;
  /** How long a stream waits for the bulk class (reading paused) before it is refused with RESOURCE_EXHAUSTED. */
  bulkMaxWaitMs: number;
}

const positive = z.number().positive().max(1e9);
const bucket = z.object({ capacity: positive.int(), refill_per_second: positive }).strict();
const window = z.object({ limit: positive.int(), window_seconds: positive.int() }).strict();
const concurrency = z.object({ concurrent: positive.int() }).strict();
const planPatch = z
  .object({ burst: bucket.partial(), sustained: window.partial(), writes: bucket.partial(), sensitive: window.partial(), event_streams: concurrency })
  .strict()
  .partial();
const plansPatch = z.partialRecord(z.enum(PLANS), planPatch);
const bulkPatch = z.partialRecord(z.enum(PLANS), positive);

function jsonOf<T>(name: string, raw: string | undefined, schema: z.ZodType<T>): T | undefined {
  if (raw === undefined || raw.trim() === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new Error(`${name} must be JSON`);
  }
  const result = schema.safeParse(parsed);
  if (!result.success) throw new Error(`${name}: ${result.error.issues.map((issue) => `${issue.path.join('.')} ${issue.message}`).join('; ')}`);
  return result.data;
}

export function mergePlans(patch: z.infer<typeof plansPatch> | undefined): Record<Plan, PlanLimits> {
  const plans = structuredClone(DEFAULT_PLAN_LIMITS);
  for (const plan of PLANS) {
    for (const name of [...THROTTLE_CLASSES, ...CONCURRENCY_CLASSES]) Object.assign(plans[plan][name], patch?.[plan]?.[name] ?? {});
  }
  return plans;
}

/**
 * MERX_THROTTLE=on|off, MERX_THROTTLE_PLANS (JSON, e.g. {"standard":{"burst":{"capacity":200},"event_streams":{"concurrent":100}}}),
 * MERX_THROTTLE_DEFAULT_PLAN, MERX_THROTTLE_TOKEN_ENDPOINT (JSON {"limit":10,"window_seconds":60}),
 * MERX_THROTTLE_BULK (JSON items per second per plan, e.g. {"sandbox":1000}), MERX_THROTTLE_BULK_MAX_WAIT_MS,
 * MERX_THROTTLE_REPLICAS, MERX_THROTTLE_MAX_LEASE, REDIS_URL, and MERX_DEPLOYMENT for the Redis key prefix. Throws one message naming the bad variable.
 */
export function throttleSettingsFromEnv(env: Record<string, string | undefined> = process.env): ThrottleSettings {
  const switchValue = (env.MERX_THROTTLE ?? 'on').toLowerCase();
  if (switchValue !== 'on' && switchValue !== 'off') throw new Error('MERX_THROTTLE must be on or off');
  const defaultPlan = env.MERX_THROTTLE_DEFAULT_PLAN ?? 'standard';
  if (!(PLANS as readonly string[]).includes(defaultPlan)) throw new Error('MERX_THROTTLE_DEFAULT_PLAN must be sandbox, standard or scale');
  const replicas = Number(env.MERX_THROTTLE_REPLICAS ?? 2);
  if (!Number.isInteger(replicas) || replicas < 1) throw new Error('MERX_THROTTLE_REPLICAS must be a positive integer');
  const maxLease = Number(env.MERX_THROTTLE_MAX_LEASE ?? 64);
  if (!Number.isInteger(maxLease) || maxLease < 1 || maxLease > 1_000) throw new Error('MERX_THROTTLE_MAX_LEASE must be a whole number from 1 to 1000');
  const bulkMaxWait = Number(env.MERX_THROTTLE_BULK_MAX_WAIT_MS ?? 10_000);
  if (!Number.isInteger(bulkMaxWait) || bulkMaxWait < 0) throw new Error('MERX_THROTTLE_BULK_MAX_WAIT_MS must be a whole number of milliseconds');
  const deployment = deploymentField.safeParse(env.MERX_DEPLOYMENT);
  if (!deployment.success) throw new Error(`MERX_DEPLOYMENT ${deployment.error.issues[0]!.message}`);
  return {
    enabled: switchValue === 'on',
    plans: mergePlans(jsonOf('MERX_THROTTLE_PLANS', env.MERX_THROTTLE_PLANS, plansPatch)),
    defaultPlan: defaultPlan as Plan,
    tokenEndpoint: jsonOf('MERX_THROTTLE_TOKEN_ENDPOINT', env.MERX_THROTTLE_TOKEN_ENDPOINT, window) ?? { limit: 10, window_seconds: 60 },
    ...(env.REDIS_URL ? { redisUrl: env.REDIS_URL } : {}),
    keyPrefix: redisPrefixOf(deployment.data, 'rl'),
    expectedReplicas: replicas,
    maxLease,
    bulk: { ...DEFAULT_BULK_ITEMS_PER_SECOND, ...jsonOf('MERX_THROTTLE_BULK', env.MERX_THROTTLE_BULK, bulkPatch) },
    bulkMaxWaitMs: bulkMaxWait,
  };
}
