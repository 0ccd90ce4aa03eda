import { sourceKinds, sourceStatuses } from '@merx/contracts';
import { FieldChecks, jsonBytes, structureOf, type Body } from './field-checks.js';
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

const MAX_SETTINGS_BYTES = 16 * 1024;

function checkSettings(value: unknown, check: FieldChecks): Record<string, unknown> | undefined {
  const settings = value as Record<string, unknown>;
  if (jsonBytes(settings) > MAX_SETTINGS_BYTES) return check.fail('settings', 'too_large', `settings must be at most ${MAX_SETTINGS_BYTES / 1024} KiB as JSON`);
  return settings;
}

function checkFields(body: Body, check: FieldChecks): Partial<SourceFields> {
  const fields: Partial<SourceFields> = {};
  if (body.name !== undefined) fields.name = check.text(body.name, 'name', { max: 255 });
  if (body.kind !== undefined) fields.kind = body.kind as SourceKind;
  if (body.status !== undefined) fields.status = body.status as SourceStatus;
  if (body.settings !== undefined) fields.settings = checkSettings(body.settings, check);
  return fields;
}

export function validateNewSource(input: unknown): SourceFields {
  const body = structureOf('SourceCreate', input);
  const check = new FieldChecks();
  const fields = checkFields(body, check);
  check.throwIfAny();
  return { name: fields.name!, kind: fields.kind!, status: fields.status ?? 'active', settings: fields.settings ?? {} };
}

export function validateSourceChanges(input: unknown): Partial<SourceFields> {
  const body = structureOf('SourceUpdate', input);
  const check = new FieldChecks();
  const fields = checkFields(body, check);
  check.throwIfAny();
  return fields;
}
