import { Redis } from 'ioredis';
import type { Logger } from '@merx/kit';
import type { ClassState, Decision } from './algorithms.js';
import { THROTTLE_CLASSES, type OverrideFields, type ThrottleClass } from './policy.js';
import type { ConsumeRequest, LimiterStore } from './store.js';

/**
 * Every class of a request in one script: one round trip, atomic across replicas, and nothing
 * is taken unless every class can give. Time comes from Redis (TIME), so replicas with skewed
 * clocks still agree. Same arithmetic as algorithms.ts.
 * KEYS[1] the merchant's override hash, KEYS[2..] one state hash per class.
 * ARGV[1] '1' when the override applies, then name, kind (b|w), a, b per class.
 */
const CONSUME_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local fields = {}
if ARGV[1] == '1' then
  local flat = redis.call('HGETALL', KEYS[1])
  for i = 1, #flat, 2 do fields[flat[i]] = tonumber(flat[i + 1]) end
end
local n = #KEYS - 1
local out = {1, 0, 0}
local pending = {}
local refused = 0
local retryMs = 0
for i = 1, n do
  local o = 2 + (i - 1) * 4
  local name, kind = ARGV[o], ARGV[o + 1]
  local a, b = tonumber(ARGV[o + 2]), tonumber(ARGV[o + 3])
  local key = KEYS[i + 1]
  local q, w, r, reset, allowed, retry, ttl, state
  if kind == 'b' then
    a = fields[name .. '.capacity'] or a
    b = fields[name .. '.refill_per_second'] or b
    local s = redis.call('HMGET', key, 't', 'at')
    local tokens = a
    if s[1] then tokens = math.min(a, tonumber(s[1]) + math.max(0, now - tonumber(s[2])) * b / 1000) end
    allowed = tokens >= 1
    local after = tokens
    if allowed then after = tokens - 1 end
    q = a
    w = math.max(1, math.ceil(a / b))
    r = math.floor(after)
    reset = math.ceil((a - after) / b)
    retry = 0
    if not allowed then retry = (1 - tokens) * 1000 / b end
    ttl = math.ceil(a / b * 1000) + 1000
    state = {'t', tostring(after), 'at', tostring(now)}
  else
    a = fields[name .. '.limit'] or a
    b = fields[name .. '.window_seconds'] or b
    local windowMs = b * 1000
    local index = math.floor(now / windowMs)
    local s = redis.call('HMGET', key, 'i', 'c', 'p')
    local current, previous = 0, 0
    local stored = tonumber(s[1])
    if stored == index then
      current = tonumber(s[2])
      previous = tonumber(s[3])
    elseif stored == index - 1 then
      previous = tonumber(s[2])
    end
    local elapsed = (now - index * windowMs) / windowMs
    local estimate = previous * (1 - elapsed) + current
    allowed = estimate + 1 <= a
    retry = 0
    local used = current
    if allowed then
      used = current + 1
    elseif current + 1 <= a then
      retry = (1 - (a - 1 - current) / previous - elapsed) * windowMs
    else
      retry = (1 - elapsed) * windowMs + (1 - (a - 1) / current) * windowMs
    end
    q = a
    w = b
    local left = a - estimate
    if allowed then left = left - 1 end
    r = math.max(0, math.floor(left))
    -- When the quota is whole again (windowWholeAfterMs in algorithms.ts).
    if used > 0 then
      reset = math.ceil(((index + 2) * windowMs - now) / 1000)
    elseif previous > 0 then
      reset = math.ceil(((index + 1) * windowMs - now) / 1000)
    else
      reset = 0
    end
    ttl = 2 * windowMs + 1000
    state = {'i', tostring(index), 'c', tostring(used), 'p', tostring(previous)}
  end
  out[#out + 1] = math.floor(q)
  out[#out + 1] = math.ceil(w)
  out[#out + 1] = r
  out[#out + 1] = reset
  pending[i] = {state, math.ceil(ttl), allowed}
  if (not allowed) and refused == 0 then
    refused = i
    retryMs = retry
  end
end
if refused == 0 then
  for i = 1, n do
    redis.call('HSET', KEYS[i + 1], unpack(pending[i][1]))
    redis.call('PEXPIRE', KEYS[i + 1], pending[i][2])
  end
else
  out[1] = 0
  out[2] = refused
  -- nothing was taken: classes that would have given report their untouched remainder
  for i = 1, n do
    if pending[i][3] then out[3 + (i - 1) * 4 + 3] = out[3 + (i - 1) * 4 + 3] + 1 end
  end
  out[3] = math.max(1, math.ceil(retryMs / 1000))
end
return out
`;

/** Replaces the override unless a newer version is already there. ARGV[1] version, then field/value pairs. */
const SET_OVERRIDE_LUA = `
local v = tonumber(redis.call('HGET', KEYS[1], '_v') or '0')
if v >= tonumber(ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], '_v', unpack(ARGV))
return 1
`;

interface ThrottleCommands {
  merxThrottleConsume(numberOfKeys: number, ...keysAndArgs: Array<string | number>): Promise<number[]>;
  merxThrottleOverride(numberOfKeys: number, ...keysAndArgs: Array<string | number>): Promise<number>;
}

export interface RedisStoreOptions {
  url: string;
  /** Every key starts with it; tests use one per run. */
  keyPrefix: string;
  logger: Logger;
  /** A command slower than this counts as Redis being away. */
  commandTimeoutMs?: number;
}

export class RedisLimiterStore implements LimiterStore {
  readonly redis: Redis & ThrottleCommands;
  private readonly prefix: string;

  constructor(options: RedisStoreOptions) {
    this.prefix = options.keyPrefix;
    // No offline queue: while disconnected a command fails at once and the caller falls back,
    // rather than requests piling up behind a reconnect.
    this.redis = new Redis(options.url, {
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      commandTimeout: options.commandTimeoutMs ?? 250,
      connectTimeout: 2_000,
      retryStrategy: (attempt) => Math.min(attempt * 100, 1_000),
      // Concurrent requests' scripts go out in one write and come back in one read: the limiter's
      // cost was one Redis round trip (two syscalls each side) per request.
      enableAutoPipelining: true,
    }) as Redis & ThrottleCommands;
    this.redis.defineCommand('merxThrottleConsume', { lua: CONSUME_LUA });
    this.redis.defineCommand('merxThrottleOverride', { lua: SET_OVERRIDE_LUA });
    // Connection errors are reported by the failover wrapper; an 'error' without a listener would be printed by ioredis.
    this.redis.on('error', (error: Error) => options.logger.debug({ err: error }, 'redis connection error'));
  }

  /** Keys of one subject share a hash tag, so the script stays valid on a Redis Cluster. */
  private overrideKey(merchantId: string | undefined, subject: string): string {
    return merchantId ? `${this.prefix}{m:${merchantId}}:o` : `${this.prefix}{${subject}}:o`;
  }

  async consume(request: ConsumeRequest): Promise<Decision> {
    const subject = request.merchantId ? `m:${request.merchantId}` : request.subject;
    const keys = [this.overrideKey(request.merchantId, subject), ...request.specs.map((spec) => `${this.prefix}{${subject}}:${spec.name}`)];
    const args: Array<string | number> = [request.merchantId ? '1' : '0'];
    for (const spec of request.specs) args.push(spec.name, spec.kind === 'bucket' ? 'b' : 'w', spec.a, spec.b);
    const out = await this.redis.merxThrottleConsume(keys.length, ...keys, ...args);
    const classes: ClassState[] = request.specs.map((spec, i) => ({
      name: spec.name,
      quota: out[3 + i * 4]!,
      window: out[4 + i * 4]!,
      remaining: out[5 + i * 4]!,
      reset: out[6 + i * 4]!,
    }));
    if (out[0] === 1) return { allowed: true, retryAfterSeconds: 0, classes };
    return { allowed: false, refusedBy: request.specs[out[1]! - 1]!.name as ThrottleClass, retryAfterSeconds: out[2]!, classes };
  }

  async setOverride(merchantId: string, fields: OverrideFields, version: number): Promise<void> {
    const pairs = Object.entries(fields)
      .filter(([field]) => THROTTLE_CLASSES.some((name) => field.startsWith(`${name}.`)))
      .flat();
    await this.redis.merxThrottleOverride(1, this.overrideKey(merchantId, ''), version, ...pairs);
  }

  async ready(timeoutMs: number): Promise<void> {
    if (this.redis.status === 'ready') return;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.redis.off('ready', onReady);
        reject(new Error(`redis not ready within ${timeoutMs} ms`));
      }, timeoutMs);
      const onReady = () => {
        clearTimeout(timer);
        resolve();
      };
      this.redis.once('ready', onReady);
    });
  }

  async ping(): Promise<void> {
    await this.redis.ping();
  }

  degradation(): string | undefined {
    return undefined;
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}

/** Deletes every key under a prefix (tests and benchmarks clean up after themselves). */
export async function purgeThrottleState(url: string, keyPrefix: string): Promise<number> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1, lazyConnect: true });
  await redis.connect();
  let deleted = 0;
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${keyPrefix.replace(/[*?[\]\\]/g, '\\$&')}*`, 'COUNT', 500);
      cursor = next;
      if (keys.length > 0) deleted += await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
  return deleted;
}
