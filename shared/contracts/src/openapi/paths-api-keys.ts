import { commonHeaders, jsonContent, ref } from './components.js';
import { bearerOperation } from './paths-products.js';
import type { PathItem, ResponseObject } from './types.js';

const apiKeyResponse = (description: string): ResponseObject => ({
  description,
  headers: commonHeaders(),
  content: jsonContent(ref('schemas', 'ApiKey')),
});

/** API keys of the merchant: every operation needs `api_keys:write` (there is no read scope for keys). */
export const apiKeyPaths: Record<string, PathItem> = {
  '/api/v1/api-keys': {
    post: bearerOperation(
      'api_keys:write',
      {
        operationId: 'api_keys.create',
        summary: 'Create an API key',
        description:
          'Creates a key with a name and a subset of scopes; a key never gets a scope the calling token does not hold (422, `scope_not_held`). The whole key is in `secret`, in this response only: Merx keeps a SHA-256 of it. Emits `api_keys.created`. Counts in the `sensitive` throttle class.',
        tags: ['api_keys'],
        parameters: [ref('parameters', 'IdempotencyKey')],
        requestBody: { required: true, content: jsonContent(ref('schemas', 'ApiKeyCreate')) },
      },
      {
        '201': {
          description: 'The created key with its secret (or, with a repeated Idempotency-Key, the first answer replayed).',
          headers: commonHeaders({ 'Idempotent-Replayed': ref('headers', 'IdempotentReplayed'), 'Original-Request-Id': ref('headers', 'OriginalRequestId') }),
          content: jsonContent(ref('schemas', 'ApiKeyWithSecret')),
        },
      },
      ['MalformedRequest', 'CreateConflict', 'PayloadTooLarge', 'UnsupportedMediaType', 'CreateValidationFailed'],
    ),
    get: bearerOperation(
      'api_keys:write',
      {
        operationId: 'api_keys.list',
        summary: 'List API keys',
        description: "Lists the merchant's keys, revoked ones included, newest first. Never shows a secret.",
        tags: ['api_keys'],
        parameters: [ref('parameters', 'Limit'), ref('parameters', 'Cursor')],
      },
      { '200': { description: 'One page of keys.', headers: commonHeaders(), content: jsonContent(ref('schemas', 'ApiKeyList')) } },
      ['MalformedRequest', 'ValidationFailed'],
    ),
  },
  '/api/v1/api-keys/{id}': {
    parameters: [ref('parameters', 'ApiKeyId')],
    get: bearerOperation(
      'api_keys:write',
      { operationId: 'api_keys.retrieve', summary: 'Retrieve an API key', description: 'Returns one key, without its secret.', tags: ['api_keys'] },
      { '200': apiKeyResponse('The key.') },
      ['NotFound'],
    ),
    delete: bearerOperation(
      'api_keys:write',
      {
        operationId: 'api_keys.revoke',
        summary: 'Revoke an API key',
        description:
          'Revokes the key: it gets no new token, and the access tokens it already has are refused everywhere within a second. The key stays listed with `revoked_at`. Revoking a revoked key is a 204 again. Emits `api_keys.revoked` (once). Counts in the `sensitive` throttle class.',
        tags: ['api_keys'],
      },
      { '204': { description: 'Revoked; no body.', headers: commonHeaders() } },
      ['NotFound'],
    ),
  },
};
