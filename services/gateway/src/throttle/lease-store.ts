import type { Logger } from '@merx/kit';
import type { ClassState, Decision } from './algorithms.js';
import type { ConcurrencyClass, OverrideFields } from './policy.js';
import type { RedisLimiterStore, Take } from './redis-store.js';
import type { ConsumeRequest, RemoteLimiterStore, SlotDecision, SlotRequest } from './store.js';

/**
 * Leases: a replica takes a merchant's units from Redis a few at once and spends them locally,
 * so a busy merchant costs one script per lease rather than one per request (the script was
 * most of the limiter's cost: issue 20).
 *
 * - A lease is per merchant and per set of classes (reads: burst + sustained; writes: + writes),
 *   so spending one unit from it charges every class of the request at once, as the script does.
 *   Sensitive requests, the token endpoint and gRPC bulk lots are always charged one by one.
 * - Its size follows this replica's recent rate for it (about `spanMs` worth, at least the
 *   requests waiting for it), at most `maxLease`, and the script never grants more than a
 *   sixteenth of what the emptiest class has left: below 32 left, and for any limit below 32,
 *   every request is charged in Redis on its own, exactly as without leases. A merchant seen
 *   rarely is also charged per request (its rate asks for one unit).
 * - The next units are asked for while a quarter of a lease is left, so requests rarely wait;
 *   those that find it empty wait for the charge under way instead of each going to Redis, and a
 *   refusal answers all of them.
 * - Units unspent `lifeMs` after the last were taken go back to Redis (a bucket gets them back, a
 *   window's count drops), as do a merchant's units when an override for it arrives and every
 *   unit at shutdown. Each goes back to the fixed window its take was counted in, and the oldest
 *   are spent first, so a lease topped up across a window's end never moves a count between
 *   windows.
 *
 * What it trades, all bounded by the units a replica holds: at most `maxLease` per merchant and
 * set of classes, each take at most a sixteenth of what its emptiest class had left.
 * - Units are taken before they are spent, so the replicas together never spend more than Redis
 *   granted; but a unit is spent after it was taken, so within any span of time the requests let
 *   through can exceed a class's limit by the units held when it began.
 * - Units one replica holds are not another's until spent or returned: near the limit leases
 *   shrink to nothing, so this matters only while a class has 32 or more left.
 * - A request served from a lease reports Redis's count at the last take plus the units still
 *   held (exact on one replica, without the refill since), and an override reaches a replica
 *   holding a lease when the lease is spent or at most `lifeMs` later (at once on the replica
 *   that took the event).
 */
export interface LeaseOptions {
  logger: Logger;
  /** The most units one lease holds (MERX_THROTTLE_MAX_LEASE); below 2 every request is charged in Redis. */
  maxLease: number;
  /** Unspent units go back to Redis after this long. */
  lifeMs?: number;
  /** A lease is sized to about this many ms of the requests this replica saw for it lately. */
  spanMs?: number;
}

/** The classes whose requests come often enough for a lease to pay. */
const LEASED_CLASSES: ReadonlySet<string> = new Set(['burst', 'sustained', 'writes']);

/**
 * What a charge came to: for the request that made it, its decision; for a top-up, none (the
 * units are in the lease). Never a rejection, so nobody has to be waiting for it.
 */
type Outcome = { decision: Decision | undefined } | { error: unknown };

/**
 * Units of one take from Redis, with its clock then: a give-back must reach the fixed window each
 * unit was counted in, and a lease topped up across a window's end holds units of two.
 */
interface Slice {
  units: number;
  at: number;
  /** The take's classes, for each window's length after overrides. */
  classes: ClassState[];
}

interface Lease {
  /** The request that opened it: the merchant and classes a give-back returns units to. */
  readonly request: ConsumeRequest;
  /** Taken from Redis and not spent yet: the sum of `slices`. */
  units: number;
  /** The unspent units by take, oldest first; the oldest are spent first. */
  slices: Slice[];
  /** Redis's state when the last units were taken, without them; our clock then. */
  classes: ClassState[];
  obtainedAt: number;
  /** What Redis last said a lease could have; below 2 each request is charged on its own. */
  room: number;
  /** Units left when the next are asked for, so that requests rarely wait for Redis. */
  lowWater: number;
  /** Requests since the last charge began, and when it began: the rate that sizes the next lease. */
  arrivals: number;
  chargedAt: number | undefined;
  lastUsedAt: number;
  /** A charge of several units under way; requests finding the lease empty wait for it. */
  filling: Promise<Outcome> | undefined;
  waiting: number;
}

export class LeasedLimiterStore implements RemoteLimiterStore {
  private readonly leases = new Map<string, Lease>();
  private readonly sweeper: NodeJS.Timeout;
  private readonly lifeMs: number;
  private readonly spanMs: number;

  constructor(
    private readonly redis: RedisLimiterStore,
    private readonly options: LeaseOptions,
  ) {
    this.lifeMs = options.lifeMs ?? 1_000;
    this.spanMs = options.spanMs ?? 50;
    this.sweeper = setInterval(() => this.sweep(), this.lifeMs);
    this.sweeper.unref();
  }

  async consume(request: ConsumeRequest): Promise<Decision> {
    if (this.options.maxLease < 2 || !request.merchantId || !request.specs.every((spec) => LEASED_CLASSES.has(spec.name))) {
      return this.redis.consume(request);
    }
    const lease = this.leaseFor(request);
    let now = Date.now();
    lease.arrivals += 1;
    lease.lastUsedAt = now;
    for (;;) {
      if (lease.units > 0) {
        if (now - lease.obtainedAt < this.lifeMs) {
          spendOne(lease);
          if (lease.units <= lease.lowWater && !lease.filling) this.topUp(lease, request, now);
          return spent(lease);
        }
        void this.giveBack(lease);
      }
      if (!lease.filling) {
        const outcome = await this.charge(lease, request, this.wantOf(lease, now), now, true);
        if ('error' in outcome) throw outcome.error;
        return outcome.decision!;
      }
      lease.waiting += 1;
      const outcome = await lease.filling;
      lease.waiting -= 1;
      now = Date.now();
      if ('error' in outcome) throw outcome.error;
      // Refused when these requests came: they are too. (A top-up that was refused leaves them to ask.)
      if (outcome.decision && !outcome.decision.allowed) return outcome.decision;
    }
  }

  private leaseFor(request: ConsumeRequest): Lease {
    const key = `${request.subject}|${request.specs.map((spec) => spec.name).join(',')}`;
    let lease = this.leases.get(key);
    if (!lease) {
      lease = {
        request,
        units: 0,
        slices: [],
        classes: [],
        obtainedAt: 0,
        room: 0,
        lowWater: 0,
        arrivals: 0,
        chargedAt: undefined,
        lastUsedAt: 0,
        filling: undefined,
        waiting: 0,
      };
      this.leases.set(key, lease);
    }
    return lease;
  }

  /** Asks for the next units while some are left, never holding more than `maxLease`. */
  private topUp(lease: Lease, request: ConsumeRequest, now: number): void {
    const want = Math.min(this.wantOf(lease, now), this.options.maxLease - lease.units);
    if (want >= 2) void this.charge(lease, request, want, now, false);
  }

  /**
   * One script: for a request that found the lease empty (`own`), its unit and, when the rate asks
   * for it, the lease's next units; for a top-up, units for the lease only. Others wait for a
   * charge of several units rather than each going to Redis.
   */
  private charge(lease: Lease, request: ConsumeRequest, want: number, now: number, own: boolean): Promise<Outcome> {
    lease.arrivals = 0;
    lease.chargedAt = now;
    // Settled before anyone waiting resumes: the units are in the lease when they look.
    const charging = this.redis.take(request, want).then(
      (take): Outcome => {
        if (lease.filling === charging) lease.filling = undefined;
        return { decision: this.settle(lease, take, own) };
      },
      (error: unknown): Outcome => {
        if (lease.filling === charging) lease.filling = undefined;
        return { error };
      },
    );
    if (want > 1) lease.filling = charging;
    return charging;
  }

  private wantOf(lease: Lease, now: number): number {
    if (lease.room < 2 || lease.chargedAt === undefined) return 1;
    const byRate = Math.ceil((lease.arrivals * this.spanMs) / Math.max(1, now - lease.chargedAt));
    return Math.max(1, Math.min(this.options.maxLease, lease.room, Math.max(byRate, lease.waiting + 1)));
  }

  /** Units beyond the charging request's own go into the lease; the request's decision, if it has one. */
  private settle(lease: Lease, take: Take, own: boolean): Decision | undefined {
    lease.room = take.room;
    const pooled = own ? take.granted - 1 : take.granted;
    if (pooled > 0) {
      lease.units += pooled;
      lease.slices.push({ units: pooled, at: take.at, classes: take.decision.classes });
      lease.lowWater = Math.floor(take.granted / 4);
      lease.classes = take.decision.classes;
      lease.obtainedAt = Date.now();
    }
    if (!own) return undefined;
    return pooled > 0 ? spent(lease) : take.decision;
  }

  private async giveBack(lease: Lease): Promise<void> {
    const { units, slices } = lease;
    if (units === 0) return;
    lease.units = 0;
    lease.slices = [];
    // One script per take (rarely more than two): each slice's units go to the window they were counted in.
    await Promise.all(
      slices.map(async (slice) => {
        try {
          await this.redis.giveBack(lease.request, slice.units, slice.classes, slice.at);
        } catch (error) {
          // Lost units only make this merchant's budget smaller for a while (a window's, until it slides).
          this.options.logger.debug({ err: error, units: slice.units }, 'throttle lease not given back');
        }
      }),
    );
  }

  private sweep(): void {
    const now = Date.now();
    for (const [key, lease] of this.leases) {
      if (lease.units > 0 && now - lease.obtainedAt >= this.lifeMs) void this.giveBack(lease);
      if (lease.units === 0 && !lease.filling && now - lease.lastUsedAt >= this.lifeMs) this.leases.delete(key);
    }
  }

  async setOverride(merchantId: string, fields: OverrideFields, version: number): Promise<void> {
    await this.redis.setOverride(merchantId, fields, version);
    // Leases taken under the old numbers go back, so this replica's next request meets the new ones.
    // A top-up asked for before the override may still be on its way: its units are old numbers
    // too, so it lands first and goes back with the rest.
    const subject = `m:${merchantId}|`;
    const leases = [...this.leases].filter(([key]) => key.startsWith(subject)).map(([, lease]) => lease);
    await settledLeases(leases);
    await Promise.all(leases.map((lease) => this.giveBack(lease)));
  }

  /** Slots are not leased: each is its own entry in Redis, taken and released there. */
  acquireSlot(request: SlotRequest): Promise<SlotDecision> {
    return this.redis.acquireSlot(request);
  }

  renewSlots(merchantId: string, name: ConcurrencyClass, slots: string[], ttlMs: number): Promise<void> {
    return this.redis.renewSlots(merchantId, name, slots, ttlMs);
  }

  releaseSlot(merchantId: string, name: ConcurrencyClass, slot: string): Promise<void> {
    return this.redis.releaseSlot(merchantId, name, slot);
  }

  ready(timeoutMs: number): Promise<void> {
    return this.redis.ready(timeoutMs);
  }

  ping(): Promise<void> {
    return this.redis.ping();
  }

  degradation(): string | undefined {
    return undefined;
  }

  /** Units this replica holds for a subject (every subject without one): what it could spend beyond Redis's count. */
  heldUnits(subject?: string): number {
    let held = 0;
    for (const [key, lease] of this.leases) if (subject === undefined || key.startsWith(`${subject}|`)) held += lease.units;
    return held;
  }

  /** Resolves once the top-ups asked for so far have landed: with no request meanwhile, heldUnits is then all this replica took. */
  async settled(): Promise<void> {
    await settledLeases([...this.leases.values()]);
  }

  async close(): Promise<void> {
    clearInterval(this.sweeper);
    // Top-ups still on their way land first, so their units go back too instead of being lost.
    await this.settled();
    await Promise.all([...this.leases.values()].map((lease) => this.giveBack(lease)));
    await this.redis.close();
  }
}

/**
 * Waits for the charges these leases have in flight now. Not for those started meanwhile: under
 * steady traffic there is always another, and one started after an override already meets it.
 */
async function settledLeases(leases: Lease[]): Promise<void> {
  await Promise.all(leases.map((lease) => lease.filling));
}

/** Spends the lease's oldest unit, so a window that has ended is left with as few of ours as can be. */
function spendOne(lease: Lease): void {
  lease.units -= 1;
  const oldest = lease.slices[0]!;
  oldest.units -= 1;
  if (oldest.units === 0) lease.slices.shift();
}

/** A request served from the lease: Redis's count at the lease, plus what the lease still holds. */
function spent(lease: Lease): Decision {
  const held = lease.units;
  return { allowed: true, retryAfterSeconds: 0, classes: lease.classes.map((state) => ({ ...state, remaining: state.remaining + held })) };
}
