import { problemTypes, problemTypeUri, type ProblemCode } from '../errors.js';
import { scopeDescriptions } from '../scopes.js';
import type { HeaderObject, JsonSchema, ParameterObject, Reference, ResponseObject, SecuritySchemeObject } from './types.js';

export const ref = (kind: 'schemas' | 'responses' | 'parameters' | 'headers', name: string): Reference => ({
  $ref: `#/components/${kind}/${name}`,
});

export const jsonContent = (schema: JsonSchema) => ({ 'application/json': { schema } });

const rateLimitItem = (first: string, second: string) => `"(burst|sustained|writes|sensitive)";${first}=\\d+;${second}=\\d+`;

export const headers: Record<string, HeaderObject> = {
  XRequestId: {
    description: 'Id of this request (`req_...`), also in problem bodies and logs; quote it to support.',
    required: true,
    schema: { type: 'string', pattern: '^req_[0-9a-z]{26}$' },
  },
  ETag: {
    description: 'Entity tag of the returned version of the resource; send it back in If-Match.',
    required: true,
    schema: { type: 'string', pattern: '^(W/)?"[^"]+"$' },
  },
  IdempotentReplayed: {
    description: 'Present (`true`) when this is the stored answer to an earlier request with the same Idempotency-Key, replayed byte for byte.',
    schema: { type: 'string', enum: ['true'] },
  },
  OriginalRequestId: {
    description: 'On a replayed answer: the request id of the request that produced it (its body names that request).',
    schema: { type: 'string', pattern: '^req_[0-9a-z]{26}$' },
  },
  RateLimit: {
    description:
      'Remaining quota of each throttle class that applied (IETF httpapi ratelimit-headers draft, Structured Fields list): `r` requests left, `t` seconds until the quota is whole again, e.g. `"burst";r=99;t=1, "sustained";r=19999;t=3600`.',
    schema: { type: 'string', pattern: `^${rateLimitItem('r', 't')}(, ${rateLimitItem('r', 't')})*$` },
  },
  RateLimitPolicy: {
    description:
      'Quota policy of each throttle class that applied (IETF httpapi ratelimit-headers draft): `q` requests per `w` seconds, e.g. `"burst";q=100;w=2, "sustained";q=20000;w=3600`. A token bucket\'s window is its capacity over its refill rate.',
    schema: { type: 'string', pattern: `^${rateLimitItem('q', 'w')}(, ${rateLimitItem('q', 'w')})*$` },
  },
  RetryAfter: {
    description: 'Seconds to wait before retrying.',
    required: true,
    schema: { type: 'string', pattern: '^\\d+$' },
  },
  WWWAuthenticate: {
    description: 'Bearer challenge, e.g. `Bearer error="invalid_token"`.',
    required: true,
    schema: { type: 'string', pattern: '^(Bearer|Basic)\\b' },
  },
  Location: {
    description: 'Path of the created resource, e.g. `/api/v1/webhooks/subscriptions/wh_...`.',
    required: true,
    schema: { type: 'string', pattern: '^(https?://[^/]+)?/api/v1/' },
  },
};

/** Headers that may come with any response: the request id always, rate-limit state where a class applied. */
export function commonHeaders(extra: Record<string, Reference> = {}): Record<string, Reference> {
  return {
    'X-Request-Id': ref('headers', 'XRequestId'),
    RateLimit: ref('headers', 'RateLimit'),
    'RateLimit-Policy': ref('headers', 'RateLimitPolicy'),
    ...extra,
  };
}

/** The same response with one example of its body, shown by the API reference. */
function withExample(response: ResponseObject, summary: string, value: unknown): ResponseObject {
  const [mediaType, media] = Object.entries(response.content!)[0]!;
  return { ...response, content: { [mediaType]: { ...media, examples: { example: { summary, value } } } } };
}

function problemResponse(description: string, codes: ProblemCode[], extraHeaders: Record<string, Reference> = {}): ResponseObject {
  const statuses = new Set(codes.map((code) => problemTypes[code].status));
  if (statuses.size !== 1) throw new Error(`problem response mixes statuses: ${codes.join(', ')}`);
  return {
    description,
    headers: commonHeaders(extraHeaders),
    content: {
      'application/problem+json': {
        schema: { type: 'object', allOf: [ref('schemas', 'Problem')], properties: { code: { enum: codes } } },
      },
    },
  };
}

/**
 * What the gateway answers to a method a path does not allow. No operation has it (it answers
 * for the methods that are not operations), so it lives in `x-merx-unrouted-responses` rather than
 * among the components, where it would be a component nothing refers to.
 */
export const methodNotAllowedResponse: ResponseObject = (() => {
  const response = problemResponse('The path exists but does not allow this method.', ['method_not_allowed']);
  const allow: HeaderObject = { description: 'Methods the path does allow.', required: true, schema: { type: 'string' } };
  return { ...response, headers: { ...response.headers, Allow: allow } };
})();

export const responses: Record<string, ResponseObject> = {
  MalformedRequest: problemResponse(
    'The request could not be parsed: malformed, undecodable or too deeply nested JSON, a bad cursor or header, or a path not in canonical form.',
    ['malformed_request'],
  ),
  Unauthenticated: problemResponse('Missing, expired or invalid credentials.', ['unauthenticated'], {
    'WWW-Authenticate': ref('headers', 'WWWAuthenticate'),
  }),
  InsufficientScope: problemResponse('The token is valid but lacks the scope named in `required_scope`.', ['insufficient_scope']),
  NotFound: problemResponse("No such resource for this merchant (another tenant's resources look exactly like this).", ['not_found']),
  Conflict: problemResponse('The change clashes with the current state (duplicate sku, disallowed status transition).', ['conflict']),
  CreateConflict: problemResponse('Duplicate sku (`conflict`), or a request with the same Idempotency-Key is still running (`idempotency_key_in_use`).', [
    'conflict',
    'idempotency_key_in_use',
  ]),
  IdempotencyKeyInUse: problemResponse('A request with the same Idempotency-Key is still running.', ['idempotency_key_in_use']),
  ReplayConflict: problemResponse(
    "The dead letter's subscription is disabled (`conflict`; enable it first), or a request with the same Idempotency-Key is still running (`idempotency_key_in_use`).",
    ['conflict', 'idempotency_key_in_use'],
  ),
  PreconditionFailed: problemResponse('If-Match does not match the current ETag.', ['precondition_failed']),
  PayloadTooLarge: problemResponse('The body is larger than 1 MiB.', ['payload_too_large']),
  UnsupportedMediaType: problemResponse('The body is not sent as application/json.', ['unsupported_media_type']),
  ValidationFailed: withExample(
    problemResponse('One or more fields are invalid, or a query parameter is one the operation does not take (`unknown_parameter`); see `errors`.', [
      'validation_failed',
    ]),
    'Every field error at once, each field written one way',
    {
      type: problemTypeUri('validation_failed'),
      title: problemTypes.validation_failed.title,
      status: 422,
      code: 'validation_failed',
      detail: 'scopes[1]: nope:write is not a Merx scope; colour: colour is not an API key field',
      request_id: 'req_01jd3k7q8m2x4v6b9c0d1e2f3g',
      errors: [
        { field: 'scopes[1]', code: 'invalid_scope', message: 'nope:write is not a Merx scope' },
        { field: 'colour', code: 'unknown_field', message: 'colour is not an API key field' },
      ],
    },
  ),
  CreateValidationFailed: problemResponse(
    'One or more fields are invalid (`validation_failed`, see `errors`), or the Idempotency-Key was used with another body (`idempotency_key_reused`).',
    ['validation_failed', 'idempotency_key_reused'],
  ),
  RateLimited: problemResponse('A throttle class is exhausted; see `throttle_class` and Retry-After.', ['rate_limited'], {
    'Retry-After': ref('headers', 'RetryAfter'),
  }),
  Internal: problemResponse('Something failed on our side; the body says nothing more than the request id.', ['internal']),
  Unavailable: problemResponse('A service behind the gateway is unreachable or not ready; retry later.', ['unavailable']),
  UnexpectedError: {
    description: 'Any other error, as problem+json.',
    headers: commonHeaders(),
    content: { 'application/problem+json': { schema: ref('schemas', 'Problem') } },
  },
};

export const parameters: Record<string, ParameterObject> = {
  Limit: {
    name: 'limit',
    in: 'query',
    description: 'Page size.',
    schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
  },
  Cursor: {
    name: 'cursor',
    in: 'query',
    description: 'Opaque cursor from `next_cursor` of the previous page.',
    schema: { type: 'string', minLength: 1, maxLength: 512 },
  },
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    description:
      'Makes the POST safe to retry for 24 h: the same key and body replay the first response; another body is 422 idempotency_key_reused; while the first is running, 409 idempotency_key_in_use.',
    schema: { type: 'string', minLength: 1, maxLength: 255 },
  },
  IfMatch: {
    name: 'If-Match',
    in: 'header',
    description: 'Apply only if the resource still has this ETag (412 otherwise).',
    schema: { type: 'string' },
  },
  AuditEntryId: {
    name: 'id',
    in: 'path',
    required: true,
    description: 'Audit entry id (`aud_...`).',
    schema: { type: 'string' },
  },
  ApiKeyId: {
    name: 'id',
    in: 'path',
    required: true,
    description: 'API key id (`key_...`).',
    schema: { type: 'string' },
  },
  AppId: {
    name: 'id',
    in: 'path',
    required: true,
    description: 'App id (`app_...`).',
    schema: { type: 'string' },
  },
  ProductId: {
    name: 'id',
    in: 'path',
    required: true,
    description: 'Product id (`prod_...`).',
    schema: { type: 'string' },
  },
  SubscriptionId: {
    name: 'id',
    in: 'path',
    required: true,
    description: 'Webhook subscription id (`wh_...`).',
    schema: { type: 'string' },
  },
  DeliveryId: {
    name: 'id',
    in: 'path',
    required: true,
    description: 'Webhook delivery id (`del_...`); a dead letter has the id of its dead delivery.',
    schema: { type: 'string' },
  },
  EventId: {
    name: 'id',
    in: 'path',
    required: true,
    description: 'Event id (`evt_...`).',
    schema: { type: 'string' },
  },
};

export const securitySchemes: Record<string, SecuritySchemeObject> = {
  oauth2: {
    type: 'oauth2',
    description:
      'Access tokens (JWT, 15 minutes) from the client credentials grant: client id `mx_<mode>_<keyid>`, client secret the whole API key. Send as `Authorization: Bearer <token>`.',
    flows: { clientCredentials: { tokenUrl: '/oauth/token', scopes: { ...scopeDescriptions } } },
  },
  operator: {
    type: 'http',
    scheme: 'bearer',
    description: 'The operator credential from the platform configuration; only for /admin/v1/.',
  },
};
