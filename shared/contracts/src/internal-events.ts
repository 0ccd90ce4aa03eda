import type { EventDefinition } from './events.js';
import { prefixedId, resourceVersion, timestamp } from './openapi/fragments.js';
import { destinationEndpointSchema, resetServices } from './openapi/schemas-merchants.js';
import type { JsonSchema } from './openapi/types.js';

/**
 * Messages services send one another over the same bus (exchange `merx.events`, routing key =
 * name). They are not events of the merchant: they never reach webhook subscribers, the events
 * API or the audit log (which records the public event of the same change), and they may carry
 * what public events never do, such as a destination's signing secret. Every name starts with
 * `internal.`, so a consumer can tell them apart by the routing key alone.
 */
export const INTERNAL_PREFIX = 'internal.';

export const internalEventNames = [
  'internal.destination_synced',
  'internal.destination_removed',
  'internal.destination_disabled',
  'internal.record_routed',
  'internal.sandbox_service_reset',
] as const;

export type InternalEventName = (typeof internalEventNames)[number];

export function isInternalEvent(topic: string): boolean {
  return topic.startsWith(INTERNAL_PREFIX);
}

const counts: JsonSchema = { type: 'object', additionalProperties: { type: 'integer', minimum: 0 } };

/** The payload of a routed record as the destination receives it (without `hmac_sha256`). */
const routedPayloadSchema: JsonSchema = {
  type: 'object',
  required: ['id', 'topic', 'merchant_id', 'created_at', 'api_version', 'data'],
  additionalProperties: false,
  properties: {
    id: prefixedId('evt', "The record's event: the webhook-id a destination deduplicates on."),
    topic: { type: 'string' },
    merchant_id: prefixedId('mch', 'The merchant.'),
    created_at: timestamp,
    api_version: { const: 'v1' },
    data: {
      type: 'object',
      required: ['object'],
      additionalProperties: false,
      properties: { object: { type: 'object', description: "The record after the connection's rules (transforms) applied." } },
    },
  },
};

export const internalEventCatalogue: ReadonlyArray<EventDefinition> = [
  {
    name: 'internal.destination_synced',
    topic: 'internal',
    description:
      'merchants → webhooks: a destination was created or changed; the delivery engine keeps this copy (secret included) as one of its endpoints. Older versions than the one held are ignored.',
    dataObjectSchema: destinationEndpointSchema,
  },
  {
    name: 'internal.destination_removed',
    topic: 'internal',
    description: 'merchants → webhooks: a destination was deleted; its endpoint, waiting deliveries and log go.',
    dataObjectSchema: {
      type: 'object',
      required: ['id', 'object', 'version'],
      additionalProperties: false,
      properties: { id: prefixedId('dst', 'Destination id.'), object: { const: 'destination_endpoint' }, version: resourceVersion },
    },
  },
  {
    name: 'internal.destination_disabled',
    topic: 'internal',
    description: 'webhooks → merchants: the delivery engine switched a destination off (410 Gone, or failing through a whole retry window).',
    dataObjectSchema: {
      type: 'object',
      required: ['id', 'object', 'reason', 'disabled_at'],
      additionalProperties: false,
      properties: {
        id: prefixedId('dst', 'Destination id.'),
        object: { const: 'destination_endpoint' },
        reason: { type: 'string', enum: ['endpoint_gone', 'endpoint_failing'] },
        disabled_at: timestamp,
        // Optional: a message queued by the previous release has none and applies to whatever version is current.
        version: resourceVersion,
      },
    },
  },
  {
    name: 'internal.record_routed',
    topic: 'internal',
    description: 'merchants → webhooks: a connection routed a record to its destination; the delivery engine makes one delivery of `payload`.',
    dataObjectSchema: {
      type: 'object',
      required: ['id', 'object', 'destination_id', 'connection_id', 'record_id', 'event_id', 'payload'],
      additionalProperties: false,
      properties: {
        id: prefixedId('rtd', 'Routing id: one per (record, connection), so a redelivered message makes no second delivery.'),
        object: { const: 'routed_record' },
        destination_id: prefixedId('dst', 'Where it goes.'),
        connection_id: prefixedId('con', 'The connection that routed it.'),
        record_id: prefixedId('rec', 'The record.'),
        event_id: prefixedId('evt', "The record's event."),
        payload: routedPayloadSchema,
      },
    },
  },
  {
    name: 'internal.sandbox_service_reset',
    topic: 'internal',
    description: 'any service → merchants: this service finished its part of a sandbox reset.',
    dataObjectSchema: {
      type: 'object',
      required: ['id', 'object', 'service', 'removed', 'seeded', 'completed_at'],
      additionalProperties: false,
      properties: {
        id: prefixedId('rst', 'The reset.'),
        object: { const: 'sandbox_service_reset' },
        service: { type: 'string', enum: [...resetServices] },
        removed: counts,
        seeded: counts,
        completed_at: timestamp,
      },
    },
  },
];

const internalByName = new Map(internalEventCatalogue.map((event) => [event.name, event]));

export function findInternalEventDefinition(name: string): EventDefinition | undefined {
  return internalByName.get(name);
}
