import { newId } from '@merx/kit';
import { generateWebhookSecret } from '../src/delivery/signing.js';

/**
 * The internal messages the merchants service sends the delivery engine, as contracts describe
 * them (shared/contracts internal-events.ts), for tests that play that service's part on the bus.
 */

export interface DestinationEndpointMessage {
  id: string;
  object: 'destination_endpoint';
  kind: 'webhook' | 'http';
  url: string;
  status: 'active' | 'paused' | 'disabled';
  secret: string;
  version: number;
  [key: string]: unknown;
}

/** `data.object` of `internal.destination_synced`: a new, active webhook destination unless told otherwise. */
export function destinationEndpoint(url: string, overrides: Partial<DestinationEndpointMessage> = {}): DestinationEndpointMessage {
  return {
    id: newId('dst'),
    object: 'destination_endpoint',
    kind: 'webhook',
    url,
    status: 'active',
    secret: generateWebhookSecret(),
    version: 1,
    ...overrides,
  };
}

/** An order record as a source ingested it (the `orders.created` object). */
export function orderRecord(data: Record<string, unknown> = { total: '19.99', currency: 'EUR' }) {
  const at = new Date().toISOString();
  return {
    id: newId('rec'),
    object: 'record',
    type: 'order',
    source_id: newId('src'),
    external_id: `ORD-${newId('x').slice(-8)}`,
    occurred_at: at,
    data,
    received_at: at,
  };
}

/** `data.object` of `internal.record_routed`: the record on its way to one destination. */
export function routedRecord(merchantId: string, destinationId: string, record = orderRecord()) {
  const eventId = newId('evt');
  return {
    id: newId('rtd'),
    object: 'routed_record',
    destination_id: destinationId,
    connection_id: newId('con'),
    record_id: record.id,
    event_id: eventId,
    payload: {
      id: eventId,
      topic: 'orders.created',
      merchant_id: merchantId,
      created_at: new Date().toISOString(),
      api_version: 'v1',
      data: { object: record },
    },
  };
}

/** `data.object` of `sandbox.reset`: a reset just requested. */
export function sandboxReset(seed = false) {
  return {
    id: newId('rst'),
    object: 'sandbox_reset',
    status: 'running',
    seed,
    services: ['catalog', 'merchants', 'webhooks'].map((service) => ({ service, status: 'pending', removed: {}, seeded: {}, completed_at: null })),
    requested_at: new Date().toISOString(),
    completed_at: null,
  };
}
