export interface FairShareLimits {
  /** Jobs of one merchant running at once. Below the pool size, so a merchant arriving always finds a worker soon. */
  maxRunningPerMerchant: number;
  /** Worker time a merchant earns per second, in ms: what it may use on average, however much it queues. */
  workerMsPerSecond: number;
  /** The most worker time a merchant may have saved up, in ms: its burst after a quiet spell. */
  burstMs: number;
}

interface MerchantShare<T> {
  queue: T[];
  running: number;
  /** When a job of it last started, in starts of any merchant; 0 for a merchant new to the share. */
  lastServed: number;
  /** Worker time it may still use, in ms; below zero after a job that ran past what was left. */
  balanceMs: number;
  /** When `balanceMs` was last brought up to date. */
  at: number;
}

/**
 * Jobs waiting for a worker, kept per merchant and served in turns, least recently served first:
 * each merchant with work gets one job started before any merchant gets a second, a merchant
 * arriving goes before those already served, a merchant with its maximum running waits
 * for one of them to finish, and one that has used up its worker time waits until it has earned
 * some back. So a merchant's backlog, however long and however slow its jobs, delays its own
 * work only; a merchant arriving with one job waits at most for the shortest job running.
 *
 * Worker time is a token bucket per merchant: it fills at `workerMsPerSecond` up to `burstMs`,
 * and each job pays what it took when it ends (a job may take the balance below zero; the
 * merchant then waits until it is positive again). Plain data, no timers: the caller asks for the
 * next job whenever a worker is free, and `msUntilEligible` says when to ask again.
 */
export class FairShare<T> {
  /** Merchants with queued jobs. */
  readonly #turns = new Map<string, MerchantShare<T>>();
  /** Every merchant with jobs queued or running, or with worker time still to earn back. */
  readonly #shares = new Map<string, MerchantShare<T>>();
  #queued = 0;
  #starts = 0;

  constructor(
    private readonly limits: FairShareLimits,
    private readonly now: () => number = () => performance.now(),
  ) {
    if (!Number.isInteger(limits.maxRunningPerMerchant) || limits.maxRunningPerMerchant < 1)
      throw new RangeError(`maxRunningPerMerchant must be a positive integer; got ${limits.maxRunningPerMerchant}`);
    if (!(limits.workerMsPerSecond > 0)) throw new RangeError(`workerMsPerSecond must be positive; got ${limits.workerMsPerSecond}`);
    if (!(limits.burstMs > 0)) throw new RangeError(`burstMs must be positive; got ${limits.burstMs}`);
  }

  /** Jobs waiting, of every merchant. */
  get queued(): number {
    return this.#queued;
  }

  push(merchantId: string, job: T): void {
    const share = this.#shareOf(merchantId);
    share.queue.push(job);
    this.#queued += 1;
    if (!this.#turns.has(merchantId)) this.#turns.set(merchantId, share);
  }

  /**
   * The next job to start: of the merchant served least recently among those that may start one
   * now, or none. The caller reports the job's end with `finished`. A scan of the merchants with
   * queued work, which are few next to the jobs they queue.
   */
  next(): { merchantId: string; job: T } | undefined {
    const now = this.now();
    let chosen: [string, MerchantShare<T>] | undefined;
    for (const entry of this.#turns) {
      const share = entry[1];
      if (chosen && share.lastServed >= chosen[1].lastServed) continue;
      if (share.running >= this.limits.maxRunningPerMerchant || this.#balance(share, now) <= 0) continue;
      chosen = entry;
    }
    if (!chosen) return undefined;
    const [merchantId, share] = chosen;
    const job = share.queue.shift()!;
    this.#queued -= 1;
    share.running += 1;
    share.lastServed = ++this.#starts;
    if (share.queue.length === 0) this.#turns.delete(merchantId);
    return { merchantId, job };
  }

  /** A job of `merchantId` ended after using `workerMs` of a worker's time. */
  finished(merchantId: string, workerMs: number): void {
    const share = this.#shares.get(merchantId);
    if (!share) return;
    share.running -= 1;
    share.balanceMs = this.#balance(share, this.now()) - Math.max(0, workerMs);
    // Merchants that paid a debt back are forgotten a few at a time, so the map stays the size of the busy ones.
    if (this.#shares.size > 2 * this.#turns.size + 64) this.#forgetSettled();
  }

  /** Worker time the merchant used outside a job (replacing a worker its job stopped), in ms. */
  charge(merchantId: string, workerMs: number): void {
    const share = this.#shareOf(merchantId);
    share.balanceMs = this.#balance(share, this.now()) - Math.max(0, workerMs);
  }

  /**
   * How long until a merchant now held back by its worker time may start a job, in ms; undefined
   * when none is (every queued merchant is either startable or at its running maximum).
   */
  msUntilEligible(): number | undefined {
    const now = this.now();
    let soonest: number | undefined;
    for (const share of this.#turns.values()) {
      if (share.running >= this.limits.maxRunningPerMerchant) continue;
      const balance = this.#balance(share, now);
      if (balance > 0) return 0;
      const wait = ((-balance + 1) / this.limits.workerMsPerSecond) * 1_000;
      soonest = soonest === undefined ? wait : Math.min(soonest, wait);
    }
    return soonest;
  }

  /** Every queued job, taken out (the runner is closing). */
  takeAll(): T[] {
    const jobs = [...this.#turns.values()].flatMap((share) => share.queue.splice(0));
    this.#turns.clear();
    this.#queued = 0;
    return jobs;
  }

  /** Merchants the fair share keeps state for: those with work, or with worker time still to earn back. */
  get trackedMerchants(): number {
    return this.#shares.size;
  }

  #shareOf(merchantId: string): MerchantShare<T> {
    let share = this.#shares.get(merchantId);
    if (!share) {
      share = { queue: [], running: 0, lastServed: 0, balanceMs: this.limits.burstMs, at: this.now() };
      this.#shares.set(merchantId, share);
    }
    return share;
  }

  #balance(share: MerchantShare<T>, now: number): number {
    share.balanceMs = Math.min(this.limits.burstMs, share.balanceMs + ((now - share.at) * this.limits.workerMsPerSecond) / 1_000);
    share.at = now;
    return share.balanceMs;
  }

  /** A merchant with nothing queued or running and a full bucket is the same as one never seen. */
  #forgetSettled(): void {
    const now = this.now();
    for (const [merchantId, share] of this.#shares) {
      if (share.running === 0 && share.queue.length === 0 && this.#balance(share, now) >= this.limits.burstMs) this.#shares.delete(merchantId);
    }
  }
}
