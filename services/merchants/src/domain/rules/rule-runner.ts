import { RuleWorkerSlot, type PendingRouting } from './rule-worker-slot.js';
import type { RoutingDecision, RoutingJob } from './types.js';

export interface RuleRunnerOptions {
  /** How long one job may run in its worker before the worker is stopped; 100 ms by default. */
  timeoutMs?: number;
  /** Worker threads routing side by side; 1 by default. */
  poolSize?: number;
}

const MAX_POOL_SIZE = 16;

/**
 * Runs routeThroughRules in worker threads so that no condition can stall routing: a job that
 * does not answer within `timeoutMs` resolves as not routed (`filtered`, with the reason), its
 * worker is replaced, and the jobs behind it still run. Jobs queue and each worker runs one at a
 * time. `route` rejects only when the runner is closed, the job is malformed (it cannot be
 * cloned to the worker, or routeThroughRules throws on it), or no worker can start at all:
 * the caller's or the deployment's faults, never a rule's.
 */
export class RuleRunner {
  readonly timeoutMs: number;
  readonly #slots: RuleWorkerSlot[];
  readonly #queue: PendingRouting[] = [];
  #closing: Promise<void> | null = null;

  constructor({ timeoutMs = 100, poolSize = 1 }: RuleRunnerOptions = {}) {
    if (!Number.isFinite(timeoutMs) || timeoutMs <= 0) throw new RangeError(`timeoutMs must be a positive number of milliseconds; got ${timeoutMs}`);
    if (!Number.isInteger(poolSize) || poolSize < 1 || poolSize > MAX_POOL_SIZE)
      throw new RangeError(`poolSize must be an integer from 1 to ${MAX_POOL_SIZE}; got ${poolSize}`);
    this.timeoutMs = timeoutMs;
    const listener = { onIdle: () => this.#dispatch(), onStartFailure: (error: Error) => this.#onStartFailure(error) };
    this.#slots = Array.from({ length: poolSize }, () => new RuleWorkerSlot(timeoutMs, listener));
  }

  /** Worker threads alive or starting: 0 before the first job and after close. */
  get workerCount(): number {
    return this.#slots.filter((slot) => slot.started).length;
  }

  route(job: RoutingJob): Promise<RoutingDecision> {
    if (this.#closing) return Promise.reject(new Error('the RuleRunner is closed'));
    return new Promise<RoutingDecision>((resolve, reject) => {
      this.#queue.push({ job, resolve, reject });
      this.#dispatch();
    });
  }

  /** Stops every worker; jobs still queued or running reject. Safe to call more than once. */
  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    for (const pending of this.#queue.splice(0)) pending.reject(new Error('the RuleRunner was closed before the job ran'));
    await Promise.all(this.#slots.map((slot) => slot.close()));
  }

  #dispatch(): void {
    if (this.#closing) return;
    while (this.#queue.length > 0) {
      const slot = this.#slots.find((candidate) => candidate.idle);
      if (!slot) break;
      slot.run(this.#queue.shift()!);
    }
    // Workers start on first demand, so a runner that is never used costs no threads.
    if (this.#queue.length > 0) for (const slot of this.#slots) slot.start();
  }

  /** Only when no worker is left to take the queue: failing jobs beats retrying a broken start forever. */
  #onStartFailure(error: Error): void {
    if (this.#slots.some((slot) => slot.started)) return;
    for (const pending of this.#queue.splice(0)) pending.reject(new Error(`the rule worker could not start: ${error.message}`));
  }
}
