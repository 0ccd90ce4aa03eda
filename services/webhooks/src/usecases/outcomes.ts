import { buildEvent, trustedMerchantId, type Emit, type Outbox, type Queryable } from '@merx/kit';
import { raisesAlertWhenDead, systemAlert, type AlertFacts } from '../domain/alert.js';
import type { DisabledReason } from '../domain/subscription.js';
import { presentSubscription, presentSubscriptionPrevious } from '../domain/present.js';
import { markEndpointsDue, noSuccessSince, recordAttempts, type AttemptResult } from '../store/deliveries-store.js';
import { findSubscriptionForMerchant, lockSubscriptionsInKeyOrder, updateSubscriptionForMerchant } from '../store/subscriptions-store.js';

export interface FinishedAttempt extends AttemptResult {
  topic: string;
  eventId: string;
  endpointGone: boolean;
}

function raiseAlert(emit: Emit, merchantId: string, facts: AlertFacts, now: Date): void {
  emit(buildEvent('system_alerts.raised', merchantId, { object: systemAlert(facts, now) }));
}

async function disableEndpoint(tx: Queryable, emit: Emit, merchantId: string, subscriptionId: string, reason: DisabledReason, why: string, now: Date): Promise<void> {
  const tenant = trustedMerchantId(merchantId);
  const current = await findSubscriptionForMerchant(tx, tenant, subscriptionId);
  if (!current || current.status === 'disabled') return;
  const changes = { status: 'disabled' as const, disabledReason: reason };
  const updated = await updateSubscriptionForMerchant(tx, tenant, subscriptionId, changes, now);
  emit(buildEvent('webhooks.subscription_updated', merchantId, { object: presentSubscription(updated), previous: presentSubscriptionPrevious(current, changes) }));
  raiseAlert(emit, merchantId, { kind: 'endpoint_disabled', severity: 'critical', message: `Webhook endpoint ${current.url} was disabled: ${why}. Fix it, then set status to enabled and replay its dead letters.`, subscriptionId }, now);
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
      subscriptionId: attempt.subscriptionId,
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
async function failedThroughWindow(tx: Queryable, attempt: FinishedAttempt): Promise<boolean> {
  const subscription = await findSubscriptionForMerchant(tx, trustedMerchantId(attempt.merchantId), attempt.subscriptionId);
  if (!subscription || subscription.status === 'disabled' || subscription.enabledAt > attempt.firstAttemptAt) return false;
  return noSuccessSince(tx, attempt.merchantId, attempt.subscriptionId, attempt.firstAttemptAt);
}

/**
 * Writes a batch of finished attempts in one transaction, with what they imply: retries put back
 * on their endpoints' schedule, an alert per dead letter, and endpoints switched off when they
 * answer 410 or have failed for the whole retry window. A batch of successes touches no
 * subscription row at all; every other batch locks the rows it changes in key order, once.
 */
export function attemptOutcomes(outbox: Outbox) {
  return async function recordFinishedAttempts(workerId: string, finished: FinishedAttempt[], now: Date): Promise<void> {
    await outbox.transaction(async (tx, emit) => {
      const recorded = await recordAttempts(tx, workerId, finished, now);
      // A delivery no longer ours (handed on after this worker was presumed dead) implies nothing.
      const attempts = recorded.size === finished.length ? finished : finished.filter((a) => recorded.has(a.deliveryId));
      const retried = attempts.filter((a) => a.nextAttemptAt !== null);
      const ending = attempts.filter((a) => a.endpointGone || a.status === 'dead');
      if (ending.length > 0) await lockSubscriptionsInKeyOrder(tx, [...retried, ...ending]);
      await markEndpointsDue(tx, retried.map((a) => ({ merchantId: a.merchantId, subscriptionId: a.subscriptionId, at: a.nextAttemptAt! })));
      for (const attempt of ending) {
        if (attempt.endpointGone) await disableEndpoint(tx, emit, attempt.merchantId, attempt.subscriptionId, 'endpoint_gone', 'it answered 410 Gone', now);
        alertDeadLetter(emit, attempt, now);
        if (!attempt.endpointGone && (await failedThroughWindow(tx, attempt))) {
          await disableEndpoint(tx, emit, attempt.merchantId, attempt.subscriptionId, 'endpoint_failing', `no attempt succeeded since ${attempt.firstAttemptAt.toISOString()}`, now);
        }
      }
    });
  };
}
