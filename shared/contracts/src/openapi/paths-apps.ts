import { scopeNames } from '../scopes.js';
import { commonHeaders, jsonContent, ref } from './components.js';
import { prefixedId, timestamp } from './fragments.js';
import { bearerOperation } from './paths-products.js';
import type { JsonSchema, OperationObject, PathItem } from './types.js';

const scopeList: JsonSchema = { type: 'array', uniqueItems: true, items: { type: 'string', enum: scopeNames } };
const clientId: JsonSchema = { type: 'string', pattern: '^mxapp_[0-9A-Za-z]{20}$', description: 'OAuth client id of the app.' };
const redirectUris: JsonSchema = {
  type: 'array',
  minItems: 1,
  maxItems: 10,
  items: { type: 'string', format: 'uri', maxLength: 2000, description: 'https, or http to localhost / 127.0.0.1 for development; exact match.' },
};

const appProperties = {
  id: prefixedId('app', 'App id.'),
  object: { const: 'app' },
  name: { type: 'string', minLength: 1, maxLength: 100 },
  client_id: clientId,
  redirect_uris: redirectUris,
  scopes: { ...scopeList, description: 'The scopes the app may request; a merchant grants a subset.' },
  created_at: timestamp,
} satisfies Record<string, JsonSchema>;

export const appCreateSchema: JsonSchema = {
  type: 'object',
  required: ['name', 'redirect_uris', 'scopes'],
  additionalProperties: false,
  properties: { name: appProperties.name, redirect_uris: redirectUris, scopes: { ...scopeList, minItems: 1 } },
};

export const appWithSecretSchema: JsonSchema = {
  type: 'object',
  description: 'A registered app as returned once, on registration, with its client secret.',
  required: ['id', 'object', 'name', 'client_id', 'client_secret', 'redirect_uris', 'scopes', 'created_at'],
  additionalProperties: false,
  properties: {
    ...appProperties,
    client_secret: { type: 'string', pattern: '^mxsec_[0-9A-Za-z]{40}$', description: 'Shown only here; Merx keeps a SHA-256 of it.' },
  },
};

export const installedAppSchema: JsonSchema = {
  type: 'object',
  description: 'A third-party app the merchant installed (consented to), with the scopes it was granted.',
  required: ['id', 'object', 'name', 'client_id', 'scopes', 'installed_at'],
  additionalProperties: false,
  properties: {
    id: appProperties.id,
    object: { const: 'installed_app' },
    name: appProperties.name,
    client_id: clientId,
    scopes: { ...scopeList, description: 'Granted scopes: what the merchant consented to, within what the app requested.' },
    installed_at: timestamp,
  },
};

export const signingKeyRotationSchema: JsonSchema = {
  type: 'object',
  required: ['object', 'current_kid', 'next_kid', 'published_kids'],
  additionalProperties: false,
  properties: {
    object: { const: 'signing_key_rotation' },
    current_kid: { type: 'string', description: 'The key that signs from now on (the former next key).' },
    next_kid: { type: 'string', description: 'The new next key, already published in the JWKS.' },
    published_kids: { type: 'array', items: { type: 'string' }, description: 'Every key in the JWKS: current, next and recently retired ones.' },
  },
};

export function operatorOperation(operation: Omit<OperationObject, 'security' | 'responses'>, success: OperationObject['responses']): OperationObject {
  return {
    ...operation,
    security: [{ operator: [] }],
    responses: {
      ...success,
      '400': ref('responses', 'MalformedRequest'),
      '401': ref('responses', 'Unauthenticated'),
      '413': ref('responses', 'PayloadTooLarge'),
      '415': ref('responses', 'UnsupportedMediaType'),
      '422': ref('responses', 'ValidationFailed'),
      '500': ref('responses', 'Internal'),
      '503': ref('responses', 'Unavailable'),
    },
  };
}

export const appAdminPaths: Record<string, PathItem> = {
  '/admin/v1/apps': {
    post: operatorOperation(
      {
        operationId: 'apps.admin.create',
        summary: 'Register a third-party app',
        description:
          'Registers an OAuth client that merchants install with authorization code + PKCE (S256) on the Merx consent page. The client secret is in this response only. Operators only.',
        tags: ['apps'],
        requestBody: { required: true, content: jsonContent(ref('schemas', 'AppCreate')) },
      },
      { '201': { description: 'The app with its client secret.', headers: commonHeaders(), content: jsonContent(ref('schemas', 'AppWithSecret')) } },
    ),
  },
  '/admin/v1/signing-keys/rotate': {
    post: operatorOperation(
      {
        operationId: 'signing_keys.admin.rotate',
        summary: 'Rotate the token signing keys',
        description:
          'The next key (already in the JWKS) starts signing, a new next key is published, and the former key stays in the JWKS until every token it signed has expired. No restart; no valid token stops verifying. Operators only.',
        tags: ['oauth'],
      },
      { '200': { description: 'The key ids after the rotation.', headers: commonHeaders(), content: jsonContent(ref('schemas', 'SigningKeyRotation')) } },
    ),
  },
};

export const installedAppPaths: Record<string, PathItem> = {
  '/api/v1/apps': {
    get: bearerOperation(
      'merchant:read',
      {
        operationId: 'apps.list',
        summary: 'List installed apps',
        description: 'The third-party apps the merchant installed, with the scopes granted to each, newest app first.',
        tags: ['apps'],
        parameters: [ref('parameters', 'Limit'), ref('parameters', 'Cursor')],
      },
      { '200': { description: 'One page of installed apps.', headers: commonHeaders(), content: jsonContent(ref('schemas', 'InstalledAppList')) } },
      ['MalformedRequest', 'ValidationFailed'],
    ),
  },
  '/api/v1/apps/{id}/grant': {
    parameters: [ref('parameters', 'AppId')],
    delete: bearerOperation(
      'merchant:write',
      {
        operationId: 'apps.uninstall',
        summary: 'Uninstall an app',
        description:
          "Revokes the merchant's grant to the app: its refresh tokens stop working at once and its access tokens are refused everywhere within a second. The app must ask for consent again. Emits `apps.grant_revoked`.",
        tags: ['apps'],
      },
      { '204': { description: 'Revoked; no body.', headers: commonHeaders() } },
      ['NotFound'],
    ),
  },
};
