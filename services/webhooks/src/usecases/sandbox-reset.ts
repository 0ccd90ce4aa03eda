import { buildEvent, runInEventContext, trustedMerchantId, type Emit, type MerxEvent, type Queryable } from '@merx/kit';
import { wipeWebhooksDataOfMerchant } from '../store/sandbox-store.js';

/**
 * This service's part of a sandbox reset (`sandbox.reset`): the merchant's subscriptions,
 * destinations, deliveries, attempts and earlier events go, in fan-out's transaction with the
 * inbox row, so a redelivered reset wipes nothing twice. Nothing is seeded here. The report,
 * `internal.sandbox_service_reset`, leaves through the outbox once that transaction commits.
 */
export async function resetSandbox(tx: Queryable, emit: Emit, reset: MerxEvent, now: Date): Promise<void> {
  const resetId = (reset.data.object as { id: string }).id;
  const removed = await wipeWebhooksDataOfMerchant(tx, trustedMerchantId(reset.merchant_id), new Date(reset.created_at));
  // The report answers the reset's request (its id and actor), whichever message's context the batch runs in.
  const report = runInEventContext(reset, () =>
    buildEvent('internal.sandbox_service_reset', reset.merchant_id, {
      object: { id: resetId, object: 'sandbox_service_reset', service: 'webhooks', removed: { ...removed }, seeded: {}, completed_at: now.toISOString() },
    }),
  );
  emit(report);
}
