import { availableParallelism } from 'node:os';
import { FairShare, type FairShareLimits } from './fair-share.js';
import { RuleWorkerSlot, type PendingRouting } from './rule-worker-slot.js';
import type { RoutingDecision, RoutingJob } from './types.js';

export interface RuleRunnerOptions {
  /** How long one job may run in its worker before the worker is stopped; 100 ms by default. */
  timeoutMs?: number;
  /** Worker threads routing side by side; one per core by default (at least 2, at most 16). */
  poolSize?: number;
  /** How the workers are shared between merchants; see defaultFairShareLimits. */
  fairShare?: Partial<FairShareLimits>;
}

export const MAX_POOL_SIZE = 16;

/** One worker per core: at least two, so one keeps routing while the other is replaced after a timeout. */
export function defaultPoolSize(): number {
  return Math.min(MAX_POOL_SIZE, Math.max(2, availableParallelism()));
}

/**
 * One worker always left to the other merchants; half a worker's time per merchant on average,
 * with two seconds of it saved up for a burst. A merchant whose every rule runs into the 100 ms
 * deadline routes five records a second; one whose rules take 50 µs, ten thousand.
 */
export function defaultFairShareLimits(poolSize: number): FairShareLimits {
  return { maxRunningPerMerchant: Math.max(1, poolSize - 1), workerMsPerSecond: 500, burstMs: 2_000 };
}

/**
 * Runs routeThroughRules in worker threads so that no condition can stall routing: a job that
 * does not answer within `timeoutMs` resolves as not routed (`filtered`, with the reason), its
 * worker is replaced, and the jobs behind it still run. `route` rejects only when the runner is
 * closed, the job is malformed (it cannot be cloned to the worker, or routeThroughRules throws on
 * it), or no worker can start at all: the caller's or the deployment's faults, never a rule's.
 *
 * Jobs wait in a FairShare: per merchant, served in turns, each merchant with at most
 * `maxRunningPerMerchant` running and no more worker time than its share. One merchant's slow
 * rules therefore queue behind each other, never in front of another merchant's records.
 */
export class RuleRunner {
  readonly timeoutMs: number;
  readonly poolSize: number;
  readonly limits: FairShareLimits;
  readonly #slots: RuleWorkerSlot[];
  readonly #waiting: FairShare<PendingRouting>;
  /** Set while every idle worker waits for a merchant to earn worker time back. */
  #eligibleTimer: NodeJS.Timeout | null = null;
  #closing: Promise<void> | null = null;

  constructor({ timeoutMs = 100, poolSize = defaultPoolSize(), fairShare = {} }: RuleRunnerOptions = {}) {
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new RangeError(`timeoutMs must be a positive number of milliseconds; got ${timeoutMs}`);
    if (!Number.isInteger(poolSize) || poolSize < 1 || poolSize > MAX_POOL_SIZE)
      throw new RangeError(`poolSize must be an integer from 1 to ${MAX_POOL_SIZE}; got ${poolSize}`);
    this.timeoutMs = timeoutMs;
    this.poolSize = poolSize;
    this.limits = { ...defaultFairShareLimits(poolSize), ...fairShare };
    this.#waiting = new FairShare(this.limits);
    const listener = {
      onIdle: () => this.#dispatch(),
      onJobEnded: (pending: PendingRouting, workerMs: number) => this.#waiting.finished(pending.merchantId, workerMs),
      onReplaced: (merchantId: string, startMs: number) => this.#waiting.charge(merchantId, startMs),
      onStartFailure: (error: Error) => this.#onStartFailure(error),
    };
    // One worker more than may run at once: after a timeout the stuck worker is replaced, and its
    // start (loading and warming cel-js) would otherwise leave the next merchant waiting for it.
    this.#slots = Array.from({ length: poolSize + 1 }, () => new RuleWorkerSlot(timeoutMs, listener));
  }

  /** Worker threads alive or starting (the pool and its spare): 0 before the first job and after close. */
  get workerCount(): number {
    return this.#slots.filter((slot) => slot.started).length;
  }

  /** Jobs waiting for a worker, of every merchant. */
  get queuedJobs(): number {
    return this.#waiting.queued;
  }

  route(merchantId: string, job: RoutingJob): Promise<RoutingDecision> {
    if (this.#closing) return Promise.reject(new Error('the RuleRunner is closed'));
    return new Promise<RoutingDecision>((resolve, reject) => {
      this.#waiting.push(merchantId, { merchantId, job, resolve, reject });
      this.#dispatch();
    });
  }

  /** Stops every worker; jobs still queued or running reject. Safe to call more than once. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    if (this.#eligibleTimer) clearTimeout(this.#eligibleTimer);
    for (const pending of this.#waiting.takeAll()) pending.reject(new Error('the RuleRunner was closed before the job ran'));
    await Promise.all(this.#slots.map((slot) => slot.close()));
  }

  #dispatch(): void {
    if (this.#closing) return;
    let running = this.#slots.filter((slot) => slot.busy).length;
    for (const slot of this.#slots) {
      if (running >= this.poolSize) break;
      if (!slot.idle) continue;
      const next = this.#waiting.next();
      if (!next) break;
      slot.run(next.job);
      running += 1;
    }
    if (this.#waiting.queued === 0) return;
    // Workers start on first demand, so a runner that is never used costs no threads.
    for (const slot of this.#slots) slot.start();
    this.#wakeWhenEligible();
  }

  /**
   * With a worker idle and jobs queued only by merchants out of worker time, nothing else would
   * dispatch again: a timer does, when the first of them has earned some back.
   */
  #wakeWhenEligible(): void {
    if (this.#eligibleTimer || !this.#slots.some((slot) => slot.idle) || this.#slots.filter((slot) => slot.busy).length >= this.poolSize) return;
    const waitMs = this.#waiting.msUntilEligible();
    if (waitMs === undefined) return;
    this.#eligibleTimer = setTimeout(
      () => {
        this.#eligibleTimer = null;
        this.#dispatch();
      },
      Math.max(1, Math.ceil(waitMs)),
    );
  }

  /** Only when no worker is left to take the queue: failing jobs beats retrying a broken start forever. */
  #onStartFailure(error: Error): void {
    if (this.#slots.some((slot) => slot.started)) return;
    for (const pending of this.#waiting.takeAll()) pending.reject(new Error(`the rule worker could not start: ${error.message}`));
  }
}
