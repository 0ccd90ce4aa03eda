import { newId, openSecret, type MerchantId, type Queryable } from '@merx/kit';
import {
  becameSendable,
  destinationAfterSync,
  removalApplies,
  type DestinationRemoval,
  type DestinationSync,
  type RoutedRecord,
} from '../domain/destination.js';
import { deleteDeliveriesOfEndpoint, type NewDelivery } from '../store/deliveries-store.js';
import {
  deleteDestinationForMerchant,
  findDestinationForMerchant,
  findTombstoneVersionForMerchant,
  saveDestinationForMerchant,
  saveTombstoneForMerchant,
} from '../store/destinations-store.js';
import { scheduleWaitingDeliveries } from '../store/endpoints-store.js';

/**
 * The merchants service owns destinations; this service keeps each as an endpoint of the
 * delivery engine, from the internal messages that service sends. These run inside fan-out's
 * batch transaction, with the endpoint already locked (`lockEndpointsOfBatch`).
 */

/**
 * `internal.destination_synced` carries the secret sealed under the key ring both services share
 * (bound to the merchant and destination, so it opens only for this destination); the engine
 * works with it opened and its store seals it again. A secret that does not open fails the
 * message, which then retries and ends with the poisoned ones, visible: it is never dropped.
 */
export function openedDestinationSync(merchantId: string, sync: DestinationSync): DestinationSync {
  return { ...sync, secret: openSecret(sync.secret, { merchantId, recordId: sync.id }) };
}

/**
 * Applies `internal.destination_synced`. Answers whether deliveries became due: a destination
 * that appears or becomes active again may have deliveries waiting for it (routed before its
 * first sync arrived, or while it was paused).
 */
export async function syncDestination(tx: Queryable, merchantId: MerchantId, sync: DestinationSync, secretOverlapMs: number, now: Date): Promise<boolean> {
  const current = await findDestinationForMerchant(tx, merchantId, sync.id);
  const removedAtVersion = current ? undefined : await findTombstoneVersionForMerchant(tx, merchantId, sync.id);
  const next = destinationAfterSync(current, removedAtVersion, sync, merchantId, secretOverlapMs, now);
  if (!next) return false;
  await saveDestinationForMerchant(tx, merchantId, next);
  return becameSendable(current, next) && (await scheduleWaitingDeliveries(tx, merchantId, sync.id));
}

/**
 * Applies `internal.destination_removed`: the endpoint goes with its log and dead letters, as a
 * deleted subscription's do, and a tombstone keeps the removal's version, so a sync that overtook
 * it (handled later by this or another replica) is seen to be older and changes nothing. A removal
 * that arrives before the destination's first sync leaves the tombstone alone, which is enough.
 */
export async function removeDestination(tx: Queryable, merchantId: MerchantId, removal: DestinationRemoval, now: Date): Promise<void> {
  const current = await findDestinationForMerchant(tx, merchantId, removal.id);
  await saveTombstoneForMerchant(tx, merchantId, removal.id, removal.version, now);
  if (current && !removalApplies(current, removal)) return;
  await deleteDeliveriesOfEndpoint(tx, merchantId, removal.id);
  await deleteDestinationForMerchant(tx, merchantId, removal.id);
}

/** Whether a destination was removed: a record routed to it after its removal has nowhere to go. */
export async function destinationRemoved(tx: Queryable, merchantId: MerchantId, id: string): Promise<boolean> {
  return (await findTombstoneVersionForMerchant(tx, merchantId, id)) !== undefined;
}

/**
 * One delivery per `internal.record_routed`, whether or not the destination is known yet or
 * active: it waits until it may go. The routed payload is stored with the delivery (it is not an
 * event of the events API), and the routing id makes a second copy of the message add nothing.
 */
export function routedRecordDelivery(merchantId: string, routing: RoutedRecord): NewDelivery {
  return {
    merchantId,
    id: newId('del'),
    eventId: routing.payload.id,
    topic: routing.payload.topic,
    endpointKind: 'destination',
    endpointId: routing.destination_id,
    payloadText: JSON.stringify(routing.payload),
    routedId: routing.id,
    status: 'pending',
    lastError: null,
    replayOf: null,
  };
}
