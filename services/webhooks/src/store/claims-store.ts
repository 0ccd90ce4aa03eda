import { openOptionalSecret, openSecret, type Queryable } from '@merx/kit';
import { LRUCache } from 'lru-cache';
import type { DeliveryFormat, EndpointKind } from '../domain/endpoint.js';
import { shareClaimBudget, type PerLane } from '../domain/lanes.js';
import { CLAIMS, ENDPOINTS, QUEUE } from './endpoints-store.js';
import { WEBHOOKS_SCHEMA } from './migrations.js';

/**
 * How a worker takes due deliveries: fairly between merchants and endpoints, within the caps on
 * requests in flight per endpoint and per merchant in each lane, which hold across every worker.
 */
const DELIVERIES = `${WEBHOOKS_SCHEMA}.deliveries`;

/** A claimed delivery with what sending it needs. */
export interface ClaimedDelivery {
  merchantId: string;
  id: string;
  eventId: string;
  topic: string;
  endpointKind: EndpointKind;
  endpointId: string;
  /** The endpoint was in the slow lane when claimed; the claim counts against that lane's caps. */
  slow: boolean;
  attemptCount: number;
  firstAttemptAt: Date | null;
  claimedAt: Date;
  payloadText: string;
  format: DeliveryFormat;
  url: string;
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: Date | null;
}

interface ClaimRow {
  merchant_id: string;
  id: string;
  event_id: string;
  topic: string;
  endpoint_kind: EndpointKind;
  endpoint_id: string;
  slow: boolean;
  attempt_count: number;
  first_attempt_at: Date | null;
  claimed_at: Date;
  payload: string;
  format: DeliveryFormat;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_expires_at: Date | null;
}

/**
 * This worker's claims whose request has already been answered and whose outcome waits to be
 * written: still claimed in the table, no longer on the wire, so they do not count against caps.
 */
export interface AnsweredAwaitingRecord {
  ofEndpoint(merchantId: string, endpointId: string): number;
  ofMerchant(merchantId: string, slow: boolean): number;
}

export interface ClaimLimits {
  /** How many deliveries this worker can take now. */
  budget: number;
  /** Of those, how many may go to endpoints in the slow lane (all of them when absent). */
  slowBudget?: number;
  /** Attempts in flight to one endpoint at once, across all workers. */
  maxInFlightPerEndpoint: number;
  /** Attempts in flight to one merchant's fast endpoints at once, across all workers (no cap when absent). */
  maxInFlightPerMerchant?: number;
  /** Attempts in flight to one merchant's slow endpoints at once, across all workers (no cap when absent). */
  slowMaxInFlightPerMerchant?: number;
  /** How many merchants one claim serves. */
  merchantsPerClaim?: number;
  /** How many endpoints one claim looks at. */
  endpointsPerClaim?: number;
  answeredAwaitingRecord?: AnsweredAwaitingRecord;
}

/** The key of an endpoint among a worker's answered claims. */
export const endpointKey = (merchantId: string, endpointId: string) => `${merchantId}/${endpointId}`;

export interface ClaimResult {
  deliveries: ClaimedDelivery[];
  /**
   * Whether claiming again at once could find more: something was taken, and the budget ran out
   * or more merchants or endpoints were due than one claim looks at. Otherwise everything due is
   * at a cap, and the next claim should wait until a request is answered.
   */
  moreMayBeDue: boolean;
}

/** A cap the database compares with a count: "none" is the largest integer. */
const asCap = (cap: number | undefined) => (cap === undefined || cap > 2_147_483_647 ? 2_147_483_647 : cap);

interface LockedEndpoint {
  merchant_id: string;
  id: string;
  turn: number;
  last_served_at: Date | null;
  slow: boolean;
  due_merchants: number;
}

/**
 * Takes due deliveries for one worker, fairly. Merchants with due work and room in its lane are
 * served least recently served first; within them endpoints are visited round robin, each
 * merchant's first endpoint before anyone's second, so a merchant with a million deliveries or
 * many endpoints cannot crowd out the rest. A merchant's claims are made by one worker at a time
 * (a transaction-scoped advisory lock, skipped by the others rather than waited for) and its
 * endpoints are row-locked (SKIP LOCKED), so the caps per endpoint and per merchant hold across
 * replicas: the requests in flight are counted after the locks are taken. Must run in a transaction.
 */
export async function claimDueDeliveries(
  tx: Queryable,
  workerId: string,
  limits: ClaimLimits,
  now: Date,
  secrets: OpenedSecrets = new OpenedSecrets(),
): Promise<ClaimResult> {
  const merchantsPerClaim = limits.merchantsPerClaim ?? 64;
  const endpointsPerClaim = limits.endpointsPerClaim ?? 64;
  const slowBudget = Math.min(limits.slowBudget ?? limits.budget, limits.budget);
  const fastCap = asCap(limits.maxInFlightPerMerchant);
  // A worker with no room for slow requests does not pick merchants for their slow endpoints.
  const slowCap = slowBudget > 0 ? asCap(limits.slowMaxInFlightPerMerchant) : 0;
  const locked = await lockMerchantsAndEndpoints(tx, { now, merchantsPerClaim, endpointsPerClaim, fastCap, slowCap });
  if (locked.length === 0) return { deliveries: [], moreMayBeDue: false };
  locked.sort((a, b) => a.turn - b.turn || (a.last_served_at?.getTime() ?? -Infinity) - (b.last_served_at?.getTime() ?? -Infinity));

  const merchants = [...new Set(locked.map((endpoint) => endpoint.merchant_id))];
  const inFlight = await countInFlight(tx, merchants);
  const answered = limits.answeredAwaitingRecord;
  const onTheWire = (merchantId: string, endpointId: string) =>
    (inFlight.perEndpoint.get(endpointKey(merchantId, endpointId)) ?? 0) - (answered?.ofEndpoint(merchantId, endpointId) ?? 0);
  const merchantRoom = new Map<string, PerLane>(
    merchants.map((merchantId) => {
      const held = inFlight.perMerchant.get(merchantId) ?? { fast: 0, slow: 0 };
      return [
        merchantId,
        {
          fast: fastCap - (held.fast - (answered?.ofMerchant(merchantId, false) ?? 0)),
          slow: slowCap - (held.slow - (answered?.ofMerchant(merchantId, true) ?? 0)),
        },
      ];
    }),
  );
  const take = shareClaimBudget(
    locked.map((endpoint) => ({
      merchantId: endpoint.merchant_id,
      slow: endpoint.slow,
      room: Math.max(0, limits.maxInFlightPerEndpoint - onTheWire(endpoint.merchant_id, endpoint.id)),
    })),
    { total: limits.budget, slow: slowBudget, merchantRoom },
  );
  const taken = take.reduce((sum, count) => sum + count, 0);
  // Everything looked at is at a cap: nothing to claim, nothing to write, and nothing more to look
  // for until a request is answered (claiming again at once would find the same).
  if (taken === 0) return { deliveries: [], moreMayBeDue: false };
  const moreMayBeDue = taken === limits.budget || locked[0]!.due_merchants >= merchantsPerClaim || locked.length === endpointsPerClaim;
  const rows = await claimFromEndpoints(tx, workerId, locked, take, now);
  const deliveries = rows.map((row) => {
    const { secret, previousSecret } = secrets.of(row);
    return {
      merchantId: row.merchant_id,
      id: row.id,
      eventId: row.event_id,
      topic: row.topic,
      endpointKind: row.endpoint_kind,
      endpointId: row.endpoint_id,
      slow: row.slow,
      attemptCount: Number(row.attempt_count),
      firstAttemptAt: row.first_attempt_at,
      claimedAt: row.claimed_at,
      payloadText: row.payload,
      format: row.format,
      url: row.url,
      secret,
      previousSecret,
      previousSecretExpiresAt: row.previous_secret_expires_at,
    };
  });
  return { deliveries, moreMayBeDue };
}

/**
 * One statement: the merchants whose turn it is (due work in a lane with room, least recently
 * served first), each locked for this claim unless another worker is claiming for it now, and
 * those merchants' due endpoints in fairness order, row-locked unless someone else holds them.
 * The counts that pick merchants are read before the locks and only sort out who cannot take
 * anything; the caps are checked against counts read after them (countInFlight).
 */
async function lockMerchantsAndEndpoints(
  tx: Queryable,
  params: { now: Date; merchantsPerClaim: number; endpointsPerClaim: number; fastCap: number; slowCap: number },
): Promise<LockedEndpoint[]> {
  const { rows } = await tx.query<LockedEndpoint>(
    `WITH busy AS (
       SELECT merchant_id, count(*) FILTER (WHERE NOT slow) AS fast, count(*) FILTER (WHERE slow) AS slow FROM ${CLAIMS} GROUP BY merchant_id
     ),
     due AS MATERIALIZED (
       SELECT e.merchant_id, e.id, e.last_served_at FROM ${ENDPOINTS} e LEFT JOIN busy b ON b.merchant_id = e.merchant_id
       WHERE e.status = 'enabled' AND e.due_at <= $1
         AND CASE WHEN e.slow_since IS NULL THEN COALESCE(b.fast, 0) < $4 ELSE COALESCE(b.slow, 0) < $5 END
     ),
     -- The LIMIT comes before the lock function, so no more merchants are locked than are served.
     next_merchants AS MATERIALIZED (
       SELECT merchant_id FROM due GROUP BY merchant_id ORDER BY min(COALESCE(last_served_at, '-infinity')) LIMIT $2
     ),
     claiming AS MATERIALIZED (
       SELECT merchant_id FROM next_merchants WHERE pg_try_advisory_xact_lock(hashtext('webhooks.claims'), hashtext(merchant_id))
     ),
     ranked AS (
       SELECT due.merchant_id, due.id, due.last_served_at,
              row_number() OVER (PARTITION BY due.merchant_id ORDER BY due.last_served_at NULLS FIRST) AS turn
       FROM due JOIN claiming ON claiming.merchant_id = due.merchant_id
       ORDER BY turn, last_served_at NULLS FIRST LIMIT $3
     )
     SELECT s.merchant_id, s.id, ranked.turn::int AS turn, ranked.last_served_at, s.slow_since IS NOT NULL AS slow,
            (SELECT count(*)::int FROM next_merchants) AS due_merchants
     FROM ${ENDPOINTS} s JOIN ranked ON ranked.merchant_id = s.merchant_id AND ranked.id = s.id
     WHERE s.status = 'enabled'
     FOR UPDATE OF s SKIP LOCKED`,
    [params.now, params.merchantsPerClaim, params.endpointsPerClaim, params.fastCap, params.slowCap],
  );
  return rows;
}

/** Requests in flight of these merchants, per endpoint and per merchant and lane, as committed now. */
async function countInFlight(tx: Queryable, merchantIds: string[]) {
  const { rows } = await tx.query<{ merchant_id: string; endpoint_id: string; slow: boolean; claims: number }>(
    `SELECT merchant_id, endpoint_id, slow, count(*)::int AS claims FROM ${CLAIMS} WHERE merchant_id = ANY($1::text[]) GROUP BY merchant_id, endpoint_id, slow`,
    [merchantIds],
  );
  const perEndpoint = new Map<string, number>();
  const perMerchant = new Map<string, PerLane>();
  for (const row of rows) {
    const key = endpointKey(row.merchant_id, row.endpoint_id);
    perEndpoint.set(key, (perEndpoint.get(key) ?? 0) + row.claims);
    const held = perMerchant.get(row.merchant_id) ?? { fast: 0, slow: 0 };
    if (row.slow) held.slow += row.claims;
    else held.fast += row.claims;
    perMerchant.set(row.merchant_id, held);
  }
  return { perEndpoint, perMerchant };
}

/**
 * Claims, sends every endpoint looked at to the back of the round and recomputes its due_at from
 * what still waits (NULL when nothing does, which also repairs an over-eager lower bound). One walk
 * of each endpoint's queue serves both: its first take + 1 waiting deliveries in due order, of
 * which the due ones among the first `take` are claimed (taken off the queue, a claim row each, in
 * the endpoint's lane) and the earliest of the rest is the new due_at. Each step after the walk is
 * driven by the rows the previous one returned.
 */
async function claimFromEndpoints(tx: Queryable, workerId: string, locked: LockedEndpoint[], take: number[], now: Date): Promise<ClaimRow[]> {
  const { rows } = await tx.query<ClaimRow>(
    `WITH endpoints AS (
       SELECT * FROM unnest($1::text[], $2::text[], $3::int[], $6::boolean[]) AS e(merchant_id, endpoint_id, take, slow)
     ),
     walk AS (
       SELECT merchant_id, endpoint_id, delivery_id, next_attempt_at, queue_row,
              (row_number() OVER (PARTITION BY merchant_id, endpoint_id ORDER BY next_attempt_at) <= take AND next_attempt_at <= $5) AS picked
       FROM (
         SELECT e.merchant_id, e.endpoint_id, e.take, w.delivery_id, w.next_attempt_at, w.queue_row
         FROM endpoints e
         CROSS JOIN LATERAL (
           SELECT q.delivery_id, q.next_attempt_at, q.ctid AS queue_row FROM ${QUEUE} q
           WHERE q.merchant_id = e.merchant_id AND q.endpoint_id = e.endpoint_id
           ORDER BY q.next_attempt_at LIMIT e.take + 1
         ) w
       ) walked
     ),
     -- The rows the walk found, by their place in the table: a join of the walk with the queue was
     -- planned, once the plan was cached for the statement, as a pass over the whole queue for
     -- every row walked (the queue's statistics are always stale, its rows come and go), 600,000
     -- comparisons and a third of a second for one claim of 210. Nobody else can delete them
     -- meanwhile: the endpoints are this transaction's.
     dequeued AS (
       DELETE FROM ${QUEUE} q WHERE q.ctid = ANY (ARRAY(SELECT queue_row FROM walk WHERE picked))
       RETURNING q.merchant_id, q.endpoint_id, q.delivery_id
     ),
     -- A queue row outliving its delivery (it cannot, every delete takes both) is dropped, not claimed.
     claimed AS (
       INSERT INTO ${CLAIMS} (merchant_id, endpoint_id, delivery_id, worker_id, claimed_at, slow)
       SELECT d.merchant_id, d.endpoint_id, d.delivery_id, $4, $5, e.slow
       FROM dequeued d JOIN endpoints e ON e.merchant_id = d.merchant_id AND e.endpoint_id = d.endpoint_id
       WHERE EXISTS (SELECT 1 FROM ${DELIVERIES} x WHERE x.merchant_id = d.merchant_id AND x.id = d.delivery_id OFFSET 0)
       RETURNING merchant_id, delivery_id, claimed_at, slow
     ),
     left_waiting AS (
       SELECT merchant_id, endpoint_id, min(next_attempt_at) AS due_at FROM walk WHERE NOT picked GROUP BY merchant_id, endpoint_id
     ),
     served AS (
       UPDATE ${ENDPOINTS} s SET last_served_at = $5, due_at = l.due_at
       FROM endpoints e LEFT JOIN left_waiting l ON l.merchant_id = e.merchant_id AND l.endpoint_id = e.endpoint_id
       WHERE s.merchant_id = e.merchant_id AND s.id = e.endpoint_id
     )
     -- LATERAL lookups by the whole primary key, so the plan never depends on how big the
     -- tables were when statistics were last taken (a plan made on empty tables joined events on
     -- merchant_id alone and filtered a merchant's whole history per delivery). OFFSET 0 keeps
     -- each one a lookup per row: without it the planner flattens them into joins and may again
     -- pick an index on merchant_id alone (seen: a claim of 30 deliveries reading a merchant's
     -- 1,500 deliveries 30 times over, half a second in which no merchant's delivery was claimed).
     -- The EXISTS above is fenced the same way. A routed record's delivery carries its own
     -- payload and has no event to look up.
     SELECT d.merchant_id, d.id, d.event_id, d.topic, d.endpoint_kind, d.endpoint_id, c.slow, d.attempt_count, d.first_attempt_at, c.claimed_at,
            COALESCE(d.payload, ev.payload) AS payload, s.format, s.url, s.secret, s.previous_secret, s.previous_secret_expires_at
     FROM claimed c
     CROSS JOIN LATERAL (SELECT * FROM ${DELIVERIES} x WHERE x.merchant_id = c.merchant_id AND x.id = c.delivery_id OFFSET 0) d
     LEFT JOIN LATERAL (SELECT payload FROM ${WEBHOOKS_SCHEMA}.events e WHERE d.payload IS NULL AND e.merchant_id = d.merchant_id AND e.id = d.event_id OFFSET 0) ev ON true
     CROSS JOIN LATERAL (
       SELECT format, url, secret, previous_secret, previous_secret_expires_at FROM ${ENDPOINTS} x WHERE x.merchant_id = d.merchant_id AND x.id = d.endpoint_id OFFSET 0
     ) s`,
    [locked.map((e) => e.merchant_id), locked.map((e) => e.id), take, workerId, now, locked.map((e) => e.slow)],
  );
  return rows;
}

/**
 * Endpoints' signing secrets as opened from their sealed form, kept while the sealed values stay
 * the same: a claim holds deliveries of a few endpoints, claims follow each other closely, and
 * opening (AES-GCM) for each was a visible part of a claim's cost. A rotation, an update or a
 * reseal changes the sealed value, so a secret that changed is opened again, never served stale.
 */
export class OpenedSecrets {
  private readonly opened: LRUCache<string, { sealed: string; previousSealed: string | null; secret: string; previousSecret: string | null }>;

  constructor(kept = 4_096) {
    this.opened = new LRUCache({ max: kept });
  }

  of(row: { merchant_id: string; endpoint_id: string; secret: string; previous_secret: string | null }): { secret: string; previousSecret: string | null } {
    const key = endpointKey(row.merchant_id, row.endpoint_id);
    const known = this.opened.get(key);
    if (known && known.sealed === row.secret && known.previousSealed === row.previous_secret) return known;
    const owner = { merchantId: row.merchant_id, recordId: row.endpoint_id };
    const opened = {
      sealed: row.secret,
      previousSealed: row.previous_secret,
      secret: openSecret(row.secret, owner),
      previousSecret: openOptionalSecret(row.previous_secret, owner),
    };
    this.opened.set(key, opened);
    return opened;
  }
}
