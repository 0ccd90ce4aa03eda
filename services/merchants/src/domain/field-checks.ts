import { fieldPath, schemaErrors, ValidationFailed, type FieldError } from '@merx/kit';

export type Body = Record<string, unknown>;

/** Collects every field error of a body so one 422 names them all. */
export class FieldChecks {
  readonly errors: FieldError[] = [];

  fail(field: string, code: string, message: string): undefined {
    this.errors.push({ field, code, message });
    return undefined;
  }

  throwIfAny(): void {
    if (this.errors.length > 0) throw new ValidationFailed(this.errors);
  }

  /** For items judged one by one (ingested records), which no request schema checks at the edge. */
  unknownFields(body: Body, allowed: readonly string[], noun: string): void {
    for (const key of Object.keys(body)) if (!allowed.includes(key)) this.fail(fieldPath('', key), 'unknown_field', `${key} is not a ${noun} field`);
  }

  required(body: Body, field: string): boolean {
    if (body[field] !== undefined) return true;
    this.fail(field, 'required', `${field} is required`);
    return false;
  }

  text(value: unknown, field: string, limits: { min?: number; max: number }): string | undefined {
    if (typeof value !== 'string') return this.fail(field, 'invalid_type', `${field} must be a string`);
    const length = [...value].length;
    const min = limits.min ?? 1;
    if (length < min || value.trim().length === 0) return this.fail(field, 'too_short', `${field} must not be empty`);
    if (length > limits.max) return this.fail(field, 'too_long', `${field} must be at most ${limits.max} characters`);
    return value;
  }

  oneOf<T extends string>(value: unknown, field: string, allowed: readonly T[]): T | undefined {
    if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
    return this.fail(field, 'invalid_value', `${field} must be one of ${allowed.join(', ')}`);
  }

  boolean(value: unknown, field: string): boolean | undefined {
    if (typeof value === 'boolean') return value;
    return this.fail(field, 'invalid_type', `${field} must be true or false`);
  }

  object(value: unknown, field: string): Body | undefined {
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Body;
    return this.fail(field, 'invalid_type', `${field} must be a JSON object`);
  }

  /** A list of distinct values each accepted by `item`; duplicates are an error, not silently merged. */
  list<T>(value: unknown, field: string, limits: { min: number; max: number }, item: (entry: unknown, path: string) => T | undefined): T[] | undefined {
    if (!Array.isArray(value)) return this.fail(field, 'invalid_type', `${field} must be an array`);
    if (value.length < limits.min) return this.fail(field, 'too_short', `${field} must have at least ${limits.min} item(s)`);
    if (value.length > limits.max) return this.fail(field, 'too_long', `${field} must have at most ${limits.max} items`);
    const before = this.errors.length;
    const items = value.map((entry, index) => item(entry, fieldPath(field, index)));
    if (this.errors.length > before) return undefined;
    if (new Set(items.map((entry) => JSON.stringify(entry))).size !== items.length)
      return this.fail(field, 'duplicate_items', `${field} must not repeat an item`);
    return items as T[];
  }
}

/**
 * A body's structure (an object, required members, types, lengths, enums, id patterns, no unknown
 * member, an update that changes something) is its OpenAPI schema's, checked by the same code the
 * HTTP edge runs, so the answer is the same whoever calls. The checks left in this domain are the
 * ones a schema cannot state.
 */
export function structureOf(schemaName: string, input: unknown): Body {
  const errors = schemaErrors(schemaName, input);
  if (errors.length > 0) throw new ValidationFailed(errors);
  return input as Body;
}

/** Size of a JSON value as sent, for limits stated in bytes. */
export function jsonBytes(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8');
}

/**
 * Whether a JSON value nests deeper than `limit` (`{}` is depth 1). Iterative and stopping at the
 * limit, so a hostile body nested a million deep costs nothing and cannot overflow the stack.
 */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  const pending: Array<{ node: unknown; depth: number }> = [{ node: value, depth: 0 }];
  while (pending.length > 0) {
    const { node, depth } = pending.pop()!;
    if (typeof node !== 'object' || node === null) continue;
    if (depth + 1 > limit) return true;
    for (const child of Object.values(node as object)) pending.push({ node: child, depth: depth + 1 });
  }
  return false;
}
