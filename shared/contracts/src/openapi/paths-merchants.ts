import type { Scope } from '../scopes.js';
import { commonHeaders, jsonContent, ref } from './components.js';
import { bearerOperation } from './paths-products.js';
import {
  connectionStatuses,
  destinationKinds,
  destinationStatuses,
  MAX_RECORDS_PER_BATCH,
  recordEventNames,
  recordTypes,
  ruleActions,
  sourceKinds,
  sourceStatuses,
} from './schemas-merchants.js';
import type { ExampleObject, JsonSchema, OperationObject, ParameterObject, PathItem, Reference, ResponseObject } from './types.js';

/**
 * REST operations of the merchants service: the merchant's own settings, the configuration
 * resources (sources, destinations, rules, connections), record ingestion and sandbox resets.
 * Wire shapes are those of schemas-merchants.ts, registered as components in openapi.ts.
 */

const query = (name: string, description: string, schema: JsonSchema): ParameterObject => ({ name, in: 'query', description, schema });
const timeFilter = (name: string, description: string) => query(name, description, { type: 'string', format: 'date-time' });
const idFilter = (name: string, prefix: string, description: string) => query(name, description, { type: 'string', pattern: `^${prefix}_[0-9a-z]{26}$` });
const enumFilter = (name: string, description: string, values: readonly string[]) => query(name, description, { type: 'string', enum: [...values] });
const page: Reference[] = [ref('parameters', 'Limit'), ref('parameters', 'Cursor')];

const response = (description: string, schemaName: string, headers: Record<string, Reference> = {}): ResponseObject => ({
  description,
  headers: commonHeaders(headers),
  content: jsonContent(ref('schemas', schemaName)),
});

const withExamples = (answer: ResponseObject, examples: Record<string, ExampleObject>): ResponseObject => ({
  ...answer,
  content: Object.fromEntries(Object.entries(answer.content ?? {}).map(([type, media]) => [type, { ...media, examples }])),
});

const exampleId = (prefix: string, tail: string) => `${prefix}_01jd3k7q8m2x4v6b9c0d1e${tail}`;
const recordBatchResultExample = {
  object: 'record_batch',
  source_id: exampleId('src', '2f3g'),
  accepted: 2,
  duplicates: 1,
  rejected: 1,
  results: [
    {
      index: 0,
      status: 'accepted',
      type: 'order',
      external_id: 'ORD-10042',
      record_id: exampleId('rec', '2f3a'),
      event_id: exampleId('evt', '2f3a'),
      errors: [],
    },
    {
      index: 1,
      status: 'duplicate',
      type: 'review',
      external_id: 'REV-551',
      record_id: exampleId('rec', '0001'),
      event_id: exampleId('evt', '0001'),
      errors: [],
    },
    {
      index: 2,
      status: 'accepted',
      type: 'campaign_spend',
      external_id: 'CMP-7-2026-11-22',
      record_id: exampleId('rec', '2f3c'),
      event_id: exampleId('evt', '2f3c'),
      errors: [],
    },
    {
      index: 3,
      status: 'rejected',
      type: 'alert',
      external_id: 'ALERT-9',
      record_id: null,
      event_id: null,
      errors: [{ field: 'data.message', code: 'required', message: 'data.message is required for an alert' }],
    },
  ],
};

const noContent: ResponseObject = { description: 'Deleted; no body.', headers: commonHeaders() };
const withEtag = { ETag: ref('headers', 'ETag') };
const jsonBody = (schemaName: string) => ({ required: true, content: jsonContent(ref('schemas', schemaName)) });

/** Headers of an answer replayed for a repeated Idempotency-Key. */
const idempotentReplay = {
  'Idempotent-Replayed': ref('headers', 'IdempotentReplayed'),
  'Original-Request-Id': ref('headers', 'OriginalRequestId'),
};

const pathId = (description: string): ParameterObject => ({ name: 'id', in: 'path', required: true, description, schema: { type: 'string' } });

/** Path parameters of the merchants service's resources; merged into `components.parameters` by openapi.ts. */
export const merchantsParameters: Record<string, ParameterObject> = {
  SourceId: pathId('Source id (`src_...`).'),
  DestinationId: pathId('Destination id (`dst_...`).'),
  RuleId: pathId('Rule id (`rul_...`).'),
  ConnectionId: pathId('Connection id (`con_...`).'),
  SandboxResetId: pathId('Sandbox reset id (`rst_...`).'),
};

const merchantResponse = (description: string): ResponseObject => response(description, 'Merchant', withEtag);

export const merchantPaths: Record<string, PathItem> = {
  '/api/v1/merchant': {
    get: bearerOperation(
      'merchant:read',
      {
        operationId: 'merchant.retrieve',
        summary: 'Retrieve the merchant',
        description: 'Returns the merchant the access token belongs to, with its ETag.',
        tags: ['merchant'],
      },
      { '200': merchantResponse('The merchant.') },
      [],
    ),
    patch: bearerOperation(
      'merchant:write',
      {
        operationId: 'merchant.update',
        summary: 'Update the merchant',
        description:
          "Changes the given settings (`name`, `default_currency`, `timezone`) and increments `version` and `profile_version`. `mode`, `plan` and `status` are the operator's: a body naming any of them is a 422 with code `read_only` on that field. With If-Match the update applies only to that version (412 otherwise). Emits `merchants.updated` with the changed fields before the change in `previous`.",
        tags: ['merchant'],
        parameters: [ref('parameters', 'IfMatch')],
        requestBody: jsonBody('MerchantUpdate'),
      },
      { '200': merchantResponse('The updated merchant.') },
      ['MalformedRequest', 'PreconditionFailed', 'PayloadTooLarge', 'UnsupportedMediaType', 'ValidationFailed'],
    ),
  },
};

/** What differs between the four configuration resources; their five operations are otherwise alike. */
interface ConfigResource {
  /** Path segment, operationId resource and tag: `sources`. */
  collection: 'sources' | 'destinations' | 'rules' | 'connections';
  /** `source`, `destination`, ... for summaries. */
  noun: string;
  /** Component names: `Source` (and `SourceCreate`, `SourceUpdate`, `SourceList`). */
  schema: string;
  /** The schema the create answers with, when it is not `schema` (DestinationWithSecret). */
  createdSchema?: string;
  idParameter: string;
  filters: ParameterObject[];
  create: { description: string; responseDescription?: string };
  list: string;
  retrieve: string;
  update: string;
  delete: string;
  /** Connections use sources, destinations and rules: those answer 409 `conflict` to a delete while used. */
  deleteConflicts: boolean;
}

function configPaths(resource: ConfigResource): Record<string, PathItem> {
  const { collection, noun, schema } = resource;
  const read: Scope = 'config:read';
  const write: Scope = 'config:write';
  const tags = [collection];
  const single = (description: string) => response(description, schema, withEtag);
  const operations: { post: OperationObject; get: OperationObject } = {
    post: bearerOperation(
      write,
      {
        operationId: `${collection}.create`,
        summary: `Create a ${noun}`,
        description: resource.create.description,
        tags,
        parameters: [ref('parameters', 'IdempotencyKey')],
        requestBody: jsonBody(`${schema}Create`),
      },
      {
        '201': response(
          resource.create.responseDescription ?? `The created ${noun} (or, with a repeated Idempotency-Key, the first answer replayed).`,
          resource.createdSchema ?? schema,
          { ...withEtag, Location: ref('headers', 'Location'), ...idempotentReplay },
        ),
      },
      ['MalformedRequest', 'IdempotencyKeyInUse', 'PayloadTooLarge', 'UnsupportedMediaType', 'CreateValidationFailed'],
    ),
    get: bearerOperation(
      read,
      {
        operationId: `${collection}.list`,
        summary: `List ${collection}`,
        description: resource.list,
        tags,
        parameters: [...page, ...resource.filters],
      },
      { '200': response(`One page of ${collection}.`, `${schema}List`) },
      ['MalformedRequest', 'ValidationFailed'],
    ),
  };
  return {
    [`/api/v1/${collection}`]: operations,
    [`/api/v1/${collection}/{id}`]: {
      parameters: [ref('parameters', resource.idParameter)],
      get: bearerOperation(
        read,
        { operationId: `${collection}.retrieve`, summary: `Retrieve a ${noun}`, description: resource.retrieve, tags },
        { '200': single(`The ${noun}.`) },
        ['NotFound'],
      ),
      patch: bearerOperation(
        write,
        {
          operationId: `${collection}.update`,
          summary: `Update a ${noun}`,
          description: resource.update,
          tags,
          parameters: [ref('parameters', 'IfMatch')],
          requestBody: jsonBody(`${schema}Update`),
        },
        { '200': single(`The updated ${noun}.`) },
        ['MalformedRequest', 'NotFound', 'PreconditionFailed', 'PayloadTooLarge', 'UnsupportedMediaType', 'ValidationFailed'],
      ),
      delete: bearerOperation(
        write,
        {
          operationId: `${collection}.delete`,
          summary: `Delete a ${noun}`,
          description: resource.delete,
          tags,
          parameters: [ref('parameters', 'IfMatch')],
        },
        { '204': noContent },
        resource.deleteConflicts ? ['NotFound', 'Conflict', 'PreconditionFailed'] : ['NotFound', 'PreconditionFailed'],
      ),
    },
  };
}

const updateWords = (topic: string, extra: string) =>
  `Changes the given fields and increments \`version\`. ${extra} With If-Match the update applies only to that version (412 otherwise). Emits \`${topic}.updated\` with the changed fields before the change in \`previous\`.`;

const deleteWords = (noun: string, topic: string, usedByConnections: boolean) =>
  `Deletes the ${noun}.${usedByConnections ? ` A ${noun} that a connection uses cannot be deleted: 409 \`conflict\` (delete or change the connection first).` : ''} With If-Match only that version is deleted (412 otherwise). Emits \`${topic}.deleted\` with its last state.`;

export const sourcePaths = configPaths({
  collection: 'sources',
  noun: 'source',
  schema: 'Source',
  idParameter: 'SourceId',
  filters: [enumFilter('status', 'Only sources in this status.', sourceStatuses), enumFilter('kind', 'Only sources of this kind.', sourceKinds)],
  create: {
    description:
      'Creates a source of commerce data. It is `active`, and accepts records at `POST /api/v1/sources/{id}/records`, unless `status` says otherwise. Emits `sources.created`.',
  },
  list: "Lists the merchant's sources, newest first, one page at a time. Filters combine with AND.",
  retrieve: 'Returns one source with its ETag.',
  update: updateWords(
    'sources',
    '`settings` replaces the settings as a whole. A `paused` or `disabled` source answers 409 to record batches until it is `active` again.',
  ),
  delete: deleteWords('source', 'sources', true),
  deleteConflicts: true,
});

export const destinationPaths: Record<string, PathItem> = {
  ...configPaths({
    collection: 'destinations',
    noun: 'destination',
    schema: 'Destination',
    createdSchema: 'DestinationWithSecret',
    idParameter: 'DestinationId',
    filters: [
      enumFilter('status', 'Only destinations in this status.', destinationStatuses),
      enumFilter('kind', 'Only destinations of this kind.', destinationKinds),
    ],
    create: {
      description:
        'Creates a destination. Its signing secret (`whsec_...`, the Standard Webhooks format) is in `secret`, in this response only: no other response and no event shows it. The URL must be https for live merchants and may not point at private or loopback addresses. Routed records are delivered by the webhooks delivery engine; see them at `/api/v1/webhooks/deliveries?destination_id=`. Emits `destinations.created` (without the secret).',
      responseDescription: 'The created destination with its secret (or, with a repeated Idempotency-Key, the first answer replayed).',
    },
    list: "Lists the merchant's destinations, newest first, without their secrets. Filters combine with AND.",
    retrieve: 'Returns one destination with its ETag, without its secret.',
    update: updateWords(
      'destinations',
      '`status: active` resumes a paused or disabled destination (deliveries that waited go out) and clears `disabled_reason`; `disabled` sets it to `by_merchant`. The secret does not change.',
    ),
    delete: deleteWords('destination', 'destinations', true),
    deleteConflicts: true,
  }),
  '/api/v1/destinations/{id}/rotate-secret': {
    parameters: [ref('parameters', 'DestinationId')],
    post: bearerOperation(
      'config:write',
      {
        operationId: 'destinations.rotate_secret',
        summary: "Rotate a destination's signing secret",
        description:
          "Generates a new signing secret, returned in `secret` in this response only, and increments `version`. The delivery engine signs with the new secret as soon as it has the change (moments later) and, for 24 h from then, with the previous one too: every request carries two `webhook-signature` entries (and a `webhook` destination's `hmac_sha256` uses the new secret), so a receiver can switch without losing a delivery. Emits `destinations.updated` (without the secret; `previous` is empty). Counts in the `sensitive` throttle class.",
        tags: ['destinations'],
        parameters: [ref('parameters', 'IdempotencyKey')],
      },
      {
        '200': response('The destination with its new secret (or, with a repeated Idempotency-Key, the first answer replayed).', 'DestinationWithSecret', {
          ...withEtag,
          ...idempotentReplay,
        }),
      },
      ['NotFound', 'IdempotencyKeyInUse'],
    ),
  },
};

export const rulePaths = configPaths({
  collection: 'rules',
  noun: 'rule',
  schema: 'Rule',
  idParameter: 'RuleId',
  filters: [
    enumFilter('action', 'Only rules with this action.', ruleActions),
    enumFilter('enabled', 'Only enabled (`true`) or disabled (`false`) rules.', ['true', 'false']),
    enumFilter('event_type', 'Only rules that apply to this record event.', recordEventNames),
  ],
  create: {
    description:
      'Creates a rule. `condition` is a CEL expression checked when saved: a syntax error, an unknown variable or function, or a result that is not bool is a 422 with field `condition` and code `invalid_expression`, its message naming what and where. A `transform` rule needs `transform`; the other actions refuse it. Emits `rules.created`.',
  },
  list: "Lists the merchant's rules, newest first. Filters combine with AND.",
  retrieve: 'Returns one rule with its ETag.',
  update: updateWords('rules', 'A new `condition` is checked as on create (422 `invalid_expression`); `action` and `transform` must still agree.'),
  delete: deleteWords('rule', 'rules', true),
  deleteConflicts: true,
});

export const connectionPaths = configPaths({
  collection: 'connections',
  noun: 'connection',
  schema: 'Connection',
  idParameter: 'ConnectionId',
  filters: [
    idFilter('source_id', 'src', 'Only connections of this source.'),
    idFilter('destination_id', 'dst', 'Only connections to this destination.'),
    enumFilter('status', 'Only connections in this status.', connectionStatuses),
  ],
  create: {
    description:
      "Routes a source's records to a destination through an ordered list of at most 20 rules, for the given record event types (all four by default). The source, the destination and every rule must be the merchant's: one it does not have is a 422 naming the field. A paused source may be connected; its records are routed once it is active and ingests them. Emits `connections.created`.",
  },
  list: "Lists the merchant's connections, newest first. Filters combine with AND.",
  retrieve: 'Returns one connection with its ETag.',
  update: updateWords(
    'connections',
    '`rule_ids` and `event_types` replace the whole list; the source cannot change (create another connection). A destination or rule the merchant does not have is a 422 naming the field.',
  ),
  delete: deleteWords('connection', 'connections', false),
  deleteConflicts: false,
});

export const recordPaths: Record<string, PathItem> = {
  '/api/v1/sources/{id}/records': {
    parameters: [ref('parameters', 'SourceId')],
    post: bearerOperation(
      'config:write',
      {
        operationId: 'sources.records.create',
        summary: 'Ingest a batch of records',
        description: `Ingests 1 to ${MAX_RECORDS_PER_BATCH} records into an \`active\` source. Each record is checked on its own (see RecordInput) and answered in \`results\`, in request order: \`accepted\` (stored; it emits \`orders.created\`, \`reviews.submitted\`, \`campaign_spend.updated\` or, for an \`alert\`, \`system_alerts.raised\`, and the source's active connections route it moments later), \`duplicate\` (the source already has a record of that type and external_id; \`record_id\` and \`event_id\` name the first one, nothing is emitted) or \`rejected\` (with its \`errors\`; the others still go in). The request as a whole fails only when the body is not an object with a \`records\` array of 1 to ${MAX_RECORDS_PER_BATCH} items (422), the source does not exist (404) or is \`paused\` or \`disabled\` (409 \`conflict\`).`,
        tags: ['sources'],
        parameters: [ref('parameters', 'IdempotencyKey')],
        requestBody: jsonBody('RecordBatchRequest'),
      },
      {
        '200': withExamples(
          response('What became of each record (or, with a repeated Idempotency-Key, the first answer replayed).', 'RecordBatchResult', idempotentReplay),
          {
            mixed: { summary: 'Accepted, duplicate and rejected records in one batch', value: recordBatchResultExample },
          },
        ),
      },
      ['MalformedRequest', 'NotFound', 'CreateConflict', 'PayloadTooLarge', 'UnsupportedMediaType', 'CreateValidationFailed'],
    ),
    get: bearerOperation(
      'config:read',
      {
        operationId: 'sources.records.list',
        summary: "List a source's records",
        description:
          'Lists the records the source ingested, newest first, each with the event it emitted and what each connection did with it (`routes`). Filters combine with AND.',
        tags: ['sources'],
        parameters: [
          ...page,
          enumFilter('type', 'Only records of this type.', recordTypes),
          query('external_id', 'Only records with this id in the source system.', { type: 'string', minLength: 1, maxLength: 255 }),
          timeFilter('since', 'Only records received at or after this time.'),
          timeFilter('until', 'Only records received before this time.'),
        ],
      },
      { '200': response('One page of records.', 'RecordList') },
      ['MalformedRequest', 'NotFound', 'ValidationFailed'],
    ),
  },
};

export const sandboxPaths: Record<string, PathItem> = {
  '/api/v1/sandbox/reset': {
    post: bearerOperation(
      'sandbox:reset',
      {
        operationId: 'sandbox.reset',
        summary: 'Reset the sandbox',
        description:
          "Erases the sandbox merchant's data in every service: products; sources, destinations, rules, connections and records; webhook subscriptions, destination endpoints, deliveries and the events before the reset. With `seed: true` each service then creates a small fixture set (three products, a source, a paused destination, a rule and a connection, each with its created event). API keys and the audit log stay. Answers 202 at once with the reset `running`; follow Location until it is `completed`. Emits `sandbox.reset` now and `sandbox.reset_completed` when every service has reported. Only sandbox merchants: a live merchant gets 409 `conflict`. Counts in the `sensitive` throttle class.",
        tags: ['sandbox'],
        parameters: [ref('parameters', 'IdempotencyKey')],
        requestBody: { required: false, content: jsonContent(ref('schemas', 'SandboxResetRequest')) },
      },
      {
        '202': response('The reset, running (or, with a repeated Idempotency-Key, the first answer replayed).', 'SandboxReset', {
          Location: ref('headers', 'Location'),
          ...idempotentReplay,
        }),
      },
      ['MalformedRequest', 'CreateConflict', 'PayloadTooLarge', 'UnsupportedMediaType', 'CreateValidationFailed'],
    ),
  },
  '/api/v1/sandbox/resets/{id}': {
    parameters: [ref('parameters', 'SandboxResetId')],
    get: bearerOperation(
      'merchant:read',
      {
        operationId: 'sandbox.resets.retrieve',
        summary: 'Retrieve a sandbox reset',
        description: "Returns one sandbox reset with each service's part: `pending`, or `completed` with how many things it removed and seeded.",
        tags: ['sandbox'],
      },
      { '200': response('The reset.', 'SandboxReset') },
      ['NotFound'],
    ),
  },
};

/** Every path of the merchants service, in the order the document lists them. */
export const merchantsServicePaths: Record<string, PathItem> = {
  ...merchantPaths,
  ...sourcePaths,
  ...recordPaths,
  ...destinationPaths,
  ...rulePaths,
  ...connectionPaths,
  ...sandboxPaths,
};
