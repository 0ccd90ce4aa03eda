import { randomUUID } from 'node:crypto';
import { batchPerKey, trustedMerchantId, type Db, type Logger, type MerxEvent } from '@merx/kit';
import { recordEventWithoutData, withRecordData } from '../domain/record.js';
import {
  claimParkedEventsForMerchant,
  merchantsWithUnclaimedBacklog,
  parkEventsForMerchant,
  releaseFailedClaimsForMerchant,
  renewClaimsForMerchants,
} from '../store/routing-backlog-store.js';

/** Routes one merchant's record events and commits, deleting in the same transaction the backlog rows of `parked` (their event ids). */
export type RouteRecordEvents = (merchantId: string, events: MerxEvent[], parked: string[]) => Promise<void>;

export interface RoutingQueueOptions {
  db: Db;
  logger: Logger;
  route: RouteRecordEvents;
  /** Record events one merchant may have in this process at once, waiting for or in routing; beyond that they are parked. */
  maxPendingPerMerchant: number;
  /** How often to look for parked events nobody holds (another replica's, or this one's before a restart) and renew this one's claims. */
  pollMs?: number;
  /** How long a claim on parked events lasts without renewal: a dead replica's pass to the others after this. */
  leaseMs?: number;
  now?: () => Date;
}

interface Admitted {
  event: MerxEvent;
  /** Came from the backlog: its row goes when its routing commits. */
  parked: boolean;
  /** False for a parked event whose record is gone: only its row goes. */
  routable: boolean;
}

interface MerchantLoad {
  /** Events admitted to routing here and not yet committed. */
  pending: number;
  /** Park transactions under way: until they commit, the backlog may look empty when it is not. */
  parking: number;
  /** Park transactions committed so far: one that commits during a claim may hold rows the claim could not see. */
  parked: number;
  /** Has (or may have) parked events: new ones park behind them, so a merchant's events keep their order. */
  backlogged: boolean;
  draining: boolean;
  /** Holds claims on parked events, to renew while they are routed. */
  claims: number;
}

/**
 * Admission of record events to routing, fair by merchant. The bus hands the merchants service
 * its deliveries through one prefetch window that every merchant shares, and a delivery is acked
 * only once its routing commits; a merchant whose rules are slow would otherwise fill the window
 * and keep everyone else's events at the broker. So each merchant may have at most
 * `maxPendingPerMerchant` events here at once; the rest are parked in the routing backlog (a
 * table: acked, durable) and routed from there, oldest first, as the merchant's own earlier
 * events finish. What a merchant over its bound sends waits behind its own work only.
 *
 * Every replica serves the backlog: parked events are claimed a few at a time by lease, renewed
 * while this process routes them; a replica that dies leaves its claims to run out, and a poll
 * finds them again. A parked event is deleted in the transaction that records its routing; one
 * whose routing fails goes back with a growing delay. Nothing accepted is dropped: an event is
 * acked off the bus only once it is routed or parked.
 */
export class RoutingQueue {
  readonly #options: Required<Omit<RoutingQueueOptions, 'now'>> & { now: () => Date };
  readonly #claimant = `routing-${randomUUID()}`;
  readonly #merchants = new Map<string, MerchantLoad>();
  readonly #routeBatch: (merchantId: string, item: Admitted) => Promise<void>;
  readonly #parkBatch: (merchantId: string, parked: { event: MerxEvent; recordId: string }) => Promise<void>;
  #poll: NodeJS.Timeout | undefined;
  #polling: Promise<void> | undefined;
  #stopped = false;

  constructor(options: RoutingQueueOptions) {
    this.#options = { pollMs: 2_000, leaseMs: 30_000, now: () => new Date(), ...options };
    const { db, route, maxPendingPerMerchant } = this.#options;
    // Events of one merchant that arrive together are routed, and parked, together.
    this.#routeBatch = batchPerKey<Admitted>(
      (merchantId, items) =>
        route(
          merchantId,
          items.filter((item) => item.routable).map((item) => item.event),
          items.filter((item) => item.parked).map((item) => item.event.id),
        ),
      { maxBatch: maxPendingPerMerchant },
    );
    this.#parkBatch = batchPerKey<{ event: MerxEvent; recordId: string }>(
      (merchantId, parked) =>
        db.transaction((tx) =>
          parkEventsForMerchant(
            tx,
            trustedMerchantId(merchantId),
            parked.map(({ event, recordId }) => ({ eventId: event.id, recordId, json: JSON.stringify(event) })),
          ),
        ),
      { maxBatch: 500 },
    );
  }

  /** Looks for parked events at once (what a previous run left) and then every `pollMs`. */
  start(): void {
    const tick = () => {
      this.#polling = this.#lookAfterBacklog().finally(() => {
        this.#polling = undefined;
        if (!this.#stopped) this.#poll = setTimeout(tick, this.#options.pollMs);
      });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#poll);
    await this.#polling;
  }

  /** Events of the merchant in this process, waiting for routing or being routed (parked ones not counted). */
  pendingOf(merchantId: string): number {
    return this.#merchants.get(merchantId)?.pending ?? 0;
  }

  /**
   * Resolves once the event is routed and committed, or parked: either way the bus may ack it.
   * Rejects when neither could be written (the bus redelivers it).
   */
  async submit(event: MerxEvent): Promise<void> {
    const merchantId = event.merchant_id;
    const load = this.#loadOf(merchantId);
    const parkable = recordEventWithoutData(event);
    if (parkable && (load.backlogged || load.pending >= this.#options.maxPendingPerMerchant)) {
      load.backlogged = true;
      load.parking += 1;
      try {
        await this.#parkBatch(merchantId, parkable);
        load.parked += 1;
      } finally {
        load.parking -= 1;
        this.#settle(merchantId, load);
      }
      void this.#drain(merchantId);
      return;
    }
    load.pending += 1;
    try {
      await this.#routeBatch(merchantId, { event, parked: false, routable: true });
    } finally {
      load.pending -= 1;
      this.#afterRouting(merchantId, load);
    }
  }

  #loadOf(merchantId: string): MerchantLoad {
    let load = this.#merchants.get(merchantId);
    if (!load) {
      load = { pending: 0, parking: 0, parked: 0, backlogged: false, draining: false, claims: 0 };
      this.#merchants.set(merchantId, load);
    }
    return load;
  }

  /** A merchant with nothing under way and no backlog is forgotten, so the map holds only busy merchants. */
  #settle(merchantId: string, load: MerchantLoad): void {
    if (load.pending === 0 && load.parking === 0 && !load.backlogged && !load.draining && load.claims === 0) this.#merchants.delete(merchantId);
  }

  #afterRouting(merchantId: string, load: MerchantLoad): void {
    if (load.backlogged) void this.#drain(merchantId);
    else this.#settle(merchantId, load);
  }

  /**
   * Feeds the merchant's parked events to routing while it has room for at least half its bound
   * (claiming a handful at a time would cost a transaction each), until the backlog is empty.
   */
  async #drain(merchantId: string): Promise<void> {
    const load = this.#loadOf(merchantId);
    if (load.draining || this.#stopped) return;
    load.draining = true;
    const { db, logger, maxPendingPerMerchant, leaseMs, now } = this.#options;
    try {
      while (load.backlogged && !this.#stopped) {
        const room = maxPendingPerMerchant - load.pending;
        if (room < Math.ceil(maxPendingPerMerchant / 2)) break;
        const at = now();
        const parkedBefore = load.parked;
        const claimed = await db.transaction((tx) =>
          claimParkedEventsForMerchant(tx, trustedMerchantId(merchantId), {
            claimant: this.#claimant,
            limit: room,
            until: new Date(at.getTime() + leaseMs),
            now: at,
          }),
        );
        if (claimed.length === 0) {
          if (load.parked !== parkedBefore) continue;
          // Parked rows still being written, or held by another replica, come back through the poll.
          if (load.parking === 0) load.backlogged = false;
          break;
        }
        for (const parked of claimed) {
          const event = JSON.parse(parked.json) as MerxEvent;
          // A record that is gone has nothing left to route; its row still goes with an (empty) routing.
          this.#routeParked(merchantId, load, parked.recordData ? withRecordData(event, parked.recordData) : event, parked.recordData !== null);
        }
      }
    } catch (error) {
      logger.warn({ err: error, merchant_id: merchantId }, 'could not claim parked record events; the next poll tries again');
    } finally {
      load.draining = false;
      this.#settle(merchantId, load);
    }
  }

  #routeParked(merchantId: string, load: MerchantLoad, event: MerxEvent, routable: boolean): void {
    load.pending += 1;
    load.claims += 1;
    const { db, logger, now } = this.#options;
    this.#routeBatch(merchantId, { event, parked: true, routable })
      .catch(async (error: unknown) => {
        logger.error({ err: error, merchant_id: merchantId, event_id: event.id }, 'routing a parked record event failed; it goes back to the backlog');
        await releaseFailedClaimsForMerchant(db, trustedMerchantId(merchantId), [event.id], now()).catch(() => undefined);
      })
      .finally(() => {
        load.pending -= 1;
        load.claims -= 1;
        this.#afterRouting(merchantId, load);
      });
  }

  /** Renews this process's claims, and finds merchants whose parked events nobody holds. */
  async #lookAfterBacklog(): Promise<void> {
    const { db, logger, leaseMs, now } = this.#options;
    try {
      const holding = [...this.#merchants].filter(([, load]) => load.claims > 0).map(([merchantId]) => merchantId);
      const at = now();
      await renewClaimsForMerchants(db, holding, this.#claimant, new Date(at.getTime() + leaseMs));
      for (const merchantId of await merchantsWithUnclaimedBacklog(db, at, 1_000)) {
        this.#loadOf(merchantId).backlogged = true;
        void this.#drain(merchantId);
      }
    } catch (error) {
      logger.warn({ err: error }, 'could not look after the routing backlog; will retry');
    }
  }
}
