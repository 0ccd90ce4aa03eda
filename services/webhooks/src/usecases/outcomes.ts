import { buildEvent, trustedMerchantId, type Emit, type Outbox, type Queryable } from '@merx/kit';
import { raisesAlertWhenDead, systemAlert, type AlertFacts } from '../domain/alert.js';
import type { DisabledReason } from '../domain/subscription.js';
import { presentSubscription, presentSubscriptionPrevious } from '../domain/present.js';
import { recordAttempts, type AttemptResult } from '../store/deliveries-store.js';
import { WEBHOOKS_SCHEMA } from '../store/migrations.js';
import { findSubscriptionForMerchant, updateSubscriptionForMerchant } from '../store/subscriptions-store.js';

export interface FinishedAttempt extends AttemptResult {
  topic: string;
  eventId: string;
  endpointGone: boolean;
}

const SUBSCRIPTIONS = `${WEBHOOKS_SCHEMA}.subscriptions`;

function raiseAlert(emit: Emit, merchantId: string, facts: AlertFacts, now: Date): void {
  emit(buildEvent('system_alerts.raised', merchantId, { object: systemAlert(facts, now) }));
}

async function disableEndpoint(tx: Queryable, emit: Emit, merchantId: string, subscriptionId: string, reason: DisabledReason, why: string, now: Date): Promise<void> {
  const tenant = trustedMerchantId(merchantId);
  const current = await findSubscriptionForMerchant(tx, tenant, subscriptionId, { forUpdate: true });
  if (!current || current.status === 'disabled') return;
  const changes = { status: 'disabled' as const, disabledReason: reason };
  const updated = await updateSubscriptionForMerchant(tx, tenant, subscriptionId, changes, now);
  emit(buildEvent('webhooks.subscription_updated', merchantId, { object: presentSubscription(updated), previous: presentSubscriptionPrevious(current, changes) }));
  raiseAlert(emit, merchantId, { kind: 'endpoint_disabled', severity: 'critical', message: `Webhook endpoint ${current.url} was disabled: ${why}. Fix it, then set status to enabled and replay its dead letters.`, subscriptionId }, now);
}

/**
 * Writes a batch of finished attempts in one transaction, with what they imply: the endpoints'
 * failure clocks, an alert per dead letter, and endpoints switched off when they answer 410 or
 * have failed for the whole retry window.
 */
export function attemptOutcomes(outbox: Outbox) {
  return async function recordFinishedAttempts(attempts: FinishedAttempt[], now: Date): Promise<void> {
    await outbox.transaction(async (tx, emit) => {
      await recordAttempts(tx, attempts, now);
      const healthy = attempts.filter((a) => a.status === 'succeeded');
      if (healthy.length > 0) {
        await tx.query(
          `UPDATE ${SUBSCRIPTIONS} SET failing_since = NULL
           WHERE (merchant_id, id) IN (SELECT * FROM unnest($1::text[], $2::text[])) AND failing_since IS NOT NULL`,
          [healthy.map((a) => a.merchantId), healthy.map((a) => a.subscriptionId)],
        );
      }
      const failed = attempts.filter((a) => a.status !== 'succeeded');
      if (failed.length === 0) return;
      const { rows: clocks } = await tx.query<{ merchant_id: string; id: string; failing_since: Date }>(
        // The clock starts when the first failing attempt started.
        `UPDATE ${SUBSCRIPTIONS} s SET failing_since = COALESCE(s.failing_since, f.started_at)
         FROM (SELECT m, sub, min(started_at) AS started_at FROM unnest($1::text[], $2::text[], $3::timestamptz[]) AS u(m, sub, started_at) GROUP BY m, sub) f
         WHERE s.merchant_id = f.m AND s.id = f.sub
         RETURNING s.merchant_id, s.id, s.failing_since`,
        [failed.map((a) => a.merchantId), failed.map((a) => a.subscriptionId), failed.map((a) => a.startedAt.toISOString())],
      );
      const failingSince = new Map(clocks.map((row) => [`${row.merchant_id}/${row.id}`, row.failing_since]));
      for (const attempt of failed) {
        if (attempt.endpointGone) {
          await disableEndpoint(tx, emit, attempt.merchantId, attempt.subscriptionId, 'endpoint_gone', 'it answered 410 Gone', now);
        }
        if (attempt.status !== 'dead') continue;
        if (raisesAlertWhenDead(attempt.topic)) {
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
        // The endpoint has failed without a single success since before this delivery's first
        // attempt, through its whole retry window: it is switched off rather than tried forever.
        const since = failingSince.get(`${attempt.merchantId}/${attempt.subscriptionId}`);
        if (since && !attempt.endpointGone && since.getTime() <= attempt.firstAttemptAt.getTime()) {
          await disableEndpoint(tx, emit, attempt.merchantId, attempt.subscriptionId, 'endpoint_failing', `every attempt failed since ${since.toISOString()}`, now);
        }
      }
    });
  };
}
