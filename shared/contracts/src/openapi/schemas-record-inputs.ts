import { currencyCode, decimalAmount } from './fragments.js';
import { externalId, MAX_RECORDS_PER_BATCH, recordTypes, type RecordType } from './schemas-merchants.js';
import type { JsonSchema } from './types.js';

/**
 * What a source sends: a record of one of four types, each with the `data` fields Merx knows
 * typed (rules compare them, subscribers read them) and any other fields of the source's own
 * left free. The merchants service checks exactly this (services/merchants/src/domain/record.ts;
 * a test there holds the two together); limits JSON Schema cannot say are in the descriptions.
 */

export const MAX_ALERT_MESSAGE_LENGTH = 1000;
export const MAX_RECORD_DATA_KIB = 64;
export const MAX_RECORD_DATA_DEPTH = 16;

/** ISO 8601 with a zone (`Z` or `±hh:mm`) and up to nine fractional digits; stored normalised to UTC milliseconds. */
export const RECORD_TIMESTAMP_PATTERN = '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,9})?(Z|[+-]\\d{2}:\\d{2})$';

const occurredAt: JsonSchema = {
  type: 'string',
  format: 'date-time',
  pattern: RECORD_TIMESTAMP_PATTERN,
  description: 'When it happened in the source: ISO 8601 with a zone (`Z` or `+01:00`), stored as UTC with milliseconds.',
  examples: ['2026-11-22T10:04:05.123Z', '2026-11-22T11:04:05+01:00'],
};

const text = (description: string): JsonSchema => ({ type: 'string', description });

/** Known fields of each type's `data`, all optional; other members are the source's own and pass untouched. */
export const recordDataFields: Record<RecordType, Record<string, JsonSchema>> = {
  order: {
    total: { type: 'number', description: 'The order total as a JSON number, so rules compare it (`data.total >= 100.0`).', examples: [129.9] },
    currency: { ...currencyCode, description: 'ISO 4217 code of `total`, upper case.' },
    customer: { type: 'object', description: 'Who ordered, in the source\'s own shape (`{"email": ..., "name": ...}`).' },
    line_items: { type: 'array', items: { type: 'object' }, description: "The order's lines, each an object in the source's own shape." },
  },
  review: {
    rating: { type: 'number', description: "The rating on the source's scale (usually 1-5).", examples: [4] },
    title: text("The review's headline."),
    body: text("The review's text."),
    author: text('Who wrote it, as the source names them.'),
    sku: text("The reviewed product's sku."),
  },
  campaign_spend: {
    spend: { ...decimalAmount, description: 'Money spent, a decimal string like every amount in Merx.' },
    currency: { ...currencyCode, description: 'ISO 4217 code of `spend`, upper case.' },
    campaign_id: text("The campaign's id on the ads platform."),
    channel: text('Where the campaign runs (`search`, `social`, ...).'),
  },
  alert: {
    message: {
      type: 'string',
      minLength: 1,
      maxLength: MAX_ALERT_MESSAGE_LENGTH,
      pattern: '\\S',
      description: `Required: what went wrong, 1-${MAX_ALERT_MESSAGE_LENGTH} characters, not blank. Becomes the system alert's \`message\`.`,
    },
    severity: { type: 'string', enum: ['warning', 'critical'], description: "The system alert's severity; `warning` when omitted." },
  },
};

const dataDescriptions: Record<RecordType, string> = {
  order: 'An order. Emits `orders.created`.',
  review: 'A product review. Emits `reviews.submitted`.',
  campaign_spend: 'Spend of an ads campaign. Emits `campaign_spend.updated`.',
  alert: 'An error the source reports. Emits `system_alerts.raised` (kind `source_error`) with the record inside.',
};

/** `campaign_spend` → `CampaignSpend`, for component names. */
export const recordComponentStem = (type: RecordType): string =>
  type
    .split('_')
    .map((word) => word[0]!.toUpperCase() + word.slice(1))
    .join('');

function recordInputOf(type: RecordType): JsonSchema {
  return {
    type: 'object',
    description: `${dataDescriptions[type]} A record is accepted once per (source, type, external_id).`,
    required: ['type', 'external_id', 'occurred_at', 'data'],
    additionalProperties: false,
    properties: {
      type: { const: type },
      external_id: externalId,
      occurred_at: occurredAt,
      data: {
        type: 'object',
        description: `The record's own data: the fields below typed, any others the source's own (at most ${MAX_RECORD_DATA_KIB} KiB as JSON, nested at most ${MAX_RECORD_DATA_DEPTH} deep).`,
        ...(type === 'alert' ? { required: ['message'] } : {}),
        properties: recordDataFields[type],
        additionalProperties: true,
      },
    },
  };
}

/** `OrderRecordInput`, `ReviewRecordInput`, ...: one component per type. */
export const recordInputSchemas: Record<string, JsonSchema> = Object.fromEntries(
  recordTypes.map((type) => [`${recordComponentStem(type)}RecordInput`, recordInputOf(type)]),
);

const inputReference = (type: RecordType) => `#/components/schemas/${recordComponentStem(type)}RecordInput`;

export const recordInputSchema: JsonSchema = {
  description: 'A record of one of the four types, told apart by `type`.',
  oneOf: recordTypes.map((type) => ({ $ref: inputReference(type) })),
  discriminator: { propertyName: 'type', mapping: Object.fromEntries(recordTypes.map((type) => [type, inputReference(type)])) },
};

export const recordBatchRequestSchema: JsonSchema = {
  type: 'object',
  required: ['records'],
  additionalProperties: false,
  properties: {
    records: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_RECORDS_PER_BATCH,
      items: { $ref: '#/components/schemas/RecordInput' },
      description: 'Each record is checked on its own: one that does not match is answered `rejected` with its reasons, and the others still go in.',
    },
  },
};
