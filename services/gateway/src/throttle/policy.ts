/**
 * What each throttle class counts and how much of it each plan gets. The numbers of the
 * standard plan are the design's (api-conventions.md, Throttle classes); operators change any
 * of them per deployment (MERX_THROTTLE_PLANS) and per merchant (PUT /admin/v1/merchants/{id}/throttle).
 */
export const THROTTLE_CLASSES = ['burst', 'sustained', 'writes', 'sensitive'] as const;
export type ThrottleClass = (typeof THROTTLE_CLASSES)[number];

export const PLANS = ['sandbox', 'standard', 'scale'] as const;
export type Plan = (typeof PLANS)[number];

export interface BucketLimit {
  capacity: number;
  refill_per_second: number;
}
export interface WindowLimit {
  limit: number;
  window_seconds: number;
}
/** A cap on what a merchant holds open at once, not a rate. */
export interface ConcurrencyLimit {
  concurrent: number;
}
export interface PlanLimits {
  burst: BucketLimit;
  sustained: WindowLimit;
  writes: BucketLimit;
  sensitive: WindowLimit;
  /** `StreamEvents` calls open at once, per merchant, across every gateway replica. */
  event_streams: ConcurrencyLimit;
}

/**
 * Caps on what a merchant holds open at once. They count slots (stream-slots.ts), not requests,
 * and share the operator override with the classes (`{"event_streams":{"concurrent":500}}`).
 */
export const CONCURRENCY_CLASSES = ['event_streams'] as const;
export type ConcurrencyClass = (typeof CONCURRENCY_CLASSES)[number];
/** The override field of a concurrency cap, as stored. */
export const concurrencyField = (name: ConcurrencyClass) => `${name}.concurrent`;

export const CLASS_KIND: Record<ThrottleClass, 'bucket' | 'window'> = { burst: 'bucket', sustained: 'window', writes: 'bucket', sensitive: 'window' };
/** The override fields of each kind, as stored (`burst.capacity`) and as sent by the operator. */
export const KIND_FIELDS = { bucket: ['capacity', 'refill_per_second'], window: ['limit', 'window_seconds'] } as const;

export const DEFAULT_PLAN_LIMITS: Record<Plan, PlanLimits> = {
  sandbox: {
    burst: { capacity: 50, refill_per_second: 25 },
    sustained: { limit: 5_000, window_seconds: 3600 },
    writes: { capacity: 20, refill_per_second: 5 },
    sensitive: { limit: 10, window_seconds: 60 },
    event_streams: { concurrent: 10 },
  },
  standard: {
    burst: { capacity: 100, refill_per_second: 50 },
    sustained: { limit: 20_000, window_seconds: 3600 },
    writes: { capacity: 40, refill_per_second: 10 },
    sensitive: { limit: 10, window_seconds: 60 },
    event_streams: { concurrent: 50 },
  },
  scale: {
    burst: { capacity: 500, refill_per_second: 250 },
    sustained: { limit: 200_000, window_seconds: 3600 },
    writes: { capacity: 200, refill_per_second: 50 },
    sensitive: { limit: 30, window_seconds: 60 },
    event_streams: { concurrent: 200 },
  },
};

/** Items per second of the bulk class (gRPC streams), per merchant: the design's numbers. */
export const DEFAULT_BULK_ITEMS_PER_SECOND: Record<Plan, number> = { sandbox: 1_000, standard: 10_000, scale: 50_000 };

const WRITE_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * The sensitive operations, in one place so services that do not exist yet are covered the
 * day their routes appear. The token endpoint is here for completeness; it is throttled per
 * client id rather than per merchant (see limiter.ts).
 */
export const SENSITIVE_OPERATIONS: ReadonlyArray<{ method: string; path: RegExp; what: string }> = [
  { method: 'POST', path: /^\/oauth\/token\/?$/, what: 'token issuance' },
  { method: 'POST', path: /^\/api\/v1\/api-keys\/?$/, what: 'API key creation' },
  { method: 'DELETE', path: /^\/api\/v1\/api-keys\/[^/]+\/?$/, what: 'API key revocation' },
  { method: 'POST', path: /^\/api\/v1\/webhooks\/subscriptions\/[^/]+\/rotate-secret\/?$/, what: 'webhook secret rotation' },
  { method: 'POST', path: /^\/api\/v1\/destinations\/[^/]+\/rotate-secret\/?$/, what: 'destination secret rotation' },
  { method: 'POST', path: /^\/api\/v1\/sandbox\/reset\/?$/, what: 'sandbox reset' },
  { method: 'POST', path: /^\/api\/v1\/webhooks\/dead-letters\/(?:[^/]+\/)?replay\/?$/, what: 'dead-letter replay' },
];

export function isSensitive(method: string, path: string): boolean {
  return SENSITIVE_OPERATIONS.some((operation) => operation.method === method && operation.path.test(path));
}

/** Every class a merchant request counts against, in the order they are checked. */
export function classesFor(method: string, path: string): ThrottleClass[] {
  const classes: ThrottleClass[] = ['burst', 'sustained'];
  if (WRITE_METHODS.has(method)) classes.push('writes');
  if (isSensitive(method, path)) classes.push('sensitive');
  return classes;
}

/** One class as a store evaluates it: `a`/`b` are capacity and refill per second (bucket) or limit and window seconds (window). */
export interface ClassSpec {
  /** `bulk` paces gRPC streams in items (limiter.ts, bulkLotOf); it has no operator overrides. */
  name: ThrottleClass | 'bulk';
  kind: 'bucket' | 'window';
  a: number;
  b: number;
}

export function specOf(name: ThrottleClass, limits: PlanLimits): ClassSpec {
  const kind = CLASS_KIND[name];
  const limit = limits[name] as BucketLimit & WindowLimit;
  return kind === 'bucket' ? { name, kind, a: limit.capacity, b: limit.refill_per_second } : { name, kind, a: limit.limit, b: limit.window_seconds };
}

/** An operator's override: `burst.capacity` → 500, `event_streams.concurrent` → 1000, only the fields that differ from the plan. */
export type OverrideFields = Record<string, number>;

/** Whether a stored override field is one this gateway knows (a newer oauth service may send more). */
export const isOverrideField = (field: string) => [...THROTTLE_CLASSES, ...CONCURRENCY_CLASSES].some((name) => field.startsWith(`${name}.`));

export function overrideFieldsOf(override: Partial<Record<ThrottleClass | ConcurrencyClass, Record<string, number>>>): OverrideFields {
  const fields: OverrideFields = {};
  const keep = (name: string, field: string, value: unknown) => {
    if (typeof value === 'number' && Number.isFinite(value) && value > 0) fields[`${name}.${field}`] = value;
  };
  for (const name of THROTTLE_CLASSES) for (const field of KIND_FIELDS[CLASS_KIND[name]]) keep(name, field, override[name]?.[field]);
  for (const name of CONCURRENCY_CLASSES) keep(name, 'concurrent', override[name]?.concurrent);
  return fields;
}

export function applyOverride(spec: ClassSpec, fields: OverrideFields | undefined): ClassSpec {
  if (!fields) return spec;
  const [fieldA, fieldB] = KIND_FIELDS[spec.kind];
  return { ...spec, a: fields[`${spec.name}.${fieldA}`] ?? spec.a, b: fields[`${spec.name}.${fieldB}`] ?? spec.b };
}
