import { connectionStatuses, MAX_RULES_PER_CONNECTION, recordEventNames } from '@merx/contracts';
import { FieldChecks, structureOf, type Body } from './field-checks.js';
import type { Resource } from './resource.js';
import { checkEventTypes } from './rule.js';

export type ConnectionStatus = (typeof connectionStatuses)[number];

export interface ConnectionFields {
  name: string | null;
  source_id: string;
  destination_id: string;
  rule_ids: string[];
  event_types: string[];
  status: ConnectionStatus;
}
export type Connection = Resource<ConnectionFields>;

const ID = (prefix: string) => new RegExp(`^${prefix}_[0-9a-z]{26}$`);

function checkId(value: unknown, field: string, prefix: string, noun: string, check: FieldChecks): string | undefined {
  if (typeof value === 'string' && ID(prefix).test(value)) return value;
  return check.fail(field, 'invalid_id', `${field} must be a ${noun} id (${prefix}_…)`);
}

function checkFields(body: Body, check: FieldChecks): Partial<ConnectionFields> {
  const fields: Partial<ConnectionFields> = {};
  if (body.name !== undefined) fields.name = body.name === null ? null : check.text(body.name, 'name', { max: 255 });
  if (body.source_id !== undefined) fields.source_id = checkId(body.source_id, 'source_id', 'src', 'source', check);
  if (body.destination_id !== undefined) fields.destination_id = checkId(body.destination_id, 'destination_id', 'dst', 'destination', check);
  if (body.rule_ids !== undefined) {
    fields.rule_ids = check.list(body.rule_ids, 'rule_ids', { min: 0, max: MAX_RULES_PER_CONNECTION }, (entry, path) =>
      checkId(entry, path, 'rul', 'rule', check),
    );
  }
  if (body.event_types !== undefined) fields.event_types = checkEventTypes(body.event_types, check);
  if (body.status !== undefined) fields.status = check.oneOf(body.status, 'status', connectionStatuses);
  return fields;
}

export function validateNewConnection(input: unknown): ConnectionFields {
  const body = structureOf('ConnectionCreate', input);
  const check = new FieldChecks();
  const fields = checkFields(body, check);
  check.throwIfAny();
  return {
    name: fields.name ?? null,
    source_id: fields.source_id!,
    destination_id: fields.destination_id!,
    rule_ids: fields.rule_ids ?? [],
    event_types: fields.event_types ?? [...recordEventNames],
    status: fields.status ?? 'active',
  };
}

export function validateConnectionChanges(input: unknown): Partial<ConnectionFields> {
  // The source is what a connection is of: ConnectionUpdate has no source_id, so moving it is refused as an unknown member.
  const body = structureOf('ConnectionUpdate', input);
  const check = new FieldChecks();
  const fields = checkFields(body, check);
  check.throwIfAny();
  return fields;
}
