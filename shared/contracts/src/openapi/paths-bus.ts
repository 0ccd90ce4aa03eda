import { commonHeaders, jsonContent, ref } from './components.js';
import { timestamp } from './fragments.js';
import { operatorOperation } from './paths-apps.js';
import type { JsonSchema, PathItem } from './types.js';

/**
 * Every durable work queue of a deployment, by logical name (the bus prefixes them with the
 * deployment). Services name their queues from here (the kit's WORK_QUEUES), so the operator API
 * can list every poison queue and the launchers can remove a deployment's queues.
 */
export const BUS_WORK_QUEUES = {
  audit: 'audit.events',
  catalog: 'catalog.events',
  merchants: 'merchants.events',
  oauth: 'oauth.merchants',
  webhooks: 'webhooks.events',
  gatewayThrottle: 'gateway.throttle_overrides',
} as const;

const busWorkQueues: string[] = Object.values(BUS_WORK_QUEUES);

const queueName: JsonSchema = {
  type: 'string',
  enum: busWorkQueues,
  description: "A work queue by its logical name; the broker's name has the deployment in front (`merx.audit.events`).",
};

export const poisonedMessageSchema: JsonSchema = {
  type: 'object',
  description: "A bus message that failed every delivery it was allowed and was set aside in its queue's poison queue.",
  required: ['object', 'queue', 'event_id', 'topic', 'merchant_id', 'failures', 'last_error', 'poisoned_at', 'event'],
  additionalProperties: false,
  properties: {
    object: { const: 'poisoned_message' },
    queue: queueName,
    event_id: { type: 'string', description: "The event's id; name it to replay this message alone." },
    topic: { type: 'string' },
    merchant_id: { type: 'string' },
    failures: { type: 'integer', minimum: 0, description: 'Failed deliveries before it was set aside.' },
    last_error: { type: ['string', 'null'], description: 'The last handler error; null when the broker set it aside (a consumer that crashed on it).' },
    poisoned_at: { anyOf: [timestamp, { type: 'null' }] },
    event: { type: 'object', description: 'The message: the event envelope as published.' },
  },
};

export const busPoisonSchema: JsonSchema = {
  type: 'object',
  required: ['object', 'queues', 'data'],
  additionalProperties: false,
  properties: {
    object: { const: 'bus_poison' },
    queues: {
      type: 'array',
      description: 'How many messages each listed queue holds in its poison queue.',
      items: {
        type: 'object',
        required: ['queue', 'count'],
        additionalProperties: false,
        properties: { queue: queueName, count: { type: 'integer', minimum: 0 } },
      },
    },
    data: {
      type: 'array',
      items: ref('schemas', 'PoisonedMessage'),
      description: 'The oldest poisoned messages of each listed queue, at most `limit` per queue.',
    },
  },
};

export const busPoisonReplayRequestSchema: JsonSchema = {
  type: 'object',
  required: ['queue'],
  additionalProperties: false,
  properties: {
    queue: queueName,
    event_ids: {
      type: 'array',
      minItems: 1,
      maxItems: 1000,
      uniqueItems: true,
      items: { type: 'string', minLength: 1, maxLength: 255 },
      description: "Only these messages; every message of the queue's poison queue when absent.",
    },
  },
};

export const busPoisonReplaySchema: JsonSchema = {
  type: 'object',
  required: ['object', 'queue', 'replayed'],
  additionalProperties: false,
  properties: {
    object: { const: 'bus_poison_replay' },
    queue: queueName,
    replayed: { type: 'integer', minimum: 0, description: 'Messages put back on the work queue.' },
  },
};

export const busAdminPaths: Record<string, PathItem> = {
  '/admin/v1/bus/poison': {
    get: operatorOperation(
      {
        operationId: 'bus.admin.poison.list',
        summary: 'List poisoned bus messages',
        description:
          "Messages a service's consumer failed on every delivery it was allowed (retried after 1 s, 5 s, 30 s, 2 min, then every 10 min, up to 10 deliveries by default), set aside in the poison queue of its work queue, with the last error. Listing leaves them where they are. Both modes: RabbitMQ poison queues in the distributed one, the embedded database in the embedded one. Operators only.",
        tags: ['ops'],
        parameters: [
          { name: 'queue', in: 'query', required: false, description: 'One work queue; every queue of the deployment when absent.', schema: queueName },
          {
            name: 'limit',
            in: 'query',
            required: false,
            description: 'Messages shown per queue.',
            schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
          },
        ],
      },
      { '200': { description: 'Counts per queue and the oldest messages.', headers: commonHeaders(), content: jsonContent(ref('schemas', 'BusPoison')) } },
    ),
  },
  '/admin/v1/bus/poison/replay': {
    post: operatorOperation(
      {
        operationId: 'bus.admin.poison.replay',
        summary: 'Replay poisoned bus messages',
        description:
          "Puts poisoned messages (all of the queue's, or the named events) back on their work queue with a fresh delivery count, once whatever made them fail is fixed. Consumers drop an event they already handled (their inbox), so a replay is harmless. Operators only.",
        tags: ['ops'],
        requestBody: { required: true, content: jsonContent(ref('schemas', 'BusPoisonReplayRequest')) },
      },
      { '200': { description: 'How many messages went back.', headers: commonHeaders(), content: jsonContent(ref('schemas', 'BusPoisonReplay')) } },
    ),
  },
};
