import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule, { type FormatsPlugin } from 'ajv-formats';
import { eventEnvelopeSchema, findEventDefinition } from './events.js';
import { findInternalEventDefinition } from './internal-events.js';
import { openApiDocument } from './openapi.js';
import type { HeaderObject, HttpMethod, JsonSchema, OpenApiDocument, OperationObject, ParameterObject, Reference, ResponseObject } from './openapi/types.js';
import { DOCUMENTED_ERROR_KEYWORD, withAbsoluteRefs } from './validator/request-schemas.js';
import { findRoute, normalizeMediaType, normalizeRequestPath, type Route } from './validator/routes.js';

// ajv-formats is CommonJS; under NodeNext its default import is `module.exports`, which TypeScript types as the module record.
const addFormats = ((addFormatsModule as unknown as { default?: FormatsPlugin }).default ?? addFormatsModule) as FormatsPlugin;

export type HeaderBag = { get(name: string): string | null } | Record<string, string | string[] | number | undefined>;

export interface ResponseUnderTest {
  method: string;
  /** Concrete path as requested (`/api/v1/products/prod_01...`); a query string, a full URL and one trailing slash are tolerated. */
  path: string;
  status: number;
  contentType?: string | null;
  /** Parsed JSON, or the raw text (parsed here when the media type is JSON). */
  body?: unknown;
  /** When given, documented required headers must be present and documented headers must match their schema. */
  headers?: HeaderBag;
}

export interface WebhookRequestUnderTest {
  /** The body as sent (text) or parsed. */
  body: unknown;
  /** When given, the documented Standard Webhooks headers must be present and match. */
  headers?: HeaderBag;
}

export type SecurityKind = 'none' | 'oauth2' | 'operator';

export interface ContractOperation {
  method: Uppercase<HttpMethod>;
  pathTemplate: string;
  operationId: string;
  scopes: string[];
  security: SecurityKind;
}

export interface ContractValidator {
  /** Problems with the response, in words; empty when it matches the document. */
  validateResponse(response: ResponseUnderTest): string[];
  /** Problems with the event (envelope and the named event's data), in words; empty when valid. */
  validateEvent(event: unknown): string[];
  /** Problems with a value checked against one of `components.schemas` (request bodies, webhook payload parts). */
  validateComponent(schemaName: string, value: unknown): string[];
  /** Problems with a value checked against a schema written inline in the document (a parameter's, an operation's); it may refer to components. */
  validateSchema(schema: JsonSchema, value: unknown): string[];
  /** Problems with a request Merx sent a subscriber, checked against the `webhooks` entry its topic names: headers and body. */
  validateWebhook(request: WebhookRequestUnderTest): string[];
  operations(): ContractOperation[];
}

const httpMethods: HttpMethod[] = ['get', 'post', 'put', 'patch', 'delete'];
const componentSchemaUri = 'https://merx.dev/contracts/openapi/components/schemas/';

export function createContractValidator(document: OpenApiDocument = openApiDocument): ContractValidator {
  // inlineRefs: false compiles a referenced component once instead of copying it into every schema that
  // refers to it; EventDataByTopic (a branch per catalogue event) would otherwise be compiled three times.
  const ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: true, strictRequired: false, allowUnionTypes: true, inlineRefs: false });
  addFormats(ajv);
  // OpenAPI's own keywords: annotations for readers and generators, nothing for a validator to check.
  ajv.addVocabulary(['example', 'xml', 'externalDocs', 'discriminator', DOCUMENTED_ERROR_KEYWORD]);
  for (const [name, schema] of Object.entries(document.components.schemas)) {
    ajv.addSchema(withAbsoluteRefs(schema) as JsonSchema, componentSchemaUri + name);
  }

  const compiled = new WeakMap<object, ValidateFunction>();
  const validatorFor = (schema: JsonSchema): ValidateFunction => {
    let validate = compiled.get(schema);
    if (!validate) {
      validate = ajv.compile(withAbsoluteRefs(schema) as JsonSchema);
      compiled.set(schema, validate);
    }
    return validate;
  };
  const check = (schema: JsonSchema, value: unknown, where: string): string[] => {
    const validate = validatorFor(schema);
    return validate(value) ? [] : describeErrors(validate.errors ?? [], where);
  };

  const resolve = <T>(item: T | Reference): T => resolveReference(document, item);

  function checkResponse(label: string, response: ResponseObject, actual: ResponseUnderTest): string[] {
    const problems = actual.headers ? checkHeaders(response, actual.headers) : [];
    const content = response.content;
    if (!content) {
      if (!isEmptyBody(actual.body)) problems.push('a body was sent where the document says there is none');
      return problems.map((problem) => `${label}: ${problem}`);
    }
    const mediaType = normalizeMediaType(actual.contentType);
    const documented = Object.keys(content);
    const media = mediaType === undefined ? undefined : content[mediaType];
    if (!media) {
      problems.push(`content type ${mediaType ?? '(none)'} is not documented; expected ${documented.join(' or ')}`);
      return problems.map((problem) => `${label}: ${problem}`);
    }
    const parsed = parseBody(actual.body, mediaType!);
    if (parsed.problem) problems.push(parsed.problem);
    else problems.push(...check(media.schema, parsed.value, 'body'));
    // Only a problem names the request it answers; other bodies' request_id (an audit entry's) names another one.
    const bodyRequestId = mediaType === 'application/problem+json' ? (parsed.value as { request_id?: unknown } | null | undefined)?.request_id : undefined;
    // A replayed idempotent answer is the first answer byte for byte: its body names the first request.
    const replayed = actual.headers ? readHeader(actual.headers, 'Idempotent-Replayed') === 'true' : false;
    const requestIdHeader = replayed ? 'Original-Request-Id' : 'X-Request-Id';
    const headerRequestId = actual.headers ? readHeader(actual.headers, requestIdHeader) : undefined;
    if (typeof bodyRequestId === 'string' && headerRequestId !== undefined && bodyRequestId !== headerRequestId) {
      problems.push(`body/request_id ${bodyRequestId} differs from the ${requestIdHeader} header ${headerRequestId}`);
    }
    return problems.map((problem) => `${label}: ${problem}`);
  }

  function checkHeaders(response: ResponseObject, bag: HeaderBag): string[] {
    const problems: string[] = [];
    for (const [name, headerOrRef] of Object.entries(response.headers ?? {})) {
      const header: HeaderObject = resolve(headerOrRef);
      const value = readHeader(bag, name);
      if (value === undefined) {
        if (header.required) problems.push(`header ${name} is missing`);
      } else {
        problems.push(...check(header.schema, value, `header ${name}`));
      }
    }
    return problems;
  }

  const routes: Route[] = Object.keys(document.paths).map((template) => ({ template, item: document.paths[template]! }));

  function validateResponse(actual: ResponseUnderTest): string[] {
    const method = actual.method.toLowerCase() as HttpMethod;
    const path = normalizeRequestPath(actual.path);
    const label = `${actual.method.toUpperCase()} ${path} → ${actual.status}`;
    const route = findRoute(routes, path);
    const unrouted = (status: '404' | '405', why: string): string[] =>
      String(actual.status) === status
        ? checkResponse(`${label} (${why})`, resolve<ResponseObject>(document['x-merx-unrouted-responses'][status]), actual)
        : [`${label}: ${why}`];
    if (!route) return unrouted('404', 'the path is not in the OpenAPI document');
    const operation = httpMethods.includes(method) ? route.item[method] : undefined;
    if (!operation) {
      const allowed = httpMethods.filter((m) => route.item[m]).map((m) => m.toUpperCase());
      return unrouted('405', `${actual.method.toUpperCase()} is not documented for ${route.template} (allowed: ${allowed.join(', ')})`);
    }
    const documented = operation.responses;
    const response = documented[String(actual.status)] ?? documented[`${String(actual.status)[0]}XX`] ?? documented.default;
    if (!response) {
      return [`${label}: status ${actual.status} is not documented for ${operation.operationId} (documented: ${Object.keys(documented).join(', ')})`];
    }
    return checkResponse(`${label} (${operation.operationId})`, resolve<ResponseObject>(response), actual);
  }

  function validateEvent(event: unknown): string[] {
    const envelope = (typeof event === 'object' && event !== null ? event : {}) as Record<string, unknown>;
    const name = typeof envelope.topic === 'string' ? envelope.topic : undefined;
    const label = `event ${typeof envelope.id === 'string' ? envelope.id : '(no id)'} ${name ?? '(no topic)'}`;
    const definition = name === undefined ? undefined : (findEventDefinition(name) ?? findInternalEventDefinition(name));
    const problems = check(eventEnvelopeSchema, event, 'event').filter(
      // The envelope names only public events; a named topic is judged by the two catalogues instead.
      (problem) => name === undefined || !problem.startsWith('event/topic '),
    );
    if (name !== undefined && !definition) problems.push(`${name} is not an event of the catalogue`);
    const data = envelope.data as Record<string, unknown> | undefined;
    if (definition && typeof data === 'object' && data !== null) {
      if ('object' in data) problems.push(...check(definition.dataObjectSchema, data.object, 'data.object'));
      if ('previous' in data) {
        if (definition.dataPreviousSchema) problems.push(...check(definition.dataPreviousSchema, data.previous, 'data.previous'));
        else problems.push(`data.previous is not part of ${definition.name}`);
      }
    }
    return problems.map((problem) => `${label}: ${problem}`);
  }

  function operations(): ContractOperation[] {
    return routes.flatMap(({ template, item }) =>
      httpMethods.flatMap((method) => {
        const operation = item[method];
        return operation ? [describeOperation(method, template, operation)] : [];
      }),
    );
  }

  function validateComponent(schemaName: string, value: unknown): string[] {
    const schema = document.components.schemas[schemaName];
    if (!schema) return [`${schemaName} is not a schema of the document`];
    return check(schema, value, schemaName);
  }

  function validateWebhook(request: WebhookRequestUnderTest): string[] {
    const parsed = parseBody(request.body, 'application/json');
    if (parsed.problem) return [`webhook: ${parsed.problem}`];
    const topic = (parsed.value as { topic?: unknown } | null)?.topic;
    const operation = typeof topic === 'string' ? document.webhooks[topic]?.post : undefined;
    if (!operation?.requestBody) return [`webhook: ${JSON.stringify(topic)} is not an event of the webhooks section`];
    const label = `webhook ${topic}`;
    const problems: string[] = [];
    for (const parameter of (operation.parameters ?? []).map((item) => resolve<ParameterObject>(item))) {
      if (parameter.in !== 'header' || !request.headers) continue;
      const value = readHeader(request.headers, parameter.name);
      if (value === undefined) {
        if (parameter.required) problems.push(`header ${parameter.name} is missing`);
      } else {
        problems.push(...check(parameter.schema, value, `header ${parameter.name}`));
      }
    }
    problems.push(...check(operation.requestBody.content['application/json']!.schema, parsed.value, 'body'));
    return problems.map((problem) => `${label}: ${problem}`);
  }

  return { validateResponse, validateEvent, validateComponent, validateSchema: (schema, value) => check(schema, value, 'value'), validateWebhook, operations };
}

function describeOperation(method: HttpMethod, pathTemplate: string, operation: OperationObject): ContractOperation {
  const requirement = operation.security[0];
  const kind: SecurityKind = !requirement ? 'none' : 'operator' in requirement ? 'operator' : 'oauth2';
  return {
    method: method.toUpperCase() as Uppercase<HttpMethod>,
    pathTemplate,
    operationId: operation.operationId,
    scopes: kind === 'oauth2' ? [...(requirement?.oauth2 ?? [])] : [],
    security: kind,
  };
}

/** Follows `#/...` references within the document until it reaches the object itself. */
export function resolveReference<T>(document: OpenApiDocument, item: T | Reference): T {
  let current: unknown = item;
  for (let hops = 0; isReference(current); hops++) {
    if (hops > 16) throw new Error(`reference cycle at ${current.$ref}`);
    current = resolvePointer(document, current.$ref);
  }
  return current as T;
}

export function resolvePointer(document: unknown, pointer: string): unknown {
  if (!pointer.startsWith('#/')) throw new Error(`only local references are supported: ${pointer}`);
  let node: unknown = document;
  for (const raw of pointer.slice(2).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof node !== 'object' || node === null || !Object.hasOwn(node, key)) throw new Error(`unresolvable reference ${pointer}`);
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

function isReference(value: unknown): value is Reference {
  return typeof value === 'object' && value !== null && typeof (value as Reference).$ref === 'string';
}

function describeErrors(errors: ErrorObject[], where: string): string[] {
  return errors
    .filter((error) => error.keyword !== 'if')
    .map((error) => {
      const params = error.params as Record<string, unknown>;
      const detail =
        error.keyword === 'additionalProperties'
          ? `: ${String(params.additionalProperty)}`
          : error.keyword === 'enum'
            ? `: ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`
            : error.keyword === 'const'
              ? `: ${JSON.stringify(params.allowedValue)}`
              : '';
      return `${where}${error.instancePath} ${error.message ?? 'is invalid'}${detail}`;
    });
}

function isEmptyBody(body: unknown): boolean {
  if (body === undefined || body === null || body === '') return true;
  return body instanceof Uint8Array && body.byteLength === 0;
}

function parseBody(body: unknown, mediaType: string): { value?: unknown; problem?: string } {
  const text = body instanceof Uint8Array ? new TextDecoder().decode(body) : body;
  const isJson = mediaType === 'application/json' || mediaType.endsWith('+json');
  if (!isJson || typeof text !== 'string') return { value: text };
  try {
    return { value: JSON.parse(text) };
  } catch {
    return { problem: `body is not valid JSON although the content type is ${mediaType}` };
  }
}

function readHeader(bag: HeaderBag, name: string): string | undefined {
  if (typeof bag.get === 'function') return (bag as { get(name: string): string | null }).get(name) ?? undefined;
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(bag as Record<string, unknown>)) {
    if (key.toLowerCase() !== wanted || value === undefined) continue;
    return Array.isArray(value) ? value.join(', ') : String(value);
  }
  return undefined;
}
