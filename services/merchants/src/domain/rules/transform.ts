import type { TransformSpec } from './types.js';

type JsonObject = Record<string, unknown>;
type Lookup = { found: true; value: unknown } | { found: false };

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/*
 * Paths walk objects only: an array is a value, so `items.0` finds nothing. Reads look at own
 * properties and writes define own properties, so a path such as `__proto__.x` names an
 * ordinary key of the data and can never reach Object.prototype.
 */

function readPath(root: JsonObject, path: string): Lookup {
  let node: unknown = root;
  for (const segment of path.split('.')) {
    if (!isObject(node) || !Object.hasOwn(node, segment)) return { found: false };
    node = node[segment];
  }
  return { found: true, value: node };
}

function defineKey(target: JsonObject, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}

/** Writes `value` at `path`, replacing whatever is in the way (a string, an array) with an object. */
function writePath(root: JsonObject, path: string, value: unknown): void {
  const segments = path.split('.');
  const last = segments.pop()!;
  let node = root;
  for (const segment of segments) {
    const next = Object.hasOwn(node, segment) ? node[segment] : undefined;
    if (isObject(next)) {
      node = next;
    } else {
      const created: JsonObject = {};
      defineKey(node, segment, created);
      node = created;
    }
  }
  defineKey(node, last, value);
}

function removePath(root: JsonObject, path: string): void {
  const segments = path.split('.');
  const last = segments.pop()!;
  const parent = segments.length === 0 ? { found: true as const, value: root } : readPath(root, segments.join('.'));
  if (parent.found && isObject(parent.value) && Object.hasOwn(parent.value, last)) delete parent.value[last];
}

/** Only the listed paths survive; a nested path keeps its branch and drops its siblings. */
function keepOnly(data: JsonObject, paths: readonly string[]): JsonObject {
  const kept: JsonObject = {};
  // Shorter paths first, so `customer` kept whole is not narrowed back by `customer.email`.
  const ordered = [...paths].sort((a, b) => a.split('.').length - b.split('.').length);
  for (const path of ordered) {
    const lookup = readPath(data, path);
    if (lookup.found && !readPath(kept, path).found) writePath(kept, path, lookup.value);
  }
  return kept;
}

/** Renames happen together, as one mapping: `{a: "b", b: "a"}` swaps the two. */
function renameAll(data: JsonObject, renames: Record<string, string>): void {
  const moves = Object.entries(renames).map(([from, to]) => ({ to, lookup: readPath(data, from) }));
  for (const from of Object.keys(renames)) removePath(data, from);
  for (const { to, lookup } of moves) if (lookup.found) writePath(data, to, lookup.value);
}

/**
 * Applies keep → remove → rename → set to a copy of `data`; `data` and `spec` are left as they
 * were. A path that is not there is nothing to do; a target path creates the objects it needs.
 */
export function applyTransform(data: Record<string, unknown>, spec: TransformSpec): Record<string, unknown> {
  let result: JsonObject = structuredClone(data);
  if (spec.keep) result = keepOnly(result, spec.keep);
  for (const path of spec.remove ?? []) removePath(result, path);
  if (spec.rename) renameAll(result, spec.rename);
  for (const [path, value] of Object.entries(spec.set ?? {})) writePath(result, path, structuredClone(value));
  return result;
}
