import {
  buildEvent,
  generateSigningSecret,
  NotFound,
  recordInInbox,
  sealSecret,
  trustedMerchantId,
  type MerchantId,
  type MerxEvent,
  type Outbox,
} from '@merx/kit';
import type { Destination, DestinationFields } from '../domain/destination.js';
import { presentResource, previousFields } from '../domain/resource.js';
import { MERCHANTS_SCHEMA } from '../store/migrations.js';
import { findResourceForMerchant, updateResourceForMerchant } from '../store/resource-table.js';
import { DESTINATIONS } from '../store/tables.js';

export const DESTINATION_HEALTH_CONSUMER = 'merchants.destination_health';

/**
 * What the delivery engine keeps of a destination (internal.destination_synced): never a public
 * event. The secret travels sealed under the key ring both services share, bound to this
 * merchant and destination, so the message on the broker (or in a log of it) does not reveal it.
 */
export function destinationEndpointOf(destination: Destination) {
  return {
    id: destination.id,
    object: 'destination_endpoint' as const,
    kind: destination.fields.kind,
    url: destination.fields.url,
    status: destination.fields.status,
    secret: sealSecret(destination.fields.secret, { merchantId: destination.merchantId, recordId: destination.id }),
    version: destination.version,
  };
}

/**
 * `internal.destination_removed` of a destination deleted at `version` (its last): the removal
 * carries the next one, newer than every sync sent before it, so the engine's tombstone outranks them.
 */
export function destinationRemovedEvent(merchantId: string, destination: { id: string; version: number }) {
  return buildEvent('internal.destination_removed', merchantId, {
    object: { id: destination.id, object: 'destination_endpoint' as const, version: destination.version + 1 },
  });
}

/**
 * The delivery engine switched a destination off (410 Gone, or failing through a whole retry
 * window): the destination says so, like any change, with destinations.updated. Once per message.
 */
export function engineDisabledDestinations({ outbox, now = () => new Date() }: { outbox: Outbox; now?: () => Date }) {
  return async function applyEngineDisable(event: MerxEvent): Promise<void> {
    const merchantId = trustedMerchantId(event.merchant_id);
    const { id, reason, version } = event.data.object as { id: string; reason: 'endpoint_gone' | 'endpoint_failing'; version?: number };
    await outbox.transaction(async (tx, emit) => {
      if (!(await recordInInbox(tx, MERCHANTS_SCHEMA, DESTINATION_HEALTH_CONSUMER, event))) return;
      const current = await findResourceForMerchant<DestinationFields>(tx, DESTINATIONS, merchantId, id, 'update');
      if (!current || current.fields.status === 'disabled') return;
      // The engine disabled the version it held; a newer one (the merchant re-enabled or changed it since) stands.
      if (version !== undefined && current.version !== version) return;
      const changes = { status: 'disabled' as const, disabled_reason: reason };
      const updated = await updateResourceForMerchant(tx, DESTINATIONS, merchantId, id, changes, now());
      emit(
        buildEvent('destinations.updated', merchantId, {
          object: presentResource('destination', updated, ['secret']),
          previous: previousFields(current.fields, changes),
        }),
      );
      emit(buildEvent('internal.destination_synced', merchantId, { object: destinationEndpointOf(updated) }));
    });
  };
}

/**
 * A new signing secret for a destination (`POST /api/v1/destinations/{id}/rotate-secret`). Like
 * any change it bumps the version and is synced to the delivery engine, which signs with both the
 * new secret and the one it replaces for its overlap (24 h), as after a subscription's rotation.
 * `destinations.updated` says it happened without saying the secret (`previous` is empty).
 */
export function destinationSecretRotation({ outbox, now = () => new Date() }: { outbox: Outbox; now?: () => Date }) {
  return async function rotateSecret(merchantId: MerchantId, id: string): Promise<Destination> {
    return outbox.transaction(async (tx, emit) => {
      const current = await findResourceForMerchant<DestinationFields>(tx, DESTINATIONS, merchantId, id, 'update');
      if (!current) throw new NotFound('destination', id);
      const updated = await updateResourceForMerchant(tx, DESTINATIONS, merchantId, id, { secret: generateSigningSecret() }, now());
      emit(buildEvent('destinations.updated', merchantId, { object: presentResource('destination', updated, ['secret']), previous: {} }));
      emit(buildEvent('internal.destination_synced', merchantId, { object: destinationEndpointOf(updated) }));
      return updated;
    });
  };
}
