/**
 * What the delivery engine sends to. A subscription (wh_) is created through this service's API
 * and receives the events it names; a destination (dst_) belongs to the merchants service, which
 * syncs it here, and receives the records its connections route to it. The engine treats both
 * alike: one work queue, one retry schedule, one way of switching a failing endpoint off.
 */
export const ENDPOINT_KINDS = ['subscription', 'destination'] as const;
export type EndpointKind = (typeof ENDPOINT_KINDS)[number];

/** What a request carries: the signed envelope, or (http destinations) the routed record alone. */
export type DeliveryFormat = 'webhook' | 'http';

export type EndpointStatus = 'enabled' | 'disabled';
export type DisabledReason = 'by_merchant' | 'endpoint_gone' | 'endpoint_failing';

/** An endpoint's row key; every lock on endpoints is taken in this order. */
export interface EndpointKey {
  merchantId: string;
  endpointId: string;
}

/** The engine's view of any endpoint: what decides whether it is sent to and when it fails. */
export interface EndpointState {
  merchantId: string;
  id: string;
  kind: EndpointKind;
  url: string;
  status: EndpointStatus;
  disabledReason: DisabledReason | null;
  enabledAt: Date;
  /** The version of the resource the engine last applied (a destination's is the merchants service's). */
  version: number;
}

/** Which id field of a delivery, dead letter or alert names the endpoint. */
export function endpointIds(kind: EndpointKind, id: string): { subscription_id: string | null; destination_id: string | null } {
  return kind === 'subscription' ? { subscription_id: id, destination_id: null } : { subscription_id: null, destination_id: id };
}
