import type { EventDefinition } from '../events.js';
import { ref } from './components.js';
import { eventEnvelopeMembers, hmacSha256Schema } from './schemas-webhooks.js';
import type { JsonSchema, ParameterObject, PathItem } from './types.js';

/**
 * The OpenAPI 3.1 `webhooks` section: what Merx POSTs to a subscriber, one entry per public event
 * of the catalogue. Each payload is a named component (`products.created` → ProductsCreatedEvent)
 * so the types SDK generators make from it keep their names from one release to the next. The
 * payloads are built from the catalogue's own schemas: the catalogue stays the one description of
 * every event, and this section cannot drift from what the bus and the delivery engine check.
 */

/** `webhooks.subscription_created` → `WebhooksSubscriptionCreatedEvent`. */
export function eventComponentName(eventName: string): string {
  const words = eventName.split(/[._]/).filter((word) => word.length > 0);
  return `${words.map((word) => word[0]!.toUpperCase() + word.slice(1)).join('')}Event`;
}

/** The Standard Webhooks headers every delivery carries; components.parameters of the document. */
export const webhookHeaderParameters: Record<string, ParameterObject> = {
  WebhookId: {
    name: 'webhook-id',
    in: 'header',
    required: true,
    description: 'The event id (`evt_...`): the same on every retry and replay, so a receiver drops duplicates by it.',
    schema: { type: 'string', pattern: '^evt_[0-9a-z]{26}$' },
    example: 'evt_01jd3k7q8m2x4v6b9c0d1e2f3g',
  },
  WebhookTimestamp: {
    name: 'webhook-timestamp',
    in: 'header',
    required: true,
    description: 'Unix seconds of this attempt. Refuse requests more than a few minutes away from your clock (replay protection).',
    schema: { type: 'string', pattern: '^\\d+$' },
    example: '1763800000',
  },
  WebhookSignature: {
    name: 'webhook-signature',
    in: 'header',
    required: true,
    description:
      '`v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}">`, keyed by the secret\'s bytes; space-separated, two of them for 24 h after a secret rotation (one per secret). Any Standard Webhooks library verifies it.',
    schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})*$' },
    example: 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
  },
};

/** A component's reference when the catalogue's schema is that component, so a Product stays a Product in generated code. */
export type ComponentNameOf = (schema: JsonSchema) => string | undefined;

function schemaOrReference(schema: JsonSchema, componentNameOf: ComponentNameOf): JsonSchema {
  const name = componentNameOf(schema);
  return name ? ref('schemas', name) : schema;
}

/** The exact JSON body a subscriber receives for one event. */
export function webhookPayloadSchema(definition: EventDefinition, componentNameOf: ComponentNameOf): JsonSchema {
  const data: JsonSchema = {
    type: 'object',
    required: ['object'],
    additionalProperties: false,
    properties: {
      object: schemaOrReference(definition.dataObjectSchema, componentNameOf),
      ...(definition.dataPreviousSchema ? { previous: schemaOrReference(definition.dataPreviousSchema, componentNameOf) } : {}),
    },
  };
  const properties: Record<string, JsonSchema> = {
    ...eventEnvelopeMembers,
    topic: { const: definition.name, description: 'The event name.' },
    data,
    hmac_sha256: hmacSha256Schema,
  };
  return {
    type: 'object',
    title: eventComponentName(definition.name),
    description: `The body of a \`${definition.name}\` delivery. ${definition.description}`,
    required: Object.keys(properties),
    additionalProperties: false,
    properties,
  };
}

function webhookEntry(definition: EventDefinition): PathItem {
  return {
    post: {
      operationId: `events.${definition.name}`,
      summary: definition.name,
      description: `${definition.description}\n\nDelivered to every enabled subscription whose \`topics\` name \`${definition.name}\`, its topic \`${definition.topic}\` or \`*\`. Verify the Standard Webhooks headers (or \`hmac_sha256\`) with the subscription's secret before trusting the body.`,
      tags: ['events'],
      security: [],
      parameters: [ref('parameters', 'WebhookId'), ref('parameters', 'WebhookTimestamp'), ref('parameters', 'WebhookSignature')],
      requestBody: { required: true, content: { 'application/json': { schema: ref('schemas', eventComponentName(definition.name)) } } },
      responses: {
        '2XX': { description: 'Received. Any 2xx within 15 seconds (5 to connect) is success; the first 4 KiB of the answer are kept in the delivery log.' },
        '410': {
          description:
            'Gone: Merx disables the subscription at once (`disabled_reason: endpoint_gone`), raises `system_alerts.raised` and sends nothing more until it is enabled again.',
        },
        default: {
          description:
            'Anything else, a timeout or a refused connection is a failure: retried with exponential backoff for 72 hours (`Retry-After` on a 429 or 503 is honoured within that window), then dead-lettered.',
        },
      },
    },
  };
}

/** The `webhooks` section and the payload components it names, for every event of `catalogue`. */
export function webhooksOf(
  catalogue: ReadonlyArray<EventDefinition>,
  componentNameOf: ComponentNameOf,
): { webhooks: Record<string, PathItem>; schemas: Record<string, JsonSchema> } {
  return {
    webhooks: Object.fromEntries(catalogue.map((definition) => [definition.name, webhookEntry(definition)])),
    schemas: Object.fromEntries(catalogue.map((definition) => [eventComponentName(definition.name), webhookPayloadSchema(definition, componentNameOf)])),
  };
}
