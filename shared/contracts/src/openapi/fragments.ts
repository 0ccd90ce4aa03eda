import type { JsonSchema } from './types.js';

/**
 * Small schemas reused by resources and events. They are inlined rather than referenced so
 * that each resource schema stands alone: the event catalogue hands them to webhook consumers
 * who never see the OpenAPI components.
 */
export function prefixedId(prefix: string, description: string): JsonSchema {
  return { type: 'string', pattern: `^${prefix}_[0-9a-z]{26}$`, description, examples: [`${prefix}_01jd3k7q8m2x4v6b9c0d1e2f3g`] };
}

export const timestamp: JsonSchema = {
  type: 'string',
  format: 'date-time',
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$',
  description: 'ISO 8601 in UTC with milliseconds.',
  examples: ['2026-11-22T10:04:05.123Z'],
};

export const currencyCode: JsonSchema = {
  type: 'string',
  pattern: '^[A-Z]{3}$',
  description: 'ISO 4217 currency code, upper case.',
  'x-merx-error': { code: 'invalid_currency', message: 'must be an ISO 4217 code in upper case, e.g. USD' },
  examples: ['USD'],
};

export const decimalAmount: JsonSchema = {
  type: 'string',
  pattern: '^\\d{1,15}(\\.\\d{1,4})?$',
  'x-merx-error': { code: 'invalid_decimal', message: 'must be a non-negative decimal string such as "19.99" (not a number), below 10^15' },
  description: "Decimal string, never a float. The number of decimals may not exceed the currency's minor units (JPY 0, USD 2, KWD 3).",
  examples: ['19.99'],
};

export const sku: JsonSchema = {
  type: 'string',
  pattern: '^[A-Za-z0-9._-]{1,64}$',
  description: 'Stock keeping unit, unique per merchant.',
  examples: ['TSHIRT-BLK-M'],
};

export const productTitle: JsonSchema = { type: 'string', minLength: 1, maxLength: 255 };

export const productDescription: JsonSchema = { type: ['string', 'null'], maxLength: 10000 };

export const inventoryQuantity: JsonSchema = {
  type: ['integer', 'null'],
  minimum: 0,
  maximum: 2147483647,
  description: 'Units in stock; null when inventory is not tracked.',
};

export const attributes: JsonSchema = {
  type: 'object',
  maxProperties: 50,
  propertyNames: { type: 'string', minLength: 1, maxLength: 64 },
  additionalProperties: { type: 'string', maxLength: 500 },
  description: 'Free-form string attributes (up to 50 keys, values up to 500 characters).',
  examples: [{ color: 'black', size: 'M' }],
};

export const resourceVersion: JsonSchema = {
  type: 'integer',
  minimum: 1,
  description: 'Increases by one on every change; the ETag is derived from it.',
};

export const merchantMode: JsonSchema = { type: 'string', enum: ['sandbox', 'live'] };
export const merchantPlan: JsonSchema = { type: 'string', enum: ['sandbox', 'standard', 'scale'] };

export const timezone: JsonSchema = {
  type: 'string',
  minLength: 1,
  maxLength: 64,
  pattern: '^[A-Za-z][A-Za-z0-9_+-]*(/[A-Za-z0-9_+-]+)*$',
  description: 'IANA time zone name.',
  examples: ['Europe/Berlin', 'UTC'],
};

/** The same object schema with nothing required: the shape of `previous` in update events. */
export function partialOf(schema: JsonSchema): JsonSchema {
  const { required: _required, ...rest } = schema;
  return { ...rest, description: 'The changed fields as they were before the change.' };
}
