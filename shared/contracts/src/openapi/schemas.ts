import { problemCodes, problemTypeUri, problemTypes } from '../errors.js';
import { scopeNames } from '../scopes.js';
import {
  attributes,
  currencyCode,
  decimalAmount,
  inventoryQuantity,
  merchantMode,
  merchantPlan,
  prefixedId,
  productDescription,
  productTitle,
  resourceVersion,
  sku,
  timestamp,
  timezone,
} from './fragments.js';
import type { JsonSchema } from './types.js';

const productStatus: JsonSchema = { type: 'string', enum: ['draft', 'active', 'archived'] };

export const productSchema: JsonSchema = {
  type: 'object',
  description: 'A product a merchant sells.',
  required: [
    'id',
    'object',
    'sku',
    'title',
    'description',
    'price',
    'currency',
    'status',
    'inventory_quantity',
    'attributes',
    'version',
    'created_at',
    'updated_at',
  ],
  additionalProperties: false,
  properties: {
    id: prefixedId('prod', 'Product id.'),
    object: { const: 'product' },
    sku,
    title: productTitle,
    description: productDescription,
    price: decimalAmount,
    currency: currencyCode,
    status: { ...productStatus, description: 'draft → active → archived → active.' },
    inventory_quantity: inventoryQuantity,
    attributes,
    version: resourceVersion,
    created_at: timestamp,
    updated_at: timestamp,
  },
};

export const productCreateSchema: JsonSchema = {
  type: 'object',
  required: ['sku', 'title', 'price', 'currency'],
  additionalProperties: false,
  properties: {
    sku,
    title: productTitle,
    description: productDescription,
    price: decimalAmount,
    currency: currencyCode,
    status: { type: 'string', enum: ['draft', 'active'], default: 'active' },
    inventory_quantity: inventoryQuantity,
    attributes,
  },
};

export const productUpdateSchema: JsonSchema = {
  type: 'object',
  description: 'The fields to change; omitted fields keep their value. `attributes` replaces the whole map.',
  additionalProperties: false,
  properties: {
    sku,
    title: productTitle,
    description: productDescription,
    price: decimalAmount,
    currency: currencyCode,
    status: { ...productStatus, description: 'Allowed transitions: draft → active → archived → active; others are 409.' },
    inventory_quantity: inventoryQuantity,
    attributes,
  },
};

export function listSchema(itemRef: string): JsonSchema {
  return {
    type: 'object',
    required: ['object', 'data', 'has_more', 'next_cursor'],
    additionalProperties: false,
    properties: {
      object: { const: 'list' },
      data: { type: 'array', items: { $ref: itemRef } },
      has_more: { type: 'boolean' },
      next_cursor: { type: ['string', 'null'], description: 'Pass as `cursor` to fetch the next page; null on the last page.' },
    },
  };
}

export const merchantSchema: JsonSchema = {
  type: 'object',
  description: 'A tenant of the platform.',
  required: ['id', 'object', 'name', 'mode', 'plan', 'default_currency', 'timezone', 'status', 'version', 'created_at', 'updated_at'],
  additionalProperties: false,
  properties: {
    id: prefixedId('mch', 'Merchant id.'),
    object: { const: 'merchant' },
    name: { type: 'string', minLength: 1, maxLength: 255 },
    mode: merchantMode,
    plan: { ...merchantPlan, description: 'Sets the throttle numbers.' },
    default_currency: currencyCode,
    timezone,
    status: { type: 'string', enum: ['active', 'suspended'] },
    version: {
      ...resourceVersion,
      description:
        'Increases by one on every change of the merchant, by its owner or by the operator (`profile_version` + `standing_version` - 1); the ETag is derived from it.',
    },
    profile_version: {
      type: 'integer',
      minimum: 1,
      description:
        'Counts the changes of the profile (`name`, `default_currency`, `timezone`), which the merchant makes with `PATCH /api/v1/merchant` and `merchants.updated` announces. Absent from events published before it existed.',
    },
    standing_version: {
      type: 'integer',
      minimum: 1,
      description:
        'Counts the changes of the standing (`mode`, `plan`, `status`), which the operator makes with `PATCH /admin/v1/merchants/{id}` and `merchants.standing_changed` announces. Absent from events published before it existed.',
    },
    created_at: timestamp,
    updated_at: timestamp,
  },
};

/**
 * The operator's half of the merchant (mode, plan, status), as `merchants.standing_changed`
 * carries it: the whole group with its own version, so a consumer keeping a copy replaces it only
 * with a newer one.
 */
export const merchantStandingSchema: JsonSchema = {
  type: 'object',
  description: "The merchant's standing: what the operator decides (mode, plan, status).",
  required: ['object', 'id', 'mode', 'plan', 'status', 'version', 'updated_at'],
  additionalProperties: false,
  properties: {
    object: { const: 'merchant_standing' },
    id: prefixedId('mch', 'The merchant whose standing this is.'),
    mode: merchantMode,
    plan: { ...merchantPlan, description: 'Sets the throttle numbers.' },
    status: { type: 'string', enum: ['active', 'suspended'], description: "A suspended merchant's tokens are dead and no new ones are issued." },
    version: {
      type: 'integer',
      minimum: 1,
      description:
        "The standing's own version (the merchant's `standing_version`): increases by one on every standing change. Keep the standing with the greatest version; an event with a smaller one is older.",
    },
    updated_at: { ...timestamp, description: 'When the standing last changed.' },
  },
};

export const merchantCreateSchema: JsonSchema = {
  type: 'object',
  required: ['name', 'owner'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 255 },
    owner: {
      type: 'object',
      description: "The merchant's owner, who signs in on the app consent pages.",
      required: ['email'],
      additionalProperties: false,
      properties: {
        email: { type: 'string', format: 'email', maxLength: 254, description: 'Unique across Merx (case-insensitive).' },
        password: { type: 'string', minLength: 12, maxLength: 256, description: 'At least 12 characters; generated and returned once when omitted.' },
      },
    },
    mode: { ...merchantMode, default: 'sandbox' },
    plan: { ...merchantPlan, description: 'Defaults to sandbox for sandbox merchants and standard for live ones.' },
    default_currency: { ...currencyCode, default: 'USD' },
    timezone: { ...timezone, default: 'UTC' },
  },
};

const apiKeyProperties = {
  id: prefixedId('key', 'API key id.'),
  object: { const: 'api_key' },
  name: { type: 'string', minLength: 1, maxLength: 255 },
  prefix: {
    type: 'string',
    pattern: '^mx_(test|live)_[0-9A-Za-z]+$',
    description: 'The OAuth client id of the key (`mx_<mode>_<keyid>`); safe to show and log.',
  },
  scopes: { type: 'array', uniqueItems: true, items: { type: 'string', enum: scopeNames } },
  created_at: timestamp,
  last_used_at: { ...timestamp, type: ['string', 'null'], description: 'When the key last obtained a token (minute precision); null if never.' },
  revoked_at: { ...timestamp, type: ['string', 'null'], description: 'When the key was revoked; null while it is active.' },
} satisfies Record<string, JsonSchema>;

export const apiKeySchema: JsonSchema = {
  type: 'object',
  description: 'An API key without its secret.',
  required: ['id', 'object', 'name', 'prefix', 'scopes', 'created_at', 'last_used_at', 'revoked_at'],
  additionalProperties: false,
  properties: apiKeyProperties,
};

export const apiKeyCreateSchema: JsonSchema = {
  type: 'object',
  required: ['name', 'scopes'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 255 },
    scopes: {
      type: 'array',
      minItems: 1,
      uniqueItems: true,
      items: { type: 'string', enum: scopeNames },
      description: 'A subset of the scopes the calling token holds.',
    },
  },
};

export const apiKeyWithSecretSchema: JsonSchema = {
  type: 'object',
  description: 'An API key as returned once, on creation, with its secret.',
  required: ['id', 'object', 'name', 'prefix', 'scopes', 'secret', 'created_at', 'last_used_at'],
  additionalProperties: false,
  properties: {
    ...apiKeyProperties,
    secret: {
      type: 'string',
      pattern: '^mx_(test|live)_[0-9A-Za-z]+_[0-9A-Za-z]+$',
      description: 'The whole key (`mx_<mode>_<keyid>_<secret>`), the OAuth client secret. Shown only here; stored only as a hash.',
    },
  },
};

export const merchantProvisioningSchema: JsonSchema = {
  type: 'object',
  required: ['object', 'merchant', 'owner', 'api_key'],
  additionalProperties: false,
  properties: {
    object: { const: 'merchant_provisioning' },
    merchant: { $ref: '#/components/schemas/Merchant' },
    owner: {
      type: 'object',
      required: ['id', 'object', 'email'],
      additionalProperties: false,
      properties: {
        id: prefixedId('usr', 'User id.'),
        object: { const: 'user' },
        email: { type: 'string', format: 'email' },
        password: {
          type: 'string',
          minLength: 12,
          description: 'Only when the request gave none: the generated password, shown here once; stored only as a scrypt hash.',
        },
      },
    },
    api_key: { $ref: '#/components/schemas/ApiKeyWithSecret' },
  },
};

/** Members a problem of that code must carry (declared again beside `required`, where linters look for them). */
function requiredWith(code: string): { required?: string[]; properties?: Record<string, JsonSchema> } {
  const members: Record<string, string[]> = {
    validation_failed: ['errors'],
    insufficient_scope: ['required_scope'],
    rate_limited: ['throttle_class', 'retry_after'],
  };
  const names = members[code];
  if (!names) return {};
  return { required: names, properties: Object.fromEntries(names.map((name) => [name, { description: `Always present with code \`${code}\`.` }])) };
}

/** Status, type URI and mandatory extensions follow from `code`, so any problem body is checked whole. */
const problemCodeRules: JsonSchema[] = problemCodes.map((code) => ({
  if: { properties: { code: { const: code } }, required: ['code'] },
  then: {
    properties: { status: { const: problemTypes[code].status }, type: { const: problemTypeUri(code) }, ...requiredWith(code).properties },
    ...(requiredWith(code).required ? { required: requiredWith(code).required } : {}),
  },
}));

export const problemSchema: JsonSchema = {
  type: 'object',
  description: 'RFC 9457 problem details, served as application/problem+json.',
  required: ['type', 'title', 'status', 'code', 'detail', 'request_id'],
  additionalProperties: false,
  properties: {
    type: { type: 'string', format: 'uri', pattern: '^https://merx\\.dev/errors/[a-z_]+$' },
    title: { type: 'string', minLength: 1 },
    status: { type: 'integer', minimum: 400, maximum: 599 },
    code: { type: 'string', enum: problemCodes },
    detail: { type: 'string', description: 'Explains this occurrence; never a stack trace.' },
    instance: { type: 'string' },
    request_id: prefixedId('req', 'Same as the X-Request-Id header.'),
    errors: {
      type: 'array',
      minItems: 1,
      items: { $ref: '#/components/schemas/FieldError' },
    },
    throttle_class: { type: 'string', enum: ['burst', 'sustained', 'writes', 'sensitive'] },
    retry_after: { type: 'integer', minimum: 0, description: 'Seconds; same as the Retry-After header.' },
    required_scope: { type: 'string', enum: scopeNames },
  },
  allOf: problemCodeRules,
};

export const fieldErrorSchema: JsonSchema = {
  type: 'object',
  required: ['field', 'code', 'message'],
  additionalProperties: false,
  properties: {
    field: {
      type: 'string',
      description:
        'Where: members joined by dots, array positions in brackets, a member whose name is not a plain identifier quoted in brackets (`price`, `scopes[0]`, `settings.url`, `transform.set["customer.email"]`); a query parameter by its name; `(body)` for the body as a whole.',
      examples: ['price', 'scopes[0]'],
    },
    code: { type: 'string', description: 'Machine-readable reason.', examples: ['invalid_decimal'] },
    message: { type: 'string' },
  },
};
