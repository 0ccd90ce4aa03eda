import { buildEvent, trustedMerchantId, type Emit, type MerchantId, type Outbox, type Queryable } from '@merx/kit';
import { raisesAlertWhenDead, systemAlert, type AlertFacts } from '../domain/alert.js';
import type { DisabledReason, EndpointKind, EndpointState } from '../domain/endpoint.js';
import { presentSubscription, presentSubscriptionPrevious } from '../domain/present.js';
import { disableDestinationForMerchant } from '../store/destinations-store.js';
import { endpointKey } from '../store/claims-store.js';
import { findEndpointsByKey, lockEndpointsInKeyOrder, markEndpointsDue, moveEndpointsToLanes } from '../store/endpoints-store.js';
import { findSubscriptionForMerchant, updateSubscriptionForMerchant } from '../store/subscriptions-store.js';
import { noSuccessSince, recordAttempts, type AttemptResult } from '../store/work-queue-store.js';

export interface FinishedAttempt extends AttemptResult {
  endpointKind: EndpointKind;
  topic: string;
  eventId: string;
  endpointGone: boolean;
  /** The lane this attempt moves its endpoint to (it was claimed in the other one); null when it stays. */
  movesEndpointTo: 'fast' | 'slow' | null;
}

function raiseAlert(emit: Emit, merchantId: string, facts: AlertFacts, now: Date): void {
  emit(buildEvent('system_alerts.raised', merchantId, { object: systemAlert(facts, now) }));
}

/** The alert's pointer to the endpoint: `subscription_id` or `destination_id`. */
const endpointFacts = (kind: EndpointKind, id: string) => (kind === 'subscription' ? { subscriptionId: id } : { destinationId: id });

/**
 * A subscription switched off is a change of the merchant's resource here, announced as
 * `webhooks.subscription_updated`. A destination belongs to the merchants service: it is told
 * (`internal.destination_disabled`), records the change on its resource and announces it, and
 * syncs the destination back. Either way the merchant gets an alert.
 */
async function disableEndpoint(tx: Queryable, emit: Emit, endpoint: EndpointState, reason: DisabledReason, why: string, now: Date): Promise<void> {
  const tenant = trustedMerchantId(endpoint.merchantId);
  if (endpoint.kind === 'subscription') await disableSubscription(tx, emit, tenant, endpoint.id, reason, now);
  else {
    await disableDestinationForMerchant(tx, tenant, endpoint.id, reason, now);
    emit(
      buildEvent('internal.destination_disabled', endpoint.merchantId, {
        // The version the engine disabled: the merchants service applies it only to that version, so a
        // disable that arrives after the merchant changed the destination (re-enabled it) changes nothing.
        object: { id: endpoint.id, object: 'destination_endpoint', reason, disabled_at: now.toISOString(), version: endpoint.version },
      }),
    );
  }
  const what = endpoint.kind === 'subscription' ? 'Webhook endpoint' : 'Destination';
  const fix = endpoint.kind === 'subscription' ? 'set status to enabled' : "set the destination's status to active";
  raiseAlert(
    emit,
    endpoint.merchantId,
    {
      kind: 'endpoint_disabled',
      severity: 'critical',
      message: `${what} ${endpoint.url} was disabled: ${why}. Fix it, then ${fix} and replay its dead letters.`,
      ...endpointFacts(endpoint.kind, endpoint.id),
    },
    now,
  );
}

async function disableSubscription(
  tx: Queryable,
  emit: Emit,
  merchantId: MerchantId,
  subscriptionId: string,
  reason: DisabledReason,
  now: Date,
): Promise<void> {
  const current = await findSubscriptionForMerchant(tx, merchantId, subscriptionId);
  if (!current) return;
  const changes = { status: 'disabled' as const, disabledReason: reason };
  const updated = await updateSubscriptionForMerchant(tx, merchantId, subscriptionId, changes, now);
  emit(
    buildEvent('webhooks.subscription_updated', merchantId, { object: presentSubscription(updated), previous: presentSubscriptionPrevious(current, changes) }),
  );
}

function alertDeadLetter(emit: Emit, attempt: FinishedAttempt, now: Date): void {
  if (!raisesAlertWhenDead(attempt.topic)) return;
  raiseAlert(
    emit,
    attempt.merchantId,
    {
      kind: 'event_dead_lettered',
      severity: 'warning',
      message: `Event ${attempt.eventId} (${attempt.topic}) could not be delivered after ${attempt.number} attempt(s); last: ${attempt.errorMessage ?? attempt.error ?? 'failed'}. Replay it from the dead letters.`,
      ...endpointFacts(attempt.endpointKind, attempt.endpointId),
      deliveryId: attempt.deliveryId,
      eventId: attempt.eventId,
    },
    now,
  );
}

/**
 * The endpoint has failed without a single success since this delivery's first attempt, through
 * its whole retry window, and was not re-enabled meanwhile: it is switched off rather than tried
 * forever.
 */
async function failedThroughWindow(tx: Queryable, endpoint: EndpointState, attempt: FinishedAttempt): Promise<boolean> {
  if (endpoint.enabledAt > attempt.firstAttemptAt) return false;
  return noSuccessSince(tx, attempt.merchantId, attempt.endpointId, attempt.firstAttemptAt);
}

/**
 * Where each endpoint's attempts of the batch move it, by the last one to finish: an endpoint that
 * timed out and then answered in time is fast again.
 */
function laneMoves(attempts: FinishedAttempt[]): Array<{ merchantId: string; endpointId: string; slow: boolean }> {
  const last = new Map<string, FinishedAttempt>();
  const finishedAt = (a: FinishedAttempt) => a.startedAt.getTime() + a.durationMs;
  for (const attempt of attempts) {
    const key = endpointKey(attempt.merchantId, attempt.endpointId);
    const known = last.get(key);
    if (!known || finishedAt(attempt) >= finishedAt(known)) last.set(key, attempt);
  }
  return [...last.values()]
    .filter((a) => a.movesEndpointTo !== null)
    .map((a) => ({ merchantId: a.merchantId, endpointId: a.endpointId, slow: a.movesEndpointTo === 'slow' }));
}

/**
 * Dead letters and 410s: an alert per dead letter, and endpoints switched off when they answer 410
 * or have failed for the whole retry window. The endpoints are read in one statement, not one per
 * attempt: a receiver that stopped answering ends many deliveries at once, and this transaction
 * holds their endpoints' locks meanwhile.
 */
async function endDeliveries(tx: Queryable, emit: Emit, ending: FinishedAttempt[], now: Date): Promise<void> {
  const endpoints = await findEndpointsByKey(tx, ending);
  for (const attempt of ending) {
    const key = endpointKey(attempt.merchantId, attempt.endpointId);
    const endpoint = endpoints.get(key);
    const enabled = endpoint?.status === 'enabled' ? endpoint : undefined;
    const disable = async (reason: DisabledReason, why: string) => {
      await disableEndpoint(tx, emit, enabled!, reason, why, now);
      endpoints.set(key, { ...enabled!, status: 'disabled', disabledReason: reason });
    };
    if (enabled && attempt.endpointGone) await disable('endpoint_gone', 'it answered 410 Gone');
    alertDeadLetter(emit, attempt, now);
    if (enabled && !attempt.endpointGone && (await failedThroughWindow(tx, enabled, attempt))) {
      await disable('endpoint_failing', `no attempt succeeded since ${attempt.firstAttemptAt.toISOString()}`);
    }
  }
}

/**
 * Writes a batch of finished attempts in one transaction, with what they imply: retries put back
 * on their endpoints' schedule, endpoints moved between the fast and the slow lane, an alert per
 * dead letter, and endpoints switched off when they answer 410 or have failed for the whole retry
 * window. A batch of successes to fast endpoints touches no endpoint row at all; every other
 * batch locks the rows it changes in key order, once. An endpoint wiped meanwhile (deleted,
 * removed, a sandbox reset) took its deliveries with it, so their attempts record nothing and
 * imply nothing.
 */
export function attemptOutcomes(outbox: Outbox) {
  return async function recordFinishedAttempts(workerId: string, finished: FinishedAttempt[], now: Date): Promise<void> {
    await outbox.transaction(async (tx, emit) => {
      const recorded = await recordAttempts(tx, workerId, finished, now);
      // A delivery no longer ours (handed on after this worker was presumed dead) implies nothing.
      const attempts = recorded.size === finished.length ? finished : finished.filter((a) => recorded.has(a.deliveryId));
      const retried = attempts.filter((a) => a.nextAttemptAt !== null);
      const ending = attempts.filter((a) => a.endpointGone || a.status === 'dead');
      const moves = laneMoves(attempts);
      if (ending.length > 0 || moves.length > 0) await lockEndpointsInKeyOrder(tx, [...retried, ...ending, ...moves]);
      await markEndpointsDue(
        tx,
        retried.map((a) => ({ merchantId: a.merchantId, endpointId: a.endpointId, at: a.nextAttemptAt! })),
      );
      await moveEndpointsToLanes(tx, moves, now);
      if (ending.length > 0) await endDeliveries(tx, emit, ending, now);
    });
  };
}
