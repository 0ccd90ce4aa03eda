import { commonHeaders, jsonContent, ref } from './components.js';
import { bearerOperation } from './paths-products.js';
import { topicFilterValues } from './schemas-webhooks.js';
import type { JsonSchema, ParameterObject, PathItem, Reference, ResponseObject } from './types.js';

const query = (name: string, description: string, schema: JsonSchema): ParameterObject => ({ name, in: 'query', description, schema });
const timeFilter = (name: string, description: string) => query(name, description, { type: 'string', format: 'date-time' });
const idFilter = (name: string, prefix: string, description: string) => query(name, description, { type: 'string', pattern: `^${prefix}_[0-9a-z]{26}$` });
const page: Reference[] = [ref('parameters', 'Limit'), ref('parameters', 'Cursor')];

const response = (description: string, schemaName: string, headers: Record<string, Reference> = {}): ResponseObject => ({
  description,
  headers: commonHeaders(headers),
  content: jsonContent(ref('schemas', schemaName)),
});

const withEtag = { ETag: ref('headers', 'ETag') };
const jsonBody = (schemaName: string) => ({ required: true, content: jsonContent(ref('schemas', schemaName)) });

/** Headers of an answer replayed for a repeated Idempotency-Key. */
const idempotentReplay = {
  'Idempotent-Replayed': ref('headers', 'IdempotentReplayed'),
  'Original-Request-Id': ref('headers', 'OriginalRequestId'),
};

export const webhookPaths: Record<string, PathItem> = {
  '/api/v1/webhooks/subscriptions': {
    post: bearerOperation(
      'webhooks:write',
      {
        operationId: 'webhooks.subscriptions.create',
        summary: 'Create a webhook subscription',
        description:
          'Subscribes a URL to topics (`orders`), exact events (`products.created`) or everything (`*`). The signing secret is in `secret`, in this response only. The URL must be https in live mode and may not point at private or loopback addresses. Emits `webhooks.subscription_created`.',
        tags: ['webhooks'],
        parameters: [ref('parameters', 'IdempotencyKey')],
        requestBody: jsonBody('WebhookSubscriptionCreate'),
      },
      {
        '201': response(
          'The created subscription with its secret (or, with a repeated Idempotency-Key, the first answer replayed).',
          'WebhookSubscriptionWithSecret',
          {
            ...withEtag,
            Location: ref('headers', 'Location'),
            ...idempotentReplay,
          },
        ),
      },
      ['MalformedRequest', 'IdempotencyKeyInUse', 'PayloadTooLarge', 'UnsupportedMediaType', 'CreateValidationFailed'],
    ),
    get: bearerOperation(
      'webhooks:read',
      {
        operationId: 'webhooks.subscriptions.list',
        summary: 'List webhook subscriptions',
        description: "Lists the merchant's subscriptions, newest first, without their secrets.",
        tags: ['webhooks'],
        parameters: [...page, query('status', 'Only subscriptions in this status.', { type: 'string', enum: ['enabled', 'disabled'] })],
      },
      { '200': response('One page of subscriptions.', 'WebhookSubscriptionList') },
      ['MalformedRequest', 'ValidationFailed'],
    ),
  },
  '/api/v1/webhooks/subscriptions/{id}': {
    parameters: [ref('parameters', 'SubscriptionId')],
    get: bearerOperation(
      'webhooks:read',
      {
        operationId: 'webhooks.subscriptions.retrieve',
        summary: 'Retrieve a webhook subscription',
        description: 'Returns one subscription with its ETag, without its secret.',
        tags: ['webhooks'],
      },
      { '200': response('The subscription.', 'WebhookSubscription', withEtag) },
      ['NotFound'],
    ),
    patch: bearerOperation(
      'webhooks:write',
      {
        operationId: 'webhooks.subscriptions.update',
        summary: 'Update a webhook subscription',
        description:
          'Changes the given fields and increments `version`; a change to nothing changes nothing. With If-Match the update applies only to that version (412 otherwise). Re-enabling a disabled subscription clears `disabled_reason`. Emits `webhooks.subscription_updated` with the changed fields before the change in `previous`.',
        tags: ['webhooks'],
        parameters: [ref('parameters', 'IfMatch')],
        requestBody: jsonBody('WebhookSubscriptionUpdate'),
      },
      { '200': response('The updated subscription.', 'WebhookSubscription', withEtag) },
      ['MalformedRequest', 'NotFound', 'PreconditionFailed', 'PayloadTooLarge', 'UnsupportedMediaType', 'ValidationFailed'],
    ),
    delete: bearerOperation(
      'webhooks:write',
      {
        operationId: 'webhooks.subscriptions.delete',
        summary: 'Delete a webhook subscription',
        description: 'Deletes the subscription; nothing more is delivered to it. Emits `webhooks.subscription_deleted` with its last state.',
        tags: ['webhooks'],
      },
      { '204': { description: 'Deleted; no body.', headers: commonHeaders() } },
      ['NotFound'],
    ),
  },
  '/api/v1/webhooks/subscriptions/{id}/rotate-secret': {
    parameters: [ref('parameters', 'SubscriptionId')],
    post: bearerOperation(
      'webhooks:write',
      {
        operationId: 'webhooks.subscriptions.rotate_secret',
        summary: "Rotate a subscription's signing secret",
        description:
          'Generates a new secret, returned in `secret` in this response only. For 24 h (`previous_secret_expires_at`) every request carries two `webhook-signature` entries, one per secret, so receivers can switch without losing a delivery. Emits `webhooks.secret_rotated` (without the secret). Counts in the `sensitive` throttle class.',
        tags: ['webhooks'],
        parameters: [ref('parameters', 'IdempotencyKey')],
      },
      {
        '200': response(
          'The subscription with its new secret (or, with a repeated Idempotency-Key, the first answer replayed).',
          'WebhookSubscriptionWithSecret',
          { ...withEtag, ...idempotentReplay },
        ),
      },
      ['NotFound', 'IdempotencyKeyInUse'],
    ),
  },
  '/api/v1/webhooks/subscriptions/{id}/stats': {
    parameters: [ref('parameters', 'SubscriptionId')],
    get: bearerOperation(
      'webhooks:read',
      {
        operationId: 'webhooks.subscriptions.stats.retrieve',
        summary: "Retrieve a subscription's delivery statistics",
        description:
          'Attempts, success rate and latency over a recent window (`window_start` to `window_end`), and how many deliveries are pending, failing or dead now.',
        tags: ['webhooks'],
      },
      { '200': response('The statistics.', 'WebhookSubscriptionStats') },
      ['NotFound'],
    ),
  },
  '/api/v1/webhooks/deliveries': {
    get: bearerOperation(
      'webhooks:read',
      {
        operationId: 'webhooks.deliveries.list',
        summary: 'List webhook deliveries',
        description: 'Lists deliveries, newest first, without their attempts. Filters combine with AND.',
        tags: ['webhooks'],
        parameters: [
          ...page,
          idFilter('subscription_id', 'wh', 'Only deliveries to this subscription.'),
          idFilter('destination_id', 'dst', 'Only deliveries to this destination.'),
          idFilter('event_id', 'evt', 'Only deliveries of this event (its first delivery and any replays).'),
          query('topic', 'Only deliveries of this event, or of every event of this topic.', topicFilterValues),
          query('status', 'Only deliveries in this status.', { type: 'string', enum: ['pending', 'succeeded', 'failing', 'dead'] }),
          timeFilter('since', 'Only deliveries created at or after this time.'),
          timeFilter('until', 'Only deliveries created before this time.'),
        ],
      },
      { '200': response('One page of deliveries.', 'WebhookDeliveryList') },
      ['MalformedRequest', 'ValidationFailed'],
    ),
  },
  '/api/v1/webhooks/deliveries/{id}': {
    parameters: [ref('parameters', 'DeliveryId')],
    get: bearerOperation(
      'webhooks:read',
      {
        operationId: 'webhooks.deliveries.retrieve',
        summary: 'Retrieve a webhook delivery',
        description: 'Returns one delivery with every attempt, oldest first: status code, duration, error and the first 4 KiB of each response.',
        tags: ['webhooks'],
      },
      { '200': response('The delivery with its attempts.', 'WebhookDeliveryWithAttempts') },
      ['NotFound'],
    ),
  },
  '/api/v1/webhooks/dead-letters': {
    get: bearerOperation(
      'webhooks:read',
      {
        operationId: 'webhooks.dead_letters.list',
        summary: 'List dead letters',
        description:
          'Lists deliveries that gave up after 72 h of retries and have not been replayed, newest first, with the payload they tried to send. Filters combine with AND.',
        tags: ['webhooks'],
        parameters: [
          ...page,
          idFilter('subscription_id', 'wh', 'Only dead letters of this subscription.'),
          idFilter('destination_id', 'dst', 'Only dead letters of this destination.'),
          query('topic', 'Only dead letters of this event, or of every event of this topic.', topicFilterValues),
          timeFilter('since', 'Only dead letters that died at or after this time.'),
          timeFilter('until', 'Only dead letters that died before this time.'),
        ],
      },
      { '200': response('One page of dead letters.', 'WebhookDeadLetterList') },
      ['MalformedRequest', 'ValidationFailed'],
    ),
  },
  '/api/v1/webhooks/dead-letters/replay': {
    post: bearerOperation(
      'webhooks:write',
      {
        operationId: 'webhooks.dead_letters.replay_all',
        summary: 'Replay dead letters matching a filter',
        description:
          'Replays up to `limit` dead letters matching the filter (all of them without one): each becomes a new delivery of the same event id and payload, as `POST /api/v1/webhooks/dead-letters/{id}/replay` makes it. `has_more` says whether to send the request again. Counts in the `sensitive` throttle class.',
        tags: ['webhooks'],
        parameters: [ref('parameters', 'IdempotencyKey')],
        requestBody: { required: false, content: jsonContent(ref('schemas', 'DeadLetterReplayRequest')) },
      },
      { '202': response('The replays were queued (or, with a repeated Idempotency-Key, the first answer replayed).', 'DeadLetterReplay', idempotentReplay) },
      ['MalformedRequest', 'IdempotencyKeyInUse', 'PayloadTooLarge', 'UnsupportedMediaType', 'ValidationFailed'],
    ),
  },
  '/api/v1/webhooks/dead-letters/{id}': {
    parameters: [ref('parameters', 'DeliveryId')],
    get: bearerOperation(
      'webhooks:read',
      {
        operationId: 'webhooks.dead_letters.retrieve',
        summary: 'Retrieve a dead letter',
        description: 'Returns one dead letter by its delivery id.',
        tags: ['webhooks'],
      },
      { '200': response('The dead letter.', 'WebhookDeadLetter') },
      ['NotFound'],
    ),
  },
  '/api/v1/webhooks/dead-letters/{id}/replay': {
    parameters: [ref('parameters', 'DeliveryId')],
    post: bearerOperation(
      'webhooks:write',
      {
        operationId: 'webhooks.dead_letters.replay',
        summary: 'Replay a dead letter',
        description:
          'Creates a new delivery of the same event id and payload (`replay_of` names the dead one, whose `replayed_by` names the new one); the dead letter leaves the list. Counts in the `sensitive` throttle class.',
        tags: ['webhooks'],
        parameters: [ref('parameters', 'IdempotencyKey')],
      },
      {
        '201': response('The new delivery (or, with a repeated Idempotency-Key, the first answer replayed).', 'WebhookDelivery', {
          Location: ref('headers', 'Location'),
          ...idempotentReplay,
        }),
      },
      ['NotFound', 'ReplayConflict'],
    ),
  },
  '/api/v1/events': {
    get: bearerOperation(
      'webhooks:read',
      {
        operationId: 'events.list',
        summary: 'List events',
        description: "Lists the merchant's events of the last 30 days, newest first, in the shape webhooks deliver them. Filters combine with AND.",
        tags: ['events'],
        parameters: [
          ...page,
          query('topic', 'Only this event, or every event of this topic.', topicFilterValues),
          timeFilter('since', 'Only events created at or after this time.'),
          timeFilter('until', 'Only events created before this time.'),
        ],
      },
      { '200': response('One page of events.', 'EventList') },
      ['MalformedRequest', 'ValidationFailed'],
    ),
  },
  '/api/v1/events/{id}': {
    parameters: [ref('parameters', 'EventId')],
    get: bearerOperation(
      'webhooks:read',
      { operationId: 'events.retrieve', summary: 'Retrieve an event', description: 'Returns one event of the last 30 days.', tags: ['events'] },
      { '200': response('The event.', 'Event') },
      ['NotFound'],
    ),
  },
};
