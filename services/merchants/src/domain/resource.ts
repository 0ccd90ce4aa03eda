import { canonicalJson } from '@merx/kit';

/**
 * Sources, destinations, rules and connections share one life: created with a version of 1,
 * changed field by field with the version moving on, deleted. `fields` holds what the merchant
 * controls, under its wire names, so presenting, diffing and storing need no per-field mapping.
 */
export interface Resource<F extends object> {
  id: string;
  merchantId: string;
  fields: F;
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

/** The wire shape: id and object first, the fields, then version and times; hidden fields never leave. */
export function presentResource<F extends object>(object: string, resource: Resource<F>, hidden: readonly (keyof F)[] = []) {
  const fields: Record<string, unknown> = { ...(resource.fields as Record<string, unknown>) };
  for (const key of hidden) delete fields[key as string];
  return {
    id: resource.id,
    object,
    ...fields,
    version: resource.version,
    created_at: resource.createdAt.toISOString(),
    updated_at: resource.updatedAt.toISOString(),
  };
}

export function resourceEtag(resource: { version: number }): string {
  return `"v${resource.version}"`;
}

/** Only the changes that change something: a PATCH repeating current values is no change (no version, no event). */
export function effectiveChanges<F extends object>(current: F, changes: Partial<F>): Partial<F> {
  const effective: Partial<F> = {};
  for (const key of Object.keys(changes) as (keyof F)[]) {
    if (canonicalJson(changes[key]) !== canonicalJson(current[key])) effective[key] = changes[key];
  }
  return effective;
}

/** `previous` of an update event: the changed fields as they were, hidden ones left out. */
export function previousFields<F extends object>(current: F, changes: Partial<F>, hidden: readonly (keyof F)[] = []): Partial<F> {
  const previous: Partial<F> = {};
  for (const key of Object.keys(changes) as (keyof F)[]) if (!hidden.includes(key)) previous[key] = current[key];
  return previous;
}
