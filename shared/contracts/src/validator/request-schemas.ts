import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule, { type FormatsPlugin } from 'ajv-formats';
import { openApiDocument } from '../openapi.js';
import type { HttpMethod, JsonSchema, OpenApiDocument, ParameterObject, RequestBodyObject } from '../openapi/types.js';
import { findRoute, normalizeRequestPath, type Route } from './routes.js';

const addFormats = ((addFormatsModule as unknown as { default?: FormatsPlugin }).default ?? addFormatsModule) as FormatsPlugin;

/**
 * One way a request's structure fails its schema, in terms a caller can act on: where (members and
 * array positions from the top of the value, the failing member itself for `required` and
 * `additionalProperties`), which JSON Schema keyword, and that keyword's parameters.
 */
export interface SchemaIssue {
  path: Array<string | number>;
  keyword: string;
  params: Record<string, unknown>;
  /** The failing schema's own words (`x-merx-error`), where one kind of value has a documented code: a price is `invalid_decimal` however it fails. */
  documented?: DocumentedError;
}

/** `x-merx-error` on a schema: the code and message a value that fails that schema gets, instead of the keyword's. */
export interface DocumentedError {
  code: string;
  /** Follows the field's name: `must be a decimal string such as "19.99"`. */
  message: string;
}

export const DOCUMENTED_ERROR_KEYWORD = 'x-merx-error';
/** Keywords about an object's members, not the value itself: a member's documented error does not apply to them. */
const MEMBER_KEYWORDS = new Set([
  'required',
  'additionalProperties',
  'unevaluatedProperties',
  'propertyNames',
  'minProperties',
  'maxProperties',
  'dependentRequired',
]);

export interface RequestContract {
  operationId: string;
  /** The query parameters the operation (or its path) declares. */
  queryNames: ReadonlySet<string>;
  /** Whether the document says the operation takes a JSON body, and whether it must be sent. */
  body?: { required: boolean; check(value: unknown): SchemaIssue[] };
}

const httpMethods: HttpMethod[] = ['get', 'post', 'put', 'patch', 'delete'];
const componentSchemaUri = 'https://merx.dev/contracts/openapi/components/schemas/';
/**
 * Batches whose items are judged one by one: a rejected item is a result of its own (200 with a
 * result per record), not a 422 for the whole batch, so the edge checks only the batch's envelope
 * and the domain checks each item against the item schema.
 */
const ITEMS_JUDGED_ONE_BY_ONE: Record<string, string> = { 'sources.records.create': 'records' };

/** The body schema with the named array's items left to the domain. */
function envelopeOnly(schema: JsonSchema, member: string, document: OpenApiDocument): JsonSchema {
  const resolved = resolveLocal<{ properties?: Record<string, JsonSchema> }>(document, schema);
  const list = resolved.properties?.[member];
  if (!list) throw new Error(`the batch schema has no member ${member}`);
  return { ...resolved, properties: { ...resolved.properties, [member]: { ...(list as object), items: true } } } as JsonSchema;
}

/** A hostile body can fail a schema a thousand times over; the first few say enough. */
const MAX_ISSUES = 50;

interface RequestIndex {
  routes: Route[];
  byOperation: Map<string, RequestContract>;
  compile(schema: JsonSchema): ValidateFunction;
}

const indexes = new WeakMap<OpenApiDocument, RequestIndex>();

function indexOf(document: OpenApiDocument): RequestIndex {
  let index = indexes.get(document);
  if (index) return index;
  // Compiled lazily, per schema, on first use: a service pays only for the operations it serves.
  // verbose: each error carries the schema that failed, whose `x-merx-error` may name its code.
  const ajv = new Ajv2020({ allErrors: true, verbose: true, strict: true, strictTypes: true, strictRequired: false, allowUnionTypes: true, inlineRefs: false });
  addFormats(ajv);
  ajv.addVocabulary(['example', 'xml', 'externalDocs', 'discriminator', DOCUMENTED_ERROR_KEYWORD]);
  for (const [name, schema] of Object.entries(document.components.schemas)) ajv.addSchema(withAbsoluteRefs(schema) as JsonSchema, componentSchemaUri + name);
  const compiled = new WeakMap<object, ValidateFunction>();
  const compile = (schema: JsonSchema): ValidateFunction => {
    let validate = compiled.get(schema);
    if (!validate) {
      validate = ajv.compile(withAbsoluteRefs(schema) as JsonSchema);
      compiled.set(schema, validate);
    }
    return validate;
  };
  index = { routes: Object.keys(document.paths).map((template) => ({ template, item: document.paths[template]! })), byOperation: new Map(), compile };
  indexes.set(document, index);
  return index;
}

/** Checks a value against a compiled schema, as SchemaIssues (empty when it holds). */
function checker(index: RequestIndex, schema: JsonSchema): (value: unknown) => SchemaIssue[] {
  return (value) => {
    const validate = index.compile(schema);
    return validate(value) ? [] : issuesOf(validate.errors ?? [], value);
  };
}

/**
 * What the OpenAPI document says a request to `method path` may carry: its declared query
 * parameters and its JSON body's schema. Undefined when the document has no such operation (the
 * router answers 404 or 405 for those).
 */
export function requestContractOf(method: string, path: string, document: OpenApiDocument = openApiDocument): RequestContract | undefined {
  const index = indexOf(document);
  const route = findRoute(index.routes, normalizeRequestPath(path));
  const verb = method.toLowerCase() as HttpMethod;
  const operation = route && httpMethods.includes(verb) ? route.item[verb] : undefined;
  if (!route || !operation) return undefined;
  const key = `${verb} ${route.template}`;
  let contract = index.byOperation.get(key);
  if (!contract) {
    const parameters = [...(route.item.parameters ?? []), ...(operation.parameters ?? [])].map((item) => resolveLocal<ParameterObject>(document, item));
    const requestBody = operation.requestBody ? resolveLocal<RequestBodyObject>(document, operation.requestBody) : undefined;
    const json = requestBody?.content['application/json'];
    const itemsMember = ITEMS_JUDGED_ONE_BY_ONE[operation.operationId];
    const bodySchema = json && itemsMember ? envelopeOnly(json.schema, itemsMember, document) : json?.schema;
    const readOnly = verb === 'patch' && json ? readOnlyMembersOf(document, operation, bodySchema!) : new Set<string>();
    const check = json ? checker(index, bodySchema!) : undefined;
    contract = {
      operationId: operation.operationId,
      queryNames: new Set(parameters.filter((parameter) => parameter.in === 'query').map((parameter) => parameter.name)),
      ...(check
        ? {
            body: {
              required: requestBody?.required === true,
              check: readOnly.size > 0 ? (value: unknown) => check(value).map((issue) => asReadOnly(issue, readOnly)) : check,
            },
          }
        : {}),
    };
    index.byOperation.set(key, contract);
  }
  return contract;
}

const READ_ONLY: DocumentedError = { code: 'read_only', message: 'can be read but not changed here' };

/**
 * A member an update does not take but its resource shows (a merchant's `plan`, a product's `id`)
 * is read-only rather than unknown: the caller named a real field, and `read_only` tells them why
 * it was refused. Only top-level members: nested objects are replaced whole.
 */
function asReadOnly(issue: SchemaIssue, readOnly: ReadonlySet<string>): SchemaIssue {
  const member =
    issue.path.length === 1 && (issue.keyword === 'additionalProperties' || issue.keyword === 'unevaluatedProperties') ? String(issue.path[0]) : undefined;
  return member !== undefined && readOnly.has(member) ? { ...issue, documented: READ_ONLY } : issue;
}

/** Members of the resource an update answers with (its 200 body) that the update's own body does not take. */
function readOnlyMembersOf(document: OpenApiDocument, operation: { responses?: Record<string, unknown> }, bodySchema: unknown): Set<string> {
  const response = operation.responses?.['200']
    ? resolveLocal<{ content?: Record<string, { schema?: unknown }> }>(document, operation.responses['200'])
    : undefined;
  const resourceSchema = response?.content?.['application/json']?.schema;
  if (!resourceSchema) return new Set();
  const settable = membersOf(document, bodySchema);
  return new Set([...membersOf(document, resourceSchema)].filter((name) => !settable.has(name)));
}

function membersOf(document: OpenApiDocument, schema: unknown, depth = 0): Set<string> {
  const resolved = resolveLocal<{ properties?: Record<string, unknown>; allOf?: unknown[] } | undefined>(document, schema);
  const names = new Set(Object.keys(resolved?.properties ?? {}));
  if (depth < 8) for (const part of resolved?.allOf ?? []) for (const name of membersOf(document, part, depth + 1)) names.add(name);
  return names;
}

/** Checks a value against one of `components.schemas` (`ProductCreate`): the same rules the HTTP edge applies, for gRPC items and batches. */
export function checkAgainstComponent(schemaName: string, value: unknown, document: OpenApiDocument = openApiDocument): SchemaIssue[] {
  const schema = document.components.schemas[schemaName];
  if (!schema) throw new Error(`${schemaName} is not a schema of the OpenAPI document`);
  return checker(indexOf(document), schema)(value);
}

function resolveLocal<T>(document: OpenApiDocument, item: unknown): T {
  let current = item as { $ref?: unknown };
  for (let hops = 0; typeof current === 'object' && current !== null && typeof current.$ref === 'string'; hops++) {
    if (hops > 16) throw new Error(`reference cycle at ${current.$ref}`);
    let node: unknown = document;
    for (const raw of current.$ref.slice(2).split('/')) node = (node as Record<string, unknown>)[raw.replace(/~1/g, '/').replace(/~0/g, '~')];
    current = node as { $ref?: unknown };
  }
  return current as T;
}

/** Component references are relative to the document; Ajv needs them absolute to resolve them across compiled schemas. */
export function withAbsoluteRefs(value: unknown, parentKey = ''): unknown {
  if (Array.isArray(value)) return value.map((item) => withAbsoluteRefs(item));
  if (typeof value !== 'object' || value === null) return value;
  const namesProperties = parentKey === 'properties' || parentKey === 'patternProperties' || parentKey === '$defs';
  const result: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value)) {
    if (!namesProperties && key.startsWith('x-') && key !== DOCUMENTED_ERROR_KEYWORD) continue;
    if (!namesProperties && key === '$ref' && typeof child === 'string' && child.startsWith('#/components/schemas/')) {
      result[key] = componentSchemaUri + child.slice('#/components/schemas/'.length);
    } else {
      result[key] = withAbsoluteRefs(child, key);
    }
  }
  return result;
}

/**
 * Ajv's errors as SchemaIssues. A failed `oneOf`/`anyOf` reports every branch's failures and then
 * its own; the branches' say more, so the summary is dropped when they are there, as are `if`
 * (its `then` failure is reported too). The same issue twice (two branches agreeing) is one.
 */
function issuesOf(errors: ErrorObject[], value: unknown): SchemaIssue[] {
  const issues: SchemaIssue[] = [];
  const seen = new Set<string>();
  const hasDeeper = (error: ErrorObject) => errors.some((other) => other.schemaPath.startsWith(`${error.schemaPath}/`));
  for (const error of errors) {
    if (error.keyword === 'if') continue;
    // propertyNames reports the name's own failure (pattern, maxLength) and then itself: keep the one that names the member.
    if (error.propertyName !== undefined && error.keyword !== 'propertyNames') continue;
    if ((error.keyword === 'oneOf' || error.keyword === 'anyOf') && hasDeeper(error)) continue;
    const params = error.params as Record<string, unknown>;
    const path = pathOf(error.instancePath, value);
    if (error.keyword === 'required') path.push(String(params.missingProperty));
    else if (error.keyword === 'additionalProperties' || error.keyword === 'unevaluatedProperties')
      path.push(String(params.additionalProperty ?? params.unevaluatedProperty));
    else if (error.keyword === 'propertyNames') path.push(String(params.propertyName));
    const key = `${JSON.stringify(path)} ${error.keyword}`;
    // One documented error per value: a price that is neither a string nor a decimal is one invalid_decimal.
    if ([...seen].some((other) => other.startsWith(`${JSON.stringify(path)} documented`))) continue;
    if (seen.has(key)) continue;
    seen.add(key);
    if ((error.parentSchema as Record<string, unknown> | undefined)?.[DOCUMENTED_ERROR_KEYWORD] && !MEMBER_KEYWORDS.has(error.keyword))
      seen.add(`${JSON.stringify(path)} documented`);
    const documented = MEMBER_KEYWORDS.has(error.keyword)
      ? undefined
      : ((error.parentSchema as Record<string, unknown> | undefined)?.[DOCUMENTED_ERROR_KEYWORD] as DocumentedError | undefined);
    issues.push({ path, keyword: error.keyword, params, ...(documented ? { documented } : {}) });
    if (issues.length >= MAX_ISSUES) break;
  }
  return issues;
}

/** `/records/0/data/a~1b` → ['records', 0, 'data', 'a/b'], numbers only where the value there is an array. */
function pathOf(pointer: string, value: unknown): Array<string | number> {
  if (pointer === '') return [];
  const path: Array<string | number> = [];
  let node: unknown = value;
  for (const raw of pointer.slice(1).split('/')) {
    const token = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(node)) {
      path.push(Number(token));
      node = node[Number(token)];
    } else {
      path.push(token);
      node = typeof node === 'object' && node !== null ? (node as Record<string, unknown>)[token] : undefined;
    }
  }
  return path;
}
