import { checkAgainstComponent, requestContractOf, type SchemaIssue } from '@merx/contracts';
import type { Middleware } from 'koa';
import { fieldPath, ValidationFailed, type FieldError } from './errors.js';

/**
 * One code per JSON Schema keyword, so a structural problem reads the same whichever service, route
 * or gRPC method met it. Rules a schema cannot state (money against the currency's minor units,
 * currency codes, state transitions, CEL) are the domain's, with their own codes.
 */
const CODE_BY_KEYWORD: Record<string, string> = {
  required: 'required',
  type: 'invalid_type',
  additionalProperties: 'unknown_field',
  unevaluatedProperties: 'unknown_field',
  enum: 'invalid_value',
  const: 'invalid_value',
  oneOf: 'invalid_value',
  anyOf: 'invalid_value',
  not: 'invalid_value',
  multipleOf: 'invalid_value',
  minLength: 'too_short',
  minItems: 'too_short',
  minProperties: 'required',
  maxLength: 'too_long',
  maxItems: 'too_long',
  maxProperties: 'too_many_keys',
  propertyNames: 'invalid_key',
  uniqueItems: 'duplicate_items',
  pattern: 'invalid_format',
  format: 'invalid_format',
  minimum: 'out_of_range',
  maximum: 'out_of_range',
  exclusiveMinimum: 'out_of_range',
  exclusiveMaximum: 'out_of_range',
};

const TYPE_WORDS: Record<string, string> = {
  string: 'a string',
  integer: 'an integer',
  number: 'a number',
  boolean: 'true or false',
  object: 'a JSON object',
  array: 'an array',
  null: 'null',
};

function describe(issue: SchemaIssue, field: string): string {
  const params = issue.params;
  const subject = field === '(body)' ? 'the body' : field;
  switch (issue.keyword) {
    case 'required':
      return `${field} is required`;
    case 'type': {
      const types = (Array.isArray(params.type) ? params.type : String(params.type).split(',')) as string[];
      return `${subject} must be ${types.map((type) => TYPE_WORDS[type] ?? type).join(' or ')}`;
    }
    case 'additionalProperties':
    case 'unevaluatedProperties':
      return `${field} is not a field here`;
    case 'enum':
      return `${subject} must be one of ${(params.allowedValues as unknown[]).map(String).join(', ')}`;
    case 'const':
      return `${subject} must be ${JSON.stringify(params.allowedValue)}`;
    case 'minLength':
      return params.limit === 1 ? `${subject} must not be empty` : `${subject} must be at least ${String(params.limit)} characters`;
    case 'maxLength':
      return `${subject} must be at most ${String(params.limit)} characters`;
    case 'minItems':
      return `${subject} must have at least ${String(params.limit)} item(s)`;
    case 'maxItems':
      return `${subject} must have at most ${String(params.limit)} items`;
    case 'minProperties':
      return field === '(body)' ? 'send at least one field' : `${subject} must have at least ${String(params.limit)} member(s)`;
    case 'maxProperties':
      return `${subject} may have at most ${String(params.limit)} members`;
    case 'propertyNames':
      return `${field} is not an allowed member name`;
    case 'uniqueItems':
      return `${subject} must not repeat an item`;
    case 'pattern':
      return `${subject} must match ${String(params.pattern)}`;
    case 'format':
      return `${subject} must be ${params.format === 'uri' ? 'an absolute URI' : params.format === 'date-time' ? 'an RFC 3339 date-time' : `a valid ${String(params.format)}`}`;
    case 'minimum':
    case 'maximum':
    case 'exclusiveMinimum':
    case 'exclusiveMaximum':
      return `${subject} must be ${String(params.comparison)} ${String(params.limit)}`;
    default:
      return `${subject} is not valid here`;
  }
}

/** A schema issue as the one kind of field error every 422 carries. */
export function fieldErrorOf(issue: SchemaIssue, base = ''): FieldError {
  const field = fieldPath(base, ...issue.path) || '(body)';
  if (issue.documented) return { field, code: issue.documented.code, message: `${field} ${issue.documented.message}` };
  return { field, code: CODE_BY_KEYWORD[issue.keyword] ?? 'invalid_value', message: describe(issue, field) };
}

/**
 * Throws the 422 `validation_failed` for a value that does not have the structure one of the
 * document's component schemas states (`ProductCreate`): the same rules the HTTP edge applies,
 * for callers that do not come through it (gRPC items, batch entries). `base` prefixes the field
 * paths (`records[3]`).
 */
export function assertMatchesSchema(schemaName: string, value: unknown, base = ''): void {
  const errors = schemaErrors(schemaName, value, base);
  if (errors.length > 0) throw new ValidationFailed(errors);
}

/** The field errors of a value against a component schema, empty when it holds. */
export function schemaErrors(schemaName: string, value: unknown, base = ''): FieldError[] {
  if (value === undefined) return [{ field: base || '(body)', code: 'required', message: `${base || 'a JSON object body'} is required` }];
  return checkAgainstComponent(schemaName, value).map((issue) => fieldErrorOf(issue, base));
}

/**
 * Checks a request against its operation in the OpenAPI document before the route runs: a query
 * parameter the operation does not declare, a missing body the operation requires, and a body that
 * breaks the operation's request schema (types, required members, lengths, patterns, unknown
 * members) are all one 422 `validation_failed` naming each field. The route and its domain then
 * see only well-formed input and check only what a schema cannot say. Runs after the credentials
 * and the scope (requireScope, requireOperator), so a caller without them learns nothing about
 * the operation's inputs.
 */
export const validateRequest: Middleware = async function validateRequest(ctx, next) {
  const contract = requestContractOf(ctx.method, ctx.path);
  if (!contract) return next();
  const unknown = Object.keys(ctx.query).filter((name) => !contract.queryNames.has(name));
  if (unknown.length > 0) {
    const accepted = contract.queryNames.size > 0 ? `it takes ${[...contract.queryNames].join(', ')}` : 'it takes none';
    throw new ValidationFailed(
      unknown.map((name) => ({
        field: fieldPath('', name),
        code: 'unknown_parameter',
        message: `${name} is not a query parameter of ${contract.operationId}; ${accepted}`,
      })),
    );
  }
  const body = (ctx.request as { body?: unknown } | undefined)?.body;
  if (contract.body && (body !== undefined || contract.body.required)) {
    if (body === undefined) throw new ValidationFailed([{ field: '(body)', code: 'required', message: `${contract.operationId} needs a JSON object body` }]);
    const errors = contract.body.check(body).map((issue) => fieldErrorOf(issue));
    if (errors.length > 0) throw new ValidationFailed(errors);
  }
  return next();
};
