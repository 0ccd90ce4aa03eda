import type { EndpointKind } from './endpoint.js';

export const DELIVERY_STATUSES = ['pending', 'succeeded', 'failing', 'dead'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

/** Why an attempt failed: the network layer that refused, or our own refusal to send. */
export type AttemptError = 'timeout' | 'dns' | 'connection' | 'http' | 'blocked' | 'invalid_payload' | 'interrupted';

/** The webhook body minus its hmac_sha256: what an event is stored and replayed as. */
export interface WebhookPayload {
  id: string;
  topic: string;
  merchant_id: string;
  created_at: string;
  api_version: 'v1';
  data: { object: Record<string, unknown>; previous?: Record<string, unknown> };
}

export interface StoredEvent {
  id: string;
  merchantId: string;
  topic: string;
  createdAt: Date;
  payload: WebhookPayload;
  /** The payload exactly as stored, so what is sent is byte for byte what was received. */
  payloadText: string;
}

export interface Delivery {
  id: string;
  merchantId: string;
  eventId: string;
  topic: string;
  endpointKind: EndpointKind;
  endpointId: string;
  /** A routed record's payload, exactly as received; null when the payload is the stored event's. */
  payloadText: string | null;
  status: DeliveryStatus;
  attemptCount: number;
  nextAttemptAt: Date | null;
  firstAttemptAt: Date | null;
  lastStatusCode: number | null;
  lastError: AttemptError | null;
  replayOf: string | null;
  replayedBy: string | null;
  createdAt: Date;
  updatedAt: Date;
  completedAt: Date | null;
}

export interface Attempt {
  deliveryId: string;
  merchantId: string;
  endpointId: string;
  number: number;
  startedAt: Date;
  statusCode: number | null;
  durationMs: number;
  error: AttemptError | null;
  errorMessage: string | null;
  responseExcerpt: string | null;
}

/**
 * Only the six envelope fields travel to subscribers, in the documented order; `context` (actor,
 * ip) stays inside Merx. Picking them, rather than spreading the event, keeps it that way.
 */
export function toWebhookPayload(event: {
  id: string;
  topic: string;
  merchant_id: string;
  created_at: string;
  api_version: string;
  data: unknown;
}): WebhookPayload {
  return {
    id: event.id,
    topic: event.topic,
    merchant_id: event.merchant_id,
    created_at: event.created_at,
    api_version: event.api_version as WebhookPayload['api_version'],
    data: event.data as WebhookPayload['data'],
  };
}
