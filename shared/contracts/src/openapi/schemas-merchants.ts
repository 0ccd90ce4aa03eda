import { currencyCode, prefixedId, resourceVersion, timestamp, timezone } from './fragments.js';
import { signingSecretSchema, webhookUrl } from './schemas-webhooks.js';
import type { JsonSchema } from './types.js';

/**
 * Wire shapes of the merchants service: the merchant's own settings, sources, destinations,
 * rules, connections, ingested records and sandbox resets. Each resource schema stands alone
 * (no references), because the event catalogue embeds the same schemas as event objects.
 */

const nullable = (schema: JsonSchema, description?: string): JsonSchema => ({
  ...schema,
  type: [...(Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string]), 'null'],
  ...(description ? { description } : {}),
});

const name: JsonSchema = { type: 'string', minLength: 1, maxLength: 255, description: 'A name for people, 1-255 characters.' };

/** Record types a source ingests, and the event each accepted record emits. */
export const recordTypes = ['order', 'review', 'campaign_spend', 'alert'] as const;
export type RecordType = (typeof recordTypes)[number];
export const recordEventOfType: Record<RecordType, string> = {
  order: 'orders.created',
  review: 'reviews.submitted',
  campaign_spend: 'campaign_spend.updated',
  alert: 'system_alerts.raised',
};
export const recordEventNames = Object.values(recordEventOfType);

export const MAX_RECORDS_PER_BATCH = 500;

const recordEventName: JsonSchema = { type: 'string', enum: recordEventNames, description: 'An event that ingested records emit.' };
const recordEventTypes: JsonSchema = {
  type: 'array',
  minItems: 1,
  maxItems: recordEventNames.length,
  uniqueItems: true,
  items: recordEventName,
  description: 'The record events this applies to. Defaults to all four.',
};

/* Merchant --------------------------------------------------------------------------------- */

export const merchantUpdateSchema: JsonSchema = {
  type: 'object',
  description: "The merchant's own settings. `mode`, `plan` and `status` are the operator's and cannot be changed here.",
  minProperties: 1,
  additionalProperties: false,
  properties: { name, default_currency: currencyCode, timezone },
};

/* Source ----------------------------------------------------------------------------------- */

export const sourceKinds = ['storefront', 'marketplace', 'pos', 'reviews', 'ads', 'custom'] as const;
export const sourceStatuses = ['active', 'paused', 'disabled'] as const;

const sourceSettings: JsonSchema = {
  type: 'object',
  maxProperties: 50,
  description: 'Free-form settings of the source (at most 50 keys, 16 KiB as JSON).',
};

const sourceProperties = {
  id: prefixedId('src', 'Source id.'),
  object: { const: 'source' },
  name,
  kind: { type: 'string', enum: [...sourceKinds], description: 'Where the data comes from.' },
  status: { type: 'string', enum: [...sourceStatuses], description: 'Only `active` sources accept records; `paused` and `disabled` answer 409.' },
  settings: sourceSettings,
  version: resourceVersion,
  created_at: timestamp,
  updated_at: timestamp,
} satisfies Record<string, JsonSchema>;

export const sourceSchema: JsonSchema = {
  type: 'object',
  description: 'Where commerce data comes from: a storefront, a marketplace, a POS, a review or ads platform.',
  required: Object.keys(sourceProperties),
  additionalProperties: false,
  properties: sourceProperties,
};

export const sourceCreateSchema: JsonSchema = {
  type: 'object',
  required: ['name', 'kind'],
  additionalProperties: false,
  properties: { name, kind: sourceProperties.kind, status: { ...sourceProperties.status, description: 'Defaults to `active`.' }, settings: sourceSettings },
};

export const sourceUpdateSchema: JsonSchema = {
  type: 'object',
  minProperties: 1,
  additionalProperties: false,
  properties: {
    name,
    kind: sourceProperties.kind,
    status: sourceProperties.status,
    settings: { ...sourceSettings, description: 'Replaces the settings as a whole.' },
  },
};

/* Destination ------------------------------------------------------------------------------ */

export const destinationKinds = ['webhook', 'http'] as const;
export const destinationStatuses = ['active', 'paused', 'disabled'] as const;
export const destinationDisabledReasons = ['by_merchant', 'endpoint_gone', 'endpoint_failing'] as const;

const destinationProperties = {
  id: prefixedId('dst', 'Destination id.'),
  object: { const: 'destination' },
  name,
  kind: {
    type: 'string',
    enum: [...destinationKinds],
    description:
      '`webhook`: the Merx event envelope with `hmac_sha256`, as webhook subscribers get it. `http`: the routed record alone as the JSON body (for an ERP import API). Both carry the Standard Webhooks signature headers.',
  },
  url: {
    ...webhookUrl,
    description: 'Where routed records are POSTed. https for live merchants; private and loopback addresses are refused unless the platform allows them.',
  },
  status: {
    type: 'string',
    enum: [...destinationStatuses],
    description: 'Deliveries go out while `active`; while `paused` or `disabled` they wait and resume when the destination is active again.',
  },
  disabled_reason: {
    type: ['string', 'null'],
    enum: [...destinationDisabledReasons, null],
    description: 'Why a `disabled` destination is disabled: the merchant did it, the endpoint answered 410 Gone, or it kept failing. Null otherwise.',
  },
  version: resourceVersion,
  created_at: timestamp,
  updated_at: timestamp,
} satisfies Record<string, JsonSchema>;

export const destinationSchema: JsonSchema = {
  type: 'object',
  description: 'Where routed records go: signed, logged, retried and dead-lettered like webhooks. Never shows its secret after creation.',
  required: Object.keys(destinationProperties),
  additionalProperties: false,
  properties: destinationProperties,
};

export const destinationWithSecretSchema: JsonSchema = {
  type: 'object',
  description: 'A destination as its creation returns it: the only time its signing secret is shown.',
  required: [...Object.keys(destinationProperties), 'secret'],
  additionalProperties: false,
  properties: { ...destinationProperties, secret: signingSecretSchema },
};

export const destinationCreateSchema: JsonSchema = {
  type: 'object',
  required: ['name', 'url'],
  additionalProperties: false,
  properties: {
    name,
    kind: { ...destinationProperties.kind, description: `${destinationProperties.kind.description} Defaults to \`webhook\`.` },
    url: destinationProperties.url,
    status: { type: 'string', enum: ['active', 'paused'], description: 'Defaults to `active`.' },
  },
};

export const destinationUpdateSchema: JsonSchema = {
  type: 'object',
  minProperties: 1,
  additionalProperties: false,
  properties: {
    name,
    kind: destinationProperties.kind,
    url: destinationProperties.url,
    status: {
      type: 'string',
      enum: [...destinationStatuses],
      description: '`active` resumes a destination that was paused, or disabled by the merchant or by the delivery engine.',
    },
  },
};

/* Rule ------------------------------------------------------------------------------------- */

export const ruleActions = ['forward', 'drop', 'transform'] as const;
export const MAX_CONDITION_LENGTH = 4096;

const fieldPath: JsonSchema = {
  type: 'string',
  minLength: 1,
  maxLength: 255,
  pattern: '^[A-Za-z0-9_-]+(\\.[A-Za-z0-9_-]+)*$',
  description: "A dotted path into the record's `data` (`customer.email`).",
};

export const ruleTransformSchema: JsonSchema = {
  type: 'object',
  description:
    "A field mapping applied to the record's `data`, in this order: `keep` (only these paths survive), `remove`, `rename` (from → to), `set` (path → JSON value). At least one of the four.",
  minProperties: 1,
  additionalProperties: false,
  properties: {
    keep: { type: 'array', minItems: 1, maxItems: 100, uniqueItems: true, items: fieldPath },
    remove: { type: 'array', minItems: 1, maxItems: 100, uniqueItems: true, items: fieldPath },
    rename: { type: 'object', minProperties: 1, maxProperties: 100, propertyNames: fieldPath, additionalProperties: fieldPath },
    set: { type: 'object', minProperties: 1, maxProperties: 100, propertyNames: fieldPath },
  },
};

const ruleProperties = {
  id: prefixedId('rul', 'Rule id.'),
  object: { const: 'rule' },
  name,
  event_types: recordEventTypes,
  condition: {
    type: 'string',
    minLength: 1,
    maxLength: MAX_CONDITION_LENGTH,
    description:
      'A CEL expression of type bool over the record: `type`, `external_id`, `occurred_at` (timestamp), `source_id` and `data` (the record\'s own data). Example: `data.total >= 100.0 && data.currency == "EUR"`. Checked when saved: a syntax error, an unknown variable or function, or a non-bool result is a 422 naming the position. Defaults to `true`.',
    examples: ['data.total >= 100.0 && data.currency == "EUR"'],
  },
  action: {
    type: 'string',
    enum: [...ruleActions],
    description:
      'When the condition holds: `forward` routes the record now (a connection with any forward rule routes only records some forward rule matches), `drop` stops it, `transform` applies `transform` and goes on to the next rule.',
  },
  transform: { ...nullable(ruleTransformSchema), description: 'The mapping of a `transform` rule; null for the other actions.' },
  enabled: { type: 'boolean', description: 'A disabled rule is skipped.' },
  version: resourceVersion,
  created_at: timestamp,
  updated_at: timestamp,
} satisfies Record<string, JsonSchema>;

export const ruleSchema: JsonSchema = {
  type: 'object',
  description: 'A condition and an action on records, applied by the connections that list it.',
  required: Object.keys(ruleProperties),
  additionalProperties: false,
  properties: ruleProperties,
};

export const ruleCreateSchema: JsonSchema = {
  type: 'object',
  required: ['name', 'action'],
  additionalProperties: false,
  properties: {
    name,
    event_types: ruleProperties.event_types,
    condition: ruleProperties.condition,
    action: ruleProperties.action,
    transform: { $ref: '#/components/schemas/RuleTransform', description: 'Required for `transform`, refused for the other actions.' },
    enabled: { type: 'boolean', description: 'Defaults to true.' },
  },
};

export const ruleUpdateSchema: JsonSchema = {
  type: 'object',
  minProperties: 1,
  additionalProperties: false,
  properties: {
    name,
    event_types: ruleProperties.event_types,
    condition: ruleProperties.condition,
    action: ruleProperties.action,
    transform: ruleProperties.transform,
    enabled: ruleProperties.enabled,
  },
};

/* Connection ------------------------------------------------------------------------------- */

export const connectionStatuses = ['active', 'paused'] as const;
export const MAX_RULES_PER_CONNECTION = 20;

const connectionProperties = {
  id: prefixedId('con', 'Connection id.'),
  object: { const: 'connection' },
  name: nullable(name, 'An optional name for people.'),
  source_id: prefixedId('src', 'The source whose records are routed.'),
  destination_id: prefixedId('dst', 'Where they go.'),
  rule_ids: {
    type: 'array',
    maxItems: MAX_RULES_PER_CONNECTION,
    uniqueItems: true,
    items: prefixedId('rul', 'A rule of the same merchant.'),
    description: 'Rules applied in this order. With none, every record of the listed event types is routed.',
  },
  event_types: recordEventTypes,
  status: { type: 'string', enum: [...connectionStatuses], description: 'Only `active` connections route.' },
  version: resourceVersion,
  created_at: timestamp,
  updated_at: timestamp,
} satisfies Record<string, JsonSchema>;

export const connectionSchema: JsonSchema = {
  type: 'object',
  description: 'A source routed to a destination through an ordered list of rules.',
  required: Object.keys(connectionProperties),
  additionalProperties: false,
  properties: connectionProperties,
};

export const connectionCreateSchema: JsonSchema = {
  type: 'object',
  required: ['source_id', 'destination_id'],
  additionalProperties: false,
  properties: {
    name: connectionProperties.name,
    source_id: connectionProperties.source_id,
    destination_id: connectionProperties.destination_id,
    rule_ids: connectionProperties.rule_ids,
    event_types: connectionProperties.event_types,
    status: { ...connectionProperties.status, description: 'Defaults to `active`.' },
  },
};

export const connectionUpdateSchema: JsonSchema = {
  type: 'object',
  minProperties: 1,
  additionalProperties: false,
  properties: {
    name: connectionProperties.name,
    destination_id: connectionProperties.destination_id,
    rule_ids: connectionProperties.rule_ids,
    event_types: connectionProperties.event_types,
    status: connectionProperties.status,
  },
};

/* Records ---------------------------------------------------------------------------------- */

const recordType: JsonSchema = {
  type: 'string',
  enum: [...recordTypes],
  description: 'Emits orders.created, reviews.submitted, campaign_spend.updated or system_alerts.raised.',
};
export const externalId: JsonSchema = {
  type: 'string',
  minLength: 1,
  maxLength: 255,
  pattern: '\\S',
  description: "The record's id in the source system; a record is accepted once per (source, type, external_id).",
};
const recordData: JsonSchema = {
  type: 'object',
  description:
    "The record's own data (at most 64 KiB as JSON, nested at most 16 deep). An `alert` needs `message` (string) and may give `severity` (`warning` or `critical`).",
};

/** A record as ingested: the `data.object` of the event it emitted (except alerts, which are system alerts). */
export const ingestedRecordSchema: JsonSchema = {
  type: 'object',
  description: 'A record a source ingested.',
  required: ['id', 'object', 'type', 'source_id', 'external_id', 'occurred_at', 'data', 'received_at'],
  additionalProperties: false,
  properties: {
    id: prefixedId('rec', 'Record id.'),
    object: { const: 'record' },
    type: recordType,
    source_id: prefixedId('src', 'The source that ingested it.'),
    external_id: externalId,
    occurred_at: timestamp,
    data: recordData,
    received_at: timestamp,
  },
};

export const recordRouteSchema: JsonSchema = {
  type: 'object',
  description: 'What one connection of the source did with the record.',
  required: ['connection_id', 'destination_id', 'outcome', 'rule_id', 'reason', 'routed_at'],
  additionalProperties: false,
  properties: {
    connection_id: prefixedId('con', 'The connection.'),
    destination_id: prefixedId('dst', 'Its destination.'),
    outcome: {
      type: 'string',
      enum: ['routed', 'dropped', 'filtered'],
      description:
        '`routed`: handed to the delivery engine (see /webhooks/deliveries?destination_id=). `dropped`: a drop rule matched. `filtered`: no forward rule matched.',
    },
    rule_id: nullable(prefixedId('rul', 'The rule that decided, if one did.')),
    reason: { type: ['string', 'null'], description: 'Why, in words; includes rule evaluation errors (a missing field makes a condition false).' },
    routed_at: timestamp,
  },
};

/** A record as the records list shows it: with its event and where it was routed. */
export const recordSchema: JsonSchema = {
  type: 'object',
  description: 'A record a source ingested, with the event it emitted and its routing.',
  required: [...(ingestedRecordSchema.required as string[]), 'event_id', 'routes'],
  additionalProperties: false,
  properties: {
    ...(ingestedRecordSchema.properties as Record<string, JsonSchema>),
    event_id: prefixedId('evt', 'The event it emitted.'),
    routes: {
      type: 'array',
      items: { $ref: '#/components/schemas/RecordRoute' },
      description: 'One entry per connection that considered it; empty until routing has run (moments after ingestion).',
    },
  },
};

export const recordResultSchema: JsonSchema = {
  type: 'object',
  required: ['index', 'status', 'type', 'external_id', 'record_id', 'event_id', 'errors'],
  additionalProperties: false,
  properties: {
    index: { type: 'integer', minimum: 0, description: 'Position in the request.' },
    status: { type: 'string', enum: ['accepted', 'duplicate', 'rejected'] },
    type: { type: ['string', 'null'] },
    external_id: { type: ['string', 'null'] },
    record_id: nullable(prefixedId('rec', 'The record: new when accepted, the earlier one when a duplicate.')),
    event_id: nullable(prefixedId('evt', "The event an accepted record emitted (a duplicate emits nothing; this is the first one's).")),
    errors: {
      type: 'array',
      description:
        'Why a record was rejected, every reason at once, with field paths relative to the record (`data.message`; `(record)` when the record is not an object); empty otherwise.',
      items: { $ref: '#/components/schemas/FieldError' },
    },
  },
};

export const recordBatchResultSchema: JsonSchema = {
  type: 'object',
  required: ['object', 'source_id', 'accepted', 'duplicates', 'rejected', 'results'],
  additionalProperties: false,
  properties: {
    object: { const: 'record_batch' },
    source_id: prefixedId('src', 'The source.'),
    accepted: { type: 'integer', minimum: 0 },
    duplicates: { type: 'integer', minimum: 0 },
    rejected: { type: 'integer', minimum: 0 },
    results: { type: 'array', items: { $ref: '#/components/schemas/RecordResult' }, description: 'One per record, in request order.' },
  },
};

/* Sandbox reset ---------------------------------------------------------------------------- */

export const resetServices = ['catalog', 'merchants', 'webhooks'] as const;

const counts: JsonSchema = { type: 'object', additionalProperties: { type: 'integer', minimum: 0 }, description: 'How many of each kind of thing.' };

export const sandboxResetSchema: JsonSchema = {
  type: 'object',
  description: "A wipe of the sandbox merchant's data in every service; API keys and the audit log stay.",
  required: ['id', 'object', 'status', 'seed', 'services', 'requested_at', 'completed_at'],
  additionalProperties: false,
  properties: {
    id: prefixedId('rst', 'Reset id.'),
    object: { const: 'sandbox_reset' },
    status: { type: 'string', enum: ['running', 'completed'] },
    seed: { type: 'boolean', description: 'Whether a small fixture set is created after the wipe.' },
    services: {
      type: 'array',
      description: "Each service's part, as it reports it.",
      items: {
        type: 'object',
        required: ['service', 'status', 'removed', 'seeded', 'completed_at'],
        additionalProperties: false,
        properties: {
          service: { type: 'string', enum: [...resetServices] },
          status: { type: 'string', enum: ['pending', 'completed'] },
          removed: counts,
          seeded: counts,
          completed_at: nullable(timestamp),
        },
      },
    },
    requested_at: timestamp,
    completed_at: nullable(timestamp),
  },
};

export const sandboxResetRequestSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    seed: {
      type: 'boolean',
      description: 'Create a small fixture set after the wipe: three products, a source, a paused destination, a rule and a connection. Defaults to false.',
    },
  },
};

/* Internal plumbing between services (not public events) ----------------------------------- */

export const destinationEndpointSchema: JsonSchema = {
  type: 'object',
  description: 'What the delivery engine needs of a destination, secret included: travels only between services.',
  required: ['id', 'object', 'kind', 'url', 'status', 'secret', 'version'],
  additionalProperties: false,
  properties: {
    id: prefixedId('dst', 'Destination id.'),
    object: { const: 'destination_endpoint' },
    kind: destinationProperties.kind,
    url: { type: 'string' },
    status: destinationProperties.status,
    secret: {
      type: 'string',
      // Plaintext only in messages sent before sealing existed, still queued across the upgrade.
      anyOf: [{ pattern: '^sealed:v1:[A-Za-z0-9_-]{1,32}:[A-Za-z0-9_-]+$' }, { pattern: signingSecretSchema.pattern as string }],
      description:
        'The signing secret sealed under the key ring the services share (MERX_SECRETS_KEYS), bound to this merchant and destination; never plaintext on the bus.',
    },
    version: resourceVersion,
  },
};
