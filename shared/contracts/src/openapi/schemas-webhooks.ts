import type { EventDefinition } from '../events.js';
import { eventNames, eventTopics } from '../event-names.js';
import { prefixedId, resourceVersion, timestamp } from './fragments.js';
import type { JsonSchema } from './types.js';

/**
 * Wire shapes of the webhooks service: subscriptions, their deliveries and dead letters, and the
 * events they carry. The subscription and the system alert are also event objects (events.ts), so
 * like every resource schema they stand alone, without references to other components.
 */

const nullable = (schema: JsonSchema, description?: string): JsonSchema => ({
  ...schema,
  type: ['string', 'null'],
  ...(description ? { description } : {}),
});

const eventName: JsonSchema = { type: 'string', enum: [...eventNames], description: 'An event name of the catalogue.' };

/** What a subscription's `topics` may name, and what the `topic` filters accept besides exact names. */
export const subscribableTopic: JsonSchema = {
  type: 'string',
  enum: ['*', ...eventTopics, ...eventNames],
  'x-merx-error': { code: 'unknown_topic', message: 'must be an event name (orders.created), a topic (orders) or *' },
  description: 'A topic of the event catalogue (`orders`: all its events), an exact event name (`products.created`), or `*` (every event).',
};

export const topicFilterValues: JsonSchema = {
  type: 'string',
  enum: [...eventTopics, ...eventNames],
  'x-merx-error': { code: 'unknown_topic', message: 'must be an event name (orders.created) or a topic (orders)' },
  description: 'An event name (`products.created`) or a topic (`products`: all its events).',
};

export const webhookUrl: JsonSchema = {
  type: 'string',
  format: 'uri',
  pattern: '^https?://',
  'x-merx-error': { code: 'invalid_url', message: 'must be an absolute http or https URL' },
  description: 'Where deliveries are POSTed. https in live mode; private and loopback addresses are refused unless the platform is configured to allow them.',
  examples: ['https://example.com/merx/webhooks'],
};

const subscriptionTopics: JsonSchema = {
  type: 'array',
  minItems: 1,
  maxItems: 100,
  items: subscribableTopic,
};

const subscriptionDescription: JsonSchema = { type: ['string', 'null'], maxLength: 500 };
const subscriptionStatus: JsonSchema = { type: 'string', enum: ['enabled', 'disabled'] };
const disabledReasons = ['by_merchant', 'endpoint_gone', 'endpoint_failing'];

/** Why deliveries fail: `http` is a non-2xx answer; `blocked` an address the platform refuses to call. */
const deliveryErrors = ['timeout', 'dns', 'connection', 'http', 'blocked', 'invalid_payload', 'interrupted'];
const deliveryError = (description: string): JsonSchema => ({ type: ['string', 'null'], enum: [...deliveryErrors, null], description });
const httpStatus = (description: string): JsonSchema => ({ type: ['integer', 'null'], minimum: 100, maximum: 599, description });
const count = (description: string): JsonSchema => ({ type: 'integer', minimum: 0, description });

export const signingSecretSchema: JsonSchema = {
  type: 'string',
  pattern: '^whsec_[A-Za-z0-9+/]+={0,2}$',
  description: 'The signing secret (Standard Webhooks format: `whsec_` + base64 of the key bytes). Shown only on creation and rotation.',
};

const subscriptionProperties = {
  id: prefixedId('wh', 'Webhook subscription id.'),
  object: { const: 'webhook_subscription' },
  url: webhookUrl,
  topics: { ...subscriptionTopics, uniqueItems: true, description: 'What the subscription receives, duplicates removed, in the order given.' },
  description: subscriptionDescription,
  status: { ...subscriptionStatus, description: 'Only `enabled` subscriptions receive deliveries.' },
  disabled_reason: {
    type: ['string', 'null'],
    enum: [...disabledReasons, null],
    description: 'Why a `disabled` subscription is disabled: the merchant did it, the endpoint answered 410 Gone, or it kept failing. Null while enabled.',
  },
  secret_rotated_at: nullable(timestamp, 'When the secret was last rotated; null if never.'),
  previous_secret_expires_at: nullable(timestamp, 'Until then the previous secret signs too (a second signature); null when no previous secret signs.'),
  version: resourceVersion,
  created_at: timestamp,
  updated_at: timestamp,
} satisfies Record<string, JsonSchema>;

const subscriptionRequired = Object.keys(subscriptionProperties);

/** An enabled subscription has no disabled_reason; a disabled one says why. Checked only where `status` is present. */
const statusAndReason: JsonSchema[] = [
  {
    if: { properties: { status: { const: 'enabled' } }, required: ['status'] },
    then: { properties: { disabled_reason: { const: null } } },
  },
  {
    if: { properties: { status: { const: 'disabled' } }, required: ['status'] },
    then: { properties: { disabled_reason: { type: 'string' } } },
  },
];

/** A subscription as every response but two and every event show it: never with its secret. */
export const webhookSubscriptionSchema: JsonSchema = {
  type: 'object',
  description: 'Where and which events of the merchant are delivered, signed. Never carries the secret.',
  required: subscriptionRequired,
  additionalProperties: false,
  properties: subscriptionProperties,
  allOf: statusAndReason,
};

export const webhookSubscriptionWithSecretSchema: JsonSchema = {
  type: 'object',
  description: 'A subscription as returned on creation and on secret rotation, with its signing secret.',
  required: [...subscriptionRequired, 'secret'],
  additionalProperties: false,
  properties: { ...subscriptionProperties, secret: signingSecretSchema },
  allOf: statusAndReason,
};

export const webhookSubscriptionCreateSchema: JsonSchema = {
  type: 'object',
  required: ['url', 'topics'],
  additionalProperties: false,
  properties: {
    url: webhookUrl,
    topics: { ...subscriptionTopics, description: 'Duplicates are dropped.', examples: [['orders', 'products.created'], ['*']] },
    description: subscriptionDescription,
    status: { ...subscriptionStatus, default: 'enabled' },
  },
};

export const webhookSubscriptionUpdateSchema: JsonSchema = {
  type: 'object',
  description: 'The fields to change; omitted fields keep their value. `topics` replaces the whole list.',
  additionalProperties: false,
  properties: {
    url: webhookUrl,
    topics: subscriptionTopics,
    description: subscriptionDescription,
    status: { ...subscriptionStatus, description: 'Enabling a disabled subscription clears `disabled_reason`; disabling sets it to `by_merchant`.' },
  },
};

const nullableLatency = (description: string): JsonSchema => ({ type: ['number', 'null'], minimum: 0, description });

export const webhookSubscriptionStatsSchema: JsonSchema = {
  type: 'object',
  description: "How the subscription's endpoint has been doing over a recent window, and what is waiting.",
  required: ['object', 'subscription_id', 'window_start', 'window_end', 'attempts', 'succeeded', 'failed', 'success_rate', 'latency_ms', 'deliveries'],
  additionalProperties: false,
  properties: {
    object: { const: 'webhook_subscription_stats' },
    subscription_id: prefixedId('wh', 'The subscription.'),
    window_start: timestamp,
    window_end: timestamp,
    attempts: count('Delivery attempts started in the window.'),
    succeeded: count('Attempts answered 2xx in time.'),
    failed: count('Attempts that failed (non-2xx, timeout, refused, ...).'),
    success_rate: { type: ['number', 'null'], minimum: 0, maximum: 1, description: '`succeeded / attempts`; null without attempts.' },
    latency_ms: {
      type: 'object',
      required: ['p50', 'p99'],
      additionalProperties: false,
      description: 'Attempt durations in the window; null without attempts.',
      properties: { p50: nullableLatency('Median.'), p99: nullableLatency('99th percentile.') },
    },
    deliveries: {
      type: 'object',
      required: ['pending', 'failing', 'dead'],
      additionalProperties: false,
      description: 'Deliveries of the subscription by status now (not limited to the window).',
      properties: {
        pending: count('Not yet attempted.'),
        failing: count('Failed at least once and due for a retry.'),
        dead: count('Gave up after 72 h; listed under dead letters until replayed.'),
      },
    },
  },
};

export const webhookAttemptSchema: JsonSchema = {
  type: 'object',
  description: 'One HTTP request of a delivery.',
  required: ['number', 'started_at', 'status_code', 'duration_ms', 'error', 'error_message', 'response_excerpt'],
  additionalProperties: false,
  properties: {
    number: { type: 'integer', minimum: 1, description: "The attempt's position in its delivery, from 1." },
    started_at: timestamp,
    status_code: httpStatus("The endpoint's HTTP status; null when no answer came."),
    duration_ms: count('From sending the request to the end of the answer (or the failure).'),
    error: deliveryError('Why the attempt failed; null when it succeeded.'),
    error_message: { type: ['string', 'null'], description: 'The failure in words; null when it succeeded.' },
    response_excerpt: {
      type: ['string', 'null'],
      maxLength: 4096,
      description: 'The first 4 KiB of the response body as UTF-8 text; null when no answer came.',
    },
  },
};

const deliveryProperties = {
  id: prefixedId('del', 'Delivery id.'),
  object: { const: 'webhook_delivery' },
  event_id: prefixedId('evt', 'The event delivered; the `webhook-id` header of every attempt.'),
  topic: eventName,
  subscription_id: nullable(prefixedId('wh', 'The subscription delivered to; null for destinations and once the subscription is deleted.')),
  destination_id: nullable(prefixedId('dst', 'The destination delivered to; null for subscriptions.')),
  status: {
    type: 'string',
    enum: ['pending', 'succeeded', 'failing', 'dead'],
    description: 'pending → succeeded, or pending → failing (retried with backoff) → succeeded | dead (after 72 h).',
  },
  attempt_count: count('Attempts made so far.'),
  next_attempt_at: nullable(timestamp, 'When the next attempt is due; null once succeeded or dead.'),
  last_status_code: httpStatus('HTTP status of the latest attempt; null before the first or when it got no answer.'),
  last_error: deliveryError('Why the latest attempt failed; null before the first and after a success.'),
  replay_of: nullable(prefixedId('del', 'The dead delivery this one replays.')),
  replayed_by: nullable(prefixedId('del', 'The delivery that replayed this dead one.')),
  created_at: timestamp,
  updated_at: timestamp,
  completed_at: nullable(timestamp, 'When it succeeded or died; null while pending or failing.'),
} satisfies Record<string, JsonSchema>;

/** A delivery as lists show it: without its attempts. */
export const webhookDeliverySchema: JsonSchema = {
  type: 'object',
  description: 'One event on its way to one subscription (or destination).',
  required: Object.keys(deliveryProperties),
  additionalProperties: false,
  properties: deliveryProperties,
};

export const webhookDeliveryWithAttemptsSchema: JsonSchema = {
  type: 'object',
  description: 'A delivery with every attempt, oldest first.',
  required: [...Object.keys(deliveryProperties), 'attempts'],
  additionalProperties: false,
  properties: {
    ...deliveryProperties,
    attempts: { type: 'array', items: { $ref: '#/components/schemas/WebhookAttempt' } },
  },
};

export const deadLetterReplayRequestSchema: JsonSchema = {
  type: 'object',
  description: 'Which dead letters to replay; filters combine with AND, and none means all of them.',
  additionalProperties: false,
  properties: {
    subscription_id: prefixedId('wh', 'Only dead letters of this subscription.'),
    destination_id: prefixedId('dst', 'Only dead letters of this destination.'),
    topic: topicFilterValues,
    since: { type: 'string', format: 'date-time', description: 'Only dead letters that died at or after this time.' },
    until: { type: 'string', format: 'date-time', description: 'Only dead letters that died before this time.' },
    limit: { type: 'integer', minimum: 1, maximum: 1000, default: 1000, description: 'Replay at most this many; `has_more` says whether more matched.' },
  },
};

export const deadLetterReplaySchema: JsonSchema = {
  type: 'object',
  required: ['object', 'replayed', 'delivery_ids', 'has_more'],
  additionalProperties: false,
  properties: {
    object: { const: 'dead_letter_replay' },
    replayed: count('Dead letters replayed by this request.'),
    delivery_ids: {
      type: 'array',
      maxItems: 1000,
      items: prefixedId('del', 'A new delivery.'),
      description: 'The new deliveries, one per replayed dead letter.',
    },
    has_more: { type: 'boolean', description: 'More dead letters matched than `limit`; send the request again for the next batch.' },
  },
};

export const systemAlertSchema: JsonSchema = {
  type: 'object',
  description: "Something that needs the merchant's attention.",
  required: [
    'id',
    'object',
    'kind',
    'severity',
    'message',
    'subscription_id',
    'destination_id',
    'delivery_id',
    'event_id',
    'source_id',
    'record',
    'created_at',
  ],
  additionalProperties: false,
  properties: {
    id: prefixedId('alr', 'Alert id.'),
    object: { const: 'system_alert' },
    kind: {
      type: 'string',
      enum: ['event_dead_lettered', 'endpoint_disabled', 'source_error'],
      description:
        'A delivery gave up after 72 h; a subscription or destination was disabled (410 Gone or failing for too long); a source reported an error (an ingested alert record).',
    },
    severity: { type: 'string', enum: ['warning', 'critical'] },
    message: { type: 'string', minLength: 1 },
    subscription_id: nullable(prefixedId('wh', 'The subscription concerned, if any.')),
    destination_id: nullable(prefixedId('dst', 'The destination concerned, if any.')),
    delivery_id: nullable(prefixedId('del', 'The delivery concerned, if any.')),
    event_id: nullable(prefixedId('evt', 'The event concerned, if any.')),
    source_id: nullable(prefixedId('src', 'The source that reported it, for `source_error`.')),
    record: {
      type: ['object', 'null'],
      description:
        'For `source_error`: the ingested `alert` record (`id`, `type`, `source_id`, `external_id`, `occurred_at`, `data`, `received_at`), as the records list shows it. Null otherwise.',
    },
    created_at: timestamp,
  },
};

/**
 * `data` checked against the catalogue entry that `topic` names, as validateEvent does. One
 * component referenced by every event-shaped schema, so its many branches are compiled once.
 * Built from the catalogue it is given because events.ts itself needs the schemas above.
 */
export function eventDataByTopicSchema(catalogue: ReadonlyArray<EventDefinition>): JsonSchema {
  return {
    type: 'object',
    description: "An event's `data.object` and `data.previous` as the catalogue entry named by `topic` describes them.",
    allOf: catalogue.map((definition) => ({
      if: { properties: { topic: { const: definition.name } }, required: ['topic'] },
      then: {
        properties: {
          data: {
            type: 'object',
            properties: { object: definition.dataObjectSchema, previous: definition.dataPreviousSchema ?? false },
          },
        },
      },
    })),
  };
}

/**
 * The envelope members every event carries, in the order webhooks send them. The events API,
 * dead letters and each event's webhook payload (webhooks.ts) are built from these, so the
 * envelope is described once.
 */
export const eventEnvelopeMembers = {
  id: prefixedId('evt', 'Event id; retries and replays keep it (it is the `webhook-id` header), so receivers drop duplicates by it.'),
  topic: { ...eventName, description: 'The event name.' },
  merchant_id: prefixedId('mch', 'The merchant the event belongs to.'),
  created_at: timestamp,
  api_version: { const: 'v1' },
} satisfies Record<string, JsonSchema>;

export const hmacSha256Schema: JsonSchema = {
  type: 'string',
  pattern: '^[0-9a-f]{64}$',
  description:
    "Hex HMAC-SHA256 of the RFC 8785 canonical JSON of the other six fields, keyed by the secret's bytes (base64 after `whsec_`, the key Standard Webhooks uses).",
};

/** An event's members in the order webhooks send them, with `before` after `id`; `data` is checked against the catalogue by topic. */
function eventShape(description: string, before: Record<string, JsonSchema>): JsonSchema {
  const { id, ...rest } = eventEnvelopeMembers;
  const properties: Record<string, JsonSchema> = {
    id,
    ...before,
    ...rest,
    data: {
      type: 'object',
      required: ['object'],
      additionalProperties: false,
      properties: {
        object: { type: 'object', description: 'The resource after the change.' },
        previous: { type: 'object', description: 'The changed fields before the change (update events only).' },
      },
    },
  };
  return {
    type: 'object',
    description,
    required: Object.keys(properties),
    additionalProperties: false,
    properties,
    allOf: [{ $ref: '#/components/schemas/EventDataByTopic' }],
  };
}

export const eventSchema: JsonSchema = eventShape('A state change of the merchant, kept for 30 days.', { object: { const: 'event' } });

export const webhookDeadLetterSchema: JsonSchema = {
  type: 'object',
  description: 'A delivery that gave up after 72 h of retries, with what it tried to send, until it is replayed.',
  required: [
    'id',
    'object',
    'event_id',
    'topic',
    'subscription_id',
    'destination_id',
    'payload',
    'last_status_code',
    'last_error',
    'attempt_count',
    'dead_at',
    'created_at',
  ],
  additionalProperties: false,
  properties: {
    id: prefixedId('del', "The dead delivery's id."),
    object: { const: 'webhook_dead_letter' },
    event_id: deliveryProperties.event_id,
    topic: eventName,
    subscription_id: deliveryProperties.subscription_id,
    destination_id: deliveryProperties.destination_id,
    payload: eventShape('The webhook body as sent, without `hmac_sha256`; a replay sends this again, under the same event id.', {}),
    last_status_code: deliveryProperties.last_status_code,
    last_error: deliveryProperties.last_error,
    attempt_count: deliveryProperties.attempt_count,
    dead_at: { ...timestamp, description: 'When the delivery gave up.' },
    created_at: timestamp,
  },
};
