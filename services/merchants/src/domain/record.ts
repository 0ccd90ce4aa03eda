import { MAX_ALERT_MESSAGE_LENGTH, RECORD_TIMESTAMP_PATTERN, recordEventOfType, recordTypes, type RecordType } from '@merx/contracts';
import { fieldPath, newId, parseTimestamp, type FieldError } from '@merx/kit';
import { FieldChecks, jsonBytes, nestsDeeperThan } from './field-checks.js';

export interface RecordInput {
  type: RecordType;
  external_id: string;
  /** Normalised to ISO 8601 UTC with milliseconds. */
  occurred_at: string;
  data: Record<string, unknown>;
}

/** A record as stored: what the source sent, plus its id, its event and when it arrived. */
export interface IngestedRecord extends RecordInput {
  id: string;
  merchantId: string;
  sourceId: string;
  eventId: string;
  receivedAt: Date;
}

export interface RecordRoute {
  connection_id: string;
  destination_id: string;
  outcome: 'routed' | 'dropped' | 'filtered';
  rule_id: string | null;
  reason: string | null;
  routed_at: string;
}

const FIELDS = ['type', 'external_id', 'occurred_at', 'data'];
export const MAX_RECORD_DATA_BYTES = 64 * 1024;
export const MAX_RECORD_DATA_DEPTH = 16;
const ISO_TIMESTAMP = new RegExp(RECORD_TIMESTAMP_PATTERN);
const CURRENCY = /^[A-Z]{3}$/;
const DECIMAL = /^\d{1,15}(\.\d{1,4})?$/;

type DataFieldCheck = (value: unknown, field: string, check: FieldChecks) => void;
const isObject = (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value);
const number: DataFieldCheck = (value, field, check) => void (typeof value !== 'number' && check.fail(field, 'invalid_type', `${field} must be a JSON number`));
const string: DataFieldCheck = (value, field, check) => void (typeof value !== 'string' && check.fail(field, 'invalid_type', `${field} must be a string`));
const object: DataFieldCheck = (value, field, check) => void check.object(value, field);
const currency: DataFieldCheck = (value, field, check) =>
  void ((typeof value !== 'string' || !CURRENCY.test(value)) && check.fail(field, 'invalid_currency', `${field} must be an ISO 4217 code in upper case`));
const decimal: DataFieldCheck = (value, field, check) =>
  void ((typeof value !== 'string' || !DECIMAL.test(value)) && check.fail(field, 'invalid_decimal', `${field} must be a decimal string such as "12.30"`));
const objects: DataFieldCheck = (value, field, check) => {
  if (!Array.isArray(value)) return void check.fail(field, 'invalid_type', `${field} must be an array`);
  value.forEach((item, index) => !isObject(item) && check.fail(fieldPath(field, index), 'invalid_type', `${fieldPath(field, index)} must be a JSON object`));
};
const alertSeverity: DataFieldCheck = (value, field, check) => void check.oneOf(value, field, ['warning', 'critical']);
const alertMessage: DataFieldCheck = (value, field, check) => void check.text(value, field, { max: MAX_ALERT_MESSAGE_LENGTH });

/**
 * The typed fields of each record type's `data` (recordDataFields in @merx/contracts documents the
 * same; record.spec.ts holds the two together). Other members are the source's own and pass as sent.
 */
export const recordDataChecks: Record<RecordType, Record<string, DataFieldCheck>> = {
  order: { total: number, currency, customer: object, line_items: objects },
  review: { rating: number, title: string, body: string, author: string, sku: string },
  campaign_spend: { spend: decimal, currency, campaign_id: string, channel: string },
  alert: { message: alertMessage, severity: alertSeverity },
};

function checkData(value: unknown, type: RecordType | undefined, check: FieldChecks): Record<string, unknown> | undefined {
  const data = check.object(value, 'data');
  if (!data) return undefined;
  if (jsonBytes(data) > MAX_RECORD_DATA_BYTES) return check.fail('data', 'too_large', `data must be at most ${MAX_RECORD_DATA_BYTES / 1024} KiB as JSON`);
  if (nestsDeeperThan(data, MAX_RECORD_DATA_DEPTH)) return check.fail('data', 'too_deep', `data must nest at most ${MAX_RECORD_DATA_DEPTH} levels`);
  if (!type) return data;
  if (type === 'alert' && data.message === undefined) check.fail('data.message', 'required', 'data.message is required for an alert');
  for (const [name, checkField] of Object.entries(recordDataChecks[type])) {
    if (Object.hasOwn(data, name) && data[name] !== undefined) checkField(data[name], fieldPath('data', name), check);
  }
  return data;
}

/** One record of a batch: valid, or the reasons it is rejected (field paths relative to the record). */
export function validateRecord(input: unknown): { record?: RecordInput; errors: FieldError[] } {
  const check = new FieldChecks();
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    check.fail('(record)', 'invalid_type', 'a record must be a JSON object');
    return { errors: check.errors };
  }
  const body = input as Record<string, unknown>;
  check.unknownFields(body, FIELDS, 'record');
  FIELDS.forEach((field) => check.required(body, field));
  const type = body.type === undefined ? undefined : check.oneOf(body.type, 'type', recordTypes);
  const externalId = body.external_id === undefined ? undefined : check.text(body.external_id, 'external_id', { max: 255 });
  let occurredAt: string | undefined;
  if (body.occurred_at !== undefined) {
    const parsed = typeof body.occurred_at === 'string' && ISO_TIMESTAMP.test(body.occurred_at) ? parseTimestamp(body.occurred_at) : undefined;
    if (!parsed) check.fail('occurred_at', 'invalid_timestamp', 'occurred_at must be an ISO 8601 timestamp with a zone, such as 2026-11-22T10:04:05.123Z');
    else occurredAt = parsed.toISOString();
  }
  const data = body.data === undefined ? undefined : checkData(body.data, type, check);
  if (check.errors.length > 0) return { errors: check.errors };
  return { record: { type: type!, external_id: externalId!, occurred_at: occurredAt!, data: data! }, errors: [] };
}

/** The record's wire shape: the `data.object` of its event and the base of the records list. */
export function presentIngestedRecord(record: IngestedRecord) {
  return {
    id: record.id,
    object: 'record' as const,
    type: record.type,
    source_id: record.sourceId,
    external_id: record.external_id,
    occurred_at: record.occurred_at,
    data: record.data,
    received_at: record.receivedAt.toISOString(),
  };
}

export type IngestedRecordResource = ReturnType<typeof presentIngestedRecord>;

export function presentRecord(record: IngestedRecord, routes: RecordRoute[]) {
  return { ...presentIngestedRecord(record), event_id: record.eventId, routes };
}

/**
 * The event an accepted record emits. An `alert` is a system alert, like the platform's own, so
 * a merchant subscribed to system_alerts sees both; the record rides along in `record`.
 */
export function recordEvent(record: IngestedRecord): { topic: string; object: Record<string, unknown> } {
  const topic = recordEventOfType[record.type];
  const ingested = presentIngestedRecord(record);
  if (record.type !== 'alert') return { topic, object: ingested };
  return {
    topic,
    object: {
      id: newId('alr'),
      object: 'system_alert',
      kind: 'source_error',
      severity: record.data.severity === 'critical' ? 'critical' : 'warning',
      message: record.data.message as string,
      subscription_id: null,
      destination_id: null,
      delivery_id: null,
      event_id: null,
      source_id: record.sourceId,
      record: ingested,
      created_at: record.receivedAt.toISOString(),
    },
  };
}

/** The ingested record inside a record event, whichever of the four it is (routing reads it back). */
export function ingestedRecordOfEvent(topic: string, object: Record<string, unknown>): IngestedRecordResource | undefined {
  const candidate = topic === 'system_alerts.raised' ? object.record : object;
  if (typeof candidate !== 'object' || candidate === null) return undefined;
  const record = candidate as IngestedRecordResource;
  return record.object === 'record' && typeof record.source_id === 'string' ? record : undefined;
}

/**
 * A record event with the record's `data` taken out (null), and the record's id: what the
 * routing backlog keeps, since the records table already holds the data, often the bulk of the
 * event. Undefined for an event that carries no ingested record.
 */
export function recordEventWithoutData<E extends { topic: string; data: { object: Record<string, unknown> } }>(
  event: E,
): { event: E; recordId: string } | undefined {
  const record = ingestedRecordOfEvent(event.topic, event.data.object);
  if (!record) return undefined;
  return { event: withRecordData(event, null), recordId: record.id };
}

/** The event with its record's `data` set to `data`; nothing else of it changes, and neither does the original. */
export function withRecordData<E extends { topic: string; data: { object: Record<string, unknown> } }>(event: E, data: Record<string, unknown> | null): E {
  const { object } = event.data;
  const replaced =
    event.topic === 'system_alerts.raised' ? { ...object, record: { ...(object.record as Record<string, unknown>), data } } : { ...object, data };
  return { ...event, data: { ...event.data, object: replaced } };
}
