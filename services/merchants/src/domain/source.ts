import { sourceKinds, sourceStatuses } from '@merx/contracts';
import { bodyObject, FieldChecks, jsonBytes, nonEmptyChanges, type Body } from './field-checks.js';
import type { Resource } from './resource.js';

export type SourceKind = (typeof sourceKinds)[number];
export type SourceStatus = (typeof sourceStatuses)[number];

export interface SourceFields {
  name: string;
  kind: SourceKind;
  status: SourceStatus;
  settings: Record<string, unknown>;
}
export type Source = Resource<SourceFields>;

const FIELDS = ['name', 'kind', 'status', 'settings'];
const MAX_SETTINGS_KEYS = 50;
const MAX_SETTINGS_BYTES = 16 * 1024;

function checkSettings(value: unknown, check: FieldChecks): Record<string, unknown> | undefined {
  const settings = check.object(value, 'settings');
  if (!settings) return undefined;
  if (Object.keys(settings).length > MAX_SETTINGS_KEYS) return check.fail('settings', 'too_long', `settings must have at most ${MAX_SETTINGS_KEYS} keys`);
  if (jsonBytes(settings) > MAX_SETTINGS_BYTES) return check.fail('settings', 'too_large', `settings must be at most ${MAX_SETTINGS_BYTES / 1024} KiB as JSON`);
  return settings;
}

function checkFields(body: Body, check: FieldChecks): Partial<SourceFields> {
  const fields: Partial<SourceFields> = {};
  if (body.name !== undefined) fields.name = check.text(body.name, 'name', { max: 255 });
  if (body.kind !== undefined) fields.kind = check.oneOf(body.kind, 'kind', sourceKinds);
  if (body.status !== undefined) fields.status = check.oneOf(body.status, 'status', sourceStatuses);
  if (body.settings !== undefined) fields.settings = checkSettings(body.settings, check);
  return fields;
}

export function validateNewSource(input: unknown): SourceFields {
  const body = bodyObject(input);
  const check = new FieldChecks();
  check.unknownFields(body, FIELDS, 'source');
  check.required(body, 'name');
  check.required(body, 'kind');
  const fields = checkFields(body, check);
  check.throwIfAny();
  return { name: fields.name!, kind: fields.kind!, status: fields.status ?? 'active', settings: fields.settings ?? {} };
}

export function validateSourceChanges(input: unknown): Partial<SourceFields> {
  const body = bodyObject(input);
  nonEmptyChanges(body);
  const check = new FieldChecks();
  check.unknownFields(body, FIELDS, 'source');
  const fields = checkFields(body, check);
  check.throwIfAny();
  return fields;
}
