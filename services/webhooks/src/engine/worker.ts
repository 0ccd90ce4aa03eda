import { batchPerKey, newId, type Db, type Logger } from '@merx/kit';
import { RequestBodies, signatureHeaders } from '../delivery/signing.js';
import type { WebhookSender } from '../delivery/sender.js';
import { isSlowAttempt } from '../domain/lanes.js';
import { decideAfterAttempt, type SendResult } from '../domain/outcome.js';
import type { RetryPolicy } from '../domain/retry.js';
import { signingSecrets } from '../domain/subscription.js';
import { claimDueDeliveries, endpointKey, OpenedSecrets, type AnsweredAwaitingRecord, type ClaimedDelivery } from '../store/claims-store.js';
import { beatWorker, releaseClaimsOfDeadWorkers, retireWorker } from '../store/work-queue-store.js';
import type { FinishedAttempt } from '../usecases/outcomes.js';
import { webhookAttemptDuration, webhookAttempts, webhookInFlight } from './metrics.js';

export interface DeliveryWorkerOptions {
  db: Db;
  logger: Logger;
  sender: WebhookSender;
  /** Writes finished attempts and what they imply (alerts, disabled endpoints). */
  recordFinishedAttempts(workerId: string, attempts: FinishedAttempt[], now: Date): Promise<void>;
  retryPolicy: RetryPolicy;
  /** Requests in flight in this worker, both lanes together. */
  concurrency: number;
  /** Of those, how many may be to endpoints in the slow lane (all when absent). */
  slowConcurrency?: number;
  maxInFlightPerEndpoint: number;
  /** Per merchant across all workers, in the fast lane and in the slow lane (no cap when absent). */
  maxInFlightPerMerchant?: number;
  slowMaxInFlightPerMerchant?: number;
  /** An attempt that takes this long (or times out) moves its endpoint to the slow lane (timeouts only when absent). */
  slowAfterMs?: number;
  staleAfterMs: number;
  secretOverlapMs?: number;
  /** How often an idle worker looks for deliveries that became due (retries); new ones wake it at once. */
  pollIntervalMs?: number;
  now?: () => Date;
  workerId?: string;
}

const MAX_CLAIM = 500;
/**
 * How long a finished attempt may wait to be written with others. A busy endpoint's answers come
 * one by one; written as soon as the last write ended, they went about five to a transaction
 * and the deliveries of one endpoint cost a third of a commit each. The slot is free at the
 * answer (answeredAwaitingRecord), so the wait costs the endpoint no throughput.
 */
const RECORD_GATHER_MS = 5;

/**
 * Sends due deliveries. Any number of workers (threads of one process, replicas) share the
 * queue in PostgreSQL: claims are row updates under SKIP LOCKED locks, so no delivery is sent by
 * two workers at once; a heartbeat tells the others which claims are still looked after, so a
 * killed worker's deliveries are retried, never lost.
 */
export class DeliveryWorker {
  readonly id: string;
  private running = false;
  private loop: Promise<void> | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private inFlight = 0;
  private slowInFlight = 0;
  private readonly sends = new Set<Promise<void>>();
  private readonly answeredAwaitingRecord = new AnsweredClaims();
  private wakeUp: (() => void) | undefined;
  private pendingWake = false;
  private readonly record: (key: string, attempt: FinishedAttempt) => Promise<void>;
  private readonly bodies = new RequestBodies();
  private readonly secrets = new OpenedSecrets();
  private readonly now: () => Date;

  constructor(private readonly options: DeliveryWorkerOptions) {
    this.id = options.workerId ?? newId('wkr');
    this.now = options.now ?? (() => new Date());
    // Attempts finishing together are written together: one transaction for many deliveries.
    this.record = batchPerKey<FinishedAttempt>((_key, attempts) => options.recordFinishedAttempts(this.id, attempts, this.now()), {
      maxBatch: 500,
      gatherMs: RECORD_GATHER_MS,
    });
  }

  async start(): Promise<void> {
    if (this.running) return;
    await beatWorker(this.options.db, this.id, this.now());
    // A previous incarnation's claims (a crash, a restart) are released before any new work.
    await this.releaseOrphanedClaims();
    this.running = true;
    const beatEvery = Math.max(100, Math.floor(this.options.staleAfterMs / 3));
    this.heartbeat = setInterval(() => void this.beat(), beatEvery);
    this.heartbeat.unref();
    this.loop = this.run();
  }

  /** A delivery became due (fan-out, a replay, a finished attempt freed a slot): look now. */
  wake(): void {
    this.pendingWake = true;
    this.wakeUp?.();
  }

  /** Stops claiming, lets the attempts under way finish and be recorded, then leaves. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    this.wake();
    await this.loop;
    await Promise.allSettled([...this.sends]);
    clearInterval(this.heartbeat);
    await retireWorker(this.options.db, this.id).catch((error) => this.options.logger.warn({ err: error }, 'could not retire the webhook worker'));
  }

  get deliveriesInFlight(): number {
    return this.inFlight;
  }

  private async beat(): Promise<void> {
    try {
      await beatWorker(this.options.db, this.id, this.now());
      await this.releaseOrphanedClaims();
    } catch (error) {
      this.options.logger.warn({ err: error }, 'webhook worker heartbeat failed; will retry');
    }
  }

  private async releaseOrphanedClaims(): Promise<void> {
    const now = this.now();
    const released = await this.options.db.transaction((tx) => releaseClaimsOfDeadWorkers(tx, new Date(now.getTime() - this.options.staleAfterMs), now));
    if (released.length > 0) {
      this.options.logger.warn({ count: released.length }, 'released deliveries claimed by a worker that stopped; they are retried');
      this.wake();
    }
  }

  private async run(): Promise<void> {
    const pollIntervalMs = this.options.pollIntervalMs ?? 250;
    while (this.running) {
      this.pendingWake = false;
      const free = this.options.concurrency - this.inFlight;
      const slowFree = (this.options.slowConcurrency ?? this.options.concurrency) - this.slowInFlight;
      let claimed: ClaimedDelivery[] = [];
      let moreMayBeDue = false;
      if (free > 0) {
        try {
          ({ deliveries: claimed, moreMayBeDue } = await this.options.db.transaction((tx) =>
            claimDueDeliveries(
              tx,
              this.id,
              {
                budget: Math.min(free, MAX_CLAIM),
                slowBudget: Math.max(0, Math.min(free, slowFree, MAX_CLAIM)),
                maxInFlightPerEndpoint: this.options.maxInFlightPerEndpoint,
                ...(this.options.maxInFlightPerMerchant ? { maxInFlightPerMerchant: this.options.maxInFlightPerMerchant } : {}),
                ...(this.options.slowMaxInFlightPerMerchant ? { slowMaxInFlightPerMerchant: this.options.slowMaxInFlightPerMerchant } : {}),
                answeredAwaitingRecord: this.answeredAwaitingRecord,
              },
              this.now(),
              this.secrets,
            ),
          ));
        } catch (error) {
          this.options.logger.warn({ err: error }, 'could not claim webhook deliveries; will retry');
          await this.sleep(pollIntervalMs);
          continue;
        }
        for (const delivery of claimed) this.startSending(delivery);
      }
      if (!this.running) break;
      // Claim again at once only if that could find more; when every endpoint with due work is
      // at its cap, wait for a wake (an answered request, new work) or the poll instead of
      // spending a transaction to learn nothing.
      if (moreMayBeDue && claimed.length < free) continue;
      if (!this.pendingWake) await this.sleep(pollIntervalMs);
    }
  }

  private startSending(delivery: ClaimedDelivery): void {
    this.inFlight += 1;
    if (delivery.slow) this.slowInFlight += 1;
    webhookInFlight.inc({ lane: laneOf(delivery) });
    const send = this.send(delivery)
      .catch((error) =>
        this.options.logger.error(
          { err: error, delivery_id: delivery.id },
          'webhook attempt could not be recorded; its claim is released when this worker stops',
        ),
      )
      .finally(() => {
        this.inFlight -= 1;
        if (delivery.slow) this.slowInFlight -= 1;
        webhookInFlight.dec({ lane: laneOf(delivery) });
        this.sends.delete(send);
        this.wake();
      });
    this.sends.add(send);
  }

  private async send(delivery: ClaimedDelivery): Promise<void> {
    const startedAt = this.now();
    const body = this.bodies.of(delivery.format, delivery.payloadText)(delivery.secret);
    const headers = signatureHeaders({
      messageId: delivery.eventId,
      timestampSeconds: Math.floor(startedAt.getTime() / 1000),
      body,
      secrets: signingSecrets(delivery, startedAt),
    });
    const result = await this.options.sender.send({ url: delivery.url, headers: { ...headers }, body });
    const finishedAt = this.now();
    // Answered: the endpoint has a free slot now, though the claim lasts until the outcome is written.
    this.answeredAwaitingRecord.add(delivery);
    this.wake();
    try {
      await this.recordOutcome(delivery, result, startedAt, finishedAt);
    } finally {
      this.answeredAwaitingRecord.remove(delivery);
    }
  }

  private async recordOutcome(delivery: ClaimedDelivery, result: SendResult, startedAt: Date, finishedAt: Date): Promise<void> {
    const decision = decideAfterAttempt(delivery, result, startedAt, finishedAt, this.options.retryPolicy);
    webhookAttemptDuration.observe(result.durationMs / 1000);
    webhookAttempts.inc({
      outcome: decision.status === 'succeeded' ? 'succeeded' : decision.status === 'dead' ? 'dead' : 'failed',
      error: result.error ?? 'none',
    });
    const attempt: FinishedAttempt = {
      merchantId: delivery.merchantId,
      deliveryId: delivery.id,
      endpointKind: delivery.endpointKind,
      endpointId: delivery.endpointId,
      topic: delivery.topic,
      eventId: delivery.eventId,
      number: decision.number,
      startedAt,
      statusCode: result.statusCode,
      durationMs: result.durationMs,
      error: result.error,
      errorMessage: result.errorMessage,
      responseExcerpt: result.responseExcerpt,
      status: decision.status,
      nextAttemptAt: decision.nextAttemptAt,
      firstAttemptAt: decision.firstAttemptAt,
      endpointGone: decision.endpointGone,
      movesEndpointTo: this.laneAfter(delivery, result),
    };
    // The outcome is only in memory until written: keep trying while the database is away.
    for (let pause = 100; ; pause = Math.min(pause * 2, 5_000)) {
      try {
        await this.record('attempts', attempt);
        return;
      } catch (error) {
        if (!this.running) throw error;
        this.options.logger.warn({ err: error, delivery_id: delivery.id }, 'could not record a webhook attempt; retrying');
        await new Promise((resolve) => setTimeout(resolve, pause));
      }
    }
  }

  /** The lane the attempt moves its endpoint to, when it is not the one the delivery was claimed in. */
  private laneAfter(delivery: ClaimedDelivery, result: SendResult): 'fast' | 'slow' | null {
    const slow = isSlowAttempt(result, this.options.slowAfterMs ?? Infinity);
    return slow === delivery.slow ? null : slow ? 'slow' : 'fast';
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wakeUp = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      this.wakeUp = done;
    });
  }
}

const laneOf = (delivery: ClaimedDelivery) => (delivery.slow ? 'slow' : 'fast');

/** This worker's answered claims whose outcome waits to be written, by endpoint and by merchant and lane. */
class AnsweredClaims implements AnsweredAwaitingRecord {
  private readonly counts = new Map<string, number>();

  add(delivery: ClaimedDelivery): void {
    for (const key of AnsweredClaims.keysOf(delivery)) this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  remove(delivery: ClaimedDelivery): void {
    for (const key of AnsweredClaims.keysOf(delivery)) {
      const left = this.counts.get(key)! - 1;
      if (left > 0) this.counts.set(key, left);
      else this.counts.delete(key);
    }
  }

  ofEndpoint(merchantId: string, endpointId: string): number {
    return this.counts.get(endpointKey(merchantId, endpointId)) ?? 0;
  }

  ofMerchant(merchantId: string, slow: boolean): number {
    return this.counts.get(`${merchantId} ${slow ? 'slow' : 'fast'}`) ?? 0;
  }

  private static keysOf(delivery: ClaimedDelivery): string[] {
    return [endpointKey(delivery.merchantId, delivery.endpointId), `${delivery.merchantId} ${laneOf(delivery)}`];
  }
}
