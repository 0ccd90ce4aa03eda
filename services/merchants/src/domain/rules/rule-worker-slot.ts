import { Worker } from 'node:worker_threads';
import type { RoutingDecision, RoutingJob } from './types.js';
import type { RoutingRequest, RuleWorkerReply } from './worker-protocol.js';

export interface PendingRouting {
  /** Whose share of worker time the job uses. */
  merchantId: string;
  job: RoutingJob;
  resolve(decision: RoutingDecision): void;
  reject(error: Error): void;
}

export interface SlotListener {
  /** The slot's worker is ready and has no job. */
  onIdle(): void;
  /** A job left its worker (answered, timed out or crashed it) after using `workerMs` of its time; before it settles. */
  onJobEnded(pending: PendingRouting, workerMs: number): void;
  /** The worker a job of `merchantId` cost (it timed out or crashed) took `startMs` to replace. */
  onReplaced(merchantId: string, startMs: number): void;
  /** The worker died before it was ready; the slot stays stopped until started again. */
  onStartFailure(error: Error): void;
}

/** Resolved next to this file, so it finds dist/src/domain/rules/rule-worker.js once compiled. */
const WORKER_URL = new URL('./rule-worker.js', import.meta.url);

/**
 * Ample for a 64 KiB record and its copies; a condition that builds huge lists (`map` inside
 * `map`) runs out here, in its own thread, instead of growing the service's heap.
 */
const WORKER_RESOURCE_LIMITS = { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16, stackSizeMb: 4 };

export function notRoutedDecision(reason: string): RoutingDecision {
  return { outcome: 'filtered', ruleId: null, reason };
}

/**
 * One worker thread and the job it runs. Terminating the thread is the only way to stop a
 * synchronous evaluation, so a job past its deadline costs the worker, and a fresh one starts.
 */
export class RuleWorkerSlot {
  #worker: Worker | null = null;
  #ready = false;
  #running: { id: number; pending: PendingRouting; timer: NodeJS.Timeout; startedAt: number } | null = null;
  #nextId = 1;
  #closed = false;
  /** While the worker replaces one a job cost: whose job, and since when. */
  #replacing: { merchantId: string; since: number } | null = null;

  constructor(
    private readonly timeoutMs: number,
    private readonly listener: SlotListener,
  ) {}

  get started(): boolean {
    return this.#worker !== null;
  }

  /** Running a job now. */
  get busy(): boolean {
    return this.#running !== null;
  }

  get idle(): boolean {
    return this.#worker !== null && this.#ready && this.#running === null;
  }

  start(): void {
    if (this.#worker || this.#closed) return;
    const worker = new Worker(WORKER_URL, { resourceLimits: WORKER_RESOURCE_LIMITS });
    this.#worker = worker;
    this.#ready = false;
    // Events of a worker already replaced are stale and ignored.
    worker.on('message', (reply: RuleWorkerReply) => {
      if (worker === this.#worker) this.#onReply(reply);
    });
    worker.on('error', (error: Error) => {
      if (worker === this.#worker) this.#onCrash(error);
    });
    worker.on('exit', (code: number) => {
      if (worker === this.#worker) this.#onCrash(new Error(`the rule worker exited with code ${code}`));
    });
  }

  /** The deadline starts now, when the job reaches a ready worker, not when it was queued. */
  run(pending: PendingRouting): void {
    const worker = this.#worker;
    if (!worker || !this.idle) throw new Error('RuleWorkerSlot.run needs an idle slot');
    const id = this.#nextId++;
    try {
      worker.postMessage({ id, job: pending.job } satisfies RoutingRequest);
    } catch (error) {
      this.listener.onJobEnded(pending, 0);
      pending.reject(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    this.#running = { id, pending, timer: setTimeout(() => this.#onTimeout(), this.timeoutMs), startedAt: performance.now() };
    worker.ref();
  }

  async close(): Promise<void> {
    this.#closed = true;
    const running = this.#takeRunning();
    running?.pending.reject(new Error('the RuleRunner was closed before the job finished'));
    const worker = this.#worker;
    this.#worker = null;
    if (worker) await worker.terminate();
  }

  #takeRunning(): { pending: PendingRouting; startedAt: number } | null {
    const running = this.#running;
    if (running) clearTimeout(running.timer);
    this.#running = null;
    return running;
  }

  #onReply(reply: RuleWorkerReply): void {
    if (reply.kind === 'ready') {
      this.#ready = true;
      const replaced = this.#replacing;
      this.#replacing = null;
      if (replaced) this.listener.onReplaced(replaced.merchantId, performance.now() - replaced.since);
      // An idle worker must not keep the process alive; a busy one does, until it answers.
      this.#worker?.unref();
      this.listener.onIdle();
      return;
    }
    if (this.#running?.id !== reply.id) return;
    const { pending } = this.#takeRunning()!;
    this.#worker?.unref();
    this.listener.onJobEnded(pending, reply.workerMs);
    if (reply.kind === 'decision') pending.resolve(reply.decision);
    else pending.reject(new Error(`routing failed in the rule worker: ${reply.message}`));
    this.listener.onIdle();
  }

  #onTimeout(): void {
    const running = this.#takeRunning();
    if (!running) return;
    this.#replaceWorker(running.pending.merchantId);
    this.listener.onJobEnded(running.pending, this.timeoutMs);
    running.pending.resolve(notRoutedDecision(`rule evaluation exceeded ${this.timeoutMs} ms; the record was not routed`));
  }

  /** A crash while running (out of memory, most likely) is the job's doing; before ready it is the deployment's. */
  #onCrash(error: Error): void {
    const running = this.#takeRunning();
    if (!this.#ready) {
      this.#discardWorker();
      this.listener.onStartFailure(error);
      return;
    }
    this.#replaceWorker(running?.pending.merchantId);
    if (running) this.listener.onJobEnded(running.pending, performance.now() - running.startedAt);
    running?.pending.resolve(notRoutedDecision(`rule evaluation failed (${error.message}); the record was not routed`));
  }

  #discardWorker(): void {
    const worker = this.#worker;
    this.#worker = null;
    this.#ready = false;
    void worker?.terminate();
  }

  /** Starting a worker costs a core for a while (loading and warming cel-js): the merchant whose job made it necessary pays for it. */
  #replaceWorker(costOf?: string): void {
    this.#discardWorker();
    this.#replacing = costOf === undefined ? null : { merchantId: costOf, since: performance.now() };
    this.start();
  }
}
