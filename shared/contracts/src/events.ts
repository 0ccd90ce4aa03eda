import { eventNames } from './event-names.js';
import { partialOf, prefixedId, timestamp } from './openapi/fragments.js';
import { apiKeySchema, merchantSchema, merchantStandingSchema, productSchema } from './openapi/schemas.js';
import { systemAlertSchema, webhookDeliverySchema, webhookSubscriptionSchema } from './openapi/schemas-webhooks.js';
import { connectionSchema, destinationSchema, ingestedRecordSchema, ruleSchema, sandboxResetSchema, sourceSchema } from './openapi/schemas-merchants.js';
import { throttleOverrideSchema } from './openapi/paths-throttle.js';
import type { JsonSchema } from './openapi/types.js';

export { eventNames, eventTopics, topicOf, type EventName } from './event-names.js';

/**
 * Every state change of the platform is one of these events. The same envelope travels on the
 * bus (exchange `merx.events`, routing key = event name) and, signed, to webhook subscribers.
 */
export interface EventDefinition {
  /** The event name, also the envelope's `topic` and the bus routing key: `products.created`. */
  readonly name: string;
  /** The group a subscriber can subscribe to as a whole: `products`. */
  readonly topic: string;
  readonly description: string;
  /** JSON Schema (2020-12) of `data.object`. */
  readonly dataObjectSchema: JsonSchema;
  /** JSON Schema of `data.previous`, for events that carry it. */
  readonly dataPreviousSchema?: JsonSchema;
}

export type ActorType = 'api_key' | 'app' | 'user' | 'operator' | 'system';

export interface EventEnvelope<TObject = Record<string, unknown>> {
  id: string;
  topic: string;
  merchant_id: string;
  created_at: string;
  api_version: 'v1';
  data: { object: TObject; previous?: Partial<TObject> };
  context?: { request_id?: string | null; actor: { type: ActorType; id: string }; ip?: string | null };
}

const ingestedRecord = ingestedRecordSchema;

export const appGrantSchema: JsonSchema = {
  description: "A merchant's grant to a third-party app, as it ended.",
  type: 'object',
  required: ['id', 'object', 'client_id', 'merchant_id', 'scopes', 'revoked_at'],
  additionalProperties: false,
  properties: {
    id: prefixedId('app', 'The app whose grant ended.'),
    object: { const: 'app_grant' },
    client_id: { type: 'string', pattern: '^mxapp_[0-9A-Za-z]{20}$' },
    merchant_id: prefixedId('mch', 'The merchant who had granted it.'),
    scopes: { type: 'array', items: { type: 'string' } },
    revoked_at: timestamp,
  },
};

export const tokenIssuanceSchema: JsonSchema = {
  type: 'object',
  description: 'An access token issued to a client of the merchant (never the token itself).',
  required: ['id', 'object', 'client_id', 'grant_type', 'scope'],
  additionalProperties: false,
  properties: {
    id: { type: 'string', description: 'The client id the token was issued to.' },
    object: { const: 'token_issuance' },
    client_id: { type: 'string' },
    grant_type: { type: 'string', enum: ['client_credentials', 'authorization_code', 'refresh_token'] },
    scope: { type: 'string' },
  },
};

export const authAttemptSchema: JsonSchema = {
  type: 'object',
  description: 'A refused credential of the merchant (never the secret presented).',
  required: ['id', 'object', 'reason'],
  additionalProperties: false,
  properties: {
    id: { type: 'string', description: 'The client id or user id the attempt named.' },
    object: { const: 'auth_attempt' },
    reason: { type: 'string', enum: ['invalid_client', 'wrong_password'] },
    client_id: { type: ['string', 'null'] },
  },
};

function crudEvents(topic: string, noun: string, object: JsonSchema, strictPrevious = false): EventDefinition[] {
  const previous = strictPrevious ? partialOf(object) : { type: 'object' };
  return [
    { name: `${topic}.created`, topic, description: `A ${noun} was created.`, dataObjectSchema: object },
    {
      name: `${topic}.updated`,
      topic,
      description: `A ${noun} was changed; \`previous\` holds the changed fields before the change.`,
      dataObjectSchema: object,
      dataPreviousSchema: previous,
    },
    { name: `${topic}.deleted`, topic, description: `A ${noun} was deleted; \`object\` is its last state.`, dataObjectSchema: object },
  ];
}

export const eventCatalogue: ReadonlyArray<EventDefinition> = [
  {
    name: 'orders.created',
    topic: 'orders',
    description: 'A source ingested an order record (`object.type` is `order`).',
    dataObjectSchema: ingestedRecord,
  },
  {
    name: 'reviews.submitted',
    topic: 'reviews',
    description: 'A source ingested a review record (`object.type` is `review`).',
    dataObjectSchema: ingestedRecord,
  },
  {
    name: 'campaign_spend.updated',
    topic: 'campaign_spend',
    description: 'A source ingested a campaign spend record (`object.type` is `campaign_spend`).',
    dataObjectSchema: ingestedRecord,
  },
  {
    name: 'system_alerts.raised',
    topic: 'system_alerts',
    description:
      "Something needs the merchant's attention: an endpoint is failing, an event was dead-lettered, a source reported an error (an ingested `alert` record: `kind` is `source_error` and `record` is the record).",
    dataObjectSchema: systemAlertSchema,
  },
  ...crudEvents('products', 'product', productSchema, true),
  {
    name: 'merchants.created',
    topic: 'merchants',
    description: 'An operator provisioned the merchant.',
    dataObjectSchema: merchantSchema,
  },
  {
    name: 'merchants.updated',
    topic: 'merchants',
    description:
      "The merchant changed its profile (`name`, `default_currency`, `timezone`) with `PATCH /api/v1/merchant`; `object` is the merchant, `profile_version` counts profile changes, and `previous` holds the changed fields before the change. Published by the merchants service only; an operator's change of plan or status is `merchants.standing_changed`.",
    dataObjectSchema: merchantSchema,
    dataPreviousSchema: partialOf(merchantSchema),
  },
  {
    name: 'merchants.standing_changed',
    topic: 'merchants',
    description:
      'The operator suspended, reactivated or re-planned the merchant. `object` is the whole standing (`mode`, `plan`, `status`) with its own `version`; `previous` holds the changed fields before the change. A suspension kills every token the merchant holds. Published by the oauth service only.',
    dataObjectSchema: merchantStandingSchema,
    dataPreviousSchema: partialOf(merchantStandingSchema),
  },
  {
    name: 'merchants.throttle_updated',
    topic: 'merchants',
    description: "An operator changed the merchant's throttle numbers; every gateway replica applies `object.overrides` over the plan.",
    dataObjectSchema: throttleOverrideSchema,
  },
  ...crudEvents('sources', 'source', sourceSchema, true),
  ...crudEvents('destinations', 'destination', destinationSchema, true),
  ...crudEvents('rules', 'rule', ruleSchema, true),
  ...crudEvents('connections', 'connection', connectionSchema, true),
  {
    name: 'auth.token_issued',
    topic: 'auth',
    description: 'An access token was issued to an API key or an installed app of the merchant.',
    dataObjectSchema: tokenIssuanceSchema,
  },
  {
    name: 'auth.denied',
    topic: 'auth',
    description: 'A credential of the merchant was refused: a wrong API key secret, a revoked key, or a wrong owner password.',
    dataObjectSchema: authAttemptSchema,
  },
  { name: 'api_keys.created', topic: 'api_keys', description: 'An API key was created.', dataObjectSchema: apiKeySchema },
  { name: 'api_keys.revoked', topic: 'api_keys', description: 'An API key was revoked.', dataObjectSchema: apiKeySchema },
  {
    name: 'apps.grant_revoked',
    topic: 'apps',
    description:
      "A merchant's grant to a third-party app ended (the merchant uninstalled it, or a refresh token or code was used twice): every token of that app for that merchant issued up to `revoked_at` is dead.",
    dataObjectSchema: appGrantSchema,
  },
  {
    name: 'webhooks.subscription_created',
    topic: 'webhooks',
    description: 'A webhook subscription was created.',
    dataObjectSchema: webhookSubscriptionSchema,
  },
  {
    name: 'webhooks.subscription_updated',
    topic: 'webhooks',
    description: 'A webhook subscription was changed; `previous` holds the changed fields before the change.',
    dataObjectSchema: webhookSubscriptionSchema,
    dataPreviousSchema: partialOf(webhookSubscriptionSchema),
  },
  {
    name: 'webhooks.subscription_deleted',
    topic: 'webhooks',
    description: 'A webhook subscription was deleted.',
    dataObjectSchema: webhookSubscriptionSchema,
  },
  {
    name: 'webhooks.secret_rotated',
    topic: 'webhooks',
    description: "A webhook subscription's signing secret was rotated; the old one keeps signing for 24 h. `object` is the subscription, never the secret.",
    dataObjectSchema: webhookSubscriptionSchema,
  },
  {
    name: 'webhooks.dead_letter_replayed',
    topic: 'webhooks',
    description:
      'The merchant replayed a dead letter (alone or in a bulk replay): `object` is the new delivery of the same event, `replay_of` names the dead one. One event per replayed dead letter, so the audit log names each.',
    dataObjectSchema: webhookDeliverySchema,
  },
  {
    name: 'sandbox.reset',
    topic: 'sandbox',
    description:
      'The merchant asked for a sandbox reset: every service wipes its data of the merchant (products, configuration, records, subscriptions, deliveries, events), keeping API keys and the audit log. `object` is the reset, `running`.',
    dataObjectSchema: sandboxResetSchema,
  },
  {
    name: 'sandbox.reset_completed',
    topic: 'sandbox',
    description: 'Every service finished its part of a sandbox reset (and seeded fixtures if asked). `object` is the reset, `completed`.',
    dataObjectSchema: sandboxResetSchema,
  },
];

const catalogueByName = new Map(eventCatalogue.map((event) => [event.name, event]));

export function findEventDefinition(eventName: string): EventDefinition | undefined {
  return catalogueByName.get(eventName);
}

export const eventEnvelopeSchema: JsonSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: 'https://merx.dev/schemas/event-envelope.json',
  title: 'Merx event',
  type: 'object',
  required: ['id', 'topic', 'merchant_id', 'created_at', 'api_version', 'data'],
  additionalProperties: false,
  properties: {
    id: prefixedId('evt', 'Event id; redeliveries and replays keep it, so consumers drop duplicates by it.'),
    topic: { type: 'string', enum: [...eventNames], description: 'The event name.' },
    merchant_id: prefixedId('mch', 'The merchant the event belongs to.'),
    created_at: timestamp,
    api_version: { const: 'v1' },
    data: {
      type: 'object',
      required: ['object'],
      additionalProperties: false,
      properties: {
        object: { type: 'object', description: 'The resource after the change.' },
        previous: { type: 'object', description: 'The changed fields before the change.' },
      },
    },
    context: {
      type: 'object',
      required: ['actor'],
      additionalProperties: false,
      properties: {
        request_id: { type: ['string', 'null'], pattern: '^req_[0-9a-z]{26}$' },
        actor: {
          type: 'object',
          required: ['type', 'id'],
          additionalProperties: false,
          properties: {
            type: { type: 'string', enum: ['api_key', 'app', 'user', 'operator', 'system'] },
            id: { type: 'string', minLength: 1 },
          },
        },
        ip: { type: ['string', 'null'] },
      },
    },
  },
};
