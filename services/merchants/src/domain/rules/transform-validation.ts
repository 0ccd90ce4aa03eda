import { fieldPath, type FieldError } from '@merx/kit';
import type { TransformSpec } from './types.js';

/** The bounds of ruleTransformSchema in @merx/contracts, which is the source of truth for them. */
export const TRANSFORM_LIMITS = {
  maxEntries: 100,
  maxPathLength: 255,
  maxSetValueBytes: 16 * 1024,
} as const;

const FIELD_PATH = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
const OPERATIONS = ['keep', 'remove', 'rename', 'set'] as const;

class TransformChecks {
  readonly errors: FieldError[] = [];

  fail(field: string, code: string, message: string): undefined {
    this.errors.push({ field, code, message });
    return undefined;
  }

  path(value: unknown, field: string): string | undefined {
    if (typeof value !== 'string') return this.fail(field, 'invalid_type', `${field} must be a dotted path string such as "customer.email"`);
    if (value.length > TRANSFORM_LIMITS.maxPathLength)
      return this.fail(field, 'too_long', `${field} must be at most ${TRANSFORM_LIMITS.maxPathLength} characters`);
    if (!FIELD_PATH.test(value)) {
      return this.fail(
        field,
        'invalid_format',
        `${field} must be a dotted path of A-Z, a-z, 0-9, "_" or "-" segments such as "customer.email"; got ${JSON.stringify(value)}`,
      );
    }
    return value;
  }

  entryCount(count: number, field: string, noun: string): boolean {
    if (count === 0) this.fail(field, 'too_short', `${field} must have at least one ${noun}`);
    else if (count > TRANSFORM_LIMITS.maxEntries) this.fail(field, 'too_long', `${field} must have at most ${TRANSFORM_LIMITS.maxEntries} ${noun}s`);
    else return true;
    return false;
  }

  pathList(value: unknown, field: string): string[] | undefined {
    if (!Array.isArray(value)) return this.fail(field, 'invalid_type', `${field} must be an array of dotted paths`);
    if (!this.entryCount(value.length, field, 'path')) return undefined;
    const before = this.errors.length;
    const paths = value.map((entry, index) => this.path(entry, fieldPath(field, index)));
    if (this.errors.length > before) return undefined;
    if (new Set(paths).size !== paths.length) return this.fail(field, 'duplicate_items', `${field} must not repeat a path`);
    return paths as string[];
  }

  object(value: unknown, field: string, noun: string): Record<string, unknown> | undefined {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return this.fail(field, 'invalid_type', `${field} must be a JSON object`);
    return this.entryCount(Object.keys(value).length, field, noun) ? (value as Record<string, unknown>) : undefined;
  }

  renames(value: unknown, field: string): Record<string, string> | undefined {
    const mapping = this.object(value, field, 'entry');
    if (!mapping) return undefined;
    const before = this.errors.length;
    const renames: Record<string, string> = {};
    for (const [from, to] of Object.entries(mapping)) {
      const source = this.path(from, fieldPath(field, from));
      const target = this.path(to, fieldPath(field, from));
      if (source !== undefined && target !== undefined)
        Object.defineProperty(renames, source, { value: target, enumerable: true, writable: true, configurable: true });
    }
    return this.errors.length > before ? undefined : renames;
  }

  assignments(value: unknown, field: string): Record<string, unknown> | undefined {
    const mapping = this.object(value, field, 'entry');
    if (!mapping) return undefined;
    const before = this.errors.length;
    const assignments: Record<string, unknown> = {};
    for (const [path, assigned] of Object.entries(mapping)) {
      const where = fieldPath(field, path);
      if (this.path(path, where) === undefined) continue;
      const json = JSON.stringify(assigned);
      if (json === undefined) {
        this.fail(where, 'invalid_type', `${where} must be a JSON value`);
      } else if (Buffer.byteLength(json, 'utf8') > TRANSFORM_LIMITS.maxSetValueBytes) {
        this.fail(where, 'too_long', `${where} must be at most ${TRANSFORM_LIMITS.maxSetValueBytes / 1024} KiB as JSON`);
      } else {
        Object.defineProperty(assignments, path, { value: assigned, enumerable: true, writable: true, configurable: true });
      }
    }
    return this.errors.length > before ? undefined : assignments;
  }
}

/**
 * Checks a transform against ruleTransformSchema and returns it normalised (only the operations
 * given). Errors name the exact member at fault, under `field`.
 */
export function validateTransform(value: unknown, field = 'transform'): { spec?: TransformSpec; errors: FieldError[] } {
  const check = new TransformChecks();
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    check.fail(field, 'invalid_type', `${field} must be a JSON object with keep, remove, rename or set`);
    return { errors: check.errors };
  }
  const body = value as Record<string, unknown>;
  for (const key of Object.keys(body)) {
    if (!(OPERATIONS as readonly string[]).includes(key))
      check.fail(fieldPath(field, key), 'unknown_field', `${key} is not a transform operation; use keep, remove, rename or set`);
  }
  if (!OPERATIONS.some((operation) => body[operation] !== undefined)) {
    check.fail(field, 'required', `${field} needs at least one of keep, remove, rename or set`);
  }
  const spec: TransformSpec = {};
  if (body.keep !== undefined) spec.keep = check.pathList(body.keep, `${field}.keep`);
  if (body.remove !== undefined) spec.remove = check.pathList(body.remove, `${field}.remove`);
  if (body.rename !== undefined) spec.rename = check.renames(body.rename, `${field}.rename`);
  if (body.set !== undefined) spec.set = check.assignments(body.set, `${field}.set`);
  return check.errors.length > 0 ? { errors: check.errors } : { spec, errors: [] };
}
