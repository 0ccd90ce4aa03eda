import type { JsonSchema } from './types.js';

export const tokenRequestSchema: JsonSchema = {
  type: 'object',
  description: 'Authenticate the client with HTTP Basic (`client_id:api_key`) or, instead, with client_id and client_secret in this form (client_secret_post).',
  required: ['grant_type'],
  properties: {
    grant_type: { const: 'client_credentials' },
    scope: { type: 'string', description: "Space-separated scopes, a subset of the key's scopes; all of them when omitted." },
    client_id: { type: 'string', pattern: '^mx_(test|live)_[0-9A-Za-z]+$' },
    client_secret: { type: 'string', description: 'The whole API key.' },
  },
};

export const tokenResponseSchema: JsonSchema = {
  type: 'object',
  required: ['access_token', 'token_type', 'expires_in', 'scope'],
  properties: {
    access_token: {
      type: 'string',
      description: 'A JWT (audience urn:merx:api) carrying merchant_id, scope and client_id.',
    },
    token_type: { const: 'Bearer' },
    expires_in: { type: 'integer', minimum: 1, description: 'Lifetime in seconds (900).' },
    scope: { type: 'string', description: 'Space-separated granted scopes.' },
  },
};

export const oauthErrorSchema: JsonSchema = {
  type: 'object',
  description: 'OAuth 2.0 error (RFC 6749 section 5.2); the token endpoint answers in this form, not problem+json.',
  required: ['error'],
  properties: {
    error: {
      type: 'string',
      enum: [
        'invalid_request',
        'invalid_client',
        'invalid_grant',
        'unauthorized_client',
        'unsupported_grant_type',
        'invalid_scope',
        'server_error',
        'temporarily_unavailable',
      ],
    },
    error_description: { type: 'string' },
  },
};

export const jsonWebKeySetSchema: JsonSchema = {
  type: 'object',
  required: ['keys'],
  properties: {
    keys: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['kty', 'kid'],
        properties: {
          kty: { type: 'string' },
          kid: { type: 'string' },
          use: { const: 'sig' },
          alg: { type: 'string' },
        },
      },
    },
  },
};

export const healthSchema: JsonSchema = {
  type: 'object',
  required: ['status'],
  properties: { status: { const: 'ok' } },
};

export const readinessSchema: JsonSchema = {
  type: 'object',
  required: ['status'],
  description: 'A status alone: the checks, their details and the degraded dependencies are on the admin port.',
  properties: {
    status: { type: 'string', enum: ['ready', 'not_ready'] },
  },
};

/** Enough of the document's shape to tell it apart from anything else. */
export const openApiDocumentSchema: JsonSchema = {
  type: 'object',
  required: ['openapi', 'info', 'paths', 'components'],
  properties: {
    openapi: { type: 'string', pattern: '^3\\.1\\.' },
    info: { type: 'object' },
    paths: { type: 'object' },
    webhooks: { type: 'object' },
    components: { type: 'object' },
  },
};
