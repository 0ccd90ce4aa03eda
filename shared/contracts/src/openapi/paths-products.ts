import type { Scope } from '../scopes.js';
import { commonHeaders, jsonContent, ref } from './components.js';
import type { OperationObject, PathItem, Reference, ResponseObject } from './types.js';

type ErrorResponseName =
  | 'MalformedRequest'
  | 'NotFound'
  | 'Conflict'
  | 'CreateConflict'
  | 'IdempotencyKeyInUse'
  | 'ReplayConflict'
  | 'PreconditionFailed'
  | 'PayloadTooLarge'
  | 'UnsupportedMediaType'
  | 'ValidationFailed'
  | 'CreateValidationFailed';

const errorStatus: Record<ErrorResponseName, string> = {
  MalformedRequest: '400',
  NotFound: '404',
  Conflict: '409',
  CreateConflict: '409',
  IdempotencyKeyInUse: '409',
  ReplayConflict: '409',
  PreconditionFailed: '412',
  PayloadTooLarge: '413',
  UnsupportedMediaType: '415',
  ValidationFailed: '422',
  CreateValidationFailed: '422',
};

/**
 * Answers every bearer-authenticated operation can give, whatever it does. A 422 among them: a
 * query parameter the operation does not declare is refused even where nothing else is validated.
 */
function bearerErrors(specific: ErrorResponseName[]): Record<string, Reference> {
  const result: Record<string, Reference> = {
    // Any request: a path the gateway will not read one way only (an encoded / or NUL, a . segment).
    '400': ref('responses', 'MalformedRequest'),
    '401': ref('responses', 'Unauthenticated'),
    '403': ref('responses', 'InsufficientScope'),
    '422': ref('responses', 'ValidationFailed'),
    '429': ref('responses', 'RateLimited'),
    '500': ref('responses', 'Internal'),
    '503': ref('responses', 'Unavailable'),
  };
  for (const name of specific) result[errorStatus[name]] = ref('responses', name);
  return result;
}

export function bearerOperation(
  scope: Scope,
  operation: Omit<OperationObject, 'security' | 'responses'>,
  success: Record<string, ResponseObject>,
  errors: ErrorResponseName[],
): OperationObject {
  return {
    ...operation,
    description: `${operation.description}\n\nRequires the scope \`${scope}\`.`,
    security: [{ oauth2: [scope] }],
    responses: sortByStatus({ ...success, ...bearerErrors(errors) }),
  };
}

function sortByStatus<T>(responses: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));
}

const productResponse = (description: string): ResponseObject => ({
  description,
  headers: commonHeaders({ ETag: ref('headers', 'ETag') }),
  content: jsonContent(ref('schemas', 'Product')),
});

const jsonBody = (schemaName: string) => ({ required: true, content: jsonContent(ref('schemas', schemaName)) });

export const productPaths: Record<string, PathItem> = {
  '/api/v1/products': {
    post: bearerOperation(
      'products:write',
      {
        operationId: 'products.create',
        summary: 'Create a product',
        description:
          'Creates a product. It is `active` unless `status: "draft"` is given. The price may not have more decimals than the currency\'s minor units. Emits `products.created`.',
        tags: ['products'],
        parameters: [ref('parameters', 'IdempotencyKey')],
        requestBody: jsonBody('ProductCreate'),
      },
      {
        '201': {
          ...productResponse('The created product (or, with a repeated Idempotency-Key, the first answer replayed).'),
          headers: commonHeaders({
            ETag: ref('headers', 'ETag'),
            'Idempotent-Replayed': ref('headers', 'IdempotentReplayed'),
            'Original-Request-Id': ref('headers', 'OriginalRequestId'),
          }),
        },
      },
      ['MalformedRequest', 'CreateConflict', 'PayloadTooLarge', 'UnsupportedMediaType', 'CreateValidationFailed'],
    ),
    get: bearerOperation(
      'products:read',
      {
        operationId: 'products.list',
        summary: 'List products',
        description: "Lists the merchant's products, newest first, one page at a time. Filters combine with AND.",
        tags: ['products'],
        parameters: [
          ref('parameters', 'Limit'),
          ref('parameters', 'Cursor'),
          { name: 'status', in: 'query', description: 'Only products in this status.', schema: { type: 'string', enum: ['draft', 'active', 'archived'] } },
          { name: 'sku', in: 'query', description: 'Only the product with this sku.', schema: { type: 'string', pattern: '^[A-Za-z0-9._-]{1,64}$' } },
          { name: 'currency', in: 'query', description: 'Only products priced in this currency.', schema: { type: 'string', pattern: '^[A-Z]{3}$' } },
        ],
      },
      {
        '200': {
          description: 'One page of products.',
          headers: commonHeaders(),
          content: jsonContent(ref('schemas', 'ProductList')),
        },
      },
      ['MalformedRequest', 'ValidationFailed'],
    ),
  },
  '/api/v1/products/{id}': {
    parameters: [ref('parameters', 'ProductId')],
    get: bearerOperation(
      'products:read',
      {
        operationId: 'products.retrieve',
        summary: 'Retrieve a product',
        description: 'Returns one product with its ETag.',
        tags: ['products'],
      },
      { '200': productResponse('The product.') },
      ['NotFound'],
    ),
    patch: bearerOperation(
      'products:write',
      {
        operationId: 'products.update',
        summary: 'Update a product',
        description:
          'Changes the given fields and increments `version`. With If-Match the update applies only to that version (412 otherwise). Emits `products.updated` with the changed fields before the change in `previous`.',
        tags: ['products'],
        parameters: [ref('parameters', 'IfMatch')],
        requestBody: jsonBody('ProductUpdate'),
      },
      { '200': productResponse('The updated product.') },
      ['MalformedRequest', 'NotFound', 'Conflict', 'PreconditionFailed', 'PayloadTooLarge', 'UnsupportedMediaType', 'ValidationFailed'],
    ),
    delete: bearerOperation(
      'products:write',
      {
        operationId: 'products.delete',
        summary: 'Delete a product',
        description: 'Deletes the product. With If-Match only that version is deleted (412 otherwise). Emits `products.deleted`.',
        tags: ['products'],
        parameters: [ref('parameters', 'IfMatch')],
      },
      { '204': { description: 'Deleted; no body.', headers: commonHeaders() } },
      ['NotFound', 'PreconditionFailed'],
    ),
  },
};
