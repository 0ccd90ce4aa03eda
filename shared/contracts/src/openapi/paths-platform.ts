import { commonHeaders, jsonContent, ref } from './components.js';
import type { OperationObject, PathItem, ResponseObject } from './types.js';

const unexpectedError = { default: ref('responses', 'UnexpectedError') };

function publicOperation(operation: Omit<OperationObject, 'security'>): OperationObject {
  return { ...operation, security: [] };
}

const jsonResponse = (description: string, schemaName: string): ResponseObject => ({
  description,
  headers: commonHeaders(),
  content: jsonContent(ref('schemas', schemaName)),
});

const oauthErrorResponse = (description: string): ResponseObject => ({
  description,
  headers: commonHeaders(),
  content: jsonContent(ref('schemas', 'OAuthError')),
});

export const metaPaths: Record<string, PathItem> = {
  '/api/v1/openapi.json': {
    get: publicOperation({
      operationId: 'openapi.retrieve',
      summary: 'Retrieve this OpenAPI document',
      description: 'The OpenAPI 3.1 document of the API; the SDKs and the CLI are generated from it. No credentials needed.',
      tags: ['meta'],
      responses: { '200': jsonResponse('The document.', 'OpenApiDocument'), ...unexpectedError },
    }),
  },
};

export const oauthPaths: Record<string, PathItem> = {
  '/oauth/token': {
    post: publicOperation({
      operationId: 'oauth.token',
      summary: 'Exchange an API key for an access token',
      description:
        'OAuth 2.0 client credentials grant. Authenticate with HTTP Basic (`client_id:api_key`, e.g. `curl -u "$CLIENT_ID:$API_KEY" -d grant_type=client_credentials`) or send client_id and client_secret in the form (client_secret_post). No bearer token. Counts in the `sensitive` throttle class.',
      tags: ['oauth'],
      requestBody: {
        required: true,
        content: { 'application/x-www-form-urlencoded': { schema: ref('schemas', 'TokenRequest') } },
      },
      responses: {
        '200': jsonResponse('An access token.', 'TokenResponse'),
        '400': oauthErrorResponse('invalid_request, unsupported_grant_type or invalid_scope.'),
        '401': oauthErrorResponse('invalid_client: unknown client id, wrong or revoked key.'),
        '429': ref('responses', 'RateLimited'),
        '503': ref('responses', 'Unavailable'),
        default: {
          description: 'server_error from the authorization server, or a problem+json from the gateway.',
          headers: commonHeaders(),
          content: {
            ...jsonContent(ref('schemas', 'OAuthError')),
            'application/problem+json': { schema: ref('schemas', 'Problem') },
          },
        },
      },
    }),
  },
  '/oauth/jwks': {
    get: publicOperation({
      operationId: 'oauth.jwks',
      summary: 'Retrieve the token signing keys',
      description: 'JSON Web Key Set with the public keys that verify access tokens (issuer `{base_url}/oauth`).',
      tags: ['oauth'],
      responses: {
        '200': {
          description: 'The key set.',
          headers: commonHeaders(),
          content: {
            'application/json': { schema: ref('schemas', 'JsonWebKeySet') },
            'application/jwk-set+json': { schema: ref('schemas', 'JsonWebKeySet') },
          },
        },
        ...unexpectedError,
      },
    }),
  },
};

export const adminPaths: Record<string, PathItem> = {
  '/admin/v1/merchants': {
    post: {
      operationId: 'merchants.admin.create',
      summary: 'Provision a merchant',
      description:
        "Creates a merchant with its owner user (who signs in on the app consent pages; password hashed with scrypt, generated and returned once when not given) and its first API key (all scopes). The key's secret is in this response only. An owner email already used anywhere on Merx is a 409. Operators only: send the operator credential from the platform configuration as a bearer token. Emits `merchants.created` and `api_keys.created`.",
      tags: ['merchants'],
      security: [{ operator: [] }],
      requestBody: { required: true, content: jsonContent(ref('schemas', 'MerchantCreate')) },
      responses: {
        '201': jsonResponse('The merchant and its first API key.', 'MerchantProvisioning'),
        '400': ref('responses', 'MalformedRequest'),
        '401': ref('responses', 'Unauthenticated'),
        '409': ref('responses', 'Conflict'),
        '413': ref('responses', 'PayloadTooLarge'),
        '415': ref('responses', 'UnsupportedMediaType'),
        '422': ref('responses', 'ValidationFailed'),
        '500': ref('responses', 'Internal'),
        '503': ref('responses', 'Unavailable'),
      },
    },
  },
};

export const opsPaths: Record<string, PathItem> = {
  '/healthz': {
    get: publicOperation({
      operationId: 'health.retrieve',
      summary: 'Liveness',
      description: 'Answers 200 while the process runs; checks no dependency. Every service and the gateway serve it.',
      tags: ['ops'],
      responses: { '200': jsonResponse('The process is alive.', 'Health'), ...unexpectedError },
    }),
  },
  '/readyz': {
    get: publicOperation({
      operationId: 'readiness.retrieve',
      summary: 'Readiness',
      description:
        "Answers 200 while the process can serve, 503 when something it needs itself (its database) does not answer: what a load balancer needs, and nothing more. A failing upstream service or broker does not make it unready; it degrades the routes it serves. Which dependency is degraded and why, and the Prometheus metrics, are on each process's admin port (ADMIN_PORT), which is not public.",
      tags: ['ops'],
      responses: {
        '200': jsonResponse('Ready to serve traffic.', 'Readiness'),
        '503': jsonResponse('Not ready: the process cannot serve (its admin port says why).', 'Readiness'),
        ...unexpectedError,
      },
    }),
  },
};
