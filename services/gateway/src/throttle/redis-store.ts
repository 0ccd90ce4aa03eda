import { Redis } from 'ioredis';
import type { Logger } from '@merx/kit';
import type { ClassState, Decision } from './algorithms.js';
import { concurrencyField, isOverrideField, type ConcurrencyClass, type OverrideFields, type ThrottleClass } from './policy.js';
import type { ConsumeRequest, LimiterStore, SlotDecision, SlotRequest } from './store.js';

/**
 * Every class of a request in one script: one round trip, atomic across replicas, and nothing
 * is taken unless every class can give. Time comes from Redis (TIME), so replicas with skewed
 * clocks still agree. Same arithmetic as algorithms.ts.
 *
 * It takes up to `want` units at once (a lease, lease-store.ts), but never more than a
 * sixteenth of what any class has left, so a class with fewer than 32 left, and any limit below
 * 32, is charged one request at a time; `want` 1 is the plain per-request charge.
 * KEYS[1] the merchant's override hash, KEYS[2..] one state hash per class.
 * ARGV[1] '1' when the override applies, ARGV[2] want, then name, kind (b|w), a, b per class.
 * Returns granted (0: refused), the refusing class's position, Retry-After seconds, room (what
 * a lease could have had), Redis's time in ms, then quota, window, remaining (the granted units
 * taken) and reset per class.
 */
const TAKE_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local fields = {}
if ARGV[1] == '1' then
  local flat = redis.call('HGETALL', KEYS[1])
  for i = 1, #flat, 2 do fields[flat[i]] = tonumber(flat[i + 1]) end
end
local want = tonumber(ARGV[2])
local n = #KEYS - 1
local classes = {}
local refused = 0
local room = nil
-- First what every class has left; then the grant; then each class charged with it.
for i = 1, n do
  local o = 3 + (i - 1) * 4
  local name, kind = ARGV[o], ARGV[o + 1]
  local a, b = tonumber(ARGV[o + 2]), tonumber(ARGV[o + 3])
  local c = {kind = kind}
  if kind == 'b' then
    c.a = fields[name .. '.capacity'] or a
    c.b = fields[name .. '.refill_per_second'] or b
    local s = redis.call('HMGET', KEYS[i + 1], 't', 'at')
    c.tokens = c.a
    if s[1] then c.tokens = math.min(c.a, tonumber(s[1]) + math.max(0, now - tonumber(s[2])) * c.b / 1000) end
    c.left = c.tokens
  else
    c.a = fields[name .. '.limit'] or a
    c.b = fields[name .. '.window_seconds'] or b
    c.windowMs = c.b * 1000
    c.index = math.floor(now / c.windowMs)
    local s = redis.call('HMGET', KEYS[i + 1], 'i', 'c', 'p')
    c.current, c.previous = 0, 0
    local stored = tonumber(s[1])
    if stored == c.index then
      c.current = tonumber(s[2])
      c.previous = tonumber(s[3])
    elseif stored == c.index - 1 then
      c.previous = tonumber(s[2])
    end
    c.elapsed = (now - c.index * c.windowMs) / c.windowMs
    c.estimate = c.previous * (1 - c.elapsed) + c.current
    c.left = c.a - c.estimate
  end
  c.allowed = c.left >= 1
  if c.allowed then
    local share = math.max(1, math.floor(c.left / 16))
    if room == nil or share < room then room = share end
  elseif refused == 0 then
    refused = i
  end
  classes[i] = c
end
local granted = 0
if refused == 0 then granted = math.min(want, room) else room = 0 end
local out = {granted, refused, 0, room, now}
local retryMs = 0
for i = 1, n do
  local c = classes[i]
  -- A refused request takes nothing: classes that would have given report their untouched remainder.
  local take = granted
  if refused ~= 0 and c.allowed then take = 1 end
  local a, b = c.a, c.b
  local q, w, r, reset, ttl, state
  if c.kind == 'b' then
    local after = c.tokens - take
    q = a
    w = math.max(1, math.ceil(a / b))
    r = math.floor(after)
    reset = math.ceil((a - after) / b)
    if i == refused then retryMs = (1 - c.tokens) * 1000 / b end
    ttl = math.ceil(a / b * 1000) + 1000
    state = {'t', tostring(after), 'at', tostring(now)}
  else
    local used = c.current + take
    if i == refused then
      if c.current + 1 <= a then
        retryMs = (1 - (a - 1 - c.current) / c.previous - c.elapsed) * c.windowMs
      else
        retryMs = (1 - c.elapsed) * c.windowMs + (1 - (a - 1) / c.current) * c.windowMs
      end
    end
    q = a
    w = b
    r = math.max(0, math.floor(a - c.estimate - take))
    -- When the quota is whole again (windowWholeAfterMs in algorithms.ts).
    if used > 0 then
      reset = math.ceil(((c.index + 2) * c.windowMs - now) / 1000)
    elseif c.previous > 0 then
      reset = math.ceil(((c.index + 1) * c.windowMs - now) / 1000)
    else
      reset = 0
    end
    ttl = 2 * c.windowMs + 1000
    state = {'i', tostring(c.index), 'c', tostring(used), 'p', tostring(c.previous)}
  end
  if refused ~= 0 and c.allowed then r = r + 1 end
  out[#out + 1] = math.floor(q)
  out[#out + 1] = math.ceil(w)
  out[#out + 1] = r
  out[#out + 1] = reset
  if granted > 0 then
    redis.call('HSET', KEYS[i + 1], unpack(state))
    redis.call('PEXPIRE', KEYS[i + 1], math.ceil(ttl))
  end
end
if refused ~= 0 then out[3] = math.max(1, math.ceil(retryMs / 1000)) end
return out
`;

/**
 * Returns a lease's unspent units (lease-store.ts). KEYS one state hash per class; ARGV[1] the
 * units, then per class 'b' for a bucket or the fixed window the lease was counted in. A bucket
 * that has expired is full, and a window that has moved on twice no longer counts the lease:
 * nothing to return there.
 */
const GIVE_BACK_LUA = `
local units = tonumber(ARGV[1])
for i = 1, #KEYS do
  local mark = ARGV[i + 1]
  if mark == 'b' then
    -- Stored above capacity is fine: a read caps it.
    if redis.call('EXISTS', KEYS[i]) == 1 then redis.call('HINCRBYFLOAT', KEYS[i], 't', units) end
  else
    local index = tonumber(mark)
    local s = redis.call('HMGET', KEYS[i], 'i', 'c', 'p')
    local stored = tonumber(s[1])
    if stored == index then
      redis.call('HSET', KEYS[i], 'c', tostring(math.max(0, tonumber(s[2]) - units)))
    elseif stored == index + 1 then
      redis.call('HSET', KEYS[i], 'p', tostring(math.max(0, tonumber(s[3]) - units)))
    end
  end
end
return 0
`;

/** Replaces the override unless a newer version is already there. ARGV[1] version, then field/value pairs. */
const SET_OVERRIDE_LUA = `
local v = tonumber(redis.call('HGET', KEYS[1], '_v') or '0')
if v >= tonumber(ARGV[1]) then return 0 end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], '_v', unpack(ARGV))
return 1
`;

/**
 * A slot of a concurrency cap: a sorted set of slot ids scored by when their lease runs out
 * (Redis's clock), so the slots of a replica that died stop counting on their own.
 * KEYS[1] the merchant's override hash, KEYS[2] the set. ARGV[1] the override field, ARGV[2]
 * the plan's cap, ARGV[3] the slot, ARGV[4] the lease in ms. Returns granted (0|1), cap, open.
 */
const ACQUIRE_SLOT_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cap = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or ARGV[2])
local ttl = tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local open = redis.call('ZCARD', KEYS[2])
if open >= cap then return {0, cap, open} end
redis.call('ZADD', KEYS[2], now + ttl, ARGV[3])
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
return {1, cap, open + 1}
`;

/**
 * Extends the leases of slots still held, adding back any the set lost (a flush, or slots the
 * local fallback granted while Redis was away). KEYS[1] the set; ARGV[1] the lease, then slots.
 */
const RENEW_SLOTS_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], now + ttl, ARGV[i]) end
if redis.call('PTTL', KEYS[1]) < ttl then redis.call('PEXPIRE', KEYS[1], ttl) end
return 0
`;

interface ThrottleCommands {
  merxThrottleTake(numberOfKeys: number, ...keysAndArgs: Array<string | number>): Promise<number[]>;
  merxThrottleGiveBack(numberOfKeys: number, ...keysAndArgs: Array<string | number>): Promise<number>;
  merxThrottleOverride(numberOfKeys: number, ...keysAndArgs: Array<string | number>): Promise<number>;
  merxThrottleAcquireSlot(numberOfKeys: number, ...keysAndArgs: Array<string | number>): Promise<number[]>;
  merxThrottleRenewSlots(numberOfKeys: number, ...keysAndArgs: Array<string | number>): Promise<number>;
}

/** What one charge in Redis gave: the decision for the units taken, as Redis counted them. */
export interface Take {
  /** The state after every granted unit is taken; `allowed` false when nothing was. */
  decision: Decision;
  /** Units taken from every class (0 when refused). */
  granted: number;
  /** What a lease could have had: a sixteenth of what the emptiest class had left, at least 1 (0 when refused). */
  room: number;
  /** Redis's clock (ms) when it was taken: the fixed window a give-back goes to. */
  at: number;
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
    this.redis.defineCommand('merxThrottleTake', { lua: TAKE_LUA });
    this.redis.defineCommand('merxThrottleGiveBack', { lua: GIVE_BACK_LUA });
    this.redis.defineCommand('merxThrottleOverride', { lua: SET_OVERRIDE_LUA });
    this.redis.defineCommand('merxThrottleAcquireSlot', { lua: ACQUIRE_SLOT_LUA });
    this.redis.defineCommand('merxThrottleRenewSlots', { lua: RENEW_SLOTS_LUA });
    // Connection errors are reported by the failover wrapper; an 'error' without a listener would be printed by ioredis.
    this.redis.on('error', (error: Error) => options.logger.debug({ err: error }, 'redis connection error'));
  }

  /** Keys of one subject share a hash tag, so the script stays valid on a Redis Cluster. */
  private overrideKey(merchantId: string | undefined, subject: string): string {
    return merchantId ? `${this.prefix}{m:${merchantId}}:o` : `${this.prefix}{${subject}}:o`;
  }

  private stateKey(request: ConsumeRequest, name: string): string {
    return `${this.prefix}{${request.merchantId ? `m:${request.merchantId}` : request.subject}}:${name}`;
  }

  async consume(request: ConsumeRequest): Promise<Decision> {
    return (await this.take(request, 1)).decision;
  }

  /** Charges `want` units at once when every class has room for them (fewer when one has not; see TAKE_LUA). */
  async take(request: ConsumeRequest, want: number): Promise<Take> {
    const subject = request.merchantId ? `m:${request.merchantId}` : request.subject;
    const keys = [this.overrideKey(request.merchantId, subject), ...request.specs.map((spec) => this.stateKey(request, spec.name))];
    const args: Array<string | number> = [request.merchantId ? '1' : '0', want];
    for (const spec of request.specs) args.push(spec.name, spec.kind === 'bucket' ? 'b' : 'w', spec.a, spec.b);
    const out = await this.redis.merxThrottleTake(keys.length, ...keys, ...args);
    const classes: ClassState[] = request.specs.map((spec, i) => ({
      name: spec.name,
      quota: out[5 + i * 4]!,
      window: out[6 + i * 4]!,
      remaining: out[7 + i * 4]!,
      reset: out[8 + i * 4]!,
    }));
    const [granted, refusedAt, retryAfterSeconds, room, at] = out as [number, number, number, number, number];
    const decision: Decision =
      granted > 0
        ? { allowed: true, retryAfterSeconds: 0, classes }
        : { allowed: false, refusedBy: request.specs[refusedAt - 1]!.name as ThrottleClass, retryAfterSeconds, classes };
    return { decision, granted, room, at };
  }

  /**
   * Returns units of a lease taken at `at` (Redis ms); `classes` are the take's, for each
   * window's length after overrides.
   */
  async giveBack(request: ConsumeRequest, units: number, classes: ClassState[], at: number): Promise<void> {
    const keys = request.specs.map((spec) => this.stateKey(request, spec.name));
    const marks = request.specs.map((spec, i) => (spec.kind === 'bucket' ? 'b' : Math.floor(at / (classes[i]!.window * 1000))));
    await this.redis.merxThrottleGiveBack(keys.length, ...keys, units, ...marks);
  }

  async setOverride(merchantId: string, fields: OverrideFields, version: number): Promise<void> {
    const pairs = Object.entries(fields)
      .filter(([field]) => isOverrideField(field))
      .flat();
    await this.redis.merxThrottleOverride(1, this.overrideKey(merchantId, ''), version, ...pairs);
  }

  /** Beside the merchant's other keys (same hash tag as its override). */
  private slotsKey(merchantId: string, name: ConcurrencyClass): string {
    return `${this.prefix}{m:${merchantId}}:${name}`;
  }

  async acquireSlot(request: SlotRequest): Promise<SlotDecision> {
    const [granted, cap, open] = (await this.redis.merxThrottleAcquireSlot(
      2,
      this.overrideKey(request.merchantId, ''),
      this.slotsKey(request.merchantId, request.name),
      concurrencyField(request.name),
      request.cap,
      request.slot,
      request.ttlMs,
    )) as [number, number, number];
    return { allowed: granted === 1, cap, open };
  }

  async renewSlots(merchantId: string, name: ConcurrencyClass, slots: string[], ttlMs: number): Promise<void> {
    if (slots.length === 0) return;
    await this.redis.merxThrottleRenewSlots(1, this.slotsKey(merchantId, name), ttlMs, ...slots);
  }

  async releaseSlot(merchantId: string, name: ConcurrencyClass, slot: string): Promise<void> {
    await this.redis.zrem(this.slotsKey(merchantId, name), slot);
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
