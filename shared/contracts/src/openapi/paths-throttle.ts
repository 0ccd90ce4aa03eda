import { commonHeaders, jsonContent, ref } from './components.js';
import { merchantPlan, prefixedId, timestamp } from './fragments.js';
import type { JsonSchema, ParameterObject, PathItem, ResponseObject } from './types.js';

const positiveInteger = (max: number, description: string): JsonSchema => ({ type: 'integer', minimum: 1, maximum: max, description });
const bucket = (what: string): JsonSchema => ({
  type: 'object',
  additionalProperties: false,
  description: `Token bucket (${what}).`,
  properties: {
    capacity: positiveInteger(1_000_000, 'Requests that may come at once.'),
    refill_per_second: { type: 'number', exclusiveMinimum: 0, maximum: 1_000_000, description: 'Tokens added back per second.' },
  },
});
const window = (what: string): JsonSchema => ({
  type: 'object',
  additionalProperties: false,
  description: `Rolling window (${what}).`,
  properties: {
    limit: positiveInteger(1_000_000_000, 'Requests per window.'),
    window_seconds: positiveInteger(86_400, 'Window length in seconds.'),
  },
});

/** Only the numbers that differ from the merchant's plan; `{}` means the plan's numbers. */
export const throttleOverridesSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  description: "Per-class numbers replacing the plan's for this merchant; classes and fields left out keep the plan's.",
  properties: {
    burst: bucket('every request'),
    sustained: window('every request'),
    writes: bucket('POST, PUT, PATCH, DELETE'),
    sensitive: window('token issuance, API key create/revoke, secret rotation, sandbox reset, dead-letter replay'),
    event_streams: {
      type: 'object',
      additionalProperties: false,
      description: 'A cap, not a rate: gRPC `StreamEvents` calls the merchant may have open at once, across every gateway replica.',
      properties: { concurrent: positiveInteger(100_000, 'Streams open at once; past it a new one is refused with RESOURCE_EXHAUSTED.') },
    },
  },
  examples: [{ burst: { capacity: 300, refill_per_second: 150 }, sustained: { limit: 60000 } }],
};

export const throttleOverrideSchema: JsonSchema = {
  type: 'object',
  required: ['object', 'merchant_id', 'plan', 'overrides', 'version', 'updated_at'],
  additionalProperties: false,
  properties: {
    object: { const: 'throttle_override' },
    merchant_id: prefixedId('mch', 'The merchant.'),
    plan: merchantPlan,
    overrides: throttleOverridesSchema,
    version: { type: 'integer', minimum: 0, description: 'Increases with every PUT; 0 while the operator never set one.' },
    updated_at: timestamp,
  },
};

const overrideResponse = (description: string): ResponseObject => ({
  description,
  headers: commonHeaders(),
  content: jsonContent(ref('schemas', 'ThrottleOverride')),
});

export const merchantIdParameter: ParameterObject = {
  name: 'id',
  in: 'path',
  required: true,
  description: 'Merchant id (`mch_...`).',
  schema: { type: 'string' },
};

const operatorErrors = {
  '401': ref('responses', 'Unauthenticated'),
  '404': ref('responses', 'NotFound'),
  '422': ref('responses', 'ValidationFailed'),
  '500': ref('responses', 'Internal'),
  '503': ref('responses', 'Unavailable'),
};

export const throttleAdminPaths: Record<string, PathItem> = {
  '/admin/v1/merchants/{id}': {
    parameters: [ref('parameters', 'MerchantId')],
    patch: {
      operationId: 'merchants.admin.update',
      summary: 'Suspend, reactivate or re-plan a merchant',
      description:
        'Changes `status` (`active` | `suspended`) and/or `plan`. Suspending refuses new tokens at once and kills every access token the merchant holds within a second, at the gateway and in every service; tokens issued before a suspension stay dead after reactivation. Emits `merchants.standing_changed` with the whole standing and its `version`. Operators only.',
      tags: ['merchants'],
      security: [{ operator: [] }],
      requestBody: {
        required: true,
        content: jsonContent({
          type: 'object',
          additionalProperties: false,
          minProperties: 1,
          properties: { status: { type: 'string', enum: ['active', 'suspended'] }, plan: { type: 'string', enum: ['sandbox', 'standard', 'scale'] } },
        }),
      },
      responses: {
        '200': { description: 'The merchant as it is now.', headers: commonHeaders(), content: jsonContent(ref('schemas', 'Merchant')) },
        '400': ref('responses', 'MalformedRequest'),
        '413': ref('responses', 'PayloadTooLarge'),
        '415': ref('responses', 'UnsupportedMediaType'),
        ...operatorErrors,
      },
    },
  },
  '/admin/v1/merchants/{id}/throttle': {
    parameters: [ref('parameters', 'MerchantId')],
    get: {
      operationId: 'merchants.admin.throttle.retrieve',
      summary: "Retrieve a merchant's throttle override",
      description: "The operator's per-merchant throttle numbers (empty `overrides`: the plan's numbers apply). Operators only.",
      tags: ['merchants'],
      security: [{ operator: [] }],
      responses: { '200': overrideResponse('The override.'), ...operatorErrors },
    },
    put: {
      operationId: 'merchants.admin.throttle.update',
      summary: "Set a merchant's throttle override",
      description:
        "Replaces the merchant's override with the body; `{}` returns the merchant to its plan's numbers. Every gateway replica applies it within moments (the `merchants.throttle_updated` event). Operators only.",
      tags: ['merchants'],
      security: [{ operator: [] }],
      requestBody: { required: true, content: jsonContent(ref('schemas', 'ThrottleOverrides')) },
      responses: {
        '200': overrideResponse('The override as stored.'),
        '400': ref('responses', 'MalformedRequest'),
        '413': ref('responses', 'PayloadTooLarge'),
        '415': ref('responses', 'UnsupportedMediaType'),
        ...operatorErrors,
      },
    },
  },
};
