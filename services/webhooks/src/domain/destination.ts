import type { WebhookPayload } from './delivery.js';
import type { DeliveryFormat, DisabledReason, EndpointStatus } from './endpoint.js';

/** A destination as the engine keeps it: the merchants service's copy, secret included. */
export interface DestinationEndpoint {
  id: string;
  merchantId: string;
  format: DeliveryFormat;
  url: string;
  status: EndpointStatus;
  disabledReason: DisabledReason | null;
  secret: string;
  previousSecret: string | null;
  previousSecretExpiresAt: Date | null;
  secretRotatedAt: Date | null;
  enabledAt: Date;
  /** The merchants service's version of the destination. */
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

/** `data.object` of `internal.destination_synced` (DestinationEndpoint in the contracts). */
export interface DestinationSync {
  id: string;
  object: 'destination_endpoint';
  kind: DeliveryFormat;
  url: string;
  status: 'active' | 'paused' | 'disabled';
  secret: string;
  version: number;
}

/** `data.object` of `internal.destination_removed`. */
export interface DestinationRemoval {
  id: string;
  object: 'destination_endpoint';
  version: number;
}

/** `data.object` of `internal.record_routed`. */
export interface RoutedRecord {
  id: string;
  object: 'routed_record';
  destination_id: string;
  connection_id: string;
  record_id: string;
  event_id: string;
  payload: WebhookPayload;
}

/**
 * The endpoint after a sync, or undefined when the sync is not newer than what is held or than the
 * removal that left a tombstone (`removedAtVersion`): messages may arrive out of order or twice,
 * across replicas, and a sync that overtook its destination's removal must not bring it back. Only `active` destinations are sent to: paused and disabled
 * ones keep their deliveries waiting. Becoming active again restarts the failure clock, as a
 * merchant re-enabling a subscription does; a new secret signs at once while the old one keeps
 * signing for the overlap, as a subscription's rotation does.
 */
export function destinationAfterSync(
  current: DestinationEndpoint | undefined,
  removedAtVersion: number | undefined,
  sync: DestinationSync,
  merchantId: string,
  overlapMs: number,
  now: Date,
): DestinationEndpoint | undefined {
  if (current && sync.version <= current.version) return undefined;
  if (removedAtVersion !== undefined && sync.version <= removedAtVersion) return undefined;
  const status: EndpointStatus = sync.status === 'active' ? 'enabled' : 'disabled';
  if (!current) {
    return {
      id: sync.id,
      merchantId,
      format: sync.kind,
      url: sync.url,
      status,
      disabledReason: status === 'disabled' ? 'by_merchant' : null,
      secret: sync.secret,
      previousSecret: null,
      previousSecretExpiresAt: null,
      secretRotatedAt: null,
      enabledAt: now,
      version: sync.version,
      createdAt: now,
      updatedAt: now,
    };
  }
  const rotated = sync.secret !== current.secret;
  return {
    ...current,
    format: sync.kind,
    url: sync.url,
    status,
    // A destination the engine switched off stays off for its own reason until the merchant reactivates it.
    disabledReason: status === 'enabled' ? null : current.status === 'disabled' ? current.disabledReason : 'by_merchant',
    enabledAt: status === 'enabled' && current.status === 'disabled' ? now : current.enabledAt,
    secret: sync.secret,
    previousSecret: rotated ? current.secret : current.previousSecret,
    previousSecretExpiresAt: rotated ? new Date(now.getTime() + overlapMs) : current.previousSecretExpiresAt,
    secretRotatedAt: rotated ? now : current.secretRotatedAt,
    version: sync.version,
    updatedAt: now,
  };
}

/** Whether waiting deliveries may now go out: the endpoint is new and active, or active again. */
export function becameSendable(before: DestinationEndpoint | undefined, after: DestinationEndpoint): boolean {
  return after.status === 'enabled' && before?.status !== 'enabled';
}

/** Whether a removal takes the held endpoint away: only one older than the removal (versions only grow). */
export function removalApplies(current: DestinationEndpoint | undefined, removal: DestinationRemoval): boolean {
  return current !== undefined && current.version < removal.version;
}
