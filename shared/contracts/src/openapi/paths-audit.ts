import { commonHeaders, jsonContent, ref } from './components.js';
import { prefixedId, timestamp } from './fragments.js';
import { bearerOperation } from './paths-products.js';
import type { JsonSchema, PathItem } from './types.js';

const hash: JsonSchema = { type: 'string', pattern: '^[0-9a-f]{64}$' };

export const auditEntrySchema: JsonSchema = {
  type: 'object',
  description: "One entry of the merchant's append-only, hash-chained audit log.",
  required: [
    'id',
    'object',
    'sequence',
    'occurred_at',
    'actor',
    'action',
    'resource',
    'changes',
    'request_id',
    'ip',
    'event_id',
    'hash',
    'hash_version',
    'prev_hash',
  ],
  additionalProperties: false,
  properties: {
    id: prefixedId('aud', 'Audit entry id.'),
    object: { const: 'audit_entry' },
    sequence: { type: 'integer', minimum: 1, description: "Position in the merchant's chain, from 1, without gaps." },
    occurred_at: timestamp,
    actor: {
      type: 'object',
      required: ['type', 'id'],
      additionalProperties: false,
      properties: { type: { type: 'string', enum: ['api_key', 'app', 'user', 'operator', 'system'] }, id: { type: 'string' } },
    },
    action: { type: 'string', description: 'The event name (`products.updated`) or an auth action (`auth.token_issued`).' },
    resource: {
      type: 'object',
      required: ['type', 'id'],
      additionalProperties: false,
      properties: { type: { type: 'string' }, id: { type: 'string' } },
    },
    changes: {
      type: 'object',
      required: ['before', 'after'],
      additionalProperties: false,
      description: 'The changed fields before and after; a creation has no before, a deletion no after.',
      properties: { before: { type: ['object', 'null'] }, after: { type: ['object', 'null'] } },
    },
    request_id: { type: ['string', 'null'], description: 'The request that caused it.' },
    ip: { type: ['string', 'null'] },
    event_id: prefixedId('evt', 'The event this entry records.'),
    hash: { ...hash, description: 'SHA-256 over prev_hash, a newline, and the canonical (RFC 8785) JSON of the hashed form named by hash_version.' },
    hash_version: {
      type: 'integer',
      enum: [1],
      description:
        'The frozen form the hash covers. 1: `id`, `object`, `sequence`, `occurred_at`, `actor`, `action`, `resource`, `changes`, `request_id`, `ip`, `event_id`, `prev_hash` and `merchant_id`. Fields the API adds later are not hashed until a new version names them.',
    },
    prev_hash: { ...hash, description: "The previous entry's hash; 64 zeros for the first." },
  },
};

export const auditVerificationSchema: JsonSchema = {
  type: 'object',
  required: ['object', 'valid', 'from_sequence', 'to_sequence', 'entries_checked', 'head_hash', 'broken_at'],
  additionalProperties: false,
  properties: {
    object: { const: 'audit_verification' },
    valid: { type: 'boolean' },
    from_sequence: { type: 'integer', minimum: 1 },
    to_sequence: { type: 'integer', minimum: 0 },
    entries_checked: { type: 'integer', minimum: 0 },
    head_hash: hash,
    broken_at: {
      type: ['object', 'null'],
      required: ['id', 'sequence', 'reason'],
      additionalProperties: false,
      properties: {
        id: { type: ['string', 'null'], description: 'The first entry that does not verify; null when entries are missing at the end.' },
        sequence: { type: 'integer', minimum: 1 },
        reason: { type: 'string', enum: ['hash_mismatch', 'prev_hash_mismatch', 'sequence_gap'] },
      },
    },
  },
};

const timeFilter = (name: string, description: string) => ({ name, in: 'query' as const, description, schema: { type: 'string', format: 'date-time' } });
const textFilter = (name: string, description: string) => ({
  name,
  in: 'query' as const,
  description,
  schema: { type: 'string', minLength: 1, maxLength: 255 },
});

export const auditPaths: Record<string, PathItem> = {
  '/api/v1/audit': {
    get: bearerOperation(
      'audit:read',
      {
        operationId: 'audit.list',
        summary: 'List audit entries',
        description: "Lists the merchant's audit entries, newest first (by position in the chain). Entries cannot be changed or deleted through any API.",
        tags: ['audit'],
        parameters: [
          ref('parameters', 'Limit'),
          ref('parameters', 'Cursor'),
          textFilter('resource_id', 'Only entries about this resource.'),
          textFilter('resource_type', 'Only entries about this kind of resource (`product`).'),
          textFilter('action', 'Only this action (`products.updated`).'),
          textFilter('actor_id', 'Only entries caused by this actor.'),
          timeFilter('since', 'Only entries that occurred at or after this time.'),
          timeFilter('until', 'Only entries that occurred before this time.'),
        ],
      },
      { '200': { description: 'One page of entries.', headers: commonHeaders(), content: jsonContent(ref('schemas', 'AuditEntryList')) } },
      ['MalformedRequest', 'ValidationFailed'],
    ),
  },
  '/api/v1/audit/verify': {
    get: bearerOperation(
      'audit:read',
      {
        operationId: 'audit.verify',
        summary: 'Verify the audit chain',
        description:
          "Recomputes the merchant's hash chain from the retention checkpoint (or from `from_sequence`, trusting the entry before it) to the head, and says whether it holds and, if not, where it first breaks.",
        tags: ['audit'],
        parameters: [
          { name: 'from_sequence', in: 'query', description: 'Start here instead of at the oldest kept entry.', schema: { type: 'integer', minimum: 1 } },
        ],
      },
      { '200': { description: 'The verdict.', headers: commonHeaders(), content: jsonContent(ref('schemas', 'AuditVerification')) } },
      ['ValidationFailed'],
    ),
  },
  '/api/v1/audit/{id}': {
    parameters: [ref('parameters', 'AuditEntryId')],
    get: bearerOperation(
      'audit:read',
      { operationId: 'audit.retrieve', summary: 'Retrieve an audit entry', description: 'Returns one entry.', tags: ['audit'] },
      { '200': { description: 'The entry.', headers: commonHeaders(), content: jsonContent(ref('schemas', 'AuditEntry')) } },
      ['NotFound'],
    ),
  },
};
