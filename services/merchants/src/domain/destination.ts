import { destinationKinds, destinationStatuses, type destinationDisabledReasons } from '@merx/contracts';
import { FieldChecks, structureOf, type Body } from './field-checks.js';
import { presentResource, type Resource } from './resource.js';

export type DestinationKind = (typeof destinationKinds)[number];
export type DestinationStatus = (typeof destinationStatuses)[number];
export type DestinationDisabledReason = (typeof destinationDisabledReasons)[number];

export interface DestinationFields {
  name: string;
  kind: DestinationKind;
  url: string;
  status: DestinationStatus;
  disabled_reason: DestinationDisabledReason | null;
  /** Never presented after creation: `hidden` in the resource kind. */
  secret: string;
}
export type Destination = Resource<DestinationFields>;

/** What the merchant sends; the URL's address policy is checked by the use case (it needs DNS). */
export type DestinationInput = Pick<DestinationFields, 'name' | 'kind' | 'url' | 'status'>;

function checkFields(body: Body, check: FieldChecks, statuses: readonly DestinationStatus[]): Partial<DestinationInput> {
  const fields: Partial<DestinationInput> = {};
  if (body.name !== undefined) fields.name = check.text(body.name, 'name', { max: 255 });
  if (body.kind !== undefined) fields.kind = check.oneOf(body.kind, 'kind', destinationKinds);
  if (body.status !== undefined) fields.status = check.oneOf(body.status, 'status', statuses);
  if (body.url !== undefined && typeof body.url === 'string') fields.url = body.url;
  return fields;
}

export function validateNewDestination(input: unknown): { input: Partial<DestinationInput>; check: FieldChecks } {
  const body = structureOf('DestinationCreate', input);
  const check = new FieldChecks();
  // A new destination is active or paused; `disabled` is a state it is put in.
  const fields = checkFields(body, check, ['active', 'paused']);
  return { input: { kind: 'webhook', status: 'active', ...fields }, check };
}

export function validateDestinationChanges(input: unknown): { changes: Partial<DestinationInput>; check: FieldChecks } {
  const body = structureOf('DestinationUpdate', input);
  const check = new FieldChecks();
  return { changes: checkFields(body, check, destinationStatuses), check };
}

/** The merchant's own status changes say why a destination is off; switching it on clears the reason. */
export function reasonForStatus(status: DestinationStatus): DestinationDisabledReason | null {
  return status === 'disabled' ? 'by_merchant' : null;
}

/** A destination as its creation and a secret rotation answer: the only times its secret is shown. */
export function presentDestinationWithSecret(destination: Destination) {
  return { ...presentResource('destination', destination, ['secret']), secret: destination.fields.secret };
}
