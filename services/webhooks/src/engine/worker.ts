import { batchPerKey, newId, type Db, type Logger } from '@merx/kit';
import { RequestBodies, signatureHeaders } from '../delivery/signing.js';
import type { WebhookSender } from '../delivery/sender.js';
import { decideAfterAttempt, type SendResult } from '../domain/outcome.js';
import type { RetryPolicy } from '../domain/retry.js';
import { signingSecrets } from '../domain/subscription.js';
import {
  beatWorker,
  claimDueDeliveries,
  endpointKey,
  OpenedSecrets,
  releaseClaimsOfDeadWorkers,
  retireWorker,
  type ClaimedDelivery,
} from '../store/work-queue-store.js';
import type { FinishedAttempt } from '../usecases/outcomes.js';
import { webhookAttemptDuration, webhookAttempts, webhookInFlight } from './metrics.js';

export interface DeliveryWorkerOptions {
  db: Db;
  logger: Logger;
  sender: WebhookSender;
  /** Writes finished attempts and what they imply (alerts, disabled endpoints). */
  recordFinishedAttempts(workerId: string, attempts: FinishedAttempt[], now: Date): Promise<void>;
  retryPolicy: RetryPolicy;
  concurrency: number;
  maxInFlightPerEndpoint: number;
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
  private readonly sends = new Set<Promise<void>>();
  private readonly answeredAwaitingRecord = new Map<string, number>();
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
                maxInFlightPerEndpoint: this.options.maxInFlightPerEndpoint,
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
    webhookInFlight.inc();
    const send = this.send(delivery)
      .catch((error) =>
        this.options.logger.error(
          { err: error, delivery_id: delivery.id },
          'webhook attempt could not be recorded; its claim is released when this worker stops',
        ),
      )
      .finally(() => {
        this.inFlight -= 1;
        webhookInFlight.dec();
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
    const key = endpointKey(delivery.merchantId, delivery.endpointId);
    this.answeredAwaitingRecord.set(key, (this.answeredAwaitingRecord.get(key) ?? 0) + 1);
    this.wake();
    try {
      await this.recordOutcome(delivery, result, startedAt, finishedAt);
    } finally {
      const left = this.answeredAwaitingRecord.get(key)! - 1;
      if (left > 0) this.answeredAwaitingRecord.set(key, left);
      else this.answeredAwaitingRecord.delete(key);
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
